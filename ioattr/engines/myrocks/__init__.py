"""The MyRocks adapter: RocksDB's files, index names, thread roles and counters behind
ioattr.engines.base.EngineAdapter (the second adapter after InnoDB, and the first LSM).

What ioattr attributes for MyRocks, and how exactly:
  * every read and write of the server's files under #rocksdb/ at the syscall layer, to the
    file (path, inode) with its file_class (files.py: sst, wal, manifest, options, info_log,
    trash, tmp) -- exact, as for any file;
  * to the thread doing it with its role (roles.py: flush on rocksdb:high, compaction on
    rocksdb:low, myrocks_background, drop_index, manual_compaction; connections as usual) --
    exact where the thread does its own IO (RocksDB issues pread/pwrite from the thread
    doing the work);
  * SST files named by level and the indexes whose key ranges they hold (sst.py).
  * every read of an SST by the kind of block at its offset (data, index, filter, meta, or
    mixed for a read over two kinds), counted in BPF from the extents the catalog registered
    (sst_blocks.py, bpf/rocksdb_sst.h): page rows with page_type sst_*, the SST's file number
    as index_id and its level.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping, Sequence

from ioattr.collectors import abi
from ioattr.engines.base import AdviceField, Connection, CounterSource, EngineAdapter, Finding, StatusCounter
from ioattr.engines.myrocks import findings as myrocks_findings
from ioattr.engines.myrocks import files, lsm, names, sst, sst_blocks
from ioattr.engines.myrocks.counters import CfStats, CompactionStats, PerfContextGlobal, rocksdb_active
from ioattr.engines.myrocks.roles import INSTRUMENT_ROLES
from ioattr.engines.myrocks.roles import role_of_comm as _role_of_comm


class MyrocksAdapter(EngineAdapter):
    """MyRocks (MariaDB's ROCKSDB storage engine plugin, ha_rocksdb.so)."""

    name = "rocksdb"
    file_map_name = None  # SSTs are registered by the catalog (sst.py) in InnoDB's page-file map
    instrument_roles: ClassVar[Mapping[str, str]] = INSTRUMENT_ROLES
    # rocksdb_datadir is not asked for (directory_variables): ServerContext reads all engines'
    # directory variables in one SELECT, which a server without MyRocks would fail whole; the
    # directories are only used to register InnoDB's page files anyway

    # -- files ----------------------------------------------------------------------------
    def classify_path(self, path: str) -> abi.FileClass | None:
        return files.classify_path(path)

    def is_page_file(self, path: str) -> bool:
        return False  # SSTs are registered by the SST catalog (sst.py), with their block extents

    # reads of an SST the catalog registered (page_files, engine ROCKSDB_SST) are counted in
    # page_stats by block kind (bpf/rocksdb_sst.h): index_id the SST's file number, level its
    # LSM level
    page_file_classes = frozenset({int(abi.FileClass.SST)})

    def page_type_name(self, page_type: int, flavor: str = "mariadb") -> str:
        return sst_blocks.page_type_name(page_type)

    def is_index_page(self, page_type: int, flavor: str = "mariadb") -> bool:
        """Every SST read row has the SST's level (an LSM level, not a btree one)."""
        return page_type in sst_blocks.PAGE_TYPES

    # -- objects ---------------------------------------------------------------------------
    def object_names(self) -> names.IndexNames:
        return names.IndexNames()

    def file_catalog(self) -> sst.SstCatalog:
        return sst.SstCatalog()

    # -- roles -----------------------------------------------------------------------------
    def role_of_comm(self, comm: str) -> str | None:
        return _role_of_comm(comm)

    # -- counters --------------------------------------------------------------------------
    extra_settings: ClassVar[Sequence[str]] = (
        "rocksdb_block_cache_size", "rocksdb_block_size", "rocksdb_use_direct_reads",
        "rocksdb_use_direct_io_for_flush_and_compaction", "rocksdb_max_background_jobs",
        "rocksdb_flush_log_at_trx_commit", "rocksdb_default_cf_options", "rocksdb_datadir", "rocksdb_wal_dir",
        "rocksdb_max_open_files", "rocksdb_perf_context_level", "rocksdb_cache_index_and_filter_blocks",
        "rocksdb_cache_high_pri_pool_ratio")

    run_settings: ClassVar[Mapping[str, str]] = {
        "cache": "rocksdb_block_cache_size", "io": "rocksdb_use_direct_reads", "page": "rocksdb_block_size"}

    def counter_sources(self) -> list[CounterSource]:
        return [PerfContextGlobal(), CfStats(), CompactionStats()]

    # the block cache is MyRocks' cache: a miss is a block (data, index or filter) read from an SST
    status_counters: ClassVar[Mapping[str, StatusCounter]] = {
        "cache_misses": StatusCounter("Rocksdb_block_cache_miss", "blocks MyRocks read from SST files"),
        "cache_requests": StatusCounter("Rocksdb_block_cache_hit", "blocks MyRocks asked its block cache for",
                                        also=("Rocksdb_block_cache_miss",)),
    }
    report_counters: ClassVar[Sequence[tuple[str, tuple[str, ...]]]] = (
        ("RocksDB block cache misses", ("status:Rocksdb_block_cache_miss",)),
        ("RocksDB block cache hits", ("status:Rocksdb_block_cache_hit",)),
        ("RocksDB index/filter block misses", ("status:Rocksdb_block_cache_index_miss",)),
        ("RocksDB bytes flushed", ("status:Rocksdb_flush_write_bytes",)),
        ("RocksDB compaction bytes read", ("status:Rocksdb_compact_read_bytes",)),
        ("RocksDB compaction bytes written", ("status:Rocksdb_compact_write_bytes",)),
        ("RocksDB WAL bytes", ("status:Rocksdb_wal_bytes",)),
    )

    def phase_terms(self, counters: Mapping[str, float],
                    io_rows: Callable[[], list[dict[str, Any]]],
                    statement_counts: Mapping[str, float] | None = None) -> dict[str, Any] | None:
        return lsm.phase_terms(dict(counters), io_rows)

    def phase_line(self, terms: Mapping[str, Any]) -> str | None:
        return lsm.phase_line(dict(terms))

    # -- findings --------------------------------------------------------------------------
    findings: ClassVar[Sequence[Finding]] = myrocks_findings.FINDINGS
    next_steps: ClassVar[Mapping[str, tuple[str, str]]] = myrocks_findings.NEXT_STEPS
    advice_fields: ClassVar[Mapping[str, AdviceField]] = myrocks_findings.ADVICE_FIELDS

    def claims(self, conn: Connection | None) -> bool:
        """Without a connection, yes (its files are recognised by their directory); with one,
        when the server has the ROCKSDB plugin active."""
        return conn is None or rocksdb_active(conn)

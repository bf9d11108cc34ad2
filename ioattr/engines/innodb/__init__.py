"""The InnoDB adapter: InnoDB's files, index names, page types, thread roles, counters and findings behind ioattr.engines.base.EngineAdapter."""
from __future__ import annotations

from typing import ClassVar, Mapping, Sequence

from ioattr.collectors import abi
from ioattr.collectors.engine import EngineError
from ioattr.collectors.stage_probes import StageProbe
from ioattr.engines.base import (AdviceField, Connection, CounterSource, EngineAdapter, Finding, ObjectNames,
                                 StatusCounter)
from ioattr.engines.innodb import files, names, pages
from ioattr.engines.innodb import findings as innodb_findings
from ioattr.engines.innodb.counters import InnodbMetrics, InnodbStatus
from ioattr.engines.innodb.roles import INSTRUMENT_ROLES
from ioattr.engines.innodb.table_files import TableFiles


ESTIMATE_SYMBOLS = ("_ZN7handler27multi_range_read_info_constEjP15st_range_seq_ifPvjPjS3_P13Cost_estimate",
                    "_ZN7handler27multi_range_read_info_constEjP15st_range_seq_ifPvjPjS3_yP13Cost_estimate")


class InnodbAdapter(EngineAdapter):
    """InnoDB (MariaDB 10.x/11.x and MySQL 8 flavors): pages classified in BPF
    (bpf/pages.bpf.h, map page_files) and named here."""

    name = "innodb"
    file_map_name = "page_files"
    instrument_roles: ClassVar[Mapping[str, str]] = INSTRUMENT_ROLES
    # InnoDB's own work inside a statement, beside the server's statement probes
    # (collectors/stage_probes.SERVER_PROBES). Both on by default: only the statements (or tasks)
    # doing that work hit them.
    statement_probes: ClassVar[Sequence[StageProbe]] = (
        # purge: in MariaDB 10.x only InnoDB's purge tasks attach a background THD (acquire_thd)
        StageProbe("ioattr_thd_attach", ("_Z14thd_attach_thdP3THD",)),
        # index range estimates (bpf/stage.bpf.c): the base implementation, which InnoDB's
        # DsMrr_impl::dsmrr_info_const calls by name (ha_innobase::records_in_range, called by it
        # once per range, is not exported). 10.x/11.0, then 11.x with a row limit argument.
        StageProbe("ioattr_estimate_enter", ESTIMATE_SYMBOLS, estimate=True),
        StageProbe("ioattr_estimate_return", ESTIMATE_SYMBOLS, retprobe=True, estimate=True),
        StageProbe("ioattr_thd_detach", ("_Z14thd_detach_thdPv",)),
    )

    # -- files ----------------------------------------------------------------------------
    def classify_path(self, path: str) -> abi.FileClass | None:
        # binlog/relay log names are recognised here too: they are InnoDB's co-travellers on every
        # MariaDB/MySQL server, and the only server files ioattr classifies today
        fc = files.classify_path(path)
        return None if fc == abi.FileClass.OTHER else fc

    def is_page_file(self, path: str) -> bool:
        return files.classify_path(path) in files.PAGE_FILE_CLASSES

    def file_registry(self, map_fd: int | None) -> files.InnodbFileMap:
        return files.InnodbFileMap(map_fd)

    directory_variables: ClassVar[Sequence[str]] = ("innodb_data_home_dir", "innodb_undo_directory")

    def on_connect(self, conn: Connection, registry: object) -> None:
        if not isinstance(registry, files.InnodbFileMap):
            return
        registry.use_dictionary(conn)  # new tablespaces' geometry before their page 0 is written
        try:
            rows = conn.query("SELECT SPACE FROM INFORMATION_SCHEMA.INNODB_TABLESPACES_ENCRYPTION "
                              "WHERE ENCRYPTION_SCHEME <> 0 OR CURRENT_KEY_VERSION <> 0")
            registry.mark_encrypted({int(r[0]) for r in rows}, getattr(conn, "target_pid", None))
        except EngineError:
            pass  # MySQL 8 has no such table; encryption then shows as unreadable page headers

    # -- objects ---------------------------------------------------------------------------
    def object_names(self) -> names.IndexNames:
        return names.IndexNames()

    def object_sizes(self, conn: Connection) -> dict[str, int]:
        return names.tablespace_sizes(conn)

    # -- pages -----------------------------------------------------------------------------
    def page_type_name(self, page_type: int, flavor: str = "mariadb") -> str:
        return pages.page_type_name(page_type, flavor)

    def is_index_page(self, page_type: int, flavor: str = "mariadb") -> bool:
        return pages.is_index_page(page_type, flavor)

    def space_page_name(self, page_type: int, space_id: int, object_names: ObjectNames,
                        flavor: str = "mariadb") -> str | None:
        """A PAGE_COMPRESSED page's index id and level are inside its compressed payload: it is
        charged to its table, as "schema.table.(page_compressed)" (the index is not known)."""
        if not pages.is_page_compressed(page_type, flavor) or not isinstance(object_names, names.IndexNames):
            return None
        table = object_names.space_table(space_id)
        return None if table is None else f"{table}.(page_compressed)"

    findings: ClassVar[Sequence[Finding]] = innodb_findings.FINDINGS
    next_steps: ClassVar[Mapping[str, tuple[str, str]]] = innodb_findings.NEXT_STEPS
    advice_fields: ClassVar[Mapping[str, AdviceField]] = innodb_findings.ADVICE_FIELDS

    # -- counters --------------------------------------------------------------------------
    settings: ClassVar[Sequence[str]] = (
        "innodb_buffer_pool_size", "innodb_flush_method", "innodb_change_buffering", "innodb_page_size",
        "innodb_io_capacity", "innodb_io_capacity_max", "innodb_log_file_size", "innodb_read_ahead_threshold",
        "innodb_random_read_ahead", "innodb_flush_log_at_trx_commit", "innodb_doublewrite")
    extra_settings: ClassVar[Sequence[str]] = (
        "innodb_buffer_pool_instances", "innodb_adaptive_hash_index", "innodb_change_buffer_max_size",
        "innodb_flush_neighbors", "innodb_max_dirty_pages_pct", "innodb_use_native_aio", "innodb_log_buffer_size",
        "innodb_redo_log_capacity", "innodb_read_io_threads", "innodb_write_io_threads", "innodb_lru_scan_depth",
        "innodb_old_blocks_pct", "innodb_old_blocks_time",
        # what explain's findings bound index dives and redo capacity by
        "innodb_stats_persistent", "innodb_stats_persistent_sample_pages", "innodb_stats_transient_sample_pages",
        "innodb_log_files_in_group",
        # whether InnoDB recalculates statistics in the background (explain's background_tasks)
        "innodb_stats_auto_recalc")

    run_settings: ClassVar[Mapping[str, str]] = {
        "cache": "innodb_buffer_pool_size", "io": "innodb_flush_method", "page": "innodb_page_size"}

    def counter_sources(self) -> list[CounterSource]:
        # TableFiles: every table's size from its files (all of the server's engines' tables)
        return [InnodbMetrics(), InnodbStatus(), TableFiles()]

    # the buffer pool is InnoDB's cache: a miss is a page read from storage (read-ahead aside)
    status_counters: ClassVar[Mapping[str, StatusCounter]] = {
        "cache_misses": StatusCounter("Innodb_buffer_pool_reads", "pages InnoDB read from storage"),
        "cache_requests": StatusCounter("Innodb_buffer_pool_read_requests",
                                        "pages InnoDB asked its buffer pool for"),
    }
    # its own row counter: INNODB_METRICS dml_inserts when the dml module is on, else
    # Innodb_rows_inserted (MySQL has it; MariaDB's server counts Handler_write instead)
    rows_inserted: ClassVar[Sequence[str]] = ("innodb_metrics:dml_inserts", "status:Innodb_rows_inserted")
    storage_reads: ClassVar[str | None] = "status:Innodb_data_reads"
    report_counters: ClassVar[Sequence[tuple[str, tuple[str, ...]]]] = (
        ("InnoDB data reads", ("status:Innodb_data_reads",)),
        ("InnoDB data writes", ("status:Innodb_data_writes",)),
        ("buffer pool reads (misses)", ("status:Innodb_buffer_pool_reads",)),
        ("buffer pool read requests", ("status:Innodb_buffer_pool_read_requests",)),
        ("pages read ahead", ("status:Innodb_buffer_pool_read_ahead",)),
        ("read-ahead evicted unused", ("status:Innodb_buffer_pool_read_ahead_evicted",)),
        ("pages written", ("status:Innodb_pages_written",)),
        ("change-buffer merges", ("innodb_status:ibuf_merges", "innodb_metrics:ibuf_merges")),
    )

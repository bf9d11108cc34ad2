"""MyRocks' per-phase LSM terms: what flush, compaction, the WAL and foreground reads did in a
phase by our recording, and RocksDB's own counters beside them (the MyRocks adapter's
phase_terms; report --by phase "summary" and explain's baseline/target carry them as
"rocksdb").

Ours (the syscall layer of the recording, by file_class and thread role):
  compaction_read_bytes / compaction_write_bytes   role compaction (rocksdb:low), SST files (all
                                                   its files but LOG, MANIFEST, OPTIONS: an SST on
                                                   an inode reused within an interval by another
                                                   kind of file is labelled, not classed sst)
  flush_write_bytes                                role flush (rocksdb:high), SST files (likewise)
  foreground_sst_read_bytes / _reads               role connection, SST files (block-cache misses
                                                   of queries and writes' read-before-write)
  wal_write_bytes / wal_writes                     WAL files, any role (the committing connection,
                                                   or the group-commit leader for several)

Defined once here:
  transactions       RocksDB write batches committed: Rocksdb_write_self + Rocksdb_write_other
                     (one per transaction that wrote to MyRocks, whichever thread wrote it to the
                     WAL). Handler_commit is not used as the count: it also counts read-only
                     statements' commits and counts an explicit transaction twice (statement and
                     COMMIT); Com_commit counts only explicit COMMITs (no autocommit writes).
                     Both are kept beside it (handler_commits, com_commit).
  wal_bytes_per_transaction, wal_writes_per_transaction   ours over transactions
  logical_bytes      Rocksdb_bytes_written: the bytes of the write batches MyRocks handed RocksDB
                     (keys and values in MyRocks' format, with the batches' headers), the
                     user's rows as the engine sees them
  write_amplification  (flush_write_bytes + compaction_write_bytes + wal_write_bytes) / logical_bytes:
                     storage bytes written per byte the user wrote, all of it ours

RocksDB's counters (deltas over the phase, status source unless said): flush_write_bytes,
compact_read_bytes, compact_write_bytes, wal_bytes; block cache hits and misses by block kind
(data, index, filter); bloom filter useful / full positive / full true positive; point gets found
in the memtable, L0, L1, L2+ (read amplification by level); stalls
(Rocksdb_stall_*: counts by cause and stall_micros); and from ROCKSDB_CFSTATS /
ROCKSDB_COMPACTION_STATS, summed over column families: compactions pending (peak of
COMPACTION_PENDING in the phase), L0 files at the phase's end and at its peak, and the highest
compaction score at the end. Pending compaction *bytes* (RocksDB's
estimate-pending-compaction-bytes) is not in MariaDB 10.11's INFORMATION_SCHEMA; the score
(above 1: the level is over its target size, compaction is behind) stands for it.
"""
from __future__ import annotations

from typing import Any, Callable

#: RocksDB's status counters kept per phase (delta): key in our terms -> SHOW GLOBAL STATUS name
ENGINE_COUNTERS: dict[str, str] = {
    "flush_write_bytes": "Rocksdb_flush_write_bytes",
    "compact_read_bytes": "Rocksdb_compact_read_bytes",
    "compact_write_bytes": "Rocksdb_compact_write_bytes",
    "wal_bytes": "Rocksdb_wal_bytes",
    "bytes_written": "Rocksdb_bytes_written",
    "block_cache_data_miss": "Rocksdb_block_cache_data_miss",
    "block_cache_data_hit": "Rocksdb_block_cache_data_hit",
    "block_cache_index_miss": "Rocksdb_block_cache_index_miss",
    "block_cache_index_hit": "Rocksdb_block_cache_index_hit",
    "block_cache_filter_miss": "Rocksdb_block_cache_filter_miss",
    "block_cache_filter_hit": "Rocksdb_block_cache_filter_hit",
    "block_cache_miss": "Rocksdb_block_cache_miss",
    "block_cache_hit": "Rocksdb_block_cache_hit",
    "bloom_filter_useful": "Rocksdb_bloom_filter_useful",
    "bloom_filter_full_positive": "Rocksdb_bloom_filter_full_positive",
    "bloom_filter_full_true_positive": "Rocksdb_bloom_filter_full_true_positive",
    "stall_total_stops": "Rocksdb_stall_total_stops",
    "stall_total_slowdowns": "Rocksdb_stall_total_slowdowns",
    "stall_micros": "Rocksdb_stall_micros",
    "stall_l0_file_count_limit_stops": "Rocksdb_stall_l0_file_count_limit_stops",
    "stall_l0_file_count_limit_slowdowns": "Rocksdb_stall_l0_file_count_limit_slowdowns",
    "stall_memtable_limit_stops": "Rocksdb_stall_memtable_limit_stops",
    "stall_memtable_limit_slowdowns": "Rocksdb_stall_memtable_limit_slowdowns",
    "stall_pending_compaction_limit_stops": "Rocksdb_stall_pending_compaction_limit_stops",
    "stall_pending_compaction_limit_slowdowns": "Rocksdb_stall_pending_compaction_limit_slowdowns",
    "write_self": "Rocksdb_write_self",
    "write_other": "Rocksdb_write_other",
    "rows_read": "Rocksdb_rows_read",
    "rows_inserted": "Rocksdb_rows_inserted",
    "queries_point": "Rocksdb_queries_point",
    # read amplification by level: where point gets found their key
    "memtable_hit": "Rocksdb_memtable_hit",
    "get_hit_l0": "Rocksdb_get_hit_l0",
    "get_hit_l1": "Rocksdb_get_hit_l1",
    "get_hit_l2_and_up": "Rocksdb_get_hit_l2_and_up",
    "queries_range": "Rocksdb_queries_range",
}

#: what flush and compaction threads write besides SSTs (their LOG lines, MANIFEST edits)
NOT_SST = ("info_log", "manifest", "options", "wal", "trash")

#: the block kinds RocksDB's block cache counts hits and misses of
BLOCK_KINDS = ("data", "index", "filter")


def has_rocksdb(counters: dict[str, float]) -> bool:
    """Whether a phase's counters come from a server with MyRocks (its status variables)."""
    return "status:Rocksdb_bytes_written" in counters or "status:Rocksdb_block_cache_miss" in counters


def _sum_matching(counters: dict[str, float], prefix: str, suffix: str) -> float | None:
    vals = [v for k, v in counters.items() if k.startswith(prefix) and k.endswith(suffix)]
    return sum(vals) if vals else None


def _max_matching(counters: dict[str, float], prefix: str, suffix: str) -> float | None:
    vals = [v for k, v in counters.items() if k.startswith(prefix) and k.endswith(suffix)]
    return max(vals) if vals else None


def io_terms(rows: list[dict]) -> dict[str, float]:
    """Our bytes and operations by LSM job from report rows (--by file_class,role, syscall layer)."""
    out = {"compaction_read_bytes": 0.0, "compaction_write_bytes": 0.0, "flush_write_bytes": 0.0,
           "foreground_sst_read_bytes": 0.0, "foreground_sst_reads": 0.0,
           "wal_write_bytes": 0.0, "wal_writes": 0.0}
    for r in rows:
        fc, role, op = r.get("file_class"), r.get("role"), r.get("op")
        b, n = float(r.get("bytes") or 0), float(r.get("count") or 0)
        if role in ("compaction", "flush") and fc not in NOT_SST:
            # flush and compaction threads read and write SSTs, besides the LOG and the MANIFEST;
            # an SST written on an inode that a deleted file of another kind had in the same
            # interval is labelled "[N files reusing one inode]" (file_class other): still theirs
            if role == "compaction" and op == "read":
                out["compaction_read_bytes"] += b
            elif role == "compaction" and op == "write":
                out["compaction_write_bytes"] += b
            elif role == "flush" and op == "write":
                out["flush_write_bytes"] += b
        elif fc == "sst" and role == "connection" and op == "read":
            out["foreground_sst_read_bytes"] += b
            out["foreground_sst_reads"] += n
        elif fc == "wal" and op == "write":
            out["wal_write_bytes"] += b
            out["wal_writes"] += n
    return out


def _per(n: float | None, d: float | None) -> float | None:
    return None if n is None or not d else round(n / d, 6)


def terms(io: dict[str, float], counters: dict[str, float]) -> dict[str, Any]:
    """The phase's LSM terms from our IO (io_terms) and its counter deltas (PhaseStats.counters)."""
    engine: dict[str, float | None] = {k: counters.get(f"status:{v}") for k, v in ENGINE_COUNTERS.items()}
    engine["compaction_pending_max"] = _sum_matching(counters, "rocksdb_cfstats_max:", ":COMPACTION_PENDING")
    engine["l0_files_end"] = _sum_matching(counters, "rocksdb_compaction_last:", ":L0:NumFiles")
    engine["l0_files_max"] = _sum_matching(counters, "rocksdb_compaction_max:", ":L0:NumFiles")
    engine["compaction_score_max"] = _max_matching(counters, "rocksdb_compaction_last:", ":Score")
    ws, wo = engine["write_self"], engine["write_other"]
    txns = None if ws is None else ws + (wo or 0.0)
    logical = engine["bytes_written"]
    written = io["flush_write_bytes"] + io["compaction_write_bytes"] + io["wal_write_bytes"]
    out: dict[str, Any] = {k: int(v) for k, v in io.items()}
    out.update({
        "transactions": None if txns is None else int(txns),
        "transactions_source": "Rocksdb_write_self + Rocksdb_write_other",
        "handler_commits": _int(counters.get("status:Handler_commit")),
        "com_commit": _int(counters.get("status:Com_commit")),
        "wal_bytes_per_transaction": _per(io["wal_write_bytes"], txns),
        "wal_writes_per_transaction": _per(io["wal_writes"], txns),
        "logical_bytes": _int(logical),
        "logical_bytes_source": "Rocksdb_bytes_written",
        "write_amplification": _per(written, logical),
        "compaction_read_amplification": _per(io["compaction_read_bytes"], logical),
        "engine": {k: (None if v is None else (round(v, 6) if k == "compaction_score_max" else int(v)))
                   for k, v in engine.items()},
    })
    return out


def _int(v: float | None) -> int | None:
    return None if v is None else int(v)


def phase_terms(counters: dict[str, float], io_rows: Callable[[], list[dict]]) -> dict[str, Any] | None:
    """The LSM terms of one phase (None: the server had no MyRocks); io_rows() gives the phase's
    syscall-layer report rows by file_class and role."""
    if not has_rocksdb(counters):
        return None
    return terms(io_terms(io_rows()), counters)


def phase_line(t: dict[str, Any]) -> str:
    """One line of a phase's LSM terms for explain's text (MiB, per transaction, amplification)."""
    mib = 2 ** 20
    e = t.get("engine") or {}

    def m(v: Any) -> str:
        return "n/a" if v is None else f"{v / mib:.3g} MiB"

    def g(v: Any) -> str:
        return "n/a" if v is None else f"{v:.3g}"

    parts = [f"flush {m(t['flush_write_bytes'])} (RocksDB {m(e.get('flush_write_bytes'))})",
             f"compaction read {m(t['compaction_read_bytes'])} (RocksDB {m(e.get('compact_read_bytes'))}) "
             f"write {m(t['compaction_write_bytes'])} (RocksDB {m(e.get('compact_write_bytes'))})",
             f"WAL {m(t['wal_write_bytes'])} (RocksDB {m(e.get('wal_bytes'))}), "
             f"{g(t['wal_writes_per_transaction'])} writes and {g(t['wal_bytes_per_transaction'])} B per transaction",
             f"foreground SST reads {m(t['foreground_sst_read_bytes'])}",
             f"write amplification {g(t['write_amplification'])} (of {m(t['logical_bytes'])} Rocksdb_bytes_written)"]
    misses = [f"{k} {e.get(f'block_cache_{k}_miss')}" for k in BLOCK_KINDS if e.get(f"block_cache_{k}_miss") is not None]
    if misses:
        parts.append("block cache misses " + ", ".join(misses))
    if e.get("stall_micros"):
        parts.append(f"write stalls {e['stall_micros'] / 1e6:.3g} s")
    return "rocksdb: " + "; ".join(parts)

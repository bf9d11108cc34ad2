"""MyRocks' counter sources (the MyRocks adapter's "counters"; collectors/counters.py reads
them after the server's own SHOW GLOBAL STATUS, which already holds MyRocks' `Rocksdb_*`
status: block cache hits/misses by block kind, bytes read/written, flush and compaction bytes,
WAL bytes and syncs, stalls).

rocksdb_perf_context  INFORMATION_SCHEMA.ROCKSDB_PERF_CONTEXT_GLOBAL: RocksDB's perf context
                      summed over all threads, by STAT_TYPE (BLOCK_READ_COUNT, BLOCK_READ_BYTE,
                      BLOCK_CACHE_HIT_COUNT, GET_FROM_MEMTABLE_COUNT, BLOOM_SST_MISS_COUNT, ...;
                      57 rows on 10.11). Counts only at rocksdb_perf_context_level >= 2
                      (not switched on here: it costs every read some clock calls).
rocksdb_cfstats       INFORMATION_SCHEMA.ROCKSDB_CFSTATS per column family as "<cf>:<STAT_TYPE>"
                      (memtables' size and entries, COMPACTION_PENDING, MEM_TABLE_FLUSH_PENDING,
                      NUM_LIVE_VERSIONS; gauges).
rocksdb_compaction    INFORMATION_SCHEMA.ROCKSDB_COMPACTION_STATS per column family and level as
                      "<cf>:<LEVEL>:<TYPE>" (NumFiles, SizeBytes, ReadGB, WriteGB, WriteAmp, ... per
                      level L0..Ln and Sum: what compaction did and where the files are).

Each reads ~20-60 rows (tens of ms on a busy 2-core machine, like SHOW ENGINE INNODB STATUS).
On a server without the ROCKSDB plugin active the sources read nothing (first_sight finds out
once), so the adapter can be asked for every server without notes about missing tables.
"""
from __future__ import annotations

from typing import Any, Callable

from ioattr.collectors.engine import EngineError
from ioattr.engines.base import Connection, CounterRow, CounterSource


def rocksdb_active(conn: Connection) -> bool:
    """Whether the server has the ROCKSDB storage engine plugin loaded and active."""
    try:
        rows = conn.query("SELECT PLUGIN_STATUS FROM INFORMATION_SCHEMA.PLUGINS WHERE PLUGIN_NAME = 'ROCKSDB'")
    except EngineError:
        return False
    return bool(rows) and str(rows[0][0]).upper() == "ACTIVE"


def _text(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


class _RocksdbSource(CounterSource):
    """A source that reads only on servers with MyRocks active."""

    def __init__(self) -> None:
        self.active: bool | None = None  # unknown until first_sight

    def first_sight(self, conn: Connection, settings: dict[str, Any] | None,
                    note: Callable[..., None]) -> None:
        self.active = rocksdb_active(conn)

    def read(self, conn: Connection) -> list[CounterRow]:
        if self.active is None:
            self.active = rocksdb_active(conn)
        return self._rows(conn) if self.active else []

    def _rows(self, conn: Connection) -> list[CounterRow]:
        raise NotImplementedError


def perf_context_rows(rows: list[tuple]) -> list[CounterRow]:
    """ROCKSDB_PERF_CONTEXT_GLOBAL (STAT_TYPE, VALUE) rows as counters."""
    return [(_text(name), float(value), None) for name, value in rows if value is not None]


def cfstats_rows(rows: list[tuple]) -> list[CounterRow]:
    """ROCKSDB_CFSTATS (CF_NAME, STAT_TYPE, VALUE) rows as "<cf>:<STAT_TYPE>" counters."""
    return [(f"{_text(cf)}:{_text(stat)}", float(value), None) for cf, stat, value in rows if value is not None]


def compaction_rows(rows: list[tuple]) -> list[CounterRow]:
    """ROCKSDB_COMPACTION_STATS (CF_NAME, LEVEL, TYPE, VALUE) rows as "<cf>:<LEVEL>:<TYPE>" counters."""
    return [(f"{_text(cf)}:{_text(level)}:{_text(kind)}", float(value), None)
            for cf, level, kind, value in rows if value is not None]


class PerfContextGlobal(_RocksdbSource):
    source = "rocksdb_perf_context"

    def _rows(self, conn: Connection) -> list[CounterRow]:
        return perf_context_rows(conn.query(
            "SELECT STAT_TYPE, VALUE FROM INFORMATION_SCHEMA.ROCKSDB_PERF_CONTEXT_GLOBAL"))


class CfStats(_RocksdbSource):
    source = "rocksdb_cfstats"

    def _rows(self, conn: Connection) -> list[CounterRow]:
        return cfstats_rows(conn.query("SELECT CF_NAME, STAT_TYPE, VALUE FROM INFORMATION_SCHEMA.ROCKSDB_CFSTATS"))


class CompactionStats(_RocksdbSource):
    source = "rocksdb_compaction"

    def _rows(self, conn: Connection) -> list[CounterRow]:
        return compaction_rows(conn.query(
            "SELECT CF_NAME, LEVEL, TYPE, VALUE FROM INFORMATION_SCHEMA.ROCKSDB_COMPACTION_STATS"))

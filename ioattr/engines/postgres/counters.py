"""PostgreSQL's own counters beside ours (the PostgreSQL adapter's "counters"; collectors/counters.py
reads them once per interval and at every phase boundary, through the cluster's connection,
server.PgConnection).

pg_statio          pg_statio_user_tables and pg_statio_user_indexes of every database that accepts
                   connections, as "<database>.<schema>.<relation>:<column>" (the names meta.json
                   "relations" and the `index` dimension use): heap_blks_read/hit, idx_blks_read/hit,
                   toast_blks_read/hit, tidx_blks_read/hit for tables, idx_blks_read/hit for
                   indexes. Only relations with some block access are listed (an absent earlier row
                   means 0). A "read" is a shared-buffers miss: one 8 KiB pread, which the page cache
                   may serve (ours, at the syscall layer, counts it alike).
pg_stat_bgwriter   the one row: buffers_checkpoint (written by the checkpointer), buffers_clean (by
                   the background writer), buffers_backend (by backends themselves), buffers_alloc,
                   buffers_backend_fsync, checkpoints_timed/req, checkpoint_write_time/sync_time
                   (ms), maxwritten_clean.
pg_stat_database   per database "<database>:<column>": blks_read, blks_hit, temp_files, temp_bytes,
                   xact_commit, xact_rollback, tup_*, blk_read_time, blk_write_time, deadlocks,
                   conflicts; and the cluster's totals of blks_read and blks_hit (no prefix), which
                   `top` and the exporter show as the cache misses and requests, and of
                   tup_inserted (the rows inserted of explain's and report's per-insert terms),
                   xact_commit and xact_rollback (the transactions of the rates, less
                   xact_commit_ioattr: the transactions ioattr's own connections committed).
pg_stat_wal        the one row (PostgreSQL 14+): wal_records, wal_fpi (full-page images: the first
                   change to a page after a checkpoint logs the whole page), wal_bytes (of every
                   record inserted), wal_buffers_full, wal_write, wal_sync, wal_write_time,
                   wal_sync_time (ms); each process counts the records it inserts (a backend its
                   own changes' FPIs), flushed like the others. None on older servers.

PostgreSQL's statistics are flushed by each backend when it goes idle (at most once a second
unless pg_stat_force_next_flush() asked for it at once), so an interval's counters may lag the
IO by up to a second; at phase boundaries that a test or a benchmark makes after its backends
went idle they are exact. ioattr's own catalog reads count in pg_stat_database (its backends read
catalogs), not in pg_statio_user_*.
"""
from __future__ import annotations

from typing import Any

from ioattr.collectors.engine import EngineError
from ioattr.engines.base import Connection, CounterRow, CounterSource

TABLE_COLUMNS = ("heap_blks_read", "heap_blks_hit", "idx_blks_read", "idx_blks_hit", "toast_blks_read",
                 "toast_blks_hit", "tidx_blks_read", "tidx_blks_hit")
INDEX_COLUMNS = ("idx_blks_read", "idx_blks_hit")
BGWRITER_COLUMNS = ("checkpoints_timed", "checkpoints_req", "checkpoint_write_time", "checkpoint_sync_time",
                    "buffers_checkpoint", "buffers_clean", "maxwritten_clean", "buffers_backend",
                    "buffers_backend_fsync", "buffers_alloc")
DATABASE_COLUMNS = ("numbackends", "xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned",
                    "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "conflicts", "temp_files",
                    "temp_bytes", "deadlocks", "blk_read_time", "blk_write_time")
WAL_COLUMNS = ("wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full", "wal_write", "wal_sync",
               "wal_write_time", "wal_sync_time")
#: the cluster-wide totals the status counters (top, exporter) read: pg_stat_database summed
STATUS_SQL = "SELECT sum(blks_read), sum(blks_hit) FROM pg_stat_database"
STATUS_NAMES = ("blks_read", "blks_hit")
#: the cluster's totals pg_stat_database adds without a database prefix: the status counters, and
#: the rows inserted (explain's and report --by phase's per-insert terms: model/storage.ROWS_INSERTED)
TOTALS = STATUS_NAMES + ("tup_inserted", "xact_commit", "xact_rollback")
#: the transactions ioattr's own connections committed (server._Counted), in xact_commit's totals too
OWN_COMMITS = "xact_commit_ioattr"


def _rows(name: str, columns: tuple[str, ...], values: tuple) -> list[CounterRow]:
    return [(f"{name}:{c}", float(v), None) for c, v in zip(columns, values) if v is not None]


def _per_database(conn: Connection, sql: str) -> list[tuple[str, list[tuple]]]:
    """(database, rows) of one query run in every database (server.PgConnection.query_databases)."""
    each = getattr(conn, "query_databases", None)
    if each is None:
        raise EngineError("not a PostgreSQL connection")
    return each(sql)


class PgStatio(CounterSource):
    source = "pg_statio"

    TABLES = ("SELECT schemaname, relname, " + ", ".join(TABLE_COLUMNS) + " FROM pg_statio_user_tables "
              "WHERE coalesce(heap_blks_read, 0) + coalesce(heap_blks_hit, 0) + coalesce(idx_blks_read, 0) "
              "+ coalesce(idx_blks_hit, 0) + coalesce(toast_blks_read, 0) + coalesce(toast_blks_hit, 0) > 0")
    INDEXES = ("SELECT schemaname, indexrelname, " + ", ".join(INDEX_COLUMNS) + " FROM pg_statio_user_indexes "
               "WHERE coalesce(idx_blks_read, 0) + coalesce(idx_blks_hit, 0) > 0")

    def read(self, conn: Connection) -> list[CounterRow]:
        out: list[CounterRow] = []
        for db, rows in _per_database(conn, self.TABLES):
            for schema, rel, *values in rows:
                out += _rows(f"{db}.{schema}.{rel}", TABLE_COLUMNS, tuple(values))
        for db, rows in _per_database(conn, self.INDEXES):
            for schema, rel, *values in rows:
                out += _rows(f"{db}.{schema}.{rel}", INDEX_COLUMNS, tuple(values))
        return out


class PgStatBgwriter(CounterSource):
    source = "pg_stat_bgwriter"

    def read(self, conn: Connection) -> list[CounterRow]:
        rows = conn.query("SELECT " + ", ".join(BGWRITER_COLUMNS) + " FROM pg_stat_bgwriter")
        return [(c, float(v), None) for c, v in zip(BGWRITER_COLUMNS, rows[0]) if v is not None] if rows else []


class PgStatWal(CounterSource):
    source = "pg_stat_wal"

    def read(self, conn: Connection) -> list[CounterRow]:
        try:
            rows = conn.query("SELECT " + ", ".join(WAL_COLUMNS) + " FROM pg_stat_wal")
        except EngineError as e:
            if "does not exist" in str(e):  # PostgreSQL before 14 has no pg_stat_wal: nothing to add
                return []
            raise
        return [(c, float(v), None) for c, v in zip(WAL_COLUMNS, rows[0]) if v is not None] if rows else []


class PgStatDatabase(CounterSource):
    source = "pg_stat_database"

    def read(self, conn: Connection) -> list[CounterRow]:
        out: list[CounterRow] = []
        totals = dict.fromkeys(TOTALS, 0.0)
        for datname, *values in conn.query("SELECT datname, " + ", ".join(DATABASE_COLUMNS)
                                           + " FROM pg_stat_database WHERE datname IS NOT NULL"):
            out += _rows(str(datname), DATABASE_COLUMNS, tuple(values))
            for c, v in zip(DATABASE_COLUMNS, values):
                if c in totals and v is not None:
                    totals[c] += float(v)
        # the shared catalogs' row (datname NULL) counts too in the block totals
        for v_read, v_hit in conn.query("SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname IS NULL"):
            totals["blks_read"] += float(v_read or 0)
            totals["blks_hit"] += float(v_hit or 0)
        out += [(name, v, None) for name, v in totals.items()]
        own = getattr(getattr(conn, "server", None), "own_transactions", None)
        if isinstance(own, int):
            out.append((OWN_COMMITS, float(own), None))
        return out


def status_rows(conn: Any) -> list[tuple[str, Any]]:
    """(name, value) of the cluster's status counters (STATUS_NAMES), as SHOW GLOBAL STATUS gives
    a MySQL server's: what live/server_counters.py maps to cache_misses and cache_requests."""
    rows = conn.query(STATUS_SQL)
    if not rows:
        return []
    return [(n, int(v)) for n, v in zip(STATUS_NAMES, rows[0]) if v is not None]

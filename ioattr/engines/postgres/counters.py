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
                   (ms), maxwritten_clean. PostgreSQL 17+ has the checkpointer's in
                   pg_stat_checkpointer (num_timed, num_requested, write_time, sync_time,
                   buffers_written) and no buffers_backend: read there and from pg_stat_io under
                   the names above.
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
                   wal_sync_time (ms; 18: in pg_stat_io, object wal); each process counts the
                   records it inserts (a backend its own changes' FPIs), flushed like the others.
                   None on older servers.

pg_stat_io         (16+) per "<backend_type>:<object>:<context>:<column>": reads, writes, writebacks,
                   extends, hits, evictions, reuses, fsyncs and read_bytes, write_bytes,
                   extend_bytes (18's columns; 16-17: the counts times op_bytes), and the
                   cluster's totals "<column>". 18's rows for object wal hold the WAL writes
                   and syncs pg_stat_wal had.
pg_stat_backend_io (18+) pg_stat_get_backend_io() per live backend (not ioattr's own), as
                   "<pid>:<object>:<column>" over the contexts: reads, read_bytes, writes,
                   write_bytes, extends, extend_bytes, hits. Each starts at 0 when its backend is
                   first listed (PostgresAdapter.counters_from_zero). None before 18.
pg_stat_statements where the extension is installed: calls, shared_blks_hit/read/dirtied/written,
                   local_blks_*, temp_blks_read/written summed over every statement but
                   ioattr's own.

PostgreSQL's statistics are flushed by each backend when it goes idle (at most once a second
unless pg_stat_force_next_flush() asked for it at once), so an interval's counters may lag the
IO by up to a second; at phase boundaries that a test or a benchmark makes after its backends
went idle they are exact. ioattr's own catalog reads count in pg_stat_database (its backends read
catalogs), not in pg_statio_user_*.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ioattr.collectors.engine import INTERNAL_TAG, EngineError
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
#: the rows inserted (explain's and report --by phase's per-insert terms: the adapter's rows_inserted)
TOTALS = STATUS_NAMES + ("tup_inserted", "xact_commit", "xact_rollback")
#: the transactions ioattr's own connections committed (server._Counted), in xact_commit's totals too
OWN_COMMITS = "xact_commit_ioattr"


def _rows(name: str, columns: tuple[str, ...], values: tuple) -> list[CounterRow]:
    return [(f"{name}:{c}", float(v), None) for c, v in zip(columns, values) if v is not None]


def _one_row(rows: list[tuple], names: Iterable[str]) -> list[CounterRow]:
    """A one-row view's values under `names`, but its nulls (nothing without a row)."""
    return [(c, float(v), None) for c, v in zip(names, rows[0]) if v is not None] if rows else []


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


#: PostgreSQL 17 moved the checkpointer's columns to pg_stat_checkpointer, renamed: kept under
#: their pg_stat_bgwriter names (the findings and every recording read those)
CHECKPOINTER_COLUMNS = {"num_timed": "checkpoints_timed", "num_requested": "checkpoints_req",
                        "write_time": "checkpoint_write_time", "sync_time": "checkpoint_sync_time",
                        "buffers_written": "buffers_checkpoint"}
BGWRITER_17_COLUMNS = ("buffers_clean", "maxwritten_clean", "buffers_alloc")
#: and dropped buffers_backend(_fsync): pg_stat_io's relation writes and fsyncs by every process
#: but the checkpointer and the background writer say the same
BACKEND_WRITES_SQL = ("SELECT sum(writes), sum(fsyncs) FROM pg_stat_io WHERE object = 'relation' "
                      "AND backend_type NOT IN ('checkpointer', 'background writer')")


def server_version_num(conn: Connection) -> int:
    """The server's version as a number (150004, 180001): which columns a view has."""
    rows = conn.query("SELECT current_setting('server_version_num')::int")
    return int(rows[0][0]) if rows else 0


class _VersionedSource(CounterSource):
    """A source whose view's columns depend on the server's version, read at its first use (a
    source is per server)."""

    def __init__(self) -> None:
        self.version: int | None = None

    def server_version(self, conn: Connection) -> int:
        if self.version is None:
            self.version = server_version_num(conn)
        return self.version


class PgStatBgwriter(_VersionedSource):
    """pg_stat_bgwriter's counters under their names up to PostgreSQL 16, from pg_stat_bgwriter,
    pg_stat_checkpointer and pg_stat_io on 17 and later."""

    source = "pg_stat_bgwriter"

    def read(self, conn: Connection) -> list[CounterRow]:
        if self.server_version(conn) < 170000:
            return _one_row(conn.query("SELECT " + ", ".join(BGWRITER_COLUMNS) + " FROM pg_stat_bgwriter"),
                            BGWRITER_COLUMNS)
        return (_one_row(conn.query("SELECT " + ", ".join(BGWRITER_17_COLUMNS) + " FROM pg_stat_bgwriter"),
                         BGWRITER_17_COLUMNS)
                + _one_row(conn.query("SELECT " + ", ".join(CHECKPOINTER_COLUMNS) + " FROM pg_stat_checkpointer"),
                           CHECKPOINTER_COLUMNS.values())
                + _one_row(conn.query(BACKEND_WRITES_SQL), ("buffers_backend", "buffers_backend_fsync")))


class PgStatWal(_VersionedSource):
    """pg_stat_wal (14+); 18 moved its write and sync counts and times to pg_stat_io (object
    wal), whose rows this source leaves to PgStatIo."""

    source = "pg_stat_wal"

    def read(self, conn: Connection) -> list[CounterRow]:
        version = self.server_version(conn)
        if version < 140000:  # no pg_stat_wal before 14: nothing to add
            return []
        columns = WAL_COLUMNS if version < 180000 else WAL_COLUMNS[:4]
        return _one_row(conn.query("SELECT " + ", ".join(columns) + " FROM pg_stat_wal"), columns)


#: a page image's largest size in WAL (BLCKSZ; the hole in the middle of a page is left out, and
#: wal_compression shrinks it further): what bounds the full-page images' share of the WAL bytes
PAGE_IMAGE_MAX = 8192


def wal_terms(counters: Any) -> dict[str, Any]:
    """A phase's WAL as pg_stat_wal counted it (every process's records, flushed like the other
    statistics): records, full-page images and bytes inserted, and what the images can be of
    those bytes: at most 8 KiB each (`wal_fpi_bytes_max`; PostgreSQL up to 18 counts images, not
    their bytes). {} without pg_stat_wal (before 14, or no connection)."""
    fpi, nbytes = counters.get("pg_stat_wal:wal_fpi"), counters.get("pg_stat_wal:wal_bytes")
    if fpi is None or nbytes is None:
        return {}
    records = counters.get("pg_stat_wal:wal_records")
    most = min(fpi * PAGE_IMAGE_MAX, nbytes)
    return {"wal_records": records, "wal_fpi": fpi, "wal_bytes": nbytes, "wal_fpi_bytes_max": most,
            "wal_fpi_share_max": round(most / nbytes, 4) if nbytes else None}


def wal_line(terms: Any) -> str | None:
    """wal_terms in one line of report's text (None: no pg_stat_wal)."""
    if terms.get("wal_bytes") is None:
        return None
    share = terms.get("wal_fpi_share_max")
    return (f"WAL {terms['wal_bytes'] / 1048576:,.2f} MiB inserted: {terms.get('wal_records') or 0:,.0f} records, "
            f"{terms['wal_fpi']:,.0f} full-page images (at most {terms['wal_fpi_bytes_max'] / 1048576:,.2f} MiB, "
            f"{'-' if share is None else f'{share:.0%}'} of it)")


#: pg_stat_io's counts (16+), per (backend_type, object, context) row
IO_COLUMNS = ("reads", "writes", "writebacks", "extends", "hits", "evictions", "reuses", "fsyncs")
#: its bytes: 18's own columns; 16 and 17 have one op_bytes (BLCKSZ) per row instead
IO_BYTES = ("read_bytes", "write_bytes", "extend_bytes")


class PgStatIo(_VersionedSource):
    """pg_stat_io (PostgreSQL 16+): "<backend_type>:<object>:<context>:<column>" for every row,
    and the cluster's totals "<column>" (no prefix). Bytes are 18's read_bytes, write_bytes and
    extend_bytes; on 16 and 17 reads, writes and extends times op_bytes (what 18 sums). Nothing
    on older servers."""

    source = "pg_stat_io"

    def read(self, conn: Connection) -> list[CounterRow]:
        version = self.server_version(conn)
        if version < 160000:
            return []
        if version >= 180000:
            byte_sql = ", ".join(IO_BYTES)
        else:
            byte_sql = ", ".join(f"{c} * op_bytes" for c in ("reads", "writes", "extends"))
        columns = IO_COLUMNS + IO_BYTES
        out: list[CounterRow] = []
        totals: dict[str, float] = {}
        for btype, obj, ctx, *values in conn.query(
                f"SELECT backend_type, object, context, {', '.join(IO_COLUMNS)}, {byte_sql} FROM pg_stat_io"):
            for c, v in zip(columns, values):
                if v is None:
                    continue
                out.append((f"{btype}:{obj}:{ctx}:{c}", float(v), None))
                totals[c] = totals.get(c, 0.0) + float(v)
        return out + [(c, v, None) for c, v in totals.items()]


#: pg_stat_get_backend_io()'s columns summed per backend and object (18+)
BACKEND_IO_COLUMNS = ("reads", "read_bytes", "writes", "write_bytes", "extends", "extend_bytes", "hits")
#: the backend types whose processes' own counters are read (pg_stat_activity's and pg_stat_io's
#: backend_type): what pg_stat_io counts for these types is what every such backend did, those
#: read and those gone (backend_io_terms)
BACKEND_IO_TYPES = ("client backend", "autovacuum worker", "walsender", "background worker")
BACKEND_IO_SQL = ("SELECT a.pid, b.object, " + ", ".join(f"sum(b.{c})" for c in BACKEND_IO_COLUMNS)
                  + " FROM pg_stat_activity a CROSS JOIN LATERAL pg_stat_get_backend_io(a.pid) b "
                    "WHERE a.backend_type IN (" + ", ".join(f"'{t}'" for t in BACKEND_IO_TYPES) + ") "
                    "GROUP BY a.pid, b.object")
#: pg_stat_backend_io's name for ioattr's own backends' counters, summed
OWN_BACKENDS = "[ioattr]"
#: the row of backend_io_terms for what backends gone before their next reading did
EXITED_BACKENDS = "[exited backends]"


class PgStatBackendIo(_VersionedSource):
    """pg_stat_get_backend_io() (PostgreSQL 18+: each backend's own pg_stat_io) of every client
    backend, autovacuum worker, walsender and background worker alive at the reading, but
    ioattr's own, as "<pid>:<object>:<column>" summed over the IO contexts (reads, read_bytes,
    writes, write_bytes, extends, extend_bytes, hits), and "backends" (a gauge: how many were
    listed; at every reading, so the first reading's time is known). A backend's counters start at 0 and are
    listed only while it lives (PostgresAdapter.counters_from_zero): what a backend that exits
    between two readings did since the last one is in pg_stat_io only (backend_io_terms:
    "[exited backends]"). ioattr's own backends are summed as "[ioattr]:<object>:<column>".
    Nothing before 18 (the function is new in 18): the recorder says so once (`unavailable`)."""

    source = "pg_stat_backend_io"

    def unavailable(self, conn: Connection) -> str | None:
        """Why this server has no per-backend IO (None: it has)."""
        version = self.server_version(conn)
        if version < 180000:
            return (f"no per-backend IO counters (pg_stat_get_backend_io is PostgreSQL 18's; this server is "
                    f"{version // 10000})")
        return None

    def first_sight(self, conn: Connection, settings: dict[str, Any] | None,
                    note: Callable[..., None]) -> None:
        why = self.unavailable(conn)
        if why is not None:
            note(("backend_io",), why)

    def read(self, conn: Connection) -> list[CounterRow]:
        if self.unavailable(conn) is not None:
            return []
        own = getattr(getattr(conn, "server", None), "own_pids", None) or set()
        out: list[CounterRow] = []
        listed: set[int] = set()
        mine: dict[str, list[float | None]] = {}
        for pid, obj, *values in conn.query(BACKEND_IO_SQL):
            if pid is None:
                continue
            if int(pid) in own:
                # ioattr's own, summed: not the workload's, but in pg_stat_io's client backends
                acc = mine.setdefault(str(obj), [None] * len(values))
                for i, v in enumerate(values):
                    if v is not None:
                        acc[i] = (acc[i] or 0.0) + float(v)
                continue
            listed.add(int(pid))
            out += _rows(f"{int(pid)}:{obj}", BACKEND_IO_COLUMNS, tuple(values))
        for obj, acc in mine.items():
            out += _rows(f"{OWN_BACKENDS}:{obj}", BACKEND_IO_COLUMNS, tuple(acc))
        # a gauge at every reading, so the source's first reading is known even when no backend
        # was listed then (a backend first listed later started at 0 after it: phase_sums)
        return out + [("backends", float(len(listed)), None)]


def backend_io_terms(counters: Any, obj: str = "relation") -> dict[str, Any] | None:
    """A phase's IO per backend (PostgreSQL 18+), object `obj` (pg_stat_io's; "relation": every
    fork of tables and indexes), from its counter deltas: one row per backend read
    (pg_stat_backend_io "<pid>:..."), one for ioattr's own ("[ioattr]") and one for the backends
    gone before their next reading ("[exited backends]"): pg_stat_io's delta for the backend
    types read (BACKEND_IO_TYPES, every context) less the rows read. A backend's own counters
    vanish at its exit, so what it did after its last reading is counted only there (pgbench's
    backends, a short connection opened and closed between two readings); the rows sum to
    pg_stat_io's by construction. Each row: reads, read_bytes, writes, write_bytes, extends,
    extend_bytes, hits. None without pg_stat_backend_io or pg_stat_io in the phase."""
    per: dict[str, dict[str, float]] = {}
    server = dict.fromkeys(BACKEND_IO_COLUMNS, 0.0)
    seen_io = False
    for key, v in counters.items():
        src, _, rest = key.partition(":")
        if src == PgStatBackendIo.source:
            who, _, tail = rest.partition(":")
            o, _, col = tail.partition(":")
            if o == obj and col in server:
                per.setdefault(who, dict.fromkeys(BACKEND_IO_COLUMNS, 0.0))[col] += float(v)
        elif src == PgStatIo.source:
            parts = rest.split(":")
            if len(parts) == 4:
                seen_io = True
                btype, o, _ctx, col = parts
                if btype in BACKEND_IO_TYPES and o == obj and col in server:
                    server[col] += float(v)
    if f"{PgStatBackendIo.source}:backends" not in counters or not seen_io:
        return None
    exited = {c: server[c] - sum(r[c] for r in per.values()) for c in BACKEND_IO_COLUMNS}

    def pid_order(who: str) -> tuple:
        return (who == OWN_BACKENDS, int(who) if who.isdigit() else 0, who)
    rows = [{"backend": who, **{c: r[c] for c in BACKEND_IO_COLUMNS}} for who, r in sorted(per.items(),
                                                                                           key=lambda x: pid_order(x[0]))]
    rows.append({"backend": EXITED_BACKENDS, **exited})
    return {"object": obj, "rows": rows, "pg_stat_io": server,
            "source": "pg_stat_get_backend_io() per backend; [exited backends]: pg_stat_io ("
                      + ", ".join(BACKEND_IO_TYPES) + ") less the backends read"}


def backend_io_line(terms: Any) -> str | None:
    """backend_io_terms in a few words of report's text (None: none)."""
    if not isinstance(terms, dict) or not terms.get("rows"):
        return None
    rows = terms["rows"]
    listed = [r for r in rows if r["backend"] not in (OWN_BACKENDS, EXITED_BACKENDS)]
    gone = next(r for r in rows if r["backend"] == EXITED_BACKENDS)
    mib = 1048576
    return (f"{terms['object']} reads per backend (pg_stat_get_backend_io): {len(listed):,} "
            f"backend{'' if len(listed) == 1 else 's'} read "
            f"{sum(r['read_bytes'] for r in listed) / mib:,.2f} MiB, {EXITED_BACKENDS} {gone['read_bytes'] / mib:,.2f} "
            f"MiB, of pg_stat_io's {terms['pg_stat_io']['read_bytes'] / mib:,.2f} MiB")


#: pg_stat_statements' block counters (and calls), summed over its statements
STATEMENTS_COLUMNS = ("calls", "shared_blks_hit", "shared_blks_read", "shared_blks_dirtied", "shared_blks_written",
                      "local_blks_hit", "local_blks_read", "local_blks_dirtied", "local_blks_written",
                      "temp_blks_read", "temp_blks_written")
EXTENSION_SQL = "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'"


class PgStatStatements(CounterSource):
    """pg_stat_statements' block counters where the extension is installed (and preloaded):
    the sums over every statement it tracks (every database and user), but ioattr's own (tagged
    with collectors.engine.INTERNAL_TAG at both ends, server._Counted: pg_stat_statements keeps
    the trailing one in its text on every version, the leading one up to 17), as
    "<column>". Nothing where no database has the extension."""

    source = "pg_stat_statements"
    SQL = ("SELECT " + ", ".join(f"coalesce(sum({c}), 0)" for c in STATEMENTS_COLUMNS)
           + " FROM pg_stat_statements WHERE query NOT LIKE '%" + INTERNAL_TAG.strip().replace("'", "''") + "%'")

    def read(self, conn: Connection) -> list[CounterRow]:
        where = [db for db, rows in _per_database(conn, EXTENSION_SQL) if rows]
        if not where:
            return []
        query = getattr(conn, "query")
        return _one_row(query(self.SQL, where[0]), STATEMENTS_COLUMNS)


class PgStatDatabase(CounterSource):
    source = "pg_stat_database"

    def read(self, conn: Connection) -> list[CounterRow]:
        out: list[CounterRow] = []
        totals = dict.fromkeys(TOTALS, 0.0)
        # ioattr's own transactions that the reading below holds: all it committed before it,
        # once its backends have published them (PostgresServer.flush_own_stats)
        server = getattr(conn, "server", None)
        flush = getattr(server, "flush_own_stats", None)
        own = flush() if callable(flush) else None
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
        if isinstance(own, int):
            out.append((OWN_COMMITS, float(own), None))
        return out


#: every user table's bytes on disk, its indexes, TOAST and forks included (compare's "data on disk")
SIZES_SQL = ("SELECT n.nspname, c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
             "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'm') "
             "AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'")


def object_sizes(conn: Connection) -> dict[str, int]:
    """"<database>.<schema>.<table>" -> bytes on disk (pg_total_relation_size) of every user table
    in every database that accepts connections. Raises EngineError."""
    out: dict[str, int] = {}
    for db, rows in _per_database(conn, SIZES_SQL):
        for schema, rel, size in rows:
            if size is not None:
                out[f"{db}.{schema}.{rel}"] = int(size)
    return out


def status_rows(conn: Any) -> list[tuple[str, Any]]:
    """(name, value) of the cluster's status counters (STATUS_NAMES), as SHOW GLOBAL STATUS gives
    a MySQL server's: what live/server_counters.py maps to cache_misses and cache_requests."""
    rows = conn.query(STATUS_SQL)
    if not rows:
        return []
    return [(n, int(v)) for n, v in zip(STATUS_NAMES, rows[0]) if v is not None]

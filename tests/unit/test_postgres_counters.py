"""PostgreSQL's counter sources and status counters over a fake connection (no server): the names
they give, per database, and what `top` and the exporter read as cache misses and requests."""
from __future__ import annotations

from ioattr.collectors.engine import EngineError
from ioattr.engines import registry
from ioattr.engines.postgres import PostgresAdapter, counters
from ioattr.live.server_counters import ServerCounters


class FakePg:
    """Answers the sources' queries from tables per database."""

    flavor = "postgresql"

    def __init__(self, per_db: dict[str, dict[str, list[tuple]]], refuse: set[str] = frozenset()) -> None:
        self.per_db = per_db
        self.refuse = refuse

    def query(self, sql: str, dbname: str = "postgres") -> list[tuple]:
        if dbname in self.refuse:
            raise EngineError("refused")
        for key, rows in self.per_db.get(dbname, {}).items():
            if key in sql:
                return rows
        return []

    def query_databases(self, sql: str) -> list[tuple[str, list[tuple]]]:
        out = []
        for db in sorted(self.per_db):
            try:
                out.append((db, self.query(sql, db)))
            except EngineError:
                continue
        return out


def test_statio_names_relations_per_database() -> None:
    conn = FakePg({
        "postgres": {"pg_statio_user_tables": [("public", "t", 10, 90, 3, 7, None, None, None, None)],
                     "pg_statio_user_indexes": [("public", "t_id", 3, 7)]},
        "bench": {"pg_statio_user_tables": [("s", "u", 1, 0, 0, 0, 0, 0, 0, 0)],
                  "pg_statio_user_indexes": []},
    })
    rows = dict((n, v) for n, v, _ in counters.PgStatio().read(conn))
    assert rows["postgres.public.t:heap_blks_read"] == 10 and rows["postgres.public.t:heap_blks_hit"] == 90
    assert "postgres.public.t:toast_blks_read" not in rows  # NULL: no toast table
    assert rows["postgres.public.t_id:idx_blks_read"] == 3 and rows["bench.s.u:heap_blks_read"] == 1


def test_bgwriter_and_database() -> None:
    conn = FakePg({"postgres": {
        "server_version_num": [(150004,)],
        "pg_stat_bgwriter": [tuple(range(1, len(counters.BGWRITER_COLUMNS) + 1))],
        "datname IS NOT NULL": [("postgres",) + tuple(range(len(counters.DATABASE_COLUMNS))),
                                ("bench",) + tuple(range(len(counters.DATABASE_COLUMNS)))],
        "datname IS NULL": [(5, 50)],
    }})
    bg = dict((n, v) for n, v, _ in counters.PgStatBgwriter().read(conn))
    assert bg["buffers_checkpoint"] == counters.BGWRITER_COLUMNS.index("buffers_checkpoint") + 1
    db = dict((n, v) for n, v, _ in counters.PgStatDatabase().read(conn))
    i_read, i_hit = counters.DATABASE_COLUMNS.index("blks_read"), counters.DATABASE_COLUMNS.index("blks_hit")
    assert db["bench:blks_read"] == i_read and db["postgres:temp_bytes"] == counters.DATABASE_COLUMNS.index("temp_bytes")
    assert db["blks_read"] == 2 * i_read + 5 and db["blks_hit"] == 2 * i_hit + 50  # shared catalogs' row too


def test_status_counters_read_through_the_server() -> None:
    """ServerCounters (top, exporter) takes a native server's status_rows(): misses are blks_read,
    requests blks_hit + blks_read (a MySQL server's names for the same questions stay theirs)."""
    totals = [[(100, 1000)]]

    class Server:
        engine = object()

        def status_rows(self):
            return counters.status_rows(FakePg({"postgres": {"pg_stat_database": totals[0]}}))

    sc = ServerCounters()
    sc.read({7: Server()})
    totals[0] = [(130, 1500)]
    sc.read({7: Server()})
    assert sc.delta == {"cache_misses": 30, "cache_requests": 530}
    assert {c.variable for c in registry.status_counters("cache_misses")} >= {"blks_read", "Innodb_buffer_pool_reads"}
    assert [s.source for s in PostgresAdapter().counter_sources()] == [
        "pg_statio", "pg_stat_bgwriter", "pg_stat_database", "pg_stat_wal", "pg_stat_io", "pg_stat_backend_io",
        "pg_stat_statements"]


def test_stat_wal_names_and_older_servers() -> None:
    """pg_stat_wal's one row by column name; 18's without the write and sync counters (pg_stat_io
    has them); a server without the view (before 14) is not asked; any error is raised (the
    collector says the source failed)."""
    conn = FakePg({"postgres": {"server_version_num": [(150004,)],
                                "pg_stat_wal": [tuple(range(1, len(counters.WAL_COLUMNS) + 1))]}})
    wal = dict((n, v) for n, v, _ in counters.PgStatWal().read(conn))
    assert wal["wal_fpi"] == 2 and wal["wal_bytes"] == 3 and len(wal) == len(counters.WAL_COLUMNS)

    class Asked(FakePg):
        def query(self, sql: str, dbname: str = "postgres") -> list[tuple]:
            self.asked.append(sql)
            return super().query(sql, dbname)

    new = Asked({"postgres": {"server_version_num": [(180001,)], "pg_stat_wal": [(1, 2, 3, 4)]}})
    new.asked = []
    assert dict((n, v) for n, v, _ in counters.PgStatWal().read(new)) == {
        "wal_records": 1, "wal_fpi": 2, "wal_bytes": 3, "wal_buffers_full": 4}
    assert "wal_write," not in new.asked[-1] and "wal_sync" not in new.asked[-1]
    assert counters.PgStatWal().read(FakePg({"postgres": {"server_version_num": [(130010,)]}})) == []

    class Gone(FakePg):
        def query(self, sql: str, dbname: str = "postgres") -> list[tuple]:
            raise EngineError("connection lost")

    try:
        counters.PgStatWal().read(Gone({}))
        raise AssertionError("not raised")
    except EngineError:
        pass


def test_checkpointer_counters_under_their_old_names_on_17_and_later() -> None:
    """17 moved the checkpointer's counters to pg_stat_checkpointer and dropped buffers_backend:
    the same names come from pg_stat_checkpointer and pg_stat_io."""
    conn = FakePg({"postgres": {"server_version_num": [(180001,)],
                                "FROM pg_stat_bgwriter": [(11, 12, 13)],
                                "FROM pg_stat_checkpointer": [(1, 2, 3.5, 4.5, 5)],
                                "FROM pg_stat_io": [(7, 8)]}})
    bg = dict((n, v) for n, v, _ in counters.PgStatBgwriter().read(conn))
    assert bg == {"buffers_clean": 11, "maxwritten_clean": 12, "buffers_alloc": 13, "checkpoints_timed": 1,
                  "checkpoints_req": 2, "checkpoint_write_time": 3.5, "checkpoint_sync_time": 4.5,
                  "buffers_checkpoint": 5, "buffers_backend": 7, "buffers_backend_fsync": 8}


def test_stat_io_rows_and_totals_per_version() -> None:
    """pg_stat_io per backend type, object and context, and the cluster's totals; bytes from 18's
    columns or, on 16-17, from the counts times op_bytes (the query asks for them)."""
    rows = [("client backend", "relation", "normal", 10, 2, None, 3, 100, 1, None, 0, 81920, 16384, 24576),
            ("checkpointer", "relation", "normal", None, 5, None, None, None, None, None, 4, None, 40960, None)]
    for version in (160004, 180001):
        conn = FakePg({"postgres": {"server_version_num": [(version,)], "FROM pg_stat_io": rows}})
        got = dict((n, v) for n, v, _ in counters.PgStatIo().read(conn))
        assert got["client backend:relation:normal:reads"] == 10 and got["client backend:relation:normal:read_bytes"] == 81920
        assert "checkpointer:relation:normal:reads" not in got  # NULL: not counted by that kind
        assert got["writes"] == 7 and got["write_bytes"] == 57344 and got["fsyncs"] == 4
    assert counters.PgStatIo().read(FakePg({"postgres": {"server_version_num": [(150004,)]}})) == []


def test_stat_statements_where_installed_less_ioattrs_own() -> None:
    conn = FakePg({"postgres": {"pg_extension": []},
                   "bench": {"pg_extension": [(1,)],
                             "FROM pg_stat_statements": [tuple(range(1, len(counters.STATEMENTS_COLUMNS) + 1))]}})
    got = dict((n, v) for n, v, _ in counters.PgStatStatements().read(conn))
    assert got["calls"] == 1 and got["shared_blks_read"] == 3 and len(got) == len(counters.STATEMENTS_COLUMNS)
    assert "NOT LIKE '%/* ioattr-internal */%'" in counters.PgStatStatements.SQL
    assert counters.PgStatStatements().read(FakePg({"postgres": {"pg_extension": []}})) == []


def test_backend_io_per_backend_on_18_and_one_line_before() -> None:
    """pg_stat_get_backend_io() per live backend and object (ioattr's own backends summed as
    "[ioattr]"), on 18; before 18 nothing, and first_sight says so once."""
    class Server:
        own_pids = {77}

    conn = FakePg({"postgres": {"server_version_num": [(180001,)],
                                "pg_stat_get_backend_io": [(100, "relation", 12, 98304, 1, 8192, 0, 0, 500),
                                                           (100, "wal", None, None, 3, 24576, None, None, None),
                                                           (77, "relation", 5, 40960, 0, 0, 0, 0, 9)]}})
    conn.server = Server()   # type: ignore[attr-defined]
    got = dict((n, v) for n, v, _ in counters.PgStatBackendIo().read(conn))
    assert got == {"100:relation:reads": 12, "100:relation:read_bytes": 98304, "100:relation:writes": 1,
                   "100:relation:write_bytes": 8192, "100:relation:extends": 0, "100:relation:extend_bytes": 0,
                   "100:relation:hits": 500, "100:wal:writes": 3, "100:wal:write_bytes": 24576, "backends": 1,
                   # ioattr's own, summed under one name (pg_stat_io counts them as client backends)
                   "[ioattr]:relation:reads": 5, "[ioattr]:relation:read_bytes": 40960, "[ioattr]:relation:writes": 0,
                   "[ioattr]:relation:write_bytes": 0, "[ioattr]:relation:extends": 0,
                   "[ioattr]:relation:extend_bytes": 0, "[ioattr]:relation:hits": 9}
    notes: list = []
    old = FakePg({"postgres": {"server_version_num": [(150004,)]}})
    src = counters.PgStatBackendIo()
    src.first_sight(old, None, lambda key, text, detail="": notes.append((key, text)))
    assert src.read(old) == []
    assert notes == [(("backend_io",), "no per-backend IO counters (pg_stat_get_backend_io is PostgreSQL "
                                       "18's; this server is 15)")]
    assert "pg_stat_backend_io" in PostgresAdapter.counters_from_zero
    assert registry.counters_from_zero() == {"pg_stat_backend_io"}


def test_exited_backends_are_pg_stat_ios_rest() -> None:
    """A phase's relation IO per backend (18): the backends read, ioattr's own and the
    [exited backends] row, pg_stat_io's delta for the backend types read (every context) less the
    rows read; the rows sum to it. Other objects, types and the _last/_max gauges do not count.
    None without per-backend counters (before 18)."""
    pg = PostgresAdapter()
    c = {"pg_stat_database:xact_commit": 3.0,
         "pg_stat_backend_io:backends": 0.0, "pg_stat_backend_io_last:backends": 2.0,
         "pg_stat_backend_io:100:relation:read_bytes": 8192.0, "pg_stat_backend_io:100:relation:reads": 1.0,
         "pg_stat_backend_io:100:wal:write_bytes": 65536.0,
         "pg_stat_backend_io:[ioattr]:relation:read_bytes": 16384.0,
         "pg_stat_io:client backend:relation:normal:read_bytes": 5 * 8192.0 + 16384.0,
         "pg_stat_io:client backend:relation:bulkread:read_bytes": 1 << 20,
         "pg_stat_io:client backend:relation:normal:reads": 7.0,
         "pg_stat_io:autovacuum worker:relation:vacuum:read_bytes": 8192.0,
         "pg_stat_io:checkpointer:relation:normal:write_bytes": 1 << 30,
         "pg_stat_io:client backend:wal:normal:write_bytes": 1 << 20,
         "pg_stat_io_last:client backend:relation:normal:read_bytes": 1 << 40,
         "pg_stat_io:read_bytes": 1 << 41}
    t = pg.phase_terms(c, lambda: [])["backend_io"]
    rows = {r["backend"]: r for r in t["rows"]}
    assert [r["backend"] for r in t["rows"]] == ["100", "[ioattr]", "[exited backends]"]
    assert t["pg_stat_io"]["read_bytes"] == 6 * 8192 + 16384 + (1 << 20)
    assert rows["[exited backends]"]["read_bytes"] == 5 * 8192 + (1 << 20)
    assert rows["[exited backends]"]["reads"] == 6 and rows["[exited backends]"]["write_bytes"] == 0
    assert sum(r["read_bytes"] for r in t["rows"]) == t["pg_stat_io"]["read_bytes"]
    line = pg.phase_line(pg.phase_terms(c, lambda: []))
    assert "relation reads per backend (pg_stat_get_backend_io): 1 backend read 0.01 MiB, [exited backends] 1.04 " \
           "MiB, of pg_stat_io's 1.06 MiB" in line, line
    # before 18: no per-backend counters, no rows (pg_stat_io alone on 16-17)
    assert "backend_io" not in pg.phase_terms({k: v for k, v in c.items() if "backend_io" not in k}, lambda: [])


def test_wal_split_per_phase_in_the_phase_terms() -> None:
    """report --by phase's WAL: records, full-page images and bytes inserted (pg_stat_wal's
    deltas), the images' bytes bounded by 8 KiB each and by the bytes; none without pg_stat_wal."""
    pg = PostgresAdapter()
    c = {"pg_stat_database:xact_commit": 1.0, "pg_stat_wal:wal_records": 2114.0, "pg_stat_wal:wal_fpi": 380.0,
         "pg_stat_wal:wal_bytes": 3250585.0}
    t = pg.phase_terms(c, lambda: [])
    assert t is not None and (t["wal_records"], t["wal_fpi"], t["wal_bytes"]) == (2114.0, 380.0, 3250585.0)
    assert t["wal_fpi_bytes_max"] == 380 * 8192 and t["wal_fpi_share_max"] == round(380 * 8192 / 3250585, 4)
    assert pg.phase_line(t).endswith("; WAL 3.10 MiB inserted: 2,114 records, 380 full-page images "
                                     "(at most 2.97 MiB, 96% of it)")
    t = pg.phase_terms({**c, "pg_stat_wal:wal_fpi": 1000.0}, lambda: [])
    assert t["wal_fpi_bytes_max"] == 3250585.0 and t["wal_fpi_share_max"] == 1.0   # never more than the bytes
    assert "wal_bytes" not in pg.phase_terms({"pg_stat_database:xact_commit": 1.0}, lambda: [])
    assert counters.wal_terms({"pg_stat_wal:wal_fpi": 0.0, "pg_stat_wal:wal_bytes": 0.0})["wal_fpi_share_max"] is None

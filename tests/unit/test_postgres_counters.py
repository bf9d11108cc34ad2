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
    assert [s.source for s in PostgresAdapter().counter_sources()] == ["pg_statio", "pg_stat_bgwriter",
                                                                       "pg_stat_database", "pg_stat_wal"]


def test_stat_wal_names_and_older_servers() -> None:
    """pg_stat_wal's one row by column name; a server without the view (before 14) gives no rows,
    any other error is raised (the collector says the source failed)."""
    conn = FakePg({"postgres": {"pg_stat_wal": [tuple(range(1, len(counters.WAL_COLUMNS) + 1))]}})
    wal = dict((n, v) for n, v, _ in counters.PgStatWal().read(conn))
    assert wal["wal_fpi"] == 2 and wal["wal_bytes"] == 3 and len(wal) == len(counters.WAL_COLUMNS)

    class Old(FakePg):
        def __init__(self, message: str) -> None:
            super().__init__({})
            self.message = message

        def query(self, sql: str, dbname: str = "postgres") -> list[tuple]:
            raise EngineError(self.message)

    assert counters.PgStatWal().read(Old('relation "pg_stat_wal" does not exist')) == []
    try:
        counters.PgStatWal().read(Old("connection lost"))
        raise AssertionError("not raised")
    except EngineError:
        pass

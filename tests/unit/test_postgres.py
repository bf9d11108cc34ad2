"""The PostgreSQL adapter's pure parts: file paths -> class, relation, fork and segment; process
titles -> roles; the relation map's keys (shared catalogs, the database's default tablespace)."""
from __future__ import annotations

import pytest

from ioattr.collectors import abi
from ioattr.engines import registry
from ioattr.engines.postgres import PostgresAdapter, files, names, roles
from ioattr.model.labels import FILE_CLASS_NAMES

D = "/tmp/ioattr-pg-x/data"


@pytest.mark.parametrize("path, cls, rel", [
    (f"{D}/base/5/16384", "relation", (1663, 5, 16384, "main", 0, None)),
    (f"{D}/base/5/16384.12", "relation", (1663, 5, 16384, "main", 12, None)),
    (f"{D}/base/5/16384_fsm", "fsm", (1663, 5, 16384, "fsm", 0, None)),
    (f"{D}/base/5/16384_vm", "vm", (1663, 5, 16384, "vm", 0, None)),
    (f"{D}/base/5/16384_fsm.1", "fsm", (1663, 5, 16384, "fsm", 1, None)),
    (f"{D}/base/16401/16390_init", "init_fork", (1663, 16401, 16390, "init", 0, None)),
    (f"{D}/base/5/t3_16400", "relation", (1663, 5, 16400, "main", 0, 3)),
    (f"{D}/global/1262", "relation", (1664, 0, 1262, "main", 0, None)),
    (f"{D}/pg_tblspc/16500/PG_15_202209061/5/16501", "relation", (16500, 5, 16501, "main", 0, None)),
    # a tablespace's path as /proc shows it (the symlink resolved): the oid is not in it
    ("/mnt/ts/PG_15_202209061/5/16501.2", "relation", (None, 5, 16501, "main", 2, None)),
    (f"{D}/base/5/16384 (deleted)", "relation", (1663, 5, 16384, "main", 0, None)),
    ("base/5/1259", "relation", (1663, 5, 1259, "main", 0, None)),  # relative, as a backend opens it
    (f"{D}/pg_wal/000000010000000000000001", "wal", None),
    (f"{D}/pg_wal/000000010000000000000002.partial", "wal", None),
    (f"{D}/pg_wal/00000002.history", "wal", None),
    (f"{D}/base/pgsql_tmp/pgsql_tmp1234.0", "tmp", None),
    (f"{D}/base/pgsql_tmp/pgsql_tmp1234.0.fileset/i1of2.p0.0", "tmp", None),
    ("/mnt/ts/PG_15_202209061/pgsql_tmp/pgsql_tmp77.3", "tmp", None),
    (f"{D}/pg_xact/0000", "slru", None),
    (f"{D}/pg_multixact/offsets/0000", "slru", None),
    (f"{D}/pg_multixact/members/0000", "slru", None),
    (f"{D}/pg_subtrans/0003", "slru", None),
    # PostgreSQL's other files: 'other' (the registry's default), no relation
    (f"{D}/global/pg_control", "other", None),
    (f"{D}/global/pg_filenode.map", "other", None),
    (f"{D}/base/5/pg_internal.init", "other", None),
    (f"{D}/base/5/PG_VERSION", "other", None),
    (f"{D}/pg_wal/archive_status/000000010000000000000001.done", "other", None),
    (f"{D}/postmaster.pid", "other", None),
    (f"{D}/pg_stat/pgstat.stat", "other", None),
])
def test_paths(path: str, cls: str, rel: tuple | None) -> None:
    assert registry.file_class_name(path) == cls
    got = files.parse_relation_path(path)
    if rel is None:
        assert got is None
    else:
        assert got is not None
        assert (got.tablespace, got.database, got.relfilenode, got.fork, got.segment, got.temp_backend) == rel


@pytest.mark.parametrize("path", [
    "/var/lib/mysql/ibdata1", "/var/lib/mysql/test/t1.ibd", "/var/lib/mysql/ib_logfile0",
    "/var/lib/mysql/#rocksdb/000012.sst", "/var/lib/mysql/#rocksdb/000011.log", "/var/lib/mysql/mysql-bin.000001",
    "/var/lib/mysql/undo001", "/tmp/base/file", "/data/base/5/notanumber", "[anonymous tmpfile in /tmp]", "",
])
def test_other_servers_files_are_not_postgres(path: str) -> None:
    assert PostgresAdapter().classify_path(path) is None
    assert files.parse_relation_path(path) is None


def test_vocabulary() -> None:
    """PostgreSQL's classes are in the shared vocabulary (test_abi checks it against bpf/ioattr.h)."""
    for fc in (abi.FileClass.RELATION, abi.FileClass.FSM, abi.FileClass.VM, abi.FileClass.INIT_FORK,
               abi.FileClass.SLRU, abi.FileClass.WAL, abi.FileClass.TMP):
        assert FILE_CLASS_NAMES[fc]
    assert {FILE_CLASS_NAMES[c] for c in files.FORK_CLASSES.values()} == {"relation", "fsm", "vm", "init_fork"}


@pytest.mark.parametrize("title, role", [
    ("postgres: checkpointer ", "checkpointer"),
    ("postgres: background writer ", "background_writer"),
    ("postgres: walwriter ", "walwriter"),
    ("postgres: autovacuum launcher ", "autovacuum_launcher"),
    ("postgres: autovacuum worker sbtest", "autovacuum_worker"),
    ("postgres: logical replication launcher ", "logical_replication_launcher"),
    ("postgres: logical replication worker for subscription 16400 ", "logical_replication_worker"),
    ("postgres: parallel worker for PID 4242 ", "parallel_worker"),
    ("postgres: walsender rep 10.0.0.2(45678) streaming 0/3000148", "walsender"),
    ("postgres: walreceiver streaming 0/3000148", "walreceiver"),
    ("postgres: archiver last was 000000010000000000000002", "archiver"),
    ("postgres: startup recovering 000000010000000000000003", "startup"),
    ("postgres: stats collector ", "stats_collector"),  # PostgreSQL <= 14
    ("postgres: postgres postgres [local] idle", "connection"),
    ("postgres: bob sbtest [local] SELECT", "connection"),
    ("postgres: bob sbtest 127.0.0.1(51234) idle in transaction", "connection"),
    ("postgres: bob sbtest [local] authentication", "connection"),
    ("postgres: bob sbtest [local]", "connection"),
    ("postgres: main: checkpointer ", "checkpointer"),   # cluster_name = main
    ("postgres: main: bob sbtest [local] idle", "connection"),
    ("postgres: TimescaleDB Background Worker Scheduler", "background_worker"),
    ("postgres: checkpointer \0\0\0\0", "checkpointer"),  # cmdline's padding
    # the postmaster's own command line, or a child that has not set its title yet: unknown
    ("/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main", None),
    ("", None),
    (None, None),
])
def test_roles_from_titles(title: str | None, role: str | None) -> None:
    assert roles.role_of_title(title) == role


def test_backend_types_map_onto_title_roles() -> None:
    """Every pg_stat_activity.backend_type listed gets the role its title gives."""
    titles = {"client backend": "postgres: u d [local] idle", "checkpointer": "postgres: checkpointer",
              "background writer": "postgres: background writer", "walwriter": "postgres: walwriter",
              "autovacuum launcher": "postgres: autovacuum launcher",
              "autovacuum worker": "postgres: autovacuum worker d",
              "logical replication launcher": "postgres: logical replication launcher",
              "logical replication worker": "postgres: logical replication worker for subscription 1",
              "parallel worker": "postgres: parallel worker for PID 1",
              "walsender": "postgres: walsender u [local] idle", "walreceiver": "postgres: walreceiver",
              "archiver": "postgres: archiver", "startup": "postgres: startup",
              "io worker": "postgres: io worker 2"}
    assert set(titles) == set(roles.BACKEND_TYPE_ROLES)
    for backend_type, title in titles.items():
        assert roles.role_of_title(title) == roles.BACKEND_TYPE_ROLES[backend_type], backend_type


def test_relation_names() -> None:
    n = names.RelationNames()
    # rows as RELATIONS_QUERY gives them in database 5 (default tablespace pg_default) ...
    n.load(5, "postgres", 1663, [(16384, 0, "public", "t", "r", "p"), (16389, 0, "public", "t_id", "i", "p"),
                                 (1262, 1664, "pg_catalog", "pg_database", "r", "p"),
                                 (16420, 16500, "public", "far", "r", "p"),
                                 (16430, 0, "pg_temp_3", "tmp", "r", "t")])
    # ... and in database 16401, where the same relfilenode is another relation
    n.load(16401, "app", 1663, [(16384, 0, "s", "other", "r", "p")])
    assert n.describe_path(f"{D}/base/5/16384") == {
        "relation": "postgres.public.t", "kind": "table", "fork": "main", "segment": 0,
        "relfilenode": 16384, "database_oid": 5}
    assert n.describe_path(f"{D}/base/16401/16384_vm")["relation"] == "app.s.other"
    assert n.describe_path(f"{D}/base/5/16389.1") == {
        "relation": "postgres.public.t_id", "kind": "index", "fork": "main", "segment": 1,
        "relfilenode": 16389, "database_oid": 5}
    assert n.describe_path(f"{D}/global/1262")["relation"] == "pg_global.pg_catalog.pg_database"
    assert n.describe_path(f"{D}/pg_tblspc/16500/PG_15_202209061/5/16420")["relation"] == "postgres.public.far"
    assert n.describe_path("/mnt/ts/PG_15_202209061/5/16420")["relation"] == "postgres.public.far"
    assert n.describe_path(f"{D}/base/5/t3_16430")["relation"] == "postgres.pg_temp_3.tmp"
    unknown = n.describe_path(f"{D}/base/5/99999")
    assert unknown is not None and unknown["relation"] is None and unknown["kind"] is None  # never a guess
    assert n.describe_path(f"{D}/pg_wal/000000010000000000000001") is None


def test_relation_names_refresh_keeps_dropped_names() -> None:
    """A refresh adds the new names and keeps those of relations gone since (their files' earlier
    IO was recorded under them); a database that refuses us is said, the others still read."""
    class Conn:
        def __init__(self, rows: list[tuple] | Exception) -> None:
            self.rows = rows

        def execute(self, sql: str) -> "Conn":
            if isinstance(self.rows, Exception):
                raise self.rows
            return self

        def fetchall(self) -> list[tuple]:
            return self.rows  # type: ignore[return-value]

    dbs = [(5, "postgres", 1663), (16401, "app", 1663)]
    n = names.RelationNames()
    conns = {"postgres": [dbs, [(16384, 0, "public", "t", "r", "p")]], "app": [RuntimeError("denied\nmore")]}

    def connect(db: str) -> Conn:
        return Conn(conns[db].pop(0) if len(conns[db]) > 1 else conns[db][0])

    assert not n.refresh(connect)
    assert n.error == "relation names incomplete: app: denied"
    assert n.describe_path(f"{D}/base/5/16384")["relation"] == "postgres.public.t"
    conns["postgres"] = [dbs, [(16500, 0, "public", "t", "r", "p")]]  # TRUNCATE: a new relfilenode
    conns["app"] = [[]]
    assert n.refresh(connect) and n.error is None
    assert n.describe_path(f"{D}/base/5/16500")["relation"] == "postgres.public.t"
    assert n.describe_path(f"{D}/base/5/16384")["relation"] == "postgres.public.t"


def test_adapter_is_no_mysql_servers_engine() -> None:
    a = registry.by_name("postgres")
    assert isinstance(a, PostgresAdapter)
    assert not a.claims(None) and a not in registry.engines_for(None)
    assert not a.is_page_file(f"{D}/base/5/16384")  # no page classification in BPF yet
    assert not a.owns_server(1) and not a.forks_servers(1)  # init is no postmaster


def test_reused_pids_forget_roles() -> None:
    """A new process on a pid an exited backend had gets its own role: the old one is forgotten
    (the postmaster's and ioattr's own connections' are not)."""
    from ioattr.engines.postgres.server import PostgresServer

    srv = PostgresServer(4_000_000_000)  # no such process: nothing read from /proc
    assert srv.datadir is None and srv.role(srv.pid) == "postmaster"
    srv.roles.update({5: "autovacuum_worker", 6: "ioattr"})
    srv.own_pids.add(6)
    for pid in (5, 6, srv.pid):
        srv.forget(pid)
    assert 5 not in srv.roles and srv.roles[6] == "ioattr" and srv.role(srv.pid) == "postmaster"
    assert srv.describe()["processes"] == {str(srv.pid): "postmaster", "6": "ioattr"}
    assert srv.describe()["stage_probes"] == "statements: not traced (stage probes not loaded)"

"""One traced PostgreSQL cluster: its postmaster, connections, relation names and the roles of
its processes (what ServerContext is to a MySQL/MariaDB server; the PostgreSQL adapter's
server_context()).

The postmaster forks a process per connection and per auxiliary job; with fork following on
(the session turns it on when a target is a postmaster) every child is a target from its fork
on, so its IO is counted from its first syscall. Roles come from the process titles
(roles.py), read while the process lives. ioattr's own connections (for the catalogs) are
backends too: their pids are known, and their IO gets the role `ioattr`.

The connection: the postmaster's unix socket (found in /proc), as $PGUSER (default postgres),
with libpq's own password sources ($PGPASSWORD, ~/.pgpass). Failing to connect is not fatal:
files, classes and roles do not need it, relation names do.
"""
from __future__ import annotations

import os
import re
import time
from typing import Any

from ioattr.collectors.engine import INTERNAL_TAG, EngineError, server_sockets
from ioattr.collectors.names import cap_oldest
from ioattr.engines.base import EngineAdapter
from ioattr.engines.postgres.counters import status_rows
from ioattr.engines.postgres import roles
from ioattr.engines.postgres.names import RelationNames
from ioattr.engines.postgres.pages import RelationPageFile, RelationPageFiles
from ioattr import environment

OWN_ROLE = "ioattr"  # ioattr's own backends (catalog reads for names)
STATEMENTS_STATUS = "statements: not traced (stage probes not loaded)"
MAX_DESCRIBED = 10_000  # process roles listed in meta.json (a busy cluster forks many backends)
MAX_ROLES = 100_000     # roles remembered (the oldest go first)
ACTIVITY_QUERY = "SELECT pid, backend_type FROM pg_stat_activity"
ACTIVITY_SECONDS = 0.05  # at most this often pg_stat_activity is re-read for a process not in it
_SOCKET_RE = re.compile(r"^(?P<dir>.*)/\.s\.PGSQL\.(?P<port>\d+)$")
SERVER_BINARIES = ("postgres", "postmaster")


def _exe_name(pid: int) -> str | None:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)"))
    except OSError:
        return None


def is_postgres_process(pid: int) -> bool:
    """A process running the PostgreSQL server binary (postmaster or any child of it)."""
    return _exe_name(pid) in SERVER_BINARIES


def is_postmaster(pid: int) -> bool:
    """The postmaster of a cluster: the server binary, and the pid its data directory's
    postmaster.pid names (the postmaster runs in its data directory)."""
    if not is_postgres_process(pid):
        return False
    try:
        with open(f"/proc/{pid}/cwd/postmaster.pid") as f:
            return f.readline().strip() == str(pid)
    except OSError:
        return False


def postmaster_of(pid: int) -> int | None:
    """The postmaster a PostgreSQL child process (a backend, an auxiliary process) was forked
    from; None for a postmaster itself or a process that is no PostgreSQL child."""
    if not is_postgres_process(pid) or is_postmaster(pid):
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        parent = int(stat[stat.rfind(")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return parent if is_postmaster(parent) else None


def socket_of(pid: int) -> tuple[str, int] | None:
    """(socket directory, port) of the postmaster's unix socket, None if it has none."""
    for path in server_sockets(pid):
        m = _SOCKET_RE.match(path)
        if m:
            return m.group("dir"), int(m.group("port"))
    return None


#: what a run's settings keep of a cluster (meta.json servers[].settings; `ioattr compare` shows
#: them): pg_settings values, memory sizes in bytes, numbers as numbers
SETTINGS = ("shared_buffers", "effective_cache_size", "block_size", "wal_segment_size", "wal_sync_method",
            "wal_buffers", "synchronous_commit", "full_page_writes", "wal_compression", "checkpoint_timeout",
            "max_wal_size", "autovacuum",
            "effective_io_concurrency", "server_version")
_UNIT_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "16kB": 16384, "MB": 1 << 20, "16MB": 16 << 20, "GB": 1 << 30,
               "TB": 1 << 40}


def setting_value(setting: str, unit: str | None) -> Any:
    """A pg_settings value as meta.json keeps it: a size in bytes (its unit applied), another
    number as a number (seconds and the like keep their unit's number), else the text."""
    try:
        n = int(setting)
    except (TypeError, ValueError):
        try:
            return float(setting)
        except (TypeError, ValueError):
            return setting
    return n * _UNIT_BYTES[unit] if unit in _UNIT_BYTES else n


def read_settings(conn: Any) -> dict[str, Any] | None:
    """SETTINGS of the cluster (None when they cannot be read: the recording says '-')."""
    try:
        rows = conn.execute("SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)",
                            [list(SETTINGS)]).fetchall()
    except Exception:  # noqa: BLE001 - psycopg's errors: the settings stay unknown, never guessed
        return None
    return {str(name): setting_value(setting, unit) for name, setting, unit in rows}


class PgConnection:
    """The cluster as the counter collector (collectors/counters.py) and the status counters of
    `top` and the exporter see a server's connection (base.Connection): query() on the
    postgres database, query_databases() in every database that accepts connections. Errors
    are collectors.engine.EngineError (one line); a closed connection is reopened."""

    flavor = "postgresql"

    def __init__(self, server: "PostgresServer") -> None:
        self.server = server

    @property
    def conn(self) -> Any:
        return self.server.conns.get("postgres")

    def query(self, sql: str, dbname: str = "postgres") -> list[tuple]:
        try:
            return self.server.connect(dbname).execute(sql).fetchall()
        except Exception as e:  # noqa: BLE001 - psycopg's errors, a server gone
            raise EngineError(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__) from None

    def query_databases(self, sql: str) -> list[tuple[str, list[tuple]]]:
        """(database, rows) of sql in every database that accepts connections (as names.py
        read them); a database that refuses us is left out (its relations then have no rows)."""
        out = []
        for db in sorted(set(self.server.names.databases.values()) or {"postgres"}):
            try:
                out.append((db, self.query(sql, db)))
            except EngineError:
                if db == "postgres":
                    raise
        return out

    def close(self) -> None:
        pass  # the server context owns the connections

    def connect(self) -> None:
        self.query("SELECT 1")


class _Counted:
    """One of ioattr's own connections, counting what it runs: each statement, in autocommit, is
    a transaction pg_stat_database's xact_commit counts beside the workload's, so the recorder
    reports its own (PgStatDatabase: "xact_commit_ioattr") and rates take them off. Each is tagged
    as ioattr's own (collectors.engine.INTERNAL_TAG), as on a MySQL/MariaDB server: its catalog
    reads stay out of the workload's queries, contributors and storage IO."""

    def __init__(self, conn: Any, server: "PostgresServer") -> None:
        self._conn = conn
        self._server = server

    def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self._server.own_transactions += 1
        if isinstance(query, str):
            # digested as ioattr's own (bpf/stage.bpf.c): neither the workload's statements nor its IO;
            # tagged at the end too, which pg_stat_statements keeps in its text (18 drops a leading
            # comment from it: counters.PgStatStatements leaves out both)
            query = INTERNAL_TAG + query + " " + INTERNAL_TAG.strip()
        return self._conn.execute(query, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class PostgresServer:
    """A traced cluster, by its postmaster's pid."""

    engine_name = "postgres"
    native = True  # an engine's own server: collectors/counters.py reads only its engines' sources
    settings: dict[str, Any] | None = None  # read_settings() at the first connection
    _force_flush = True  # pg_stat_force_next_flush() works here (flush_own_stats)

    def __init__(self, pid: int, engines: tuple[EngineAdapter, ...] = ()) -> None:
        self.pid = pid
        self.engines = engines  # its adapters (counter sources), as ServerContext.engines
        self._engine = PgConnection(self)
        self.names = RelationNames()
        self.conns: dict[str, Any] = {}
        self.own_pids: set[int] = set()
        self.own_transactions = 0  # the transactions ioattr's own connections committed (_Counted)
        self.error: str | None = None
        self.version: str | None = None
        self.stage_status = STATEMENTS_STATUS
        self.roles: dict[int, str] = {pid: "postmaster"}
        self._activity: dict[int, str] = {}  # pg_stat_activity pid -> backend_type (_backend_types)
        self._next_activity = 0.0
        self._next_names = 0.0
        try:
            self.datadir: str | None = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            self.datadir = None
        # relation files registered for page classification in BPF (attach_pages; None: off)
        self.pages: RelationPageFiles | None = None

    # -- counters ------------------------------------------------------------------
    @property
    def engine(self) -> PgConnection | None:
        """The connection the counters are read through (None: not connected), as ServerContext's."""
        return self._engine if self.conns else None

    @property
    def engine_error(self) -> str | None:
        return self.error

    def status_rows(self) -> list[tuple[str, Any]]:
        """The cluster's status counters (counters.STATUS_NAMES) for `top` and the exporter."""
        return status_rows(self._engine)

    # -- pages ---------------------------------------------------------------------
    def attach_pages(self, map_fd: int | None) -> None:
        """Register the cluster's relation main forks in the BPF page-file map (page_files)
        as the catalogs say their kinds: called before start(), which reads the catalogs."""
        self.pages = RelationPageFiles(map_fd, self.datadir)

    def sync_pages(self, force: bool = False) -> None:
        """Rescan the data directory for relation files (throttled unless forced)."""
        if self.pages is not None:
            self.pages.sync(self.names.kind_of, force)

    def poll_pages(self) -> None:
        """Often (the session's poll): rescan for new relation files (throttled); a file whose
        relation the catalogs did not have (created since) makes the names be re-read (also
        throttled), which registers it."""
        if self.pages is None:
            return
        self.pages.sync(self.names.kind_of)
        if self.pages.unknown and self.conns:
            self.refresh_names()

    def page_file(self, database: int, index_id: int) -> RelationPageFile | None:
        """The relation file a page row came from (its key: database oid, relfilenode|segment)."""
        return self.pages.file_of(database, index_id) if self.pages is not None else None

    def page_name(self, space_id: int, index_id: int) -> tuple[RelationPageFile, str | None] | None:
        """A page row's relation file and its relation's name (space_id the database oid,
        index_id segment << 32 | relfilenode)."""
        pf = self.page_file(space_id, index_id)
        if pf is None:
            return None
        rel = self.names.lookup(pf.rel)
        return pf, (rel.name if rel is not None else None)

    def describe_path(self, path: str) -> dict[str, Any] | None:
        """meta.json "relations" entry of a relation file (None: no relation file's name)."""
        return self.names.describe_path(path)

    # -- connections ---------------------------------------------------------------
    def connect(self, dbname: str = "postgres") -> Any:
        """An open connection to `dbname` (kept for the session). Raises on failure."""
        conn = self.conns.get(dbname)
        if conn is not None and not conn.closed:
            return conn
        import psycopg  # lazy: weight (psycopg and libpq: only when a PostgreSQL server is traced)

        where = socket_of(self.pid)
        if where is None:
            raise RuntimeError(f"no unix socket found for postmaster {self.pid}")
        conn = _Counted(psycopg.connect(host=where[0], port=where[1], dbname=dbname,
                                        user=environment.get("PGUSER"), autocommit=True,
                                        connect_timeout=5, application_name="ioattr"), self)
        self.own_transactions += 1  # the backend's start-up commits one (its catalog look-ups)
        self.conns[dbname] = conn
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        self.own_pids.add(int(backend))
        self.roles[int(backend)] = OWN_ROLE
        if self.version is None:
            self.version = str(conn.execute("SHOW server_version").fetchone()[0])
        if self.settings is None:
            self.settings = read_settings(conn)
        return conn

    def flush_own_stats(self) -> int:
        """Have each of ioattr's own backends publish its pending statistics now, and return how
        many transactions ioattr had committed by then: pg_stat_database's xact_commit holds
        every one of them from here on. A backend publishes its counts at most once a second
        (PGSTAT_MIN_INTERVAL; later on a loaded host), so without this the own transactions a
        reading takes off ran up to a second or more ahead of the ones the reading holds, and a
        phase boundary moved them from one phase to the next (tens of transactions per phase).
        pg_stat_force_next_flush() (PostgreSQL 15+) makes the backend publish as it goes idle,
        before it answers: the statement's reply means it is done. Before 15: the old lag."""
        if self._force_flush:
            for dbname, conn in list(self.conns.items()):
                if conn.closed:
                    continue
                try:
                    conn.execute("SELECT pg_stat_force_next_flush()").fetchall()
                except Exception:  # noqa: BLE001 - before 15 (no such function), or revoked
                    self._force_flush = False
                    break
        return self.own_transactions

    def start(self) -> None:
        """Connect and read the relation names once (errors kept in `error`)."""
        try:
            self.connect()
            self.error = None
        except Exception as e:  # noqa: BLE001 - psycopg's errors, no socket: file-level attribution goes on
            self.error = f"cannot connect: {str(e).strip().splitlines()[0] if str(e) else type(e).__name__}"
            return
        self.refresh_names(force=True)

    def refresh_names(self, force: bool = False) -> None:
        """Re-read the relation names (at most every 5 s unless forced)."""
        now = time.monotonic()
        if not force and now < self._next_names:
            return
        self._next_names = now + 5.0
        if self.error is not None and not self.conns:
            self.start()
            return
        self.names.refresh(self.connect)
        self.sync_pages(force=True)  # files whose kind the catalogs just said

    def children(self) -> list[int]:
        """The postmaster's live child processes (its backends and auxiliary processes)."""
        out = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and roles.parent_pid(int(entry.name)) == self.pid:
                out.append(int(entry.name))
        return sorted(out)

    # -- roles ---------------------------------------------------------------------
    def knows(self, pid: int) -> bool:
        """Whether pid is one of the cluster's processes whose role is known."""
        return pid in self.roles

    def is_child(self, pid: int) -> bool:
        return roles.parent_pid(pid) == self.pid

    def role(self, pid: int) -> str | None:
        """The role of the postmaster or one of its children (None: unknown, e.g. a child gone
        before its title was read, or one that has not set its title yet)."""
        if pid == self.pid:
            return "postmaster"
        role = self.roles.get(pid)
        if role is not None:
            return role
        if not self.is_child(pid):
            return None
        # the server's own word first (pg_stat_activity.backend_type), the title where it has none
        # (no connection, or a process not listed yet: a backend still starting up)
        role = roles.role_of_backend_type(self._backend_types(pid).get(pid))
        if role is None:
            role = roles.process_role(pid)
        if role is not None:
            self.roles[pid] = role
            cap_oldest(self.roles, MAX_ROLES)
        return role

    def _backend_types(self, pid: int) -> dict[int, str]:
        """pg_stat_activity's pid -> backend_type, re-read when pid is not in it and the last read
        is ACTIVITY_SECONDS old (a connection storm costs one query per ACTIVITY_SECONDS, not one
        per backend); {} without a connection."""
        if not self.conns:
            return {}
        now = time.monotonic()
        if pid not in self._activity and now >= self._next_activity:
            self._next_activity = now + ACTIVITY_SECONDS
            try:
                rows = self.connect().execute(ACTIVITY_QUERY).fetchall()
            except Exception:  # noqa: BLE001 - psycopg's errors, a server going away: titles answer
                return self._activity
            self._activity = {int(p): str(t) for p, t in rows if p is not None and t is not None}
        return self._activity

    def forget(self, pid: int) -> None:
        """pid is a new process: an earlier one's role no longer applies (pids are reused).
        The postmaster and ioattr's own backends stay what they are while they live."""
        if pid != self.pid and pid not in self.own_pids:
            self.roles.pop(pid, None)
            self._activity.pop(pid, None)

    def describe(self) -> dict[str, Any]:
        """meta.json "servers" entry: the keys MySQL servers have, the engine, and the roles of
        the cluster's processes seen so far ("processes", the latest MAX_DESCRIBED of them)."""
        recent = list(self.roles.items())[-MAX_DESCRIBED:]
        return {"pid": self.pid, "engine": self.engine_name, "datadir": self.datadir,
                "connected": bool(self.conns), "version": self.version, "flavor": "postgresql",
                "error": self.error, "names_error": self.names.error, "roles_error": None,
                "stage_probes": self.stage_status, "processes": {str(p): r for p, r in recent},
                "settings": self.settings}

    def close(self) -> None:
        if self.pages is not None:
            self.pages.close()
        for conn in self.conns.values():
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing a connection to a server that is gone
                pass
        self.conns.clear()

"""pytest plugin: private MariaDB servers for tests, and a guard against leftovers.

Loaded from tests/conftest.py (``pytest_plugins``).  Fixtures:

``mariadb`` (session)
    One started :class:`ioattr.host.sandbox.PrivateMariaDB` (32M buffer pool,
    O_DIRECT, performance_schema file instruments on) shared by the whole run
    and stopped at session end.  Starting a server costs about a second, so
    tests that only need *a* server share this one.  Do not restart or
    reconfigure it; use ``mariadb_factory`` for that.

``mariadb_factory`` (function)
    ``mariadb_factory(**kwargs) -> PrivateMariaDB``: a started server of the
    test's own, with any ``PrivateMariaDB`` keyword arguments
    (``buffer_pool="8M"``, ``extra_options={...}``...).  Every server it made
    is stopped when the test ends.

``_datadir_cache`` (session, autouse)
    Sets ``IOATTR_DATADIR_CACHE`` for the run (ioattr/host/datadir_cache.py):
    each kind of datadir is installed once and copied for every later server,
    in this process and in the scripts it starts.

Guard (autouse)
    After every test, any process this pytest process started that is still
    alive -- a forgotten ``PrivateMariaDB``, a sysbench, a recorder -- makes the
    test fail.  The leftovers are stopped first, by their pid, so one careless
    test does not poison the rest of the run.  At session end the same check
    runs once more after the session fixtures are gone.  A tracer that escaped
    the tree (a ``bpftrace`` of ``ioattr script`` orphaned to init when its
    ``ioattr`` was SIGKILLed) is caught too: it loads every later test.
"""
from __future__ import annotations

import contextlib

import os
import signal
import tempfile
import time
from typing import Callable, Iterator

import pytest

from ioattr.host import datadir_cache
from ioattr.host.sandbox import PrivateMariaDB, live_servers
from tests.conftest import need_root, need_tool

# Servers meant to outlive a single test (the session fixture's).
_SESSION_SERVERS: list[PrivateMariaDB] = []


def forget_server(server: object) -> None:
    """Take a stopped server off the guard's list. After Ctrl-C pytest tears the fixtures down
    from its own session-finish hook, after ours cleared the list: absent is not an error."""
    if server in _SESSION_SERVERS:
        _SESSION_SERVERS.remove(server)  # type: ignore[arg-type]


def _need_mariadb() -> None:
    need_root()  # mariadbd/mariadb-install-db --user=root, unix_socket auth as root
    need_tool("mariadbd")
    need_tool("mariadb-install-db")


def _processes() -> Iterator[tuple[int, bytes, list[bytes]]]:
    """Every process now: (pid, comm, the /proc/PID/stat fields after the comm); one that
    exits while it is read is left out."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # exited meanwhile
        close = stat.rindex(b")")
        yield int(entry), stat[stat.index(b"(") + 1: close], stat[close + 2:].split()


def _descendants(root: int | None = None, zombies: bool = False) -> dict[int, str]:
    """Live (non-zombie, unless ``zombies``) descendants of ``root`` (default: this process):
    pid -> comm."""
    root = os.getpid() if root is None else root
    parent_of: dict[int, int] = {}
    comm: dict[int, str] = {}
    for pid, name, fields in _processes():
        if fields[0] == b"Z" and not zombies:
            continue
        parent_of[pid] = int(fields[1])
        comm[pid] = name.decode(errors="replace")
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        children = {p for p, pp in parent_of.items() if pp in frontier and p not in found}
        for p in children:
            found[p] = comm[p]
        frontier = children
    return found


def _allowed_pids() -> set[int]:
    """Pids of the session servers, of the shared helper processes (shared_process), and of
    their children: these may outlive a test."""
    allowed: set[int] = set()
    roots = [server.pid for server in _SESSION_SERVERS if server.pid is not None] + list(_SHARED_PIDS)
    for pid in roots:
        allowed.add(pid)
        # a server's child that has exited and waits for the server to reap it (a PostgreSQL
        # backend whose client just closed) is the server's: seen live by the first scan and a
        # zombie by this one, it was killed (a no-op) and reported as a leftover
        allowed.update(_descendants(pid, zombies=True))
    return allowed


#: helper processes a module- or session-scoped fixture keeps running across its tests
_SHARED_PIDS: set[int] = set()


@contextlib.contextmanager
def shared_process(pid: int) -> Iterator[None]:
    """Let a wider fixture's helper process (a disk flood, another tracer) outlive each test
    it serves without being taken for a leftover; the fixture still stops it, by its pid."""
    _SHARED_PIDS.add(pid)
    try:
        yield
    finally:
        _SHARED_PIDS.discard(pid)


#: this session's start, in clock ticks since boot (/proc/PID/stat field 22)
_SESSION_START_TICKS = next(int(fields[19]) for pid, _, fields in _processes() if pid == os.getpid())


def _orphaned_tracers() -> dict[int, str]:
    """bpftrace processes running a shipped script (a ``.bt`` argument), started after this
    session and orphaned to init: a test's ``ioattr script`` whose ioattr was killed. They
    left our process tree, so ``_descendants`` cannot see them, and they trace every process
    on the host until stopped. pid -> command line."""
    found: dict[int, str] = {}
    for pid, comm, fields in _processes():
        if comm != b"bpftrace" or fields[0] == b"Z" or int(fields[1]) != 1 or int(fields[19]) < _SESSION_START_TICKS:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if any(a.endswith(".bt") for a in argv):
            found[pid] = " ".join(argv)
    return found


def _reap_leftovers() -> list[str]:
    """Stop every leftover server and kill other leftover descendants; describe them."""
    leftovers: list[str] = []
    for server in live_servers():
        if server in _SESSION_SERVERS:
            continue
        leftovers.append(f"unstopped PrivateMariaDB (mariadbd pid {server.pid}, {server.basedir})")
        server.stop(timeout=10)
    # Our descendants first, then the servers' (once, after): a server's child seen by the
    # first scan is in the second if it still runs. One that ended in between (a PostgreSQL
    # backend finishing the session a test's last query opened) is in neither, and its kill
    # below finds it gone: not a leftover. Scanning the servers' first instead would let a
    # backend forked in between look stray, and be killed.
    candidates = _descendants()
    allowed = _allowed_pids()
    stray = {p: c for p, c in candidates.items() if p not in allowed}
    for pid, comm in list(stray.items()):
        try:
            os.kill(pid, signal.SIGKILL)  # our own descendant, by pid
        except ProcessLookupError:
            del stray[pid]  # ended by itself since the scan
            continue
        leftovers.append(f"{comm} pid {pid}")
    for pid, argv in _orphaned_tracers().items():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)  # bpftrace detaches on SIGTERM; it is not our child
            leftovers.append(f"orphaned tracer pid {pid} ({argv})")
    # Reap killed children of ours so they do not linger as zombies.
    deadline = time.monotonic() + 5
    for pid in stray:
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break  # not our direct child, or already reaped
            if done:
                break
            time.sleep(0.02)
    return leftovers


@pytest.fixture(autouse=True)
def _no_leftover_processes() -> Iterator[None]:
    """Fail a test that leaves a process (server, sysbench, ...) running."""
    yield
    leftovers = _reap_leftovers()
    if leftovers:
        pytest.fail(
            "test left processes running (now stopped): " + ", ".join(leftovers),
            pytrace=False,
        )


@pytest.fixture(scope="session", autouse=True)
def _datadir_cache() -> Iterator[None]:
    """One mariadb-install-db per kind of server for the whole run, here and in the example
    scripts the tests run (ioattr/host/datadir_cache.py): every later server starts from a
    copy. Removed at the end, as the servers' own directories are."""
    with tempfile.TemporaryDirectory(prefix="ioattr-datadir-cache-", ignore_cleanup_errors=True) as root, \
            pytest.MonkeyPatch.context() as env:
        env.setenv(datadir_cache.ENV, root)
        yield


@pytest.fixture(scope="session")
def mariadb() -> Iterator[PrivateMariaDB]:
    """A private MariaDB shared by the session (32M buffer pool, O_DIRECT, P_S on)."""
    _need_mariadb()
    server = PrivateMariaDB(buffer_pool="32M", flush_method="O_DIRECT", performance_schema=True)
    _SESSION_SERVERS.append(server)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        forget_server(server)


@contextlib.contextmanager
def private_server(*setup: str, **options: object) -> Iterator[PrivateMariaDB]:
    """A started private MariaDB for a module's tests (PrivateMariaDB options), known to the
    leftover-process check, with its `setup` statements run; stopped at the end."""
    _need_mariadb()
    db = PrivateMariaDB(**options)  # type: ignore[arg-type]
    _SESSION_SERVERS.append(db)
    try:
        db.start()
        for sql in setup:
            db.query(sql)
        yield db
    finally:
        db.stop()
        forget_server(db)


def seq_table(table: str, definition: str, insert: str, rows: int) -> list[str]:
    """Setup statements for private_server: `table` ("db.name") and its database made, the table
    as `definition` (what follows CREATE TABLE name), filled by INSERT INTO table INSERT FROM
    db.seq_1_to_ROWS (INSERT selects from `seq`, 1 to rows), then ANALYZE TABLE: its index
    statistics taken on the full table."""
    db = table.split(".")[0]
    return [f"CREATE DATABASE {db}", f"CREATE TABLE {table} {definition}",
            f"INSERT INTO {table} {insert} FROM {db}.seq_1_to_{rows}", f"ANALYZE TABLE {table}"]


def indexed_table_server(rows: int) -> contextlib.AbstractContextManager[PrivateMariaDB]:
    """A private server (8M buffer pool) with b.t of `rows` rows and a secondary index k on a
    scrambled column: point selects by k read the index, then the clustered index, cold."""
    return private_server("CREATE DATABASE b",
                          "CREATE TABLE b.t (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, KEY k (k)) "
                          "ENGINE=InnoDB",
                          f"INSERT INTO b.t SELECT seq, (seq * 7919) % {rows}, 'x' FROM b.seq_1_to_{rows}",
                          buffer_pool="8M", extra_options={"innodb_stats_persistent": "OFF"})


@pytest.fixture
def mariadb_factory() -> Iterator[Callable[..., PrivateMariaDB]]:
    """Make started private servers with custom options; all stopped after the test."""
    _need_mariadb()
    made: list[PrivateMariaDB] = []

    def make(**kwargs: object) -> PrivateMariaDB:
        server = PrivateMariaDB(**kwargs)  # type: ignore[arg-type]
        made.append(server)
        return server.start()

    try:
        yield make
    finally:
        errors: list[BaseException] = []
        for server in reversed(made):
            try:
                server.stop()
            except BaseException as e:  # noqa: BLE001 - stop the others first
                errors.append(e)
        if errors:
            raise errors[0]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After all fixtures are torn down nothing we started may still run."""
    _SESSION_SERVERS.clear()
    leftovers = _reap_leftovers()
    if leftovers:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        msg = "processes left running at session end (now stopped): " + ", ".join(leftovers)
        if reporter is not None:
            reporter.write_line(msg, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

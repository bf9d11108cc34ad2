"""A private, throw-away MariaDB server for tests, examples and ``ioattr demo``.

Why this exists: ioattr's claims ("this read came from that index") are only
worth something if they are checked against a real server.  Tests and demos
must never touch the host's own MariaDB (its data, its service manager, its
port), so every server here is:

* initialised from scratch in its own directory (``mariadb-install-db
  --no-defaults``, so no /etc/mysql option file leaks in),
* started by us from one generated ``my.cnf`` (``--defaults-file`` is the only
  option file the server reads),
* reachable over a unix socket inside that directory and a TCP port bound to
  127.0.0.1 only,
* stopped by the pid we started -- never by process name -- and its directory
  removed afterwards.

The server is configured for IO attribution work: O_DIRECT by default (so
reads hit storage and are visible to block-layer probes), a small buffer pool
(so a few thousand rows already miss the cache), no buffer-pool dump/load (a
restart gives a cold cache instead of a silently pre-warmed one), and
performance_schema file instruments on (``file_summary_by_instance`` is one of
the ground truths the BPF numbers are tested against).

Example::

    with PrivateMariaDB() as db:
        db.query("CREATE DATABASE t")
        db.sysbench("oltp_point_select", "prepare", table_size=1000)
        db.sysbench("oltp_point_select", "run", time=2)
"""
from __future__ import annotations

import atexit
import ctypes
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import pymysql

from ioattr.host.datadir_cache import DatadirCache

__all__ = ["PrivateMariaDB", "SandboxError", "SysbenchError", "live_servers"]

#: Longest path a unix socket address can hold (sun_path is 108 bytes incl. NUL).
_SUN_PATH_MAX = 107

# Every started, not yet stopped server, so an interpreter exit (or a test
# guard) can stop the ones somebody forgot.  Strong references on purpose: a
# running server whose object was dropped must still be found and stopped.


class SandboxError(RuntimeError):
    """The private server could not be initialised, started or stopped."""


class SysbenchError(subprocess.CalledProcessError):
    """sysbench failed; unlike its base class, the message shows what it printed."""

    def __str__(self) -> str:
        tail = "\n".join(((self.stdout or "") + (self.stderr or "")).splitlines()[-20:])
        return f"{super().__str__()}\n{tail}"


class LiveSet:
    """The private servers one launcher started in this process whose ``stop()`` has not
    been called (servers that crashed on their own included: their directory still needs
    removing). The test plugin uses it to prove no test leaves a server behind; at interpreter
    exit it stops what is left, the last line of defence: a crashed test run must not leave a
    server behind. PrivateMariaDB and pg_sandbox.PrivatePostgres each keep one."""

    def __init__(self) -> None:
        self._items: set[Any] = set()
        self._lock = threading.Lock()
        atexit.register(self.stop_all)

    def add(self, server: Any) -> None:
        with self._lock:
            self._items.add(server)

    def discard(self, server: Any) -> None:
        with self._lock:
            self._items.discard(server)

    def list(self) -> list[Any]:
        with self._lock:
            return list(self._items)

    def stop_all(self) -> None:
        for server in self.list():
            try:
                server.stop(timeout=10)
            except Exception:  # noqa: BLE001 - best effort at interpreter exit
                pass


class ChildServer:
    """A server this process started as its child (``_proc``) and stops by its pid."""

    _proc: "subprocess.Popen[bytes] | None" = None
    start_timeout: float  # seconds _wait_accepting waits for the first connection

    def connect(self, *args: Any, **kwargs: Any) -> Any:
        """A client connection to the server (each subclass's driver)."""
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        """The server's pid, ``None`` when not running."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _wait_accepting(self, what: str, ready: Path, not_yet: type[Exception], log: Path,
                        log_tail: Callable[[], str]) -> None:
        """Wait up to ``start_timeout`` seconds for the child just started to accept a connection
        (``connect()``, tried once ``ready``, its socket, exists; ``not_yet``: the errors of a
        server still starting). A child that exits first, or does not answer in time, is a
        SandboxError with the last lines of its log."""
        assert self._proc is not None
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                rc = self._proc.returncode
                self._proc = None
                raise SandboxError(f"{what} exited with status {rc} during start-up; "
                                   f"last lines of {log}:\n{log_tail()}")
            if ready.exists():
                try:
                    self.connect().close()
                    return
                except not_yet as e:
                    last_error = e
            time.sleep(0.05)
        raise SandboxError(f"{what} did not accept connections within {self.start_timeout:.0f}s "
                           f"(last error: {last_error}); last lines of {log}:\n{log_tail()}")


_LIVE = LiveSet()


def live_servers() -> list["PrivateMariaDB"]:
    """MariaDB servers started by this process whose ``stop()`` has not been called."""
    return _LIVE.list()


def _free_tcp_port() -> int:
    """Ask the kernel for a free port on 127.0.0.1.

    There is an unavoidable race between closing this socket and mariadbd
    binding the port; ``start()`` retries with a new port if the bind fails.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM the server if the thread that started it dies.

    Without this a ``kill -9`` of pytest leaves an orphan mariadbd holding a
    port and a temp dir.  SIGTERM gives it a normal shutdown.
    """
    PR_SET_PDEATHSIG = 1
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except Exception:  # noqa: BLE001 - not fatal; atexit still covers normal exits
        pass



class _InBasedir:
    """A read-only attribute naming one file or directory inside the server's basedir."""

    def __init__(self, name: str, doc: str | None = None) -> None:
        self.name = name
        self.__doc__ = doc or f"basedir/{name}"

    def __get__(self, obj: "PrivateMariaDB | None", owner: type | None = None) -> Any:
        return self if obj is None else obj._path(self.name)

class PrivateMariaDB(ChildServer):
    """A private mariadbd living entirely under one directory.

    Use it as a context manager (``with PrivateMariaDB() as db: ...``) or call
    :meth:`start` / :meth:`stop` yourself.  ``stop()`` is idempotent and also
    runs at interpreter exit for servers that were never stopped.

    The server gets SIGTERM if the *thread* that started it exits
    (``PR_SET_PDEATHSIG`` is per thread), so start servers from a thread that
    outlives them -- normally the main thread.

    Layout under ``basedir``::

        my.cnf        server options (the only option file mariadbd reads)
        client.cnf    [client] socket=..., user=root  -- for sysbench/mariadb/ioattr
        data/         datadir
        tmp/          tmpdir (on-disk temp tables, filesort files)
        mysqld.sock   unix socket (falls back to a short /tmp dir if the path is too long)
        mysqld.pid    pid file
        error.log     error log; its tail is included in start-up errors
    """

    def __init__(
        self,
        basedir: Path | None = None,
        buffer_pool: str = "32M",
        flush_method: str = "O_DIRECT",
        performance_schema: bool = True,
        extra_options: dict[str, str] | None = None,
        *,
        keep: bool = False,
        log_file_size: str = "32M",
        start_timeout: float = 60.0,
        mariadbd: str = "mariadbd",
        install_db: str = "mariadb-install-db",
        rocksdb: bool = False,
        rocksdb_block_cache: str = "8M",
        rocksdb_direct_reads: bool = False,
    ) -> None:
        """Describe a server; nothing happens on disk until :meth:`start`.

        Args:
            basedir: directory to build the server in.  ``None`` creates a
                fresh ``tempfile.mkdtemp()`` that :meth:`stop` removes.  A
                given directory is never removed (it is the caller's).
            buffer_pool: ``innodb_buffer_pool_size``; small by default so
                modest tables do not fit and reads reach storage.
            flush_method: ``innodb_flush_method``; ``O_DIRECT`` bypasses the
                page cache, which is what most production setups do.
            performance_schema: turn performance_schema and its file
                instruments on (the per-file ground truth for tests).
            extra_options: more ``[mariadbd]`` options, written verbatim as
                ``key=value`` (value ``""`` writes a bare ``key``); they come
                last, so they override the defaults above.
            keep: do not remove a temp basedir on :meth:`stop` (for debugging).
            log_file_size: ``innodb_log_file_size``; small keeps
                ``mariadb-install-db`` and start-up fast.
            start_timeout: seconds to wait for the server to accept connections.
            mariadbd, install_db: programs to run (names or paths).
            rocksdb: load MyRocks (``plugin-load-add=ha_rocksdb.so``, Debian's
                ``mariadb-plugin-rocksdb``); its RocksDB instance lives in
                ``data/#rocksdb``.
            rocksdb_block_cache: ``rocksdb_block_cache_size``; small by default
                so point lookups on a modest table already read SST blocks.
            rocksdb_direct_reads: ``rocksdb_use_direct_reads=ON`` (O_DIRECT
                reads of SST files, so each block-cache miss is a read of
                storage, not of the page cache).
        """
        self._given_basedir = Path(basedir) if basedir is not None else None
        self.buffer_pool = buffer_pool
        self.flush_method = flush_method
        self.performance_schema = performance_schema
        self.extra_options: dict[str, str] = dict(extra_options or {})
        self.keep = keep
        self.log_file_size = log_file_size
        self.start_timeout = start_timeout
        self._mariadbd = mariadbd
        self._install_db = install_db
        self.rocksdb = rocksdb
        self.rocksdb_block_cache = rocksdb_block_cache
        self.rocksdb_direct_reads = rocksdb_direct_reads

        self.basedir: Path | None = self._given_basedir
        self.port: int | None = None
        self._socket_dir: Path | None = None  # only set when we had to fall back
        self._proc: subprocess.Popen[bytes] | None = None
        self._created_basedir = False
        self._sbtest_ready = False

    # ------------------------------------------------------------------ paths
    def _path(self, name: str) -> Path:
        if self.basedir is None:
            raise SandboxError("server has no directory yet: call start() first")
        return self.basedir / name

    datadir = _InBasedir("data")
    tmpdir = _InBasedir("tmp")
    pid_file = _InBasedir("mysqld.pid")
    error_log = _InBasedir("error.log")
    defaults_file = _InBasedir("my.cnf", "The server's ``my.cnf`` (written by :meth:`start`).")

    @property
    def socket(self) -> Path:
        """Unix socket path (inside basedir unless that path would be too long)."""
        if self._socket_dir is not None:
            return self._socket_dir / "mysqld.sock"
        return self._path("mysqld.sock")

    @property
    def client_defaults_file(self) -> Path:
        """A client option file (``[client] socket=, user=root``).

        Give it to tools as ``--defaults-file`` / ``--defaults-extra-file`` (or
        ``ioattr record --mysql-defaults-file``) so nothing secret or
        server-specific has to go on a command line.
        """
        return self._path("client.cnf")

    @property
    def aio_backend(self) -> str | None:
        """Which asynchronous IO interface InnoDB chose: ``io_uring``, ``libaio`` or ``None``.

        Read from the error log.  It matters to attribution: with io_uring,
        read-ahead and page-cleaner writes are submitted by ``iou-wrk-*``
        kernel workers, not by a mariadbd thread.
        """
        try:
            text = self.error_log.read_text(errors="replace")
        except (OSError, SandboxError):
            return None
        # The newest start-up's message wins (a restarted server appends).
        found = {
            "io_uring": text.rfind("InnoDB: Using io_uring"),
            "libaio": text.rfind("InnoDB: Using Linux native AIO"),
        }
        best = max(found, key=lambda k: found[k])
        return best if found[best] >= 0 else None

    def error_log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the error log ('' if there is none)."""
        try:
            text = self.error_log.read_text(errors="replace")
        except (OSError, SandboxError):
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # -------------------------------------------------------------- lifecycle
    def __enter__(self) -> "PrivateMariaDB":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<PrivateMariaDB {self.basedir} port={self.port} {state}>"

    def server_options(self) -> dict[str, str]:
        """The ``[mariadbd]`` options this server runs with (key -> value; '' = flag).

        Kept as data so tests and the report can show exactly what was used.
        """
        opts: dict[str, str] = {
            "datadir": str(self.datadir),
            "tmpdir": str(self.tmpdir),
            "socket": str(self.socket),
            "port": str(self.port),
            "bind-address": "127.0.0.1",
            "pid-file": str(self.pid_file),
            "log-error": str(self.error_log),
            "skip-name-resolve": "",
            # Keep the server from reading/writing outside basedir.
            "secure-file-priv": str(self.tmpdir),
            "innodb_buffer_pool_size": self.buffer_pool,
            "innodb_flush_method": self.flush_method,
            "innodb_log_file_size": self.log_file_size,
            "innodb_use_native_aio": "ON",
            # A restart must give a cold buffer pool: no dump at shutdown, no
            # load at start-up (both default ON and would pre-warm the cache
            # behind the back of a cold-read experiment).  Also makes stop fast.
            "innodb_buffer_pool_dump_at_shutdown": "OFF",
            "innodb_buffer_pool_load_at_startup": "OFF",
            # The default LRU scan depth (1536 pages per round) is more than a
            # small test pool holds: the page cleaner would keep emptying it.
            "innodb_lru_scan_depth": "128",
        }
        if self.performance_schema:
            opts.update(
                {
                    "performance_schema": "ON",
                    # Enabled+timed file IO instruments feed file_summary_by_instance.
                    "performance-schema-instrument": "'wait/io/file/%=ON'",
                    # The summary tables aggregate only with the global consumer
                    # on; thread instrumentation attributes waits to threads.
                    "performance-schema-consumer-global-instrumentation": "ON",
                    "performance-schema-consumer-thread-instrumentation": "ON",
                }
            )
        else:
            opts["performance_schema"] = "OFF"
        if self.rocksdb:
            opts["plugin-load-add"] = "ha_rocksdb.so"
            opts["rocksdb_block_cache_size"] = self.rocksdb_block_cache
            if self.rocksdb_direct_reads:
                opts["rocksdb_use_direct_reads"] = "ON"
        opts.update(self.extra_options)
        return opts

    def _write_config(self) -> None:
        lines = ["# written by ioattr.host.sandbox.PrivateMariaDB; the server reads only this file", "[mariadbd]"]
        for key, value in self.server_options().items():
            lines.append(key if value == "" else f"{key}={value}")
        self.defaults_file.write_text("\n".join(lines) + "\n")
        self.client_defaults_file.write_text(
            "# client options for the private server (no password: unix_socket auth as root)\n"
            f"[client]\nsocket={self.socket}\nuser=root\n"
        )

    def _prepare_dirs(self) -> None:
        if self.basedir is None:
            self.basedir = Path(tempfile.mkdtemp(prefix="ioattr-mariadb-"))
            self._created_basedir = True
        self.basedir.mkdir(parents=True, exist_ok=True)
        self.tmpdir.mkdir(exist_ok=True)
        if len(str(self.basedir / "mysqld.sock")) > _SUN_PATH_MAX:
            # A unix socket path longer than sun_path cannot be bound at all.
            self._socket_dir = Path(tempfile.mkdtemp(prefix="ioattr-sock-"))

    def _install(self) -> None:
        """Create the system tables in a fresh datadir (about a second; a copy where cached)."""
        if (self.datadir / "mysql").is_dir():
            return  # re-starting a kept/given basedir: reuse its data
        # What decides the datadir's content: also the key of a cached copy of it
        # (datadir_cache, where the environment asks for one). The directories do not;
        # the pool size does (a smaller bootstrap pool flushes through the doublewrite
        # area, whose pages then hold copies of others).
        args = [
            "--no-defaults",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
            "--user=root",
            "--skip-name-resolve",
            # Passed through to the bootstrap mariadbd: same redo/buffer sizes
            # as the real server keeps the bootstrap quick and avoids a resize.
            f"--innodb-log-file-size={self.log_file_size}",
            f"--innodb-buffer-pool-size={self.buffer_pool}",
        ]
        cache = DatadirCache.from_env()
        if cache is not None and cache.fetch(self._install_db, args, self.datadir):
            return
        cmd = [self._install_db, *args, f"--datadir={self.datadir}", f"--tmpdir={self.tmpdir}"]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        if res.returncode != 0:
            out = res.stdout.decode(errors="replace")
            raise SandboxError(
                f"{self._install_db} failed (exit {res.returncode}):\n"
                + "\n".join(out.splitlines()[-30:])
            )
        if cache is not None:
            cache.store(self._install_db, args, self.datadir)

    def start(self) -> "PrivateMariaDB":
        """Initialise (first time) and start the server; return once it accepts connections.

        Raises :class:`SandboxError` with the error log's tail if the server
        exits or does not answer within ``start_timeout`` seconds.
        """
        if self.running:
            return self
        try:
            self._prepare_dirs()
            self._install()
            for attempt in range(3):
                self.port = _free_tcp_port()
                self._write_config()
                try:
                    self._launch_and_wait()
                    return self
                except SandboxError:
                    port_taken = "Address already in use" in self.error_log_tail(30)
                    if not port_taken or attempt == 2:
                        raise
                    # Lost the race for the port: pick another one.
            raise AssertionError("unreachable")
        except BaseException:
            self.stop()
            raise

    def _launch_and_wait(self) -> None:
        try:
            self.error_log.unlink()
        except FileNotFoundError:
            pass
        self._proc = subprocess.Popen(
            self._server_argv(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # everything goes to log-error
            cwd=self.basedir,
            # Own session: a Ctrl-C in the terminal reaches us, and we shut
            # the server down cleanly, instead of hitting mariadbd directly.
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        _LIVE.add(self)
        try:
            self._wait_accepting("mariadbd", self.socket, pymysql.err.MySQLError, self.error_log,
                                 self.error_log_tail)
        except SandboxError:
            self._kill()  # did not answer in time (after an exit: nothing to kill)
            raise

    def _server_argv(self) -> list[str]:
        """The command that runs the server: a subclass may wrap it (in namespaces, a cgroup)."""
        return [self._mariadbd, f"--defaults-file={self.defaults_file}", "--user=root"]

    def _kill(self) -> None:
        """SIGKILL our own pid (and reap it); never anything found by name."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()

    def _shutdown(self, timeout: float) -> None:
        """End our mariadbd: SHUTDOWN, else SIGTERM to our pid, SIGKILL after ``timeout``."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                conn = self.connect()
                try:
                    conn.cursor().execute("SHUTDOWN")
                finally:
                    conn.close()
            except Exception:  # noqa: BLE001 - fall back to a signal
                try:
                    proc.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._proc = None
        _LIVE.discard(self)

    def restart(self, timeout: float = 30.0) -> "PrivateMariaDB":
        """Shut down and start again on the same datadir and port.

        The way to get a cold buffer pool (dump/load at restart is off), e.g.
        before measuring cache-miss reads.  The pid changes.
        """
        self._shutdown(timeout)
        self._launch_and_wait()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the server down cleanly and remove a temp basedir we created.

        Order: ``SHUTDOWN`` over the socket, then SIGTERM to our pid, then
        SIGKILL once ``timeout`` seconds have passed.  Safe to call twice, on
        a never-started server and after a failed start.
        """
        self._shutdown(timeout)
        self._sbtest_ready = False
        if self._socket_dir is not None and not self.keep:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
        if self._created_basedir and not self.keep and self.basedir is not None:
            shutil.rmtree(self.basedir, ignore_errors=True)
            self.basedir = self._given_basedir
            self._created_basedir = False

    # ---------------------------------------------------------------- clients
    def connect(self, database: str | None = None, **kwargs: Any) -> pymysql.connections.Connection:
        """A new pymysql connection as root over the unix socket (autocommit on).

        Root authenticates by unix_socket (we run as OS root), so no password
        exists anywhere.  Extra keyword arguments go to ``pymysql.connect``.
        """
        params: dict[str, Any] = dict(
            unix_socket=str(self.socket), user="root", autocommit=True, connect_timeout=5
        )
        if database is not None:
            params["database"] = database
        params.update(kwargs)
        return pymysql.connect(**params)

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple]:
        """Run one statement on a fresh connection; return all rows (``[]`` if none)."""
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall()) if cur.description else []
        finally:
            conn.close()

    def status(self, name: str) -> int:
        """A ``SHOW GLOBAL STATUS`` value as int, e.g. ``status("Innodb_data_read")``."""
        rows = self.query("SHOW GLOBAL STATUS LIKE %s", (name,))
        if not rows:
            raise KeyError(f"no global status variable {name!r}")
        return int(rows[0][1])

    def sysbench(
        self,
        test: str,
        *args: str,
        tables: int = 1,
        table_size: int = 10000,
        threads: int = 1,
        time: int | None = None,
        events: int | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run sysbench ``test`` (e.g. ``oltp_point_select``) against this server.

        ``args`` carries the command and any extra options, e.g.
        ``db.sysbench("oltp_point_select", "prepare")`` then
        ``db.sysbench("oltp_point_select", "run", time=2)`` and
        ``db.sysbench("oltp_point_select", "cleanup")``.  The ``sbtest``
        database is created on first use.  Output is captured as text;
        ``check`` raises :class:`SysbenchError` (a
        :class:`subprocess.CalledProcessError` whose message includes the
        output's tail) on failure.
        """
        if not self.running:
            raise SandboxError("server is not running")
        if not self._sbtest_ready:
            self.query("CREATE DATABASE IF NOT EXISTS sbtest")
            self._sbtest_ready = True
        cmd = [
            "sysbench",
            test,
            "--db-driver=mysql",
            f"--mysql-socket={self.socket}",
            "--mysql-user=root",
            "--mysql-db=sbtest",
            f"--tables={tables}",
            f"--table-size={table_size}",
            f"--threads={threads}",
        ]
        if time is not None:
            cmd.append(f"--time={time}")
        if events is not None:
            cmd.append(f"--events={events}")
        cmd.extend(args)
        res = subprocess.run(
            cmd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.basedir,
        )
        if check and res.returncode != 0:
            raise SysbenchError(res.returncode, cmd, res.stdout, res.stderr)
        return res

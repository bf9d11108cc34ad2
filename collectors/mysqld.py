"""What ioattr knows about each traced MySQL/MariaDB server.

One ServerContext per server process: its storage engines' adapters
(ioattr/engines/, handed in by the session: this module does not know
which engines exist), the page files registered for page classification,
object (index) names, thread roles and the connection they come from. Everything here is refreshed off the hot path, at most once
per interval, and only as often as something can have changed. When the
connection fails, page classification still works (ids instead of names)
and so does file-level attribution; the reason is kept for meta.json.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from ioattr.collectors.engine import EngineConnection, EngineError, EngineOptions
from ioattr.collectors.targets import process_comm
from ioattr.collectors.thread_roles import ThreadRoles

SERVER_COMMS = ("mysqld", "mariadbd")


def is_server(pid: int) -> bool:
    """A mysqld/mariadbd, by name or by binary (a server started through a renamed link
    has that link's name as comm, but /proc/PID/exe is still the server's binary)."""
    if process_comm(pid) in SERVER_COMMS:
        return True
    try:
        exe = os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")  # upgraded on disk
        return os.path.basename(exe) in SERVER_COMMS
    except OSError:
        return False


def server_directories(cwd: str | None, values: list[str]) -> list[str]:
    """The directories whose page files are registered before the server opens them: its
    working directory (the datadir) and its directory variables, the datadir's first.

    A relative value is the server's, not ours: InnoDB's default innodb_undo_directory is
    './', the datadir. Resolved against our own working directory it named wherever
    `ioattr record` was started (a walk of '/' every sync when started from there)."""
    base = cwd or next((v for v in values if os.path.isabs(v)), None)
    out = [cwd] if cwd else []
    for v in values:
        if not os.path.isabs(v):
            if base is None:
                continue  # relative to a directory we do not know: not ours to guess
            v = os.path.join(base, v)
        v = os.path.normpath(v)
        if v not in out:
            out.append(v)
    return out


@dataclass
class ServerContext:
    """pid's server. engines: its ioattr.engines adapters, the page-classifying one first;
    files: that engine's page-file registry (shared by the session's servers: one BPF map);
    names: that engine's object names (index id -> schema.table.INDEX)."""

    pid: int
    engine_opts: EngineOptions
    files: Any
    engines: tuple = ()
    names: Any = None
    roles: ThreadRoles = field(init=False)  # built from the engines' roles (__post_init__)
    engine: EngineConnection | None = None
    engine_error: str | None = None
    stage_status: str | None = None
    directories: list[str] = field(default_factory=list)
    catalogs: list = field(default_factory=list)  # the engines' file catalogs (EngineAdapter.file_catalog)
    _next_names: float = 0.0
    _next_roles: float = 0.0
    _next_files: float = 0.0
    _next_connect: float = 0.0
    _connect_delay: float = 1.0

    def __post_init__(self) -> None:
        if self.names is None and self.engines:
            self.names = self.engines[0].object_names()
        engine_roles = {k: v for e in self.engines for k, v in e.instrument_roles.items()}
        self.roles = ThreadRoles(engine_roles, [e.role_of_comm for e in self.engines])
        if not self.catalogs:
            self.catalogs = [c for c in (e.file_catalog() for e in self.engines) if c is not None]
        for c in self.catalogs:  # MyRocks: SSTs registered for block-kind classification in BPF
            if hasattr(c, "attach_map"):
                c.attach_map(getattr(self.files, "fd", None))

    def connect(self) -> None:
        try:
            self.directories = [os.readlink(f"/proc/{self.pid}/cwd")]  # mysqld runs in its datadir
        except OSError:
            self.directories = []
        eng = EngineConnection(self.engine_opts, target_pid=self.pid)
        try:
            eng.connect()
        except EngineError as e:
            self.engine_error = str(e)
            # retried by retry_connect: 1, 2, 4 ... 30 s apart
            self._next_connect = time.monotonic() + self._connect_delay
            self._connect_delay = min(self._connect_delay * 2, 30.0)
            return
        self.engine = eng
        self.engine_error = None
        variables = ["datadir"] + [v for e in self.engines for v in e.directory_variables]
        try:
            row = eng.query("SELECT " + ", ".join(f"@@{v}" for v in variables))[0]
            self.directories = server_directories(self.directories[0] if self.directories else None,
                                                  [str(d) for d in row if d])
        except (EngineError, IndexError):
            pass
        for e in self.engines:
            e.on_connect(eng, self.files)

    def retry_connect(self) -> bool:
        """A server found while it was starting (a restart under --comm) did not accept
        connections yet: try again, backing off. True when it just connected."""
        if self.engine is not None or time.monotonic() < self._next_connect:
            return False
        self.connect()
        if self.engine is None:
            return False
        self._next_files = self._next_names = self._next_roles = 0.0  # everything, now
        self.refresh()
        return True

    def describe(self) -> dict:
        return {
            "pid": self.pid,
            "datadir": self.directories[0] if self.directories else None,  # mysqld's cwd
            "connected": self.engine is not None,
            "version": self.engine.version if self.engine else None,
            "flavor": self.engine.flavor if self.engine else None,
            "error": self.engine_error,
            "names_error": self.names.error if self.names is not None else None,
            "roles_error": self.roles.error,
            **({"files_error": "; ".join(c.error for c in self.catalogs if c.error)}
               if any(c.error for c in self.catalogs) else {}),
            "stage_probes": self.stage_status,
        }

    @property
    def flavor(self) -> str:
        return self.engine.flavor if self.engine else "mariadb"

    def refresh(self, *, new_files: bool = False, unknown_index: bool = False,
                unknown_thread: bool = False) -> None:
        """Bring files, names and roles up to date, as far as something changed."""
        now = time.monotonic()
        registered = False
        if new_files or now >= self._next_files:
            registered = bool(self.files.sync(self.pid, self.directories))
            # a page file whose page 0 is not written yet is registered at the next sync: soon
            self._next_files = now + (1.0 if self.files.pending else 10.0)
        if self.engine is None:
            return
        # names: every 5 s while pages of unknown objects come in, and at most once a second
        # when a new page file was registered (CREATE TABLE, a partition, a rebuild) or a lookup
        # missed an object not seen before (ADD INDEX): a new object is named soon after it
        # exists, before a DROP can take its name away (names are kept once read)
        soon = registered or bool(getattr(self.names, "missed", None))
        if self.names is not None and (unknown_index and now >= self._next_names or self._next_names == 0.0
                                       or soon and now >= self._next_names - 4.0):
            self.names.refresh(self.engine)
            self._next_names = now + 5.0
        if unknown_thread and now >= self._next_roles or self._next_roles == 0.0:
            self.roles.refresh(self.engine, self.pid)
            self._next_roles = now + 2.0

    def refresh_catalogs(self, force: bool = False, final: bool = False) -> None:
        """Bring the engines' file catalogs up to date (each re-reads only when its files
        changed, unless `force`): once per interval, and with `final` at the end (after the
        last counters snapshot: what a catalog reads then is charged to no phase)."""
        if self.engine is None:
            return
        for c in self.catalogs:
            c.refresh(self.engine, force=force, final=final)

    def file_table(self, final: bool = False) -> dict[str, dict]:
        """meta.json "files": path -> what the engines know of that file (an SST's level and
        indexes); `final` re-reads first."""
        self.refresh_catalogs(force=final, final=final)
        out: dict[str, dict] = {}
        for c in self.catalogs:
            out.update(c.entries())
        return out

    def role(self, tid: int, comm: str | None) -> str | None:
        """A thread's role; a thread P_S has not shown us yet triggers a (throttled) re-read."""
        role = self.roles.roles.get(tid)
        if role is None and self.engine is not None and time.monotonic() >= self._next_roles - 1.75:
            self.roles.refresh(self.engine, self.pid)
            self._next_roles = time.monotonic() + 2.0
            role = self.roles.roles.get(tid)
        return role or self.roles.lookup(tid, comm)

    def close(self) -> None:
        for c in self.catalogs:
            if hasattr(c, "close"):
                c.close()  # its registrations in the shared page-file map
        if self.engine is not None:
            self.engine.close()

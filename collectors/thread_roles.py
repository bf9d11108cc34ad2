"""Thread roles: what each server thread is for.

From performance_schema.threads (THREAD_OS_ID -> instrument NAME) when
the server has it; otherwise from the thread's comm, which on MariaDB says
little (every thread is "mariadbd") except for io_uring workers. The SQL
layer's instruments are named here; each storage engine adapter names its
own (ioattr/engines/*: EngineAdapter.instrument_roles, role_of_comm), and
ServerContext hands them to ThreadRoles.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ioattr.collectors.engine import EngineConnection, EngineError
from ioattr.collectors.namespaces import namespace_tids

# the SQL layer's instrument names -> role (MariaDB and MySQL 8 names)
ROLE_BY_INSTRUMENT = {
    "thread/sql/one_connection": "connection",
    "thread/sql/main": "main",
    "thread/sql/signal_handler": "signal_handler",
    "thread/sql/manager": "manager",
    "thread/sql/event_scheduler": "event_scheduler",
    "thread/sql/slave_io": "replication_io",
    "thread/sql/slave_sql": "replication_sql",
    "thread/sql/slave_worker": "replication_worker",
}


def role_of_instrument(name: str, engine_roles: Mapping[str, str] | None = None) -> str:
    """A thread's role from its performance_schema instrument (the SQL layer's, then the
    engines'; otherwise the instrument's last part without "_thread")."""
    if name in ROLE_BY_INSTRUMENT:
        return ROLE_BY_INSTRUMENT[name]
    if engine_roles and name in engine_roles:
        return engine_roles[name]
    tail = name.rsplit("/", 1)[-1]
    return tail.removesuffix("_thread") or "other"


def role_of_comm(comm: str | None) -> str | None:
    if comm is None:
        return None
    if comm.startswith("iou-wrk-"):
        return "io_uring_worker"
    if comm.startswith("iou-sqp-"):
        return "io_uring_sqpoll"
    return None


class ThreadRoles:
    """tid -> role of one server's threads; engine_roles: its engines' instrument names ->
    role, comm_roles: its engines' roles by thread name (both from the engine adapters)."""

    def __init__(self, engine_roles: Mapping[str, str] | None = None,
                 comm_roles: Sequence[Callable[[str], str | None]] = ()) -> None:
        self.roles: dict[int, str] = {}
        self.error: str | None = None
        self.engine_roles: dict[str, str] = dict(engine_roles or {})
        self.comm_roles = tuple(comm_roles)

    def refresh(self, engine: EngineConnection, server_pid: int | None = None) -> bool:
        """Re-read the roles; server_pid: the server's host pid, whose thread ids the server
        reports as its PID namespace numbers them (a container): translated to host ids."""
        try:
            rows = engine.query("SELECT THREAD_OS_ID, NAME FROM performance_schema.threads "
                                "WHERE THREAD_OS_ID IS NOT NULL")
        except EngineError as e:
            self.error = f"thread roles from performance_schema unavailable: {e}"
            return False
        host = namespace_tids(server_pid) if server_pid else None
        for tid, name in rows:
            t = int(tid) if host is None else host.get(int(tid))
            if t is not None:  # None: a thread that exited since the query
                self.roles[t] = role_of_instrument(str(name), self.engine_roles)
        if not rows:
            self.error = "performance_schema.threads is empty (performance_schema off?)"
            return False
        self.error = None
        return True

    def lookup(self, tid: int, comm: str | None = None) -> str | None:
        return self.roles.get(tid) or role_of_comm(comm) or self._engine_comm_role(comm)

    def _engine_comm_role(self, comm: str | None) -> str | None:
        if comm is None:
            return None
        for fn in self.comm_roles:
            role = fn(comm)
            if role is not None:
                return role
        return None

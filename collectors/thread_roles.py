"""Thread roles: what each server thread is for.

From performance_schema.threads (THREAD_OS_ID -> instrument NAME) when
the server has it; otherwise from the thread's comm, which on MariaDB says
little (every thread is "mariadbd") except for io_uring workers.
"""
from __future__ import annotations

from ioattr.collectors.engine import EngineConnection, EngineError

# instrument name suffix -> role (MariaDB and MySQL 8 names)
ROLE_BY_INSTRUMENT = {
    "thread/sql/one_connection": "connection",
    "thread/sql/main": "main",
    "thread/sql/signal_handler": "signal_handler",
    "thread/sql/manager": "manager",
    "thread/sql/event_scheduler": "event_scheduler",
    "thread/sql/slave_io": "replication_io",
    "thread/sql/slave_sql": "replication_sql",
    "thread/sql/slave_worker": "replication_worker",
    "thread/innodb/page_cleaner_thread": "page_cleaner",
    "thread/innodb/thread_pool_thread": "innodb_worker",
    "thread/innodb/srv_purge_thread": "purge",
    "thread/innodb/srv_worker_thread": "purge",
    "thread/innodb/io_read_thread": "io",
    "thread/innodb/io_write_thread": "io",
    "thread/innodb/io_ibuf_thread": "io",
    "thread/innodb/io_log_thread": "io",
    "thread/innodb/log_writer_thread": "log_writer",
    "thread/innodb/log_flusher_thread": "log_writer",
    "thread/innodb/buf_dump_thread": "buf_dump",
    "thread/innodb/srv_master_thread": "master",
}


def role_of_instrument(name: str) -> str:
    if name in ROLE_BY_INSTRUMENT:
        return ROLE_BY_INSTRUMENT[name]
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
    def __init__(self) -> None:
        self.roles: dict[int, str] = {}
        self.error: str | None = None

    def refresh(self, engine: EngineConnection) -> bool:
        try:
            rows = engine.query("SELECT THREAD_OS_ID, NAME FROM performance_schema.threads "
                                "WHERE THREAD_OS_ID IS NOT NULL")
        except EngineError as e:
            self.error = f"thread roles from performance_schema unavailable: {e}"
            return False
        for tid, name in rows:
            self.roles[int(tid)] = role_of_instrument(str(name))
        if not rows:
            self.error = "performance_schema.threads is empty (performance_schema off?)"
            return False
        self.error = None
        return True

    def lookup(self, tid: int, comm: str | None = None) -> str | None:
        return self.roles.get(tid) or role_of_comm(comm)

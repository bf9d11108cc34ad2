"""InnoDB's threads: performance_schema instrument names -> roles (the InnoDB adapter's "roles").

The SQL layer's instruments are named in collectors/thread_roles.py; these are InnoDB's own
(MariaDB and MySQL 8 names). Instruments not listed get their name's last part.
"""
from __future__ import annotations

INSTRUMENT_ROLES: dict[str, str] = {
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

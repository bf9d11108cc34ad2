"""MyRocks' threads and their roles (the MyRocks adapter's "roles").

Verified on MariaDB 10.11.19 with Debian's mariadb-plugin-rocksdb (`ps -T` on a private
server): RocksDB's own thread pools name their threads (comm) `rocksdb:high` (the HIGH
priority pool: memtable flushes) and `rocksdb:low` (the LOW pool: compactions; newer RocksDB
adds `rocksdb:bottom`, and may append a thread number), MyRocks' own threads are `myrocks-bg`
(the background thread: WAL syncs once a second with rocksdb_flush_log_at_trx_commit=2, stats),
`myrocks-index` (dropped indexes' cleanup) and `myrocks-mc` (manual compactions asked with
rocksdb_compact_cf; the compaction itself runs on `rocksdb:low`). Connections stay `mariadbd`.

MyRocks' threads are also in performance_schema.threads (thread/rocksdb/...), which ioattr
asks first; RocksDB's pool threads are not, so their role comes from the thread name.
Both give the same role names.
"""
from __future__ import annotations

#: performance_schema instrument NAME -> role (MariaDB 10.11's names)
INSTRUMENT_ROLES: dict[str, str] = {
    "thread/rocksdb/background": "myrocks_background",
    "thread/rocksdb/drop index": "drop_index",
    "thread/rocksdb/manual compaction": "manual_compaction",
}

#: comm prefix -> role, first match wins
COMM_ROLES: tuple[tuple[str, str], ...] = (
    ("rocksdb:high", "flush"),
    ("rocksdb:low", "compaction"),
    ("rocksdb:bottom", "compaction"),
    ("myrocks-bg", "myrocks_background"),
    ("myrocks-index", "drop_index"),
    ("myrocks-mc", "manual_compaction"),
)


def role_of_comm(comm: str | None) -> str | None:
    """A MyRocks/RocksDB thread's role from its name, None for a thread that is not one of theirs."""
    if not comm:
        return None
    for prefix, role in COMM_ROLES:
        if comm.startswith(prefix):
            return role
    return None

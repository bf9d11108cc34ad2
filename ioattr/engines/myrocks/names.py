"""Names of MyRocks' objects (the MyRocks adapter's "objects"): index number -> schema.table.index.

MyRocks stores every index of every table as a key range of a column family: each key starts
with the index's 4-byte number (GL_INDEX_ID = column family id + index number; index numbers
are unique across column families). INFORMATION_SCHEMA.ROCKSDB_DDL lists them
(TABLE_SCHEMA, TABLE_NAME, PARTITION_NAME, INDEX_NAME, COLUMN_FAMILY, INDEX_NUMBER, ...);
MyRocks' own data dictionary lives in the `__system__` column family under small index numbers
that ROCKSDB_DDL does not list: those are named `myrocks.__system__.N`. Unknown numbers stay
unknown (None), never guessed.
"""
from __future__ import annotations

from typing import Iterable

from ioattr.collectors.engine import EngineError
from ioattr.engines.base import Connection

DDL_QUERY = ("SELECT TABLE_SCHEMA, TABLE_NAME, PARTITION_NAME, INDEX_NAME, COLUMN_FAMILY, INDEX_NUMBER "
             "FROM INFORMATION_SCHEMA.ROCKSDB_DDL")
#: index numbers below this are MyRocks' data dictionary (rdb_datadic.h: the first user index is 256)
FIRST_USER_INDEX = 256


def _text(v: object) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def index_display_name(schema: str, table: str, partition: str | None, index: str) -> str:
    """('db', 't', 'p0', 'PRIMARY') -> 'db.t#p0.PRIMARY', as InnoDB's index names are spelled."""
    part = f"#{partition}" if partition else ""
    return f"{schema}.{table}{part}.{index}"


class IndexNames:
    """Index number -> schema.table.index of one server, from ROCKSDB_DDL."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.cf_of: dict[int, int] = {}  # index number -> column family id
        # numbers whose INDEX_NAME was '' in the last read: after a restart MyRocks lists a
        # table's indexes with no name until the table is opened (their names read 'db.t.')
        self.unnamed: set[int] = set()
        self.error: str | None = None

    def load_rows(self, rows: Iterable[tuple]) -> None:
        """ROCKSDB_DDL rows (schema, table, partition, index, column family id, index number)."""
        for schema, table, partition, index, cf, number in rows:
            n = int(number)
            index_name = _text(index) if index is not None else ""
            if index_name:
                self.unnamed.discard(n)
            elif n in self.names and n not in self.unnamed:
                continue  # a name read before stays (never replaced by an empty one)
            else:
                self.unnamed.add(n)
            self.names[n] = index_display_name(_text(schema), _text(table),
                                               _text(partition) if partition else None, index_name)
            self.cf_of[n] = int(cf)

    def refresh(self, conn: Connection) -> bool:
        try:
            rows = conn.query(DDL_QUERY)
        except EngineError as e:
            self.error = f"MyRocks index names unavailable: {e}"
            return False
        self.load_rows(rows)
        self.error = None
        return True

    def lookup(self, object_id: int) -> str | None:
        name = self.names.get(object_id)
        if name is None and 0 <= object_id < FIRST_USER_INDEX:
            return f"myrocks.__system__.{object_id}"
        return name

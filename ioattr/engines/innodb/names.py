"""Names for InnoDB's objects: index id -> schema.table.INDEX (the InnoDB adapter's "objects";
page type names are in pages.py).

MariaDB lists indexes in INFORMATION_SCHEMA.INNODB_SYS_INDEXES/_TABLES,
MySQL 8 in INNODB_INDEXES/INNODB_TABLES; both give a table as
"schema/table" (partitions as "schema/table#P#p0", names in the
filename-safe @NNNN encoding), decoded here. The change-buffer tree has a
fixed id. Unknown ids stay unknown (None), never guessed.
"""
from __future__ import annotations

import re
import time
from typing import Iterable

from ioattr.collectors.engine import EngineConnection, EngineError
from ioattr.engines.base import Connection

IBUF_INDEX_ID = 0xFFFFFFFF00000000
CHANGE_BUFFER = "innodb_system.change_buffer"

MARIADB_QUERY = (
    "SELECT i.INDEX_ID, i.NAME, t.NAME, i.SPACE FROM INFORMATION_SCHEMA.INNODB_SYS_INDEXES i "
    "JOIN INFORMATION_SCHEMA.INNODB_SYS_TABLES t ON i.TABLE_ID = t.TABLE_ID")
MYSQL8_QUERY = (
    "SELECT i.INDEX_ID, i.NAME, t.NAME, i.SPACE FROM INFORMATION_SCHEMA.INNODB_INDEXES i "
    "JOIN INFORMATION_SCHEMA.INNODB_TABLES t ON i.TABLE_ID = t.TABLE_ID")

#: file-per-table tablespace sizes from InnoDB's own dictionary (no table is opened, unlike
#: information_schema.TABLES: cheap with many tables)
MARIADB_SIZES_QUERY = "SELECT NAME, FILE_SIZE FROM INFORMATION_SCHEMA.INNODB_SYS_TABLESPACES"
MYSQL8_SIZES_QUERY = "SELECT NAME, FILE_SIZE FROM INFORMATION_SCHEMA.INNODB_TABLESPACES"

_ENC = re.compile(r"@([0-9a-fA-F]{4})")


def decode_name(s: str) -> str:
    """Undo the filename-safe @NNNN encoding of identifiers."""
    return _ENC.sub(lambda m: chr(int(m.group(1), 16)), s)


def index_display_name(table: str, index: str) -> str:
    """'db/t#P#p0' + 'k_1' -> 'db.t#p0.k_1' (the partition, if any, stays with the table).

    MariaDB names an index being built "\xff<name>" until the build commits."""
    if index[:1] in ("\xff", "\ufffd", "?"):  # TEMP_INDEX_PREFIX, as the server's charset shows it
        index = index[1:] + " (building)"
    schema, _, tbl = table.partition("/")
    parts = re.split(r"#[Pp]#", tbl, maxsplit=1)
    part = ""
    if len(parts) > 1:
        part = "#" + decode_name(re.sub(r"#[Ss][Pp]#", "/", parts[1]))
    return f"{decode_name(schema)}.{decode_name(parts[0])}{part}.{decode_name(index)}"


def table_display_name(table: str) -> str:
    """'db/t#P#p0' -> 'db.t#p0': a table as index names spell it, without the index."""
    return index_display_name(table, "")[:-1]


def tablespace_sizes(engine: Connection) -> dict[str, int]:
    """File size in bytes of every file-per-table tablespace, by table (as index names spell
    it: schema.table). What explain's working-set finding compares with the buffer pool: the
    data the indexes read would have to fit in. Raises EngineError."""
    query = MYSQL8_SIZES_QUERY if engine.flavor == "mysql" else MARIADB_SIZES_QUERY
    out: dict[str, int] = {}
    for name, size in engine.query(query):
        if name is None or size is None or "/" not in str(name):  # system, undo, temporary tablespaces
            continue
        out[table_display_name(str(name))] = int(size)
    return out


class IndexNames:
    def __init__(self) -> None:
        self.names: dict[int, str] = {IBUF_INDEX_ID: CHANGE_BUFFER}
        self.table_of_space: dict[int, str] = {}
        self.error: str | None = None
        self._engine: EngineConnection | None = None
        self._read_at = 0.0
        # ids (and ("space", id)) looked up in vain since the last read: an object created
        # during the recording (CREATE TABLE, ADD INDEX, a partition, a rebuild) is named at
        # the next refresh, soon (collectors/mysqld.py), so that its name is known before a
        # DROP takes it out of the dictionary; ids still unknown after a read are given up on
        # (garbage, or dropped already) and wait for the periodic re-read instead
        self.missed: set = set()
        self._given_up: set = set()

    def load_rows(self, rows: Iterable[tuple]) -> None:
        """(index_id, index_name, 'schema/table', space) rows from either server flavor."""
        for index_id, index_name, table, space in rows:
            self.names[int(index_id)] = index_display_name(str(table), str(index_name))
            if space is not None:
                self.table_of_space.setdefault(int(space), str(table))

    def refresh_if_stale(self, max_age: float = 10.0) -> None:
        """Re-read names that may have changed since (indexes built or renamed)."""
        if self._engine is not None and time.monotonic() - self._read_at >= max_age:
            self.refresh(self._engine)

    def refresh(self, engine: EngineConnection) -> bool:
        self._engine = engine
        self._read_at = time.monotonic()
        query = MYSQL8_QUERY if engine.flavor == "mysql" else MARIADB_QUERY
        try:
            self.load_rows(engine.query(query))
            self.error = None
            if len(self._given_up) > 10000:
                self._given_up.clear()
            self._given_up |= {m for m in self.missed if self._find(m) is None}
            self.missed.clear()
            return True
        except EngineError as e:
            self.error = f"index names unavailable: {e}"
            self._given_up |= self.missed  # no sooner re-read for them: the periodic one retries
            self.missed.clear()
            return False

    def _find(self, key) -> str | None:
        if isinstance(key, tuple):
            table = self.table_of_space.get(key[1])
            return None if table is None else table_display_name(table)
        return self.names.get(key)

    def _look(self, key) -> str | None:
        found = self._find(key)
        if found is None and key not in self._given_up:
            self.missed.add(key)
        return found

    def lookup(self, index_id: int) -> str | None:
        return self._look(index_id)

    def space_table(self, space_id: int) -> str | None:
        """The table (schema.table, a partition as schema.table#p0) whose tablespace this is."""
        return self._look(("space", space_id))

"""The on-disk size of every table of a MySQL/MariaDB server, from its files (a counter source).

What INFORMATION_SCHEMA says a table takes is an estimate, and it is wrong for compressed
engines (the bulk-load reports behind issue 17 found it so for ROW_FORMAT=COMPRESSED InnoDB and
Archive): the files themselves say. Every table data file under the datadir's database
directories -- InnoDB's .ibd (file-per-table; a partition is its own file, named as index names
spell it: schema.table#p0), the Archive engine's .ARZ, MyISAM's .MYD/.MYI, Aria's .MAD/.MAI,
CSV's .CSV -- is summed per table into two counters of source `table_files`:

    "<schema>.<table>:bytes"      the files' size (st_size)
    "<schema>.<table>:allocated"  what they take on disk (st_blocks * 512): smaller than bytes
                                  for PAGE_COMPRESSED tables (holes punched in each page) and
                                  other sparse files

Tables in the system tablespace (ibdata1), MyRocks' (in SST files shared by tables) and the
server's temporary files (#sql*) are not in it. Like the performance_schema sources, a table is
listed only when its size changed since the previous read (all of them at the first read): an
absent row means unchanged, so the counters table stays small with thousands of tables. The
files are stat()ed once per read (every interval): MAX_FILES bounds the work.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from ioattr.engines.base import Connection, CounterRow, CounterSource
from ioattr.engines.innodb.names import table_display_name

TABLE_FILE_EXTS = frozenset({".ibd", ".ARZ", ".MYD", ".MYI", ".MAD", ".MAI", ".CSV"})
MAX_FILES = 50_000


def table_sizes(datadir: str, max_files: int = MAX_FILES) -> dict[str, tuple[int, int]]:
    """schema.table -> (bytes, allocated bytes) of its data files under datadir/<schema>/."""
    out: dict[str, tuple[int, int]] = {}
    seen = 0
    try:
        schemas = [e for e in os.scandir(datadir) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return out
    for schema in schemas:
        if schema.name.startswith("#"):  # #innodb_redo, #rocksdb, #innodb_temp ...
            continue
        try:
            entries = list(os.scandir(schema.path))
        except OSError:
            continue
        for e in entries:
            stem, ext = os.path.splitext(e.name)
            if ext not in TABLE_FILE_EXTS or stem.startswith("#sql"):
                continue
            seen += 1
            if seen > max_files:
                return out
            try:
                st = e.stat(follow_symlinks=True)  # DATA DIRECTORY tables: InnoDB's .isl is not one
            except OSError:
                continue  # dropped meanwhile
            table = table_display_name(f"{schema.name}/{stem}")
            size, alloc = out.get(table, (0, 0))
            out[table] = (size + st.st_size, alloc + st.st_blocks * 512)
    return out


class TableFiles(CounterSource):
    """The `table_files` counter source: each table's size from its files (see the module)."""

    source = "table_files"

    def __init__(self) -> None:
        self.datadir: str | None = None
        self._last: dict[str, float] = {}

    def first_sight(self, conn: Connection, settings: dict[str, Any] | None,
                    note: Callable[..., None]) -> None:
        self._last = {}  # a new server process (or a reconnect): list every table again

    def read(self, conn: Connection) -> list[CounterRow]:
        if self.datadir is None:
            rows = conn.query("SELECT @@datadir")
            self.datadir = str(rows[0][0]) if rows and rows[0][0] else ""
        if not self.datadir:
            return []
        now: dict[str, float] = {}
        for table, (size, alloc) in table_sizes(self.datadir).items():
            now[f"{table}:bytes"] = float(size)
            now[f"{table}:allocated"] = float(alloc)
        changed = [(k, v, None) for k, v in now.items() if self._last.get(k) != v]
        # a table dropped since: its size is 0 now (the phase it went in says so)
        changed += [(k, 0.0, None) for k, v in self._last.items() if k not in now and v]
        self._last = {k: v for k, v in now.items()}
        return changed

"""docs/recordings.md lists every column of every table a recording holds, in the schema's order."""
from __future__ import annotations

import re
from pathlib import Path

from ioattr.format.schema import HIST_COLUMNS, TABLES

DOC = Path(__file__).resolve().parents[2] / "docs" / "recordings.md"


def test_every_table_and_column_is_documented() -> None:
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \|[^|]*\| `([^|]*)` \|$",
                                                        DOC.read_text(), re.M)}
    assert set(rows) == set(TABLES)
    for table, schema in TABLES.items():
        names = [n for n in schema.names if n not in HIST_COLUMNS]
        listed = rows[table].replace("`", " ").replace("…", " ").split()
        hist = [n for n in listed if n in HIST_COLUMNS]
        assert [n for n in listed if n not in HIST_COLUMNS] == names, table
        if table == "io":
            assert hist == [HIST_COLUMNS[0], HIST_COLUMNS[-1]]

"""Open a recording for reading: its meta.json and its IO chunks as a DuckDB view.

Works on a recording that is still being written (chunks appear
atomically), and on one whose writer was killed (meta.json then says
"recording" and the last chunk in progress is simply absent). A chunk that
is not a complete Parquet file is left out with a warning, never fatal.
Chunks merged into segments (compact.py) are read from their segment,
also while a compaction is going on: never both, never neither (listing and
each query hold shared locks on the table directories).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import duckdb

from ioattr.compact import _duck_type, dir_lock, snapshot
from ioattr.errors import UsageError
from ioattr.recording import TABLES


class Recording:
    def __init__(self, path: str | Path, warn=lambda m: print(f"ioattr: warning: {m}", file=sys.stderr)) -> None:
        self.path = Path(path)
        meta_path = self.path / "meta.json"
        if not self.path.exists():
            raise UsageError(f"no such recording: {self.path}")
        if not meta_path.exists():
            raise UsageError(f"not an ioattr recording (no meta.json): {self.path}")
        try:
            self.meta: dict[str, Any] = json.loads(meta_path.read_text())
        except (OSError, ValueError) as e:
            raise UsageError(f"unreadable recording metadata {meta_path}: {e}") from e
        if not isinstance(self.meta, dict) or "phases" not in self.meta:
            raise UsageError(f"not an ioattr recording (bad meta.json): {self.path}")
        self.con = duckdb.connect(":memory:")
        self.chunk_counts: dict[str, int] = {}
        self._files: dict[str, list[Path]] = {}
        self._kinds: dict[str, str] = {}
        with self._locked():
            self._open_tables(warn)
        self.chunk_count = self.chunk_counts.get("io", 0)
        self.con.execute("CREATE TABLE query_texts (digest UBIGINT, text VARCHAR)")
        texts = []
        for hexd, text in (self.meta.get("queries") or {}).items():
            try:
                texts.append((int(hexd, 16), str(text)))
            except (TypeError, ValueError):
                continue
        if texts:
            self.con.executemany("INSERT INTO query_texts VALUES (?, ?)", texts)
        self.con.execute("CREATE TABLE index_names (index_id UBIGINT, name VARCHAR)")
        names = []
        for iid, name in (self.meta.get("indexes") or {}).items():
            try:
                names.append((int(iid), str(name)))
            except (TypeError, ValueError):
                continue
        if names:
            self.con.executemany("INSERT INTO index_names VALUES (?, ?)", names)

    def has_table(self, table: str) -> bool:
        """Whether the recording has any chunk of this table."""
        return self.chunk_counts.get(table, 0) > 0

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        with self._locked():
            # a compaction may have replaced files since we listed them: their rows are now
            # in a segment, so list again (no file goes away while we hold the locks)
            if self._stale():
                self._open_tables()
            return self.con.execute(sql, params or []).fetchall()

    def _stale(self) -> bool:
        """Whether a file we listed is gone (one directory read per table)."""
        for table, files in self._files.items():
            if files:
                try:
                    names = set(os.listdir(self.path / table))
                except OSError:
                    return True
                if any(f.name not in names for f in files):
                    return True
        return False

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Shared locks on the table directories: a compactor renames or deletes only under
        an exclusive one (compact.py), so what we listed stays there while DuckDB reads it."""
        with contextlib.ExitStack() as stack:
            for table in TABLES:
                stack.enter_context(dir_lock(self.path / table, fcntl.LOCK_SH))
            yield

    def _open_tables(self, warn=lambda m: None) -> None:
        """A view per table over its live parts: chunks and the segments that replaced
        chunks (compact.py), each chunk's rows counted once."""
        for table, schema in TABLES.items():
            good = snapshot(self.path / table, warn, locked=True)
            self.chunk_counts[table] = len(good)
            if table in self._kinds:
                self.con.execute(f"DROP {self._kinds.pop(table)} {table}")
            self._files[table] = good
            if good:
                files = ", ".join("'" + str(c).replace("'", "''") + "'" for c in good)
                self.con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{files}], "
                                 f"union_by_name = true)")
                self._kinds[table] = "VIEW"
            else:
                cols = ", ".join(f'"{f.name}" {_duck_type(f.type)}' for f in schema)
                self.con.execute(f"CREATE TABLE {table} ({cols})")
                self._kinds[table] = "TABLE"

    def phases(self) -> list[dict[str, Any]]:
        return [{"name": p["name"], "start": p["start"], "end": p.get("end")} for p in self.meta["phases"]]

    def phase_names(self) -> list[str]:
        return [p["name"] for p in self.meta["phases"]]

    def require_phase(self, name: str) -> None:
        if name not in self.phase_names():
            raise UsageError(f"unknown phase {name!r}; this recording has: {', '.join(self.phase_names())}")

    def dropped_total(self) -> int:
        return int(sum(int(v) for v in (self.meta.get("dropped") or {}).values()))


"""Open a recording for reading: its meta.json and its IO chunks as a DuckDB view.

Works on a recording that is still being written (chunks appear
atomically), and on one whose writer was killed (meta.json then says
"recording" and the last chunk in progress is simply absent).
Chunks merged into segments (compact.py) are read from their segment,
also while a compaction is going on: never both, never neither (listing and
each query hold shared locks on the table directories).

Damage is never fatal to the rest: a part that is not a complete Parquet
file, one whose footer or page headers claim sizes it can't have (checked
before DuckDB sees the file: partcheck.py), one DuckDB fails on (found when
a query fails, by reading each part whole), a segment whose footer is not that segment's, or another table's
file is left out with a warning naming it, and the chunks a damaged segment
stands for are read instead while they are still there. A meta.json that
can't be used at all is one line and exit 2; an optional value of the wrong
type in it is ignored with a warning. (tests/test_fuzz.py fuzzes all this.)
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import duckdb

from ioattr.errors import RuntimeFailure, UsageError
from ioattr.format import derived as derived_files
from ioattr.format import duck
from ioattr.format.compact import dir_lock, snapshot
from ioattr.format.partcheck import part_problem
from ioattr.format.schema import FORMAT, NULL_WHEN_ABSENT, TABLES, duck_type


def _meta_problem(meta: Any) -> str | None:
    """What is wrong with a meta.json's shape (None: usable). Checked once, so a damaged
    or foreign file is one clear line instead of an error deep inside a report."""
    if not isinstance(meta, dict):
        return "not an object"
    phases = meta.get("phases")
    if not isinstance(phases, list) or not phases:
        return "no phases"
    for p in phases:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) \
                or not isinstance(p.get("start"), (int, float)) \
                or not isinstance(p.get("end"), (int, float, type(None))):
            return "a phase without name and start time"
    dropped = meta.get("dropped")
    if dropped is not None and (not isinstance(dropped, dict)
                                or not all(isinstance(v, int) for v in dropped.values())):
        return "dropped is not a map of counts"
    for key in ("queries", "indexes"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            return f"{key} is not a map"
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _str_map(v: Any, value_ok) -> bool:
    return isinstance(v, dict) and all(value_ok(x) for x in v.values())


# meta.json's optional keys and what their values must be; a value that isn't is left out
# with a warning (the recording's data stays reportable without it)
OPTIONAL_META = {
    "started": _number,
    "ended": lambda v: v is None or _number(v),
    "interval": _number,
    # block requests counted without a latency (a count: report prints it with int())
    "block_untimed": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    "chunks": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "host": lambda v: isinstance(v, str),
    "kernel": lambda v: isinstance(v, str),
    "status": lambda v: isinstance(v, str),
    "stages": lambda v: v is None or isinstance(v, str),
    "servers": lambda v: isinstance(v, list) and all(
        isinstance(s, dict) and isinstance(s.get("datadir", ""), (str, type(None))) for s in v),
    "max_entries": lambda v: _str_map(v, lambda x: isinstance(x, int) and not isinstance(x, bool)),
    "settings": lambda v: isinstance(v, dict),
    "degraded": lambda v: isinstance(v, dict),
    "notes": lambda v: isinstance(v, list),
    "targets": lambda v: isinstance(v, list),
    "probe_sets": lambda v: isinstance(v, list),
    # per-file facts of the engines' catalogs (an SST's level and indexes), keyed by path
    "files": lambda v: _str_map(v, lambda x: isinstance(x, dict)),
}


def _check_format(meta: dict, path: Path) -> None:
    """meta.json's "format" (absent in hand-made recordings: accepted): one this reader
    knows, else one clear line rather than a misreading."""
    if "format" not in meta:
        return
    fmt = meta["format"]
    m = re.fullmatch(r"ioattr-recording/(\d{1,9})", fmt) if isinstance(fmt, str) else None
    if m is None:
        raise UsageError(f"not an ioattr recording (format {str(fmt)[:40]!r}): {path}")
    if int(m.group(1)) > FORMAT_VERSION:
        raise UsageError(f"{path} is in format {fmt}, newer than this ioattr reads "
                         f"(ioattr-recording/{FORMAT_VERSION}): upgrade ioattr to read it")


def _drop_bad_optional_meta(meta: dict, path: Path, warn) -> None:
    for key, ok in OPTIONAL_META.items():
        if key in meta and not ok(meta[key]):
            warn(f"{path}: ignoring {key!r}: unexpected value {str(meta[key])[:60]!r}")
            del meta[key]
    # a phase's operation count (--ops-pattern): a number of operations, or none
    for p in meta["phases"]:
        if "ops" in p and p["ops"] is not None and not (_number(p["ops"]) and p["ops"] >= 0):
            warn(f"{path}: ignoring phase {p['name']!r}'s 'ops': unexpected value {str(p['ops'])[:60]!r}")
            del p["ops"]


# Columns every writer of each table wrote: a file without them is not that table's.
REQUIRED_COLUMNS = {
    "io": ("ts_start", "ts_end", "phase", "layer", "op", "count", "bytes"),
    "pages": ("ts_start", "ts_end", "phase", "op", "pages", "bytes"),
    "statements": ("ts_start", "ts_end", "phase", "count"),
    "counters": ("ts", "phase", "source", "name", "value"),
}


FORMAT_VERSION = int(FORMAT.rsplit("/", 1)[1])

# What DuckDB raises on a damaged file: its own errors, and (duckdb 2's bindings) a
# RuntimeError when a damaged file's bytes can't even be turned into a message.
DUCKDB_ERRORS = (duckdb.Error, RuntimeError)


def _lit(v: object) -> str:
    return "'" + str(v).replace("'", "''") + "'"


def _first_line(e: BaseException) -> str:
    line = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return line if len(line) <= 240 else line[:237] + "..."


def _named(mapping: Any, key: Callable[[str], Any]) -> list[tuple[Any, str]]:
    """(key(k), name) of a meta.json map of names (query texts by hex digest, index names by
    id), without the entries whose key does not convert."""
    out = []
    for k, name in (mapping or {}).items():
        try:
            out.append((key(k), str(name)))
        except (TypeError, ValueError):
            continue
    return out


CHECK_BATCH_ROWS = 65_536

T = TypeVar("T")


def part_ok(path: Path) -> bool:
    """Whether a Parquet file's sizes are sane (partcheck.py): checked before DuckDB reads it."""
    return part_problem(path) is None


def damaged_part(con: "duckdb.DuckDBPyConnection", path: Path) -> str | None:
    """Why `path` can't be read whole as Parquet (one line), None if it can: its sizes
    checked (partcheck.py) before DuckDB sees it, then every column of every row group
    decoded, a batch at a time (memory: one batch, whatever the file's size)."""
    why = part_problem(path)
    if why is not None:
        return why
    try:
        rel = con.sql(f"SELECT * FROM read_parquet({_lit(path)})")
        # duckdb 2: to_arrow_reader, 1: fetch_record_batch
        reader = (getattr(rel, "to_arrow_reader", None) or rel.fetch_record_batch)(CHECK_BATCH_ROWS)
        for batch in reader:
            batch.validate(full=True)       # strings: valid UTF-8, as a query's results must be
    except Exception as e:                  # whatever reading it raised: it can't be read
        return _first_line(e)
    return None


class Recording:
    def __init__(self, path: str | Path, warn=lambda m: print(f"ioattr: warning: {m}", file=sys.stderr)) -> None:
        self.path = Path(path)
        meta_path = self.path / "meta.json"
        try:
            if not self.path.exists():
                raise UsageError(f"no such recording: {self.path}")
            if not self.path.is_dir():
                raise UsageError(f"not an ioattr recording (not a directory): {self.path}")
            if not meta_path.exists():
                raise UsageError(f"not an ioattr recording (no meta.json): {self.path}")
        except PermissionError:
            raise UsageError(f"cannot read recording {self.path}: permission denied "
                             "(recordings are private to their owner; run as root)") from None
        try:
            self.meta: dict[str, Any] = json.loads(meta_path.read_text())
        except PermissionError:
            raise UsageError(f"cannot read recording {self.path}: permission denied "
                             "(recordings are private to their owner; run as root)") from None
        except (OSError, ValueError) as e:
            raise UsageError(f"unreadable recording metadata {meta_path}: {e}") from e
        bad = _meta_problem(self.meta)
        if bad:
            raise UsageError(f"not an ioattr recording (bad meta.json: {bad}): {self.path}")
        _check_format(self.meta, self.path)
        _drop_bad_optional_meta(self.meta, meta_path, warn)
        self.con = duck.connect()            # memory_limit and threads bounded (duck.py)
        self.chunk_counts: dict[str, int] = {}
        self._files: dict[str, list[Path]] = {}
        self._kinds: dict[str, str] = {}
        self._bad: set[Path] = set()        # damaged parts, left out
        self._verified: set[Path] = set()   # parts read whole without error
        self._memo: dict[Any, Any] = {}     # derived values (memo()), until the files change
        # derived(): name -> (sql, tables, remake: the sql anew for the files listed now, or None)
        self._derived_defs: dict[str, tuple[str, tuple[str, ...], Callable[[], str] | None]] = {}
        self._generation = 0                # how many times the files were listed (_open_tables)
        self._making: set[str] = set()      # derived tables being made (their query names them)
        warned: set[str] = set()

        def warn_once(msg: str) -> None:
            if msg not in warned:
                warned.add(msg)
                warn(msg)

        self._warn = warn_once
        try:
            with self._locked():
                self._open_tables()
        except OSError as e:
            what = "permission denied" if isinstance(e, PermissionError) else (e.strerror or str(e))
            raise UsageError(f"cannot read recording {self.path}: {e.filename or self.path}: {what}") from None
        self.chunk_count = self.chunk_counts.get("io", 0)
        self._names_table("query_texts", "digest UBIGINT, text VARCHAR",
                          _named(self.meta.get("queries"), lambda hexd: int(hexd, 16)))
        self._names_table("index_names", "index_id UBIGINT, name VARCHAR", _named(self.meta.get("indexes"), int))
        # the final name of the one index a file holds where the engine's catalog lists one only
        # (meta.json "files", re-read at the end: a name read mid-recording may lack its index
        # part, MyRocks' after a restart); model/dimensions.INDEX_SQL reads it for the classes
        # whose page rows name a file (file_classes.ONE_INDEX_PER_FILE)
        one = []
        for path, f in (self.meta.get("files") or {}).items():
            idx = f.get("indexes") if isinstance(f, dict) else None
            if isinstance(idx, list) and len(idx) == 1 and isinstance(idx[0], dict) and idx[0].get("index"):
                one.append((str(path), str(idx[0]["index"])))
        self._names_table("file_index_names", "file VARCHAR, name VARCHAR", one)

    def _names_table(self, table: str, columns: str, rows: list[tuple[Any, str]]) -> None:
        """A two-column table of names from meta.json (made even when there are none)."""
        self.con.execute(f"CREATE TABLE {table} ({columns})")
        if rows:
            self.con.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)

    def memo(self, key: Any, compute: Callable[[], T]) -> T:
        """compute()'s value, once per recording and key: a command that asks for the same
        derived numbers again (explain's phase statistics for every phase, then for its two
        sides) reads the data once. Forgotten whenever the tables are listed again."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def derived(self, name: str, sql: str, tables: tuple[str, ...], remake: Callable[[], str] | None = None) -> str:
        """A table `name` holding `sql`'s result over `tables` (a sum over time of 40M rows,
        say), for the command's lifetime: read from the recording's derived file when one
        was made from these same parts by this same query, else computed (and written for the
        next command). Returns the name to select from. See ioattr/format/derived.py.
        remake: `sql` made again for the files as listed now. A damaged file found while the
        query runs is left out and the files are listed again: the columns only it had (a
        flipped bit in a column's name) are gone, and a query naming them fails until remade."""
        self._derived_defs[name] = (sql, tables, remake)

        def compute() -> str:
            with self._locked():
                if self._stale():
                    self._open_tables()
                k = derived_files.key(sql, [f for t in tables for f in self._files.get(t, [])])
                hit = derived_files.lookup(self.path, name, k) if k else None
                if hit is not None and part_ok(hit):
                    try:
                        # a file of another shape under the right name (replaced, foreign) is
                        # not the query's result: its columns and types must be the query's
                        want = self.con.execute(f"DESCRIBE {sql}").fetchall()
                        got = self.con.execute(f"DESCRIBE SELECT * FROM read_parquet({_lit(hit)})").fetchall()
                        if [r[:2] for r in want] == [r[:2] for r in got]:
                            self.con.execute(
                                f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM read_parquet({_lit(hit)})")
                            return name
                    except DUCKDB_ERRORS:
                        pass        # unreadable after all: computed below, and written anew
            self._making.add(name)
            made = sql
            try:
                while True:
                    gen = self._generation
                    try:
                        self.query(f"CREATE OR REPLACE TEMP TABLE {name} AS {made}")
                        break
                    except DUCKDB_ERRORS:
                        if remake is None or self._generation == gen or remake() == made:
                            raise
                        made = remake()     # the files were listed again: their columns now
                        self._derived_defs[name] = (made, tables, remake)
            finally:
                self._making.discard(name)
            with self._locked():
                # the parts it was made from (a damaged one found by the query is now left out)
                k = derived_files.key(made, [f for t in tables for f in self._files.get(t, [])])
                if k and not self._stale():
                    derived_files.store(self.con, self.path, name, k, name)
            return name
        return self.memo(("derived", name), compute)

    def totals(self, table: str) -> str:
        """`table` (io or pages) summed over time: the same columns but the timestamps, one row
        per distinct key, to group instead of the table whenever the query needs no time."""
        def sql() -> str:
            cols = [r[0] for r in self.con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
                [table]).fetchall()]
            return derived_files.totals_sql(table, cols)
        return self.derived(f"{table}_totals", sql(), (table,), remake=sql)

    def has_table(self, table: str) -> bool:
        """Whether the recording has any chunk of this table."""
        return self.chunk_counts.get(table, 0) > 0

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        with self._locked():
            # a compaction may have replaced files since we listed them: their rows are now
            # in a segment, so list again (no file goes away while we hold the locks)
            if self._stale():
                self._open_tables()
            while True:
                # derived tables the query reads, made again once the files were listed again
                self._refresh_derived(sql)
                try:
                    return self.con.execute(sql, params or []).fetchall()
                except duckdb.ParserException:
                    raise  # a syntax error is the query's own: no file can cause it
                except DUCKDB_ERRORS as e:
                    # a file that is damaged inside (its footer was fine): find it, leave it
                    # out and ask again; an error no file explains is raised as it is. A derived
                    # table stands for its query over the files (hunt), so that it is the files
                    # that are tried
                    hunt = self._expand_derived(sql)
                    used = [(t, fs) for t, fs in self._files.items() if re.search(rf"\b{t}\b", hunt)]
                    if not isinstance(e, duckdb.OutOfMemoryException) and self._fails_without_rows(
                            hunt, params, [t for t, _ in used]):
                        raise  # a misspelt column or a wrong type: the query's own error
                    if not any([self._find_damaged(t, fs, self._warn) for t, fs in used]):
                        if isinstance(e, duckdb.OutOfMemoryException):
                            limit = self.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
                            raise RuntimeFailure(
                                f"{self.path}: this query needs more memory than DuckDB's limit ({limit}); "
                                f"set {duck.MEMORY_ENV} higher (e.g. 2GB)") from None
                        # every file reads whole, yet the query fails: a file whose values or
                        # types are damaged (a flipped bit makes a count 2^63, a column BLOB), or
                        # one only a filtered read trips on; find it by the query itself
                        found = any([self._find_poisoning(t, fs, hunt, params, self._warn) for t, fs in used])
                        self._open_tables()
                        if not found:
                            raise
                        continue
                    self._open_tables()

    def _derived_in(self, sql: str) -> list[str]:
        """The derived tables `sql` reads (not the one it makes)."""
        return [n for n in self._derived_defs if n not in self._making and re.search(rf"\b{n}\b", sql)]

    def _refresh_derived(self, sql: str) -> None:
        for name in self._derived_in(sql):
            if ("derived", name) not in self._memo:
                sql, tables, remake = self._derived_defs[name]
                self.derived(name, remake() if remake is not None else sql, tables, remake)

    def _expand_derived(self, sql: str) -> str:
        """`sql` with each derived table replaced by the query that makes it."""
        for name in self._derived_in(sql):
            sql = re.sub(rf"\b{name}\b", lambda _: f"({self._derived_defs[name][0]})", sql)
        return sql

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

    def _open_tables(self, warn=None) -> None:
        """A view per table over its live parts: chunks and the segments that replaced
        chunks (compact.py), each chunk's rows counted once. Damaged parts are left out
        with a warning, and the chunks a damaged segment covers are read instead if they
        are still there: whatever happened to one file, the others are reported."""
        warn = warn or self._warn
        self._memo = {}
        self._generation += 1
        # parts a command of ours already checked, unchanged since: not checked again
        checked = derived_files.checked_parts(self.path)
        for table, schema in TABLES.items():
            tdir = self.path / table
            if tdir.exists() and not tdir.is_dir():
                warn(f"skipping {tdir}: not a directory")
            if table in self._kinds:
                self.con.execute(f"DROP {self._kinds.pop(table)} {table}")
            while True:
                good = snapshot(tdir, warn, locked=True, exclude=self._bad,
                                known_good=lambda p: derived_files.known_good(p, checked))
                if not good or self._create_view(table, schema, good, warn):
                    break
            self.chunk_counts[table] = len(good)
            self._files[table] = good
            if not good:
                cols = ", ".join(f'"{f.name}" {duck_type(f.type)}' for f in schema)
                self.con.execute(f"CREATE TABLE {table} ({cols})")
                self._kinds[table] = "TABLE"
        derived_files.remember_checked(self.path, [f for fs in self._files.values() for f in fs], checked)

    def _create_view(self, table: str, schema, files: list[Path], warn) -> bool:
        """The view over `files`; False when some of them turned out damaged (now in
        self._bad, warned about): the caller lists again without them."""
        lits = ", ".join(_lit(c) for c in files)
        try:
            self.con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{lits}], union_by_name = true)")
        except DUCKDB_ERRORS:
            if not self._find_damaged(table, files, warn):
                raise
            return False
        self._kinds[table] = "VIEW"
        try:
            cols = {r[0] for r in self.con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [table]).fetchall()}
        except DUCKDB_ERRORS:       # a damaged footer's column name (invalid UTF-8, ...)
            cols = {""}
        if cols - set(schema.names):
            # columns this table does not have: a newer writer's, another table's file put
            # here, or a damaged name; only then look at each file's own columns (footers only)
            foreign = []
            for f in files:
                try:
                    have = {r[0] for r in self.con.execute(
                        f"SELECT name FROM parquet_schema({_lit(f)})").fetchall()}
                except DUCKDB_ERRORS as e:
                    foreign.append(f)
                    self._mark_bad(f, _first_line(e), warn)
                    continue
                missing = [c for c in REQUIRED_COLUMNS.get(table, ()) if c not in have]
                if missing:
                    foreign.append(f)
                    self._mark_bad(f, f"not a {table} file (no column {missing[0]})", warn)
            if foreign:
                self.con.execute(f"DROP VIEW {table}")
                self._kinds.pop(table)
                return False
        absent = [schema.field(c) for c in NULL_WHEN_ABSENT.get(table, ()) if c not in cols]
        if absent and cols != {""}:
            # a column added to the format later (io.cgroup): a recording made before it reads
            # with that column NULL, so every query and dimension works on it unchanged
            nulls = ", ".join(f'CAST(NULL AS {duck_type(f.type)}) AS "{f.name}"' for f in absent)
            self.con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT *, {nulls} "
                             f"FROM read_parquet([{lits}], union_by_name = true)")
        return True

    def _mark_bad(self, f: Path, why: str, warn) -> None:
        self._bad.add(f)
        kind = "chunk" if f.name.startswith("chunk-") else "segment"
        warn(f"skipping damaged {kind} {f}: {why}")

    def _find_damaged(self, table: str, files: list[Path], warn) -> bool:
        """Read each file whole (only after a query failed): those DuckDB can't read are
        damaged. Whether any was found."""
        found = False
        for f in files:
            if f in self._verified or f in self._bad:
                continue
            why = damaged_part(self.con, f)
            if why:
                self._mark_bad(f, why, warn)
                found = True
            else:
                self._verified.add(f)
        return found

    def _fails_without_rows(self, sql: str, params: list[Any] | None, tables: list[str]) -> bool:
        """Whether `sql` fails with each of `tables` empty (its columns kept, with the schema's
        types): then no file's values can be the cause, and hunting for one would mark every
        file damaged."""
        try:
            for table in tables:
                cols = self.con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                                        "ORDER BY column_index", [table]).fetchall()
                # the schema's columns and types, not the files' union: a damaged file can turn a
                # column BLOB or lose it
                want = {f.name: duck_type(f.type) for f in TABLES[table]} if table in TABLES else {}
                for c, t in cols:
                    want.setdefault(c, t)
                if not want:
                    continue
                proj = ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in want.items())
                self.con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT {proj} WHERE false")
            try:
                self.con.execute(sql, params or []).fetchall()
            except DUCKDB_ERRORS:
                return True
            return False
        finally:
            self._open_tables()

    def _find_poisoning(self, table: str, files: list[Path], sql: str, params: list[Any] | None, warn) -> bool:
        """The files of `table` without which `sql` runs (only after it failed with every file
        readable whole): each is marked damaged with the query's error. Bisection: halves of
        the files in turn stand for the table (a view with the table's columns, NULL where a
        file has none) until single files fail alone; O(log n) queries a damaged file.
        Whether any was found. The caller lists the tables again."""
        try:
            cols = self.con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                                    "ORDER BY column_index", [table]).fetchall()
        except DUCKDB_ERRORS:
            return False
        errors: dict[Path, str] = {}

        def fails(subset: list[Path]) -> str | None:
            lits = ", ".join(_lit(f) for f in subset)
            src = f"read_parquet([{lits}], union_by_name = true)"
            try:
                have = {r[0] for r in self.con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()}
                proj = ", ".join(f'"{c}"' if c in have else f'CAST(NULL AS {t}) AS "{c}"' for c, t in cols)
                self.con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT {proj} FROM {src}")
                self.con.execute(sql, params or []).fetchall()
            except duckdb.OutOfMemoryException:
                return None
            except DUCKDB_ERRORS as e:
                return _first_line(e)
            return None

        todo = [list(files)]
        while todo:
            s = todo.pop()
            if len(s) == 1:
                why = fails(s)
                if why:
                    errors[s[0]] = why
                continue
            failing = False
            for h in (s[: len(s) // 2], s[len(s) // 2:]):
                if fails(h):
                    todo.append(h)
                    failing = True
            if not failing and len(s) <= 64:
                # only together (sums that overflow only summed): the files without which it runs
                for f in s:
                    why = fails([g for g in files if g != f])
                    if why is None:
                        errors[f] = "its values break a query over the recording"
        for f, why in errors.items():
            self._mark_bad(f, f"its values can't be used ({why})", warn)
        return bool(errors)

    def phases(self) -> list[dict[str, Any]]:
        return [{"name": p["name"], "start": p["start"], "end": p.get("end")} for p in self.meta["phases"]]

    def phase_names(self) -> list[str]:
        return [p["name"] for p in self.meta["phases"]]

    def require_phase(self, name: str) -> None:
        if name not in self.phase_names():
            raise UsageError(f"unknown phase {name!r}; this recording has: {', '.join(self.phase_names())}")

    def dropped_total(self) -> int:
        return int(sum(int(v) for v in (self.meta.get("dropped") or {}).values()))


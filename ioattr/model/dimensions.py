"""The report dimensions: what each is called and how it is computed from
the recording's tables. Every dimension but the InnoDB page ones comes from the
io table (IO operations and bytes); the page dimensions (index, level,
page_type, PAGE_ONLY) come from the pages table and split the io rows of the
same IO (ioattr/analysis/page_split.py), so a report grouped by any dimensions sums to the
report grouped by fewer. Unknowns stay NULL, never a guess."""
from __future__ import annotations

from dataclasses import dataclass

from ioattr.collectors import file_classes
from ioattr.errors import UsageError

RERUN_FULL = "stage not traced (recorded with --stages statement): rerun with --stages full"


def stage_mode(meta: dict) -> str | None:
    """How a recording traced query processing (meta.json "stages"): "full" (parse, optimize,
    execute, commit), "statement" (digests and roles; the stage inside a statement is null) or
    None (no stage probes). Recordings from before --stages traced full stages when attached."""
    if "stages" in meta:
        return meta["stages"]
    return "full" if meta.get("stage_probes") else None


#: how explain names an engine whose own server a recording traced
ENGINE_LABELS = {"postgres": "PostgreSQL"}


def native_engine(meta: dict) -> str | None:
    """The engine whose own server a recording traced (meta.json servers[].engine, e.g.
    "postgres"), when every server in it is one; None for MySQL/MariaDB servers, whatever their
    storage engine (InnoDB and MyRocks share the server's statement stages and index dives).
    Such an engine has no stages inside statements and no estimate stage, however recorded."""
    names = {s.get("engine") for s in meta.get("servers") or [] if isinstance(s, dict)}
    return names.pop() if len(names) == 1 and None not in names else None


def engine_label(meta: dict) -> str:
    """A recording's engine as explain names it (MySQL/MariaDB for the server's own)."""
    name = native_engine(meta)
    return "MySQL/MariaDB" if name is None else ENGINE_LABELS.get(name, name)


# no pid: the row's own label if it has one (labels.NOT_A_TARGET), else null
_PROCESS = "CASE WHEN pid IS NULL THEN process ELSE coalesce(process, '?') || '[' || pid || ']' END"
_THREAD = "CASE WHEN tid IS NULL THEN NULL ELSE coalesce(thread, '?') || '[' || tid || ']' END"
# the row's own text, else the recording's digest map (meta.json "queries"), else the bare digest
# ({t} is the table the expression runs over: the subqueries must name the outer row's column)
QUERY_SQL = ("CASE WHEN {t}.digest IS NULL THEN NULL ELSE coalesce({t}.query, "
             "(SELECT q.text FROM query_texts q WHERE q.digest = {t}.digest LIMIT 1), "
             "printf('digest:%016x', {t}.digest)) END")
_QUERY = QUERY_SQL
# the recording's final name for the index id (meta.json "indexes"), else the name at drain time
# (a read of a file that holds one index, file_classes.ONE_INDEX_PER_FILE, e.g. MyRocks' SSTs, has
# the file's number for index_id, not an index id: the final name of the one index its file holds,
# meta.json "files", else its row's own name)
INDEX_SQL = ("CASE WHEN " + file_classes.sql_in("{t}.file_class", file_classes.ONE_INDEX_PER_FILE) + " THEN "
             "coalesce((SELECT s.name FROM file_index_names s WHERE s.file = {t}.file LIMIT 1), {t}.index) ELSE "
             "coalesce((SELECT n.name FROM index_names n WHERE n.index_id = {t}.index_id LIMIT 1), {t}.index) END")
# a B-tree page's level (0: leaf), an LSM file's level (file_classes.LSM_LEVELS)
LEVEL_SQL = ("CASE WHEN level IS NULL THEN NULL WHEN " + file_classes.sql_in("file_class", file_classes.LSM_LEVELS)
             + " THEN 'L' || level WHEN level = 0 THEN 'leaf' ELSE 'non_leaf' END")


@dataclass(frozen=True)
class Dimension:
    name: str
    io_sql: str | None      # expression over the io table, None if it has no such thing
    pages_sql: str | None   # expression over the pages table
    help: str


_DIMS = [
    Dimension("file", "file", "file", "file path; [journal]/[metadata]/... for block IO that is not file data"),
    Dimension("inode", "ino", None, "inode number"),
    Dimension("device", "device", None, "device (filesystem device at the syscall layer, disk at the block layer)"),
    Dimension("process", _PROCESS, _PROCESS, "process as name[pid]"),
    Dimension("cgroup", "cgroup", None, "the process's cgroup v2 path (a container, a systemd unit); "
              "null in recordings made before it was recorded"),
    Dimension("thread", _THREAD, _THREAD, "thread as name[tid]"),
    Dimension("role", "role", "role", "the thread's job: connection, page_cleaner, innodb_worker, ..."),
    Dimension("op", "op", "op", "read, write or fsync"),
    Dimension("layer", "layer", "'syscall'", "syscall, block or pagecache"),
    Dimension("api", "api", "api", "how the IO was issued: sync, vector, libaio, io_uring, direct, buffered, readahead, io_worker"),
    Dimension("file_class", "file_class", "file_class", file_classes.dimension_help()),
    Dimension("index", None, INDEX_SQL, "index as schema.table.INDEX: InnoDB's from each page read; MyRocks' "
              "where an SST file holds one index only (exact: one index per SST; IO of SSTs holding "
              "several stays null, their indexes are listed by --by file)"),
    Dimension("level", None, LEVEL_SQL,
              "B-tree level: leaf or non_leaf; a MyRocks SST read's LSM level: L0, L1, ..."),
    Dimension("page_type", None, "page_type", "InnoDB page type: index, undo_log, blob, system, ...; MyRocks SST "
              "reads by block kind: sst_data, sst_index, sst_filter, sst_meta, sst_mixed"),
    Dimension("stage", "stage", "stage", "where in query processing: estimate (the optimizer's index dives, "
              "always traced), parse, optimize, execute, commit (read from the server's THD with the default "
              "--stages auto, or --stages full; null inside statements with --stages statement; PostgreSQL: parse, "
              "optimize = planning, execute, from its stage uprobes), background"),
    Dimension("query", _QUERY, _QUERY, "normalized statement (literals stripped)"),
    Dimension("phase", "phase", "phase", "benchmark phase"),
]
DIMENSIONS: dict[str, Dimension] = {d.name: d for d in _DIMS}
PAGE_ONLY = {d.name for d in _DIMS if d.io_sql is None}


def parse_dimensions(spec: list[str] | str | None) -> list[str]:
    """Split and check a --by value; unknown names are a usage error."""
    if spec is None:
        return ["file"]
    items = spec.split(",") if isinstance(spec, str) else [x for s in spec for x in s.split(",")]
    dims = [x.strip() for x in items if x.strip()]
    if not dims:
        raise UsageError("--by needs at least one dimension")
    for d in dims:
        if d not in DIMENSIONS:
            raise UsageError(f"unknown dimension {d!r}; known: {', '.join(DIMENSIONS)}")
    seen: list[str] = []
    for d in dims:
        if d not in seen:
            seen.append(d)
    return seen


def io_sql_over(dim: str, table: str) -> str:
    """A dimension's io-table expression over another table with the io table's columns (the
    statements table); ValueError for a dimension the io table has not."""
    sql = DIMENSIONS[dim].io_sql
    if sql is None:
        raise ValueError(f"dimension {dim} has no io-table expression")
    return sql.replace("{t}", table)


def sql_for(dim: str, table: str) -> str:
    """The expression for a dimension over the io or pages table."""
    d = DIMENSIONS[dim]
    return (d.io_sql if table == "io" else d.pages_sql).replace("{t}", table)

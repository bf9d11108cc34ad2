"""The report's row engine: a recording's IO grouped by the dimensions asked for.

The grouping runs in DuckDB over the Parquet chunks; only the grouped rows (with their
summed latency histograms) come back to Python, which turns histograms into p50/p99. Rows
always carry layer and op, per the JSON contract in DESIGN.md. `ioattr report`
(analysis/report.py) adds the recording's notes around these rows; the per-phase terms
(analysis/phase_stats.py) and explain group with it too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ioattr.analysis.page_split import JOIN_KEY, split_key
from ioattr.errors import UsageError
from ioattr.format.reader import DUCKDB_ERRORS, Recording
from ioattr.format.schema import HIST_COLUMNS
from ioattr.model.dimensions import DIMENSIONS, PAGE_ONLY, io_sql_over, parse_dimensions, sql_for
from ioattr.model.hist import latency_us
from ioattr.model.labels import LAYERS, relation_label


@dataclass
class ReportRequest:
    by: list[str]
    phase: str | None = None
    layer: str | None = None
    top: int | None = None


def report_rows(rec: Recording, req: ReportRequest) -> tuple[list[dict], int]:
    """The rows of a report (biggest first, at most req.top) and the pages that matched no io
    row (IO the io table did not count)."""
    dims = parse_dimensions(req.by)
    if req.layer is not None and req.layer not in LAYERS:
        raise UsageError(f"unknown layer {req.layer!r}; choose one of {', '.join(LAYERS)}")
    if req.phase is not None:
        rec.require_phase(req.phase)
    page_dims = [d for d in dims if d in PAGE_ONLY]
    # file_class is known per page for the system tablespace: the part of its IO that carried
    # doublewrite copies is file_class doublewrite, so file_class goes through the split too
    if page_dims or "file_class" in dims:
        rows, unjoined = _split_rows(rec, dims, req)
    else:
        rows, unjoined = _io_rows(rec, dims, req), 0
    if req.top is not None:
        rows = rows[: req.top]
    if "file" in dims:
        _file_objects(rec, rows)
        name_relation_files(rows, rec.meta.get("relations"))
    if "query" in dims:
        _executions(rec, dims, req, rows)
    return rows, unjoined


# dimensions the statements table has too: executions are counted in a row's scope of them
EXECUTION_SCOPE = ("query", "phase", "process")


def _executions(rec: Recording, dims: list[str], req: ReportRequest, rows: list[dict]) -> None:
    """--by query: every row gets its statement's executions in the row's scope (the phase
    asked for; its phase and process when grouped by them) -- a prepared statement's executions,
    a text statement's runs -- and its IO per execution (count and bytes), as
    pg_stat_statements gives calls beside blocks read. Null where the row has no statement or
    the statement was never counted (ioattr's own, a PostgreSQL Parse's IO)."""
    keys = [d for d in EXECUTION_SCOPE if d in dims]
    # the io table's expressions, over the statements table (same columns)
    expr = {d: io_sql_over(d, "statements") for d in keys}
    where, params = _where(req, None)
    where.append("statements.digest IS NOT NULL")
    sql = (f"SELECT {', '.join(f'{expr[d]} AS {d}' for d in keys)}, coalesce(sum(count), 0)::BIGINT "
           f"FROM statements WHERE {' AND '.join(where)} GROUP BY ALL")
    try:
        got = {tuple(r[:-1]): int(r[-1]) for r in rec.query(sql, params)}
    except DUCKDB_ERRORS:  # a statements table without these columns (damaged, foreign): not known
        got = {}
    for r in rows:
        n = got.get(tuple(r.get(d) for d in keys)) if r.get("query") is not None else None
        r["executions"] = n or None
        r["count_per_execution"] = round(r["count"] / n, 4) if n else None
        r["bytes_per_execution"] = round(r["bytes"] / n, 1) if n else None


def _catalog(rec: Recording) -> dict[str, dict]:
    """meta.json "files" (the engines' per-file facts: an SST's level and indexes), by path."""
    files = rec.meta.get("files")
    return files if isinstance(files, dict) else {}


def _file_objects(rec: Recording, rows: list[dict]) -> None:
    """--by file on a recording with a file catalog (MyRocks): every row gets sst_level and
    sst_indexes (the indexes whose key ranges the SST holds, biggest share first), null for
    files that are not SSTs or not seen by the catalog (an SST created and deleted within one
    interval, a row of several files reusing one inode)."""
    files = _catalog(rec)
    if not files:
        return
    for r in rows:
        f = files.get((r.get("file") or "").removesuffix(" (deleted)"))
        ok = isinstance(f, dict)
        r["sst_level"] = f.get("level") if ok else None
        idx = f.get("indexes") if ok else None
        r["sst_indexes"] = ", ".join(str(i.get("index")) for i in idx if isinstance(i, dict)) if idx else None


def name_relation_files(rows: list[dict], relations: Any) -> None:
    """--by file on a recording of a PostgreSQL cluster: every row gets `relation`, the relation
    its file holds (meta.json "relations", named when the recorder saw the file: "db.schema.name",
    with the fork when not the main one), null for files that are no relation's. Nothing is added
    to a recording without relation files (MySQL/MariaDB)."""
    if not isinstance(relations, dict) or not relations:
        return
    for r in rows:
        r["relation"] = relation_label(relations, r.get("file"))


def _one_index_files(rec: Recording) -> dict[str, str]:
    """path -> index of the catalogued files that hold exactly one index (an SST with the key
    range of one index only): their IO is that index's, exactly. SSTs holding several indexes
    are not split (RocksDB's blocks are not classified), so their IO keeps index null."""
    out = {}
    for path, f in _catalog(rec).items():
        idx = f.get("indexes") if isinstance(f, dict) else None
        if isinstance(idx, list) and len(idx) == 1 and isinstance(idx[0], dict) and idx[0].get("index"):
            out[path] = str(idx[0]["index"])
    return out


def _where(req: ReportRequest, layer_expr: str | None) -> tuple[list[str], list]:
    where, params = [], []
    if req.phase is not None:
        where.append("phase = ?")
        params.append(req.phase)
    if req.layer is not None and layer_expr is not None:
        where.append(f"{layer_expr} = ?")
        params.append(req.layer)
    return where, params


def _order(rows: list[dict], dims: list[str]) -> list[dict]:
    """Biggest first (bytes, then count), then by the dimensions (nulls last), as the SQL did."""
    def key(r: dict) -> tuple:
        # a column holds one type (or null): numbers sort as numbers, as in SQL
        return (-r["bytes"], -r["count"]) + tuple((r[d] is None, "" if r[d] is None else r[d]) for d in dims)
    return sorted(rows, key=key)


def _io_rows(rec: Recording, dims: list[str], req: ReportRequest) -> list[dict]:
    """Rows of a report without page dimensions: the io table grouped, with latencies."""
    group = [d for d in dims if d not in ("layer", "op")] + ["layer", "op"]
    expr = {d: sql_for(d, "io") for d in group}
    select = ", ".join(f"{expr[d]} AS {d}" for d in group)
    # coalesce: a recorder never writes NULL measures, but a damaged chunk can decode to them
    measures = "coalesce(sum(count), 0)::BIGINT AS n, coalesce(sum(bytes), 0)::BIGINT AS b, " + ", ".join(
        f"coalesce(sum({c}), 0)::BIGINT" for c in HIST_COLUMNS)
    where, params = _where(req, expr["layer"])
    # the io table summed over time (Recording.totals): the same groups from far fewer rows
    sql = (f"SELECT {select}, {measures} FROM {rec.totals('io')} io "
           f"{'WHERE ' + ' AND '.join(where) if where else ''} "
           f"GROUP BY ALL ORDER BY b DESC, n DESC, {', '.join(str(i + 1) for i in range(len(group)))}")
    rows = []
    for rec_row in rec.query(sql, params):
        values = dict(zip(group, rec_row[: len(group)]))
        n, b = rec_row[len(group)], rec_row[len(group) + 1]
        hist = rec_row[len(group) + 2:]
        row = {d: values[d] for d in dims if d not in ("layer", "op")}
        row.update({"layer": values["layer"], "op": values["op"], "count": int(n), "bytes": int(b),
                    "latency_us": latency_us(hist) if hist else {"p50": None, "p99": None}})
        rows.append(row)
    return rows


def _has_column(rec: Recording, table: str, column: str) -> bool:
    return bool(rec.query("SELECT 1 FROM duckdb_columns() WHERE table_name = ? AND column_name = ?",
                          [table, column]))


def _split_rows(rec: Recording, dims: list[str], req: ReportRequest) -> tuple[list[dict], int]:
    """Rows of a report with page dimensions or file_class: io rows split by the pages of the
    same IO (page_split.py), so the rows sum to the report without the page dimensions. The
    split is always made at the finest grain (every io dimension, every page dimension) and
    then summed to the dimensions asked for, so reports at any two grains agree exactly.
    Without page dimensions only the files that had doublewrite copies are split (into
    file_class doublewrite and the rest). Latency stays where no split touched a row.
    Returns the rows and the pages that matched no io row (IO the io table did not count)."""
    want_io = [d for d in dims if d not in PAGE_ONLY and d not in ("layer", "op")] + ["layer", "op"]
    want_pg = [d for d in dims if d in PAGE_ONLY]
    all_io = [d for d in DIMENSIONS if d not in PAGE_ONLY and d not in ("layer", "op")] + ["layer", "op"]
    all_pg = [d for d in DIMENSIONS if d in PAGE_ONLY] + ["page_file_class"]
    doublewrite = "file_class" in dims
    # pages.dev/ino name the file of the IO; recordings from before they existed join by path
    # io and pages summed over time (Recording.totals): no query here needs the intervals
    io_t, pages_t = rec.totals("io"), rec.totals("pages")
    fmap = (f"LEFT JOIN (SELECT file, arg_min(dev, ino) AS dev, min(ino) AS ino FROM {io_t} io "
            "WHERE layer = 'syscall' AND file IS NOT NULL GROUP BY file) fm ON fm.file = pages.file")
    if _has_column(rec, "pages", "ino"):
        p_dev, p_ino = "CASE WHEN pages.ino IS NULL THEN fm.dev ELSE pages.dev END", "coalesce(pages.ino, fm.ino)"
    else:
        p_dev, p_ino = "fm.dev", "fm.ino"
    p_where, p_params = [], []
    if req.phase is not None:
        p_where.append("pages.phase = ?")
        p_params.append(req.phase)
    if req.layer not in (None, "syscall"):
        p_where.append("false")  # pages are syscall-layer IO
    p_key = ", ".join({"dev": p_dev, "ino": p_ino}.get(k, f"pages.{k}") for k in JOIN_KEY)
    pg_select = ", ".join(f"{sql_for(d, 'pages')} AS {d}" for d in all_pg if d != "page_file_class")
    pg_select += ", CASE WHEN pages.file_class = 'doublewrite' THEN 'doublewrite' END AS page_file_class"
    page_sql = (f"SELECT {p_key}, {pg_select}, coalesce(sum(pages.pages), 0)::BIGINT, "
                f"coalesce(sum(pages.bytes), 0)::BIGINT FROM {pages_t} pages {fmap} "
                f"{'WHERE ' + ' AND '.join(p_where) if p_where else ''} GROUP BY ALL")
    nk = len(JOIN_KEY)
    i_dev, i_ino = JOIN_KEY.index("dev"), JOIN_KEY.index("ino")
    pages: dict[tuple, list] = {}
    for r in rec.query(page_sql, p_params):
        pages.setdefault(tuple(r[:nk]), []).append((tuple(r[nk:nk + len(all_pg)]), int(r[-2]), int(r[-1])))
    if want_pg:
        files = {(k[i_dev], k[i_ino]) for k in pages}
    else:  # file_class only: the files that had doublewrite copies
        files = {(k[i_dev], k[i_ino]) for k, groups in pages.items() if any(g[0][-1] for g in groups)}
    rec.con.execute("CREATE OR REPLACE TEMP TABLE _page_files (fk VARCHAR)")
    if files:
        rec.con.executemany("INSERT INTO _page_files VALUES (?)",
                            sorted([f"{d}/{i}"] for d, i in files if d is not None and i is not None))
    io_expr = {d: sql_for(d, "io") for d in all_io}
    where, params = _where(req, io_expr["layer"])
    src = (f"(SELECT *, (layer = 'syscall' AND (dev || '/' || ino) IN (SELECT fk FROM _page_files)) AS m "
           f"FROM {io_t} io {'WHERE ' + ' AND '.join(where) if where else ''}) io")
    sums = "coalesce(sum(count), 0)::BIGINT, coalesce(sum(bytes), 0)::BIGINT"
    hists = ", ".join(f"coalesce(sum({c}), 0)::BIGINT" for c in HIST_COLUMNS)
    cells: dict[tuple, list] = {}   # -> [count, bytes, pages, histogram or None once split]

    def add(values: dict, c: int, b: int, p: int, hist: tuple | None) -> None:
        if doublewrite and values.get("page_file_class"):
            values["file_class"] = values["page_file_class"]
        acc = cells.setdefault(tuple(values[x] for x in want_io + want_pg), [0, 0, 0, [0] * len(HIST_COLUMNS)])
        acc[0] += c
        acc[1] += b
        acc[2] += p
        if hist is None or acc[3] is None:
            acc[3] = None  # a share of a split IO has no latency of its own
        else:
            acc[3] = [x + y for x, y in zip(acc[3], hist)]

    none_pg = dict.fromkeys(all_pg)
    # IO of files not split (and every other layer): page dimensions null, latency kept; the
    # syscall IO of a file that holds one index only (a MyRocks SST, meta.json "files") is
    # that index's
    one_index = _one_index_files(rec) if "index" in want_pg else {}
    q_io = want_io + (["file"] if one_index and "file" not in want_io else [])
    nw = len(q_io)
    for r in rec.query(f"SELECT {', '.join(f'{io_expr[d]} AS {d}' for d in q_io)}, {sums}, {hists} "
                       f"FROM {src} WHERE NOT m GROUP BY ALL", params):
        values = dict(zip(q_io, r)) | none_pg
        if one_index and values.get("layer") == "syscall":
            values["index"] = one_index.get((values.get("file") or "").removesuffix(" (deleted)"))
        add(values, int(r[nw]), int(r[nw + 1]), 0, tuple(r[nw + 2:]))
    # IO of split files: per join key, at the finest grain, split by its pages
    io_groups: dict[tuple, list] = {}
    whole: dict[tuple, tuple] = {}  # (join key, io dims) -> (count, bytes, histogram) of that io group
    key = ", ".join(JOIN_KEY)
    ni = nk + len(all_io)
    for r in rec.query(f"SELECT {key}, {', '.join(f'{io_expr[d]} AS {d}' for d in all_io)}, {sums}, {hists} "
                       f"FROM {src} WHERE m GROUP BY ALL", params):
        k, d, c, b = tuple(r[:nk]), tuple(r[nk:ni]), int(r[ni]), int(r[ni + 1])
        io_groups.setdefault(k, []).append((d, c, b))
        whole[(k, d)] = (c, b, tuple(r[ni + 2:]))
    order = lambda g: tuple((v is None, str(v)) for v in g[0])  # noqa: E731 - same split whatever the SQL order
    for k, groups in io_groups.items():
        for d, pd, c, b, p in split_key(sorted(groups, key=order), sorted(pages.get(k, []), key=order)):
            # a cell that is its io group whole (every IO's pages in one page class, or none
            # classified) keeps the group's latency; a share of a split IO has none
            gc, gb, hist = whole[(k, d)]
            add(dict(zip(all_io, d)) | (dict(zip(all_pg, pd)) if pd else none_pg), c, b, p,
                hist if (c, b) == (gc, gb) else None)
    unjoined = sum(n for k, groups in pages.items() if k not in io_groups for _, n, _ in groups) if want_pg else 0
    rows = []
    for values, (c, b, p, hist) in cells.items():
        v = dict(zip(want_io + want_pg, values))
        row = {x: v[x] for x in dims if x not in ("layer", "op")}
        row.update({"layer": v["layer"], "op": v["op"], "count": c, "bytes": b})
        if want_pg:
            # pages are classified at the syscall layer only: another layer's row has none to
            # count (null, shown `-`), not zero pages
            row["pages"] = p if v["layer"] == "syscall" else None
        row["latency_us"] = latency_us(hist) if hist and any(hist) else {"p50": None, "p99": None}
        rows.append(row)
    return _order(rows, [x for x in dims if x not in ("layer", "op")] + ["layer", "op"]), unjoined

"""`ioattr report`: group a recording's IO by the dimensions asked for.

The grouping runs in DuckDB over the Parquet chunks; only the grouped rows
(with their summed latency histograms) come back to Python, which turns
histograms into p50/p99. Rows always carry layer and op, per the JSON
contract in DESIGN.md.
"""
from __future__ import annotations

from dataclasses import dataclass

from ioattr.dimensions import DIMENSIONS, parse_dimensions, sql_for, stage_mode, table_for
from ioattr.hist import latency_us
from ioattr.labels import drop_details
from ioattr.reader import Recording
from ioattr.recording import HIST_COLUMNS
from ioattr.errors import UsageError

LAYERS = ("syscall", "block", "pagecache")


@dataclass
class ReportRequest:
    by: list[str]
    phase: str | None = None
    layer: str | None = None
    top: int | None = None


def build_report(rec: Recording, req: ReportRequest) -> dict:
    dims = parse_dimensions(req.by)
    if req.layer is not None and req.layer not in LAYERS:
        raise UsageError(f"unknown layer {req.layer!r}; choose one of {', '.join(LAYERS)}")
    if req.phase is not None:
        rec.require_phase(req.phase)
    table = table_for(dims)
    group = [d for d in dims if d not in ("layer", "op")] + ["layer", "op"]
    expr = {d: sql_for(d, table) for d in group}
    select = ", ".join(f"{expr[d]} AS {d}" for d in group)
    # coalesce: a recorder never writes NULL measures, but a damaged chunk can decode to them
    if table == "io":
        measures = "coalesce(sum(count), 0)::BIGINT AS n, coalesce(sum(bytes), 0)::BIGINT AS b, " + ", ".join(
            f"coalesce(sum({c}), 0)::BIGINT" for c in HIST_COLUMNS)
    else:
        measures = "coalesce(sum(pages), 0)::BIGINT AS n, coalesce(sum(bytes), 0)::BIGINT AS b"
    where, params = [], []
    if req.phase is not None:
        where.append("phase = ?")
        params.append(req.phase)
    if req.layer is not None:
        where.append(f"{expr['layer']} = ?")
        params.append(req.layer)
    sql = (f"SELECT {select}, {measures} FROM {table} "
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
    if req.top is not None:
        rows = rows[: req.top]
    out = {
        "recording": str(rec.path),
        "phases": rec.phases(),
        "rows": rows,
        "dropped": rec.dropped_total(),
    }
    if out["dropped"]:
        # additive: which map was full, per reason (absent when nothing was dropped)
        out["dropped_by"] = drop_details(rec.meta.get("dropped"), rec.meta.get("max_entries"))
    if table == "pages":
        out["unit"] = "pages"  # count is InnoDB pages, not IO operations
    if "stage" in dims:
        # "statement": the stage inside a statement was not traced, so it is null there
        out["stages"] = stage_mode(rec.meta)
    if "phase" in dims:
        from ioattr.phase_stats import all_phase_summaries

        # the insert benchmark's per-phase terms, next to the attributed rows
        out["summary"] = all_phase_summaries(rec)
    return out

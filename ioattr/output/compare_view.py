"""`ioattr compare` as people read it: the terminal table (rich, like `report`) and CSV.

The numbers are ioattr/analysis/compare.py's; this only lays them out. Per-operation ratios show
three significant digits (storage.fmt_sig), rates one decimal, a value that was not recorded "-".
"""
from __future__ import annotations

import csv
import io
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ioattr.analysis.compare import BY_COLUMNS, COLUMNS
from ioattr.model.storage import fmt_sig
from ioattr.output.render import human_bytes

UNIT_SUFFIX = {"txn": "", "query": "/q", "row": "/row", "phase": "/phase", None: ""}
PER_UNIT = ("writes_per_unit", "kb_written_per_unit", "block_kb_written_per_unit")
RATES = ("seconds", "qps", "statements_per_s", "tps", "ops_per_s", "rows_per_s")
# shown only when some run's phase has its benchmark's operation count (record --ops-pattern)
OPS_COLUMNS = ("ops_per_s", "kb_read_per_op", "kb_written_per_op")
UNIT_NOTE = ("a write column's '/q' or '/row': the phase had no transactions, so its writes are per query or per "
             "row inserted, whichever it did more of; '/phase': it had none of them (DDL, a flush), so the "
             "phase's total")


def _size(v: Any) -> str | None:
    return human_bytes(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _per_engine(info: dict[str, Any], role: str, size: bool) -> str:
    """One run setting of each engine, named ("innodb 16.0 MiB, rocksdb 8.0 MiB"); "-" if none recorded."""
    parts = []
    for engine, s in (info.get("engine_settings") or {}).items():
        v = s.get(role)
        text = _size(v) if size else (None if v is None else str(v))
        if text is not None:
            parts.append(f"{engine} {text}")
    return ", ".join(parts) or "-"


RUN_COLUMNS = (("run", lambda i: str(i["label"])), ("engines", lambda i: ", ".join(i["engines"]) or "-"),
               ("version", lambda i: str(i["version"] or "-")),
               ("cache", lambda i: _per_engine(i, "cache", True)), ("io", lambda i: _per_engine(i, "io", False)),
               ("page", lambda i: _per_engine(i, "page", True)),
               ("data on disk", lambda i: _size(i.get("data_bytes")) or "-"),
               ("duration s", lambda i: "-" if i.get("seconds") is None else f"{i['seconds']:,.1f}"),
               ("recording", lambda i: str(i["recording"])))


def cell(row: dict[str, Any], key: str) -> str:
    v = row.get(key)
    if key in RATES:
        return "-" if v is None else f"{float(v):,.1f}"
    text = fmt_sig(v)
    if key in PER_UNIT and v is not None:
        text += UNIT_SUFFIX.get(row.get("write_unit"), "")
    return text


def render_table(result: dict[str, Any], width: int | None = None) -> str:
    buf = io.StringIO()
    if width is None:
        import shutil

        width = max(120, shutil.get_terminal_size((200, 24)).columns)
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    for info in result["runs"]:
        if info.get("recording_state"):
            console.print(escape(f"WARNING: {info['label']}: {info['recording_state']['message']}"))
    runs = Table(title="runs", title_justify="left")
    for name, _ in RUN_COLUMNS:
        runs.add_column(name, overflow="fold")
    for info in result["runs"]:
        runs.add_row(*[escape(f(info)) for _, f in RUN_COLUMNS])
    console.print(runs)
    t = Table(title="per run and phase", title_justify="left")
    t.add_column("phase", overflow="fold")
    t.add_column("run", overflow="fold")
    rows = result["rows"]
    shown = [c for c in COLUMNS if c[0] not in OPS_COLUMNS or any(r.get("ops") is not None for r in rows)]
    for _, header, _ in shown:
        t.add_column(header, justify="right")
    for i, r in enumerate(rows):
        last = i + 1 == len(rows) or rows[i + 1]["phase"] != r["phase"]
        t.add_row(escape(r["phase"] + (" (open)" if r.get("open") else "")), escape(r["run"]),
                  *[cell(r, k) for k, _, _ in shown], end_section=last)
    console.print(t)
    if result.get("by"):
        dim = result["by"]
        b = Table(title=f"storage IO by {dim} (top rows per run and phase)", title_justify="left")
        for name in ("phase", "run", dim):
            b.add_column(name, overflow="fold")
        for _, header, _ in BY_COLUMNS:
            b.add_column(header, justify="right")
        parts = result.get("breakdown") or []
        for i, p in enumerate(parts):
            last = i + 1 == len(parts) or (parts[i + 1]["phase"], parts[i + 1]["run"]) != (p["phase"], p["run"])
            b.add_row(escape(p["phase"]), escape(p["run"]), escape("-" if p[dim] is None else str(p[dim])),
                      *[cell(p, k) for k, _, _ in BY_COLUMNS], end_section=last)
        console.print(b)
    console.print(escape("columns: " + "; ".join(f"{h} = {what}" for _, h, what in shown)))
    console.print(UNIT_NOTE + "; '-': not recorded, or nothing to divide by")
    for n in result.get("notes") or []:
        console.print(escape(f"note: {n}"))
    return buf.getvalue()


RUN_FIELDS = ("engines", "version", "data_bytes")


def to_csv(result: dict[str, Any]) -> str:
    """One CSV line per run x phase (with --by: per run x phase x value), the run's settings
    beside each line, so a spreadsheet needs no join."""
    info = {i["label"]: i for i in result["runs"]}
    rows = result["breakdown"] if result.get("by") else result["rows"]
    if not rows:
        return ""
    setting_keys = list(next(iter(info.values()))["settings"])
    fields = list(rows[0]) + [k for k in RUN_FIELDS] + setting_keys
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        i = info[r["run"]]
        out = dict(r)
        out["engines"] = " ".join(i["engines"])
        out["version"] = i["version"]
        out["data_bytes"] = i["data_bytes"]
        out.update(i["settings"])
        w.writerow(out)
    return buf.getvalue()

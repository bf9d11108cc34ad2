"""`ioattr compare` as people read it: the terminal table (rich, like `report`) and CSV.

The numbers are ioattr/analysis/compare.py's; this only lays them out. Per-operation ratios show
three significant digits (storage.fmt_sig), rates one decimal, a value that was not recorded "-".
"""
from __future__ import annotations

import csv
import io
import re
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ioattr.analysis.compare import BY_COLUMNS, COLUMNS
from ioattr.model.storage import fmt_sig
from ioattr.output.fit import Col, fit_tables, terminal_width
from ioattr.output.render import human_bytes

UNIT_SUFFIX = {"txn": "", "query": "/q", "row": "/row", "phase": "/phase", None: ""}
PER_UNIT = ("writes_per_unit", "kb_written_per_unit", "block_kb_written_per_unit")
RATES = ("seconds", "qps", "statements_per_s", "tps", "ops_per_s", "rows_per_s")
# shown only when some run's phase has its benchmark's operation count (record --ops-pattern, mark --ops)
OPS_COLUMNS = ("ops_per_s", "kb_read_per_op", "kb_written_per_op")
UNIT_NOTE = ("a write column's '/q' or '/row': the phase had no transactions, so its writes are per query or per "
             "row inserted, whichever it did more of; '/phase': it had none of them (DDL, a flush), so the "
             "phase's total")


def _size(v: Any) -> str | None:
    return human_bytes(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _per_engine(info: dict[str, Any], role: str, size: bool) -> str:
    """One run setting of each engine, named when there are several ("innodb 16.0 MiB, rocksdb
    8.0 MiB"; one engine: "16.0 MiB", its name is in the engines column); "-" if none recorded."""
    parts = []
    settings = info.get("engine_settings") or {}
    for engine, s in settings.items():
        v = s.get(role)
        text = _size(v) if size else (None if v is None else str(v))
        if text is not None:
            parts.append(text if len(settings) == 1 else f"{engine} {text}")
    return ", ".join(parts) or "-"


def short_version(version: Any) -> str:
    """A server version as a table cell: the release without the distribution's package
    suffix ("10.11.19-MariaDB-0+deb12u1" -> "10.11.19-MariaDB", "16.4 (Debian 16.4-1)" ->
    "16.4"); JSON and CSV keep the whole string."""
    text = str(version or "-")
    m = re.match(r"\d+(?:\.\d+)*(?:-MariaDB)?", text)
    return m.group(0) if m else text


RUN_COLUMNS = (("run", lambda i: str(i["label"])), ("engines", lambda i: ", ".join(i["engines"]) or "-"),
               ("version", lambda i: short_version(i["version"])),
               ("cache", lambda i: _per_engine(i, "cache", True)), ("io", lambda i: _per_engine(i, "io", False)),
               ("page", lambda i: _per_engine(i, "page", True)),
               ("data on disk", lambda i: _size(i.get("data_bytes")) or "-"),
               ("duration s", lambda i: "-" if i.get("seconds") is None else f"{i['seconds']:,.1f}"),
               ("recording", lambda i: str(i["recording"])))


RUN_SIZES = ("cache", "page", "data on disk", "duration s")  # kept on one line, right-aligned


def cell(row: dict[str, Any], key: str) -> str:
    v = row.get(key)
    if key in RATES:
        return "-" if v is None else f"{float(v):,.1f}"
    text = fmt_sig(v)
    if key in PER_UNIT and v is not None:
        text += UNIT_SUFFIX.get(row.get("write_unit"), "")
    return text


def render_table(result: dict[str, Any], width: int | None = None) -> str:
    """The runs, the per run and phase table and the --by breakdown within `width` columns
    (default: the terminal's); narrow terminals get the value columns over several tables."""
    buf = io.StringIO()
    if width is None:
        width = terminal_width()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    for info in result["runs"]:
        if info.get("recording_state"):
            console.print(escape(f"WARNING: {info['label']}: {info['recording_state']['message']}"))
    runs = [[f(info) for _, f in RUN_COLUMNS] for info in result["runs"]]
    _print(console, fit_tables("runs", [Col(name, number=name in RUN_SIZES, floor=12 if name == "recording" else 20)
                                        for name, _ in RUN_COLUMNS],
                               runs, width))
    rows = result["rows"]
    shown = [c for c in COLUMNS if c[0] not in OPS_COLUMNS or any(r.get("ops") is not None for r in rows)]
    cells = [[r["phase"] + (" (open)" if r.get("open") else ""), r["run"], *[cell(r, k) for k, _, _ in shown]]
             for r in rows]
    ends = [i + 1 == len(rows) or rows[i + 1]["phase"] != r["phase"] for i, r in enumerate(rows)]
    cols = [Col("phase", number=False), Col("run", number=False)] + [Col(h) for _, h, _ in shown]
    _print(console, fit_tables("per run and phase", cols, cells, width, keys=2, sections=ends))
    if result.get("by"):
        dim = result["by"]
        parts = result.get("breakdown") or []
        cells = [[p["phase"], p["run"], "-" if p[dim] is None else str(p[dim]), *[cell(p, k) for k, _, _ in BY_COLUMNS]]
                 for p in parts]
        ends = [i + 1 == len(parts) or (parts[i + 1]["phase"], parts[i + 1]["run"]) != (p["phase"], p["run"])
                for i, p in enumerate(parts)]
        cols = [Col(name, number=False) for name in ("phase", "run", dim)] + [Col(h) for _, h, _ in BY_COLUMNS]
        _print(console, fit_tables(f"storage IO by {dim} (top rows per run and phase)", cols, cells, width,
                                   keys=3, sections=ends))
    for c in result.get("changes") or []:
        console.print(escape(change_line(c)))
    console.print(escape("columns: " + "; ".join(f"{h} = {what}" for _, h, what in shown)))
    console.print(UNIT_NOTE + "; '-': not recorded, or nothing to divide by")
    for n in result.get("notes") or []:
        console.print(escape(f"note: {n}"))
    return buf.getvalue()


def change_line(c: dict[str, Any]) -> str:
    """One run against another in a phase, in explain's words (ioattr/analysis/direction.py)."""
    return f"change: phase {c['phase']}, {c['target_run']} against {c['baseline_run']}: {c['summary']}"


def _print(console: Console, tables: list[Table]) -> None:
    for t in tables:
        console.print(t)


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

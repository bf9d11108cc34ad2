"""Terminal rendering of report rows with rich."""
from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from typing import SupportsFloat, SupportsInt

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ioattr.model import per
from ioattr.analysis.phase_stats import bulk_line, sizes_line
from ioattr.engines import registry
from ioattr.errors import UsageError
from ioattr.model.labels import drops_line
from ioattr.model.labels import shorten_path
from ioattr.model.storage import fmt_sig
from ioattr.output.fit import Col, fit_tables, terminal_width


def write_output(text: str, path: str | None, command: str | None = None) -> None:
    """Write a command's output to path, or stdout; an unwritable path is a usage error.

    A file written is said in one line on stderr (`ioattr COMMAND: wrote PATH (SIZE)`) when
    the command is named: otherwise a successful -o looks the same as one that did nothing."""
    if not path:
        sys.stdout.write(text)
        return
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from e
    if command:
        print(f"ioattr {command}: wrote {path} ({human_bytes(len(text.encode()))})", file=sys.stderr)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _fmt(v: object) -> str:
    """A cell as plain text (fit_tables shows it as rich Text: "[journal]" is data, not markup)."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.1f}"
    return str(v)


def _int(v: SupportsInt | None) -> str:
    return "-" if v is None else f"{int(v):,}"


def _bytes(v: float | None) -> str:
    return "-" if v is None else human_bytes(v)


def _rate(v: SupportsFloat | None) -> str:
    return "-" if v is None else f"{float(v):,.1f}"


# the per-phase terms (ioattr/analysis/phase_stats.py; their definitions: ioattr/model/storage.py). Rates with one
# decimal; per-operation ratios with three significant digits, ours next to the engine's.
SUMMARY_COLUMNS = [("phase", "phase", _fmt), ("seconds", "s", _fmt), ("qps", "qps", _rate),
                   ("statements_per_s", "stmt/s", _rate),
                   ("ips", "ips (rows)", _rate), ("insert_stmts_ps", "inserts/s (stmts)", _rate),
                   ("reads_per_query", "rpq", fmt_sig), ("engine_reads_per_query", "rpq engine", fmt_sig),
                   ("kb_read_per_query", "KB r/q", fmt_sig), ("kb_written_per_insert", "KB w/i", fmt_sig),
                   ("cpu_us_per_query", "CPU µs/q", fmt_sig), ("context_switches_per_query", "cs/q", fmt_sig),
                   ("ops_per_s", "ops/s", _rate), ("kb_read_per_op", "KB r/op", fmt_sig),
                   ("kb_written_per_op", "KB w/op", fmt_sig)]
# shown only when a phase has the benchmark's own operation count (ioattr/model/per.py OP)
OPS_SUMMARY = ("ops_per_s", "kb_read_per_op", "kb_written_per_op")


def _summary_columns(summary: list[dict]) -> list[tuple]:
    with_ops = any(r.get("ops") is not None for r in summary)
    return [c for c in SUMMARY_COLUMNS if with_ops or c[0] not in OPS_SUMMARY]


def summary_legend(summary: list[dict]) -> str:
    """The per-phase table's legend: what each rate counts and what each "/x" divides by
    (ioattr/model/per.py), so no number there is read against the benchmark's own wrongly."""
    with_ops = any(r.get("ops") is not None for r in summary)
    # each count named as the phases' rows say they were taken (an InnoDB and a PostgreSQL
    # recording differ); phases that disagree are named one by one
    selects = sorted({str(r["qps_source"]) for r in summary if r.get("qps_source")})
    reads = sorted({str(r["engine_reads_source"]) for r in summary if r.get("engine_reads_source")})
    return ("legend: " + per.legend([("qps", "qps"), ("stmt/s", "statements_per_s")]
                                    + ([("ops/s", "ops_per_s")] if with_ops else []),
                                    [per.SELECT] + ([per.OP] if with_ops else []),
                                    selects_from=" or ".join(selects) or None)
            + "; ips: rows inserted/s; /i: per row inserted; rpq engine: the engine's own reads ("
            + (" or ".join(reads) or "none recorded") + "); rates are per second of the phase")


def summary_tables(summary: list[dict] | None, width: int) -> list[Table]:
    """The per-phase table, split over two or more tables when the terminal is narrow
    (each repeats the phase column; no number is cut)."""
    if not summary:
        return []
    columns = _summary_columns(summary)
    cols = [Col(label, number=label != "phase") for _, label, _f in columns]
    rows = []
    for row in summary:
        cells = [f(row.get(key)) for key, _, f in columns]
        if row.get("open"):
            cells[0] += " (open)"
        rows.append(cells)
    return fit_tables("per phase", cols, rows, width)


def engine_phase_lines(summary: list[dict]) -> list[str]:
    """Per phase, the engines' own terms as one line each (MyRocks: flush, compaction, WAL per
    transaction, write amplification, block-cache misses by kind), under the per-phase table."""

    out = []
    for row in summary:
        for engine in registry.ENGINES:
            terms = row.get(engine.name)
            line = engine.phase_line(terms) if isinstance(terms, dict) else None
            if line:
                out.append(f"{row.get('phase')}: {line}")
    return out


def _bulk_lines(summary: list[dict]) -> list[str]:
    """Per phase that inserted rows, its bulk-load terms (rows by statement kind, rows/s, KB
    written, writes and reads per row: ioattr/analysis/phase_stats.py PhaseStats.bulk)."""

    out = []
    for row in summary:
        for line in (bulk_line(row.get("bulk")), sizes_line(row.get("table_sizes"))):
            if line:
                out.append(f"{row.get('phase')}: {line}")
    return out


def state_line(report: dict) -> str | None:
    """The one line that says a recording is incomplete, crashed or still being written."""
    st = report.get("recording_state")
    return None if not st else f"WARNING: {st['message']}"



def _pages_cell(pages: int | None) -> str:
    """A row's page count; `-` where pages are not counted (block rows, null in JSON)."""
    return "-" if pages is None else f"{pages:,}"

def render_table(report: dict, by: list[str], width: int | None = None,
                 datadirs: Sequence[str] = ()) -> str:
    """The report as terminal tables within `width` columns (default: the terminal's); file
    paths inside a server's datadir (`datadirs`, meta.json "servers") shown relative to it."""
    dims = [d for d in dict.fromkeys(x.strip() for x in by) if d not in ("layer", "op")]
    # --by file on a MyRocks recording: each SST's LSM level and indexes (meta.json "files")
    # and on a PostgreSQL recording, the relation each file holds
    sst = [c for c in ("sst_level", "sst_indexes", "relation") if any(c in r for r in report["rows"])]
    cols = [Col(d.replace("_", " ") if d in sst else d, number=False, floor=24 if d == "file" else 12)
            for d in dims + ["layer", "op"] + sst]
    keys = len(cols)
    # with page dimensions rows carry InnoDB pages next to the IO operations (count)
    pages = any("pages" in r for r in report["rows"])
    # --by query: the statement's executions in the row's scope, and the row's IO per execution
    execs = any("executions" in r for r in report["rows"])
    cols += [Col(c) for c in ("count",) + (("pages",) if pages else ()) + ("bytes", "p50 µs", "p99 µs") + (
        ("executions", "ops/exec", "bytes/exec") if execs else ())]
    dirs = sorted({d.rstrip("/") + "/" for d in datadirs if d}, key=len, reverse=True)
    rows = []
    for r in report["rows"]:
        per = [_int(r.get("executions")), fmt_sig(r.get("count_per_execution")),
               _bytes(r.get("bytes_per_execution"))] if execs else []
        text = [shorten_path(_fmt(r.get(d)), dirs) if d == "file" else _fmt(r.get(d))
                for d in dims + ["layer", "op"] + sst]
        rows.append([*text, f"{r['count']:,}", *([_pages_cell(r.get("pages"))] if pages else []),
                     human_bytes(r["bytes"]), _fmt(r["latency_us"]["p50"]), _fmt(r["latency_us"]["p99"]), *per])
    if width is None:
        width = terminal_width()
    tables = fit_tables(str(report["recording"]), cols, rows, width, keys=keys)
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    if state_line(report):
        console.print(escape(state_line(report) or ""))
    summary = summary_tables(report.get("summary"), width)
    if summary:
        for t in summary:
            console.print(t)
        console.print(escape(summary_legend(report.get("summary") or [])))
        for line in engine_phase_lines(report.get("summary") or []):
            console.print(escape(line))
        for line in _bulk_lines(report.get("summary") or []):
            console.print(escape(line))
    if dirs and "file" in dims:
        console.print(escape(f"file: relative to the server's datadir ({', '.join(d.rstrip('/') for d in dirs)})"))
    for t in tables:
        console.print(t)
    for note in report.get("notes") or []:
        console.print(escape(f"NOTE: {note}"))
    if report.get("dropped"):

        by = {d["reason"]: d["count"] for d in report.get("dropped_by") or []}
        caps = {d["map"]: d["max_entries"] for d in report.get("dropped_by") or [] if "max_entries" in d}
        console.print(drops_line(by, caps) if by else
                      f"WARNING: {report['dropped']:,} IO/events dropped (a BPF map was full; see meta.json)")
    if report.get("block_untimed"):
        console.print(f"note: {report['block_untimed']:,} block requests were counted without a latency "
                      "(their completion never reached the probes; docs/block.md)")
    if report.get("stages") == "statement":
        console.print("stage: \"-\" inside statements = not traced (recorded with --stages statement; "
                      "index dives are `estimate`); rerun with --stages full for parse/optimize/execute/commit")
    return buf.getvalue()

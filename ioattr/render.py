"""Terminal rendering of report rows with rich."""
from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def write_output(text: str, path: str | None) -> None:
    """Write a command's output to path, or stdout; an unwritable path is a usage error."""
    import sys

    from ioattr.errors import UsageError

    if not path:
        sys.stdout.write(text)
        return
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from e


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.1f}"
    return escape(str(v))  # "[journal]" is data, not rich markup


SUMMARY_COLUMNS = [("phase", "phase"), ("seconds", "s"), ("qps", "qps"), ("ips", "ips"),
                   ("reads_per_query", "rpq"), ("kb_read_per_query", "KB r/q"),
                   ("kb_written_per_insert", "KB w/i"), ("cpu_us_per_query", "CPU µs/q"),
                   ("context_switches_per_query", "cs/q")]


def _summary_table(summary: list[dict] | None) -> Table | None:
    if not summary:
        return None
    t = Table(title="per phase", title_justify="left")
    for _, label in SUMMARY_COLUMNS:
        t.add_column(label, justify="left" if label == "phase" else "right")
    for row in summary:
        t.add_row(*[_fmt(row.get(key)) for key, _ in SUMMARY_COLUMNS])
    return t


def render_table(report: dict, by: list[str], width: int | None = None) -> str:
    dims = [d for d in dict.fromkeys(x.strip() for x in by) if d not in ("layer", "op")]
    table = Table(title=escape(str(report["recording"])), title_justify="left", expand=False)
    for d in dims + ["layer", "op"]:
        table.add_column(d, overflow="fold")
    for c in ("count", "bytes", "p50 µs", "p99 µs"):
        table.add_column(c, justify="right")
    for r in report["rows"]:
        table.add_row(*[_fmt(r.get(d)) for d in dims + ["layer", "op"]],
                      f"{r['count']:,}", human_bytes(r["bytes"]),
                      _fmt(r["latency_us"]["p50"]), _fmt(r["latency_us"]["p99"]))
    buf = io.StringIO()
    summary_table = _summary_table(report.get("summary"))
    if width is None:
        import shutil

        width = max(100, shutil.get_terminal_size((160, 24)).columns)
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    if summary_table is not None:
        console.print(summary_table)
    console.print(table)
    if report.get("dropped"):
        from ioattr.labels import drops_line

        by = {d["reason"]: d["count"] for d in report.get("dropped_by") or []}
        caps = {d["map"]: d["max_entries"] for d in report.get("dropped_by") or [] if "max_entries" in d}
        console.print(drops_line(by, caps) if by else
                      f"WARNING: {report['dropped']:,} IO/events dropped (a BPF map was full; see meta.json)")
    if report.get("stages") == "statement":
        console.print("stage: \"-\" inside statements = not traced (recorded with --stages statement); "
                      "rerun with --stages full for parse/optimize/execute/commit")
    return buf.getvalue()

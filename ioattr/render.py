"""Terminal rendering of report rows with rich."""
from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape
from rich.table import Table


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
    if width is None:
        import shutil

        width = max(100, shutil.get_terminal_size((160, 24)).columns)
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    console.print(table)
    if report.get("dropped"):
        console.print(f"dropped: {report['dropped']} events (a BPF map was full; see meta.json)")
    return buf.getvalue()

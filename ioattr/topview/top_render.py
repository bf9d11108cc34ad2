"""`ioattr top`'s screen: header, one view's table, footer, drawn with rich.

Every line fits the width it is given (80 columns is the design minimum):
numbers have fixed widths and the name column gets what is left, with
paths cut on the left (the file name is the informative end) and
statements on the right. `render_screen` returns plain text (batch mode)
or text with ANSI styles (interactive).
"""
from __future__ import annotations

import functools
import io
import time
from dataclasses import dataclass
from typing import Callable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ioattr.topview.top import NAME, Column, Header, Row, Snapshot, View, sort_rows
from ioattr.model.labels import DROP_MAPS

# the footer fits 80 columns: the other keys are in the `?` help
FOOTER_KEYS = (("f", "files"), ("i", "indexes"), ("t", "threads"), ("s", "queries"), ("d", "devices"),
               ("c", "cgroups"), ("<>", "sort"), ("?", "help"), ("q", "quit"))
VIEW_OF_KEY = {"f": ("files",), "i": ("indexes",), "t": ("threads", "roles"), "s": ("queries",),
               "d": ("devices",), "c": ("cgroups",)}
# the `?` screen: every key, as top(1) users expect them
HELP_KEYS = (
    ("f", "files view"),
    ("i", "indexes view (the engines' pages: InnoDB pages, PostgreSQL blocks, MyRocks SST blocks)"),
    ("t", "threads view; again: roles"),
    ("s", "queries view (statements)"),
    ("d", "devices view"),
    ("c", "cgroups view"),
    ("< > or arrows", "move the sort column"),
    ("r", "reverse the sort"),
    ("l", "layer of the io views: syscall, block, pagecache"),
    ("space", "refresh now"),
    ("?  h", "this help (any key returns)"),
    ("q  Q  Esc  Ctrl-C", "quit"),
)
HELP_NOTES = (
    "IO/s = R/s + W/s; fsyncs per second are on the header's syscall and disk lines.",
    "P50/P99: latency of the row's reads and writes. Rates are per second.",
)
MIN_WIDTH = 60


def _none_or_zero(fmt: Callable[[float], str]) -> Callable[[float | None], str]:
    """A number formatter that shows None (not measured) as "-" and zero as "0"."""
    @functools.wraps(fmt)
    def shown(v: float | None) -> str:
        if v is None:
            return "-"
        if v == 0:
            return "0"
        return fmt(v)
    return shown


@_none_or_zero
def fmt_rate(v: float) -> str:
    if v < 9.95:
        return f"{v:.1f}"
    if v < 9999.5:
        return f"{v:.0f}"
    if v < 999_500:
        return f"{v / 1e3:.0f}k" if v >= 99_950 else f"{v / 1e3:.1f}k"
    return f"{v / 1e6:.1f}M"


@_none_or_zero
def fmt_mbps(v: float) -> str:
    if v < 0.005:
        return "<0.01"
    if v < 9.995:
        return f"{v:.2f}"
    if v < 99.95:
        return f"{v:.1f}"
    return f"{v:.0f}"


def fmt_latency(ns: float | None) -> str:
    if ns is None:
        return "-"
    for unit, scale in (("ns", 1.0), ("us", 1e3), ("ms", 1e6)):
        v = ns / scale
        if v < 9.95:
            return f"{v:.1f}{unit}"
        if v < 999.5:
            return f"{v:.0f}{unit}"
    v = ns / 1e9
    return f"{v:.1f}s" if v < 9.95 else f"{v:.0f}s"


def fmt_pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


@_none_or_zero
def fmt_ratio(v: float) -> str:
    if v < 9.995:
        return f"{v:.2f}"
    return fmt_rate(v)


FORMATTERS = {"rate": fmt_rate, "mbps": fmt_mbps, "latency": fmt_latency, "pct": fmt_pct, "ratio": fmt_ratio}


def fit(text: str, width: int, *, left: bool = False, ellipsis: str = "~") -> str:
    """Cut text to width; `left` keeps the end (paths), else the start."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width <= len(ellipsis):
        return text[:width]
    if left:
        return ellipsis + text[-(width - len(ellipsis)):]
    return text[: width - len(ellipsis)] + ellipsis


@dataclass
class ViewState:
    view: View
    layer: str
    sort: Column
    reverse: bool = False


def _cell(col: Column, row: Row) -> str:
    if col.key == NAME:
        return row.name
    if not col.numeric or col.kind == "count":
        return row.extra or "-"
    return FORMATTERS.get(col.kind, fmt_rate)(row.values.get(col.key))


def header_lines(snap: Snapshot | None, hdr: Header, layer: str) -> list[str]:
    clock = time.strftime("%H:%M:%S", time.localtime(snap.end if snap else time.time()))
    first = f"ioattr top - {clock}  {hdr.host}  every {hdr.interval:g}s"
    if hdr.phase:
        first += f"  phase {hdr.phase}"
    if hdr.cost:
        first += f"  {hdr.cost}"
    targets = ", ".join(hdr.targets[:4]) + (f" +{len(hdr.targets) - 4} more" if len(hdr.targets) > 4 else "")
    second = f"targets: {targets or 'none running'}"
    if hdr.dropped:

        full = sorted({DROP_MAPS[r] for r, n in hdr.drops.items() if n and DROP_MAPS.get(r)})
        # the reasons that are not a full map: a classifier limit, runs the kernel skipped
        why = [f"{','.join(full)} full"] if full else []
        why += sorted(r for r, n in hdr.drops.items() if n and not DROP_MAPS.get(r))
        second += f"  DROPPED {hdr.dropped}" + (f" ({'; '.join(why)})" if why else "")
    if hdr.degraded:
        second += "  degraded: " + ",".join(hdr.degraded)
    lines = [first, second]
    if snap is None:
        lines += ["collecting the first interval...", "", ""]
        return lines
    for label, lay in (("syscall", "syscall"), ("disk   ", "block")):
        t = snap.totals(lay)
        lines.append(f"{label}  read {fmt_rate(t.reads)}/s {fmt_mbps(t.read_bytes / 1e6)} MB/s"
                     f"  write {fmt_rate(t.writes)}/s {fmt_mbps(t.write_bytes / 1e6)} MB/s"
                     f"  fsync {fmt_rate(t.fsyncs)}/s")
    pq = snap.per_query()
    d = snap.status_delta or {}
    if pq is None and "cache_misses" in d and snap.seconds:
        # a server with no statement counter (PostgreSQL): its cache misses and requests alone
        line = f"server: cache misses {fmt_rate(d['cache_misses'] / snap.seconds)}/s"
        if "cache_requests" in d:
            line += f"  requests {fmt_rate(d['cache_requests'] / snap.seconds)}/s"
        lines.append(line + "  (no statement counter)")
    elif pq is None:
        lines.append("queries: no server counters (no server connection)")
    else:
        # ioattr/model/per.py: statements are Questions (PostgreSQL: the wire reader's Simple Query
        # and Execute messages), a query is a SELECT (as report's r/q)
        line = f"statements {fmt_rate(pq['statements_ps'])}/s  SELECT {fmt_rate(pq['qps'])}/s"
        if pq.get("from_wire"):
            line += " (from the wire)"
        if "reads_per_query" in pq:
            line += (f"  reads/SELECT {pq['reads_per_query']:.2f}"
                     f"  pages/SELECT {pq['page_reads_per_query']:.2f}")
        if pq.get("from_wire") and "cache_misses" in d and snap.seconds:
            line += f"  cache misses {fmt_rate(d['cache_misses'] / snap.seconds)}/s"
        lines.append(line)
    return lines


def title_line(vs: ViewState, nrows: int, shown: int) -> str:
    v = vs.view
    layer = f"layer {vs.layer}" if v.table == "io" else "pages"
    order = "asc" if vs.reverse != (not vs.sort.numeric or vs.sort.key == NAME) else "desc"
    more = f" (top {shown} of {nrows})" if shown < nrows else f" ({nrows} rows)"
    return f"{v.name}  {layer}  sorted by {vs.sort.header} {order}{more}"


def footer_line(vs: ViewState) -> Text:
    t = Text()
    for key, label in FOOTER_KEYS:
        current = vs.view.name in VIEW_OF_KEY.get(key, ())
        t.append(f"{key}:{label}", style="reverse" if current else "")
        t.append(" ")
    t.rstrip()
    return t


def build_table(vs: ViewState, rows: list[Row], width: int, ellipsis: str) -> Table:
    cols = vs.view.columns
    fixed = sum(c.width + 1 for c in cols if c.key != NAME)
    longest = max([len(r.name) for r in rows] + [len(vs.view.title), 24])
    name_w = max(8, min(width - fixed - 1, longest))
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), expand=False,
                  header_style="reverse", show_header=True)
    for c in cols:
        w = name_w if c.key == NAME else c.width
        style = "bold reverse" if c.key == vs.sort.key else ""
        table.add_column(Text(fit(c.header, w), style=style), width=w, no_wrap=True, overflow="crop",
                         justify="right" if c.numeric and c.key != NAME else "left")
    left = vs.view.name == "files"
    for r in rows:
        cells = []
        for c in cols:
            text = _cell(c, r)
            w = name_w if c.key == NAME else c.width
            cells.append(Text(fit(text, w, left=left and c.key == NAME, ellipsis=ellipsis)))
        table.add_row(*cells)
    return table


def help_screen(width: int, height: int) -> str:
    """The `?` screen: the keys and what the columns add up to, cut to the terminal."""
    key_w = max(len(k) for k, _ in HELP_KEYS) + 2
    lines = ["ioattr top - keys", ""]
    lines += [f"  {k:<{key_w}}{what}" for k, what in HELP_KEYS]
    lines += [""] + list(HELP_NOTES) + ["", "Press any key to continue."]
    return "\n".join(fit(line, width) for line in lines[:height])


def render_screen(snap: Snapshot | None, hdr: Header, vs: ViewState, *, width: int, height: int | None,
                  color: bool, max_rows: int | None = None, footer: bool = True,
                  ellipsis: str = "~", header: bool = True) -> str:
    """The whole screen as text: at most `height` lines (None: as many rows as max_rows)."""
    width = max(width, MIN_WIDTH)
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, color_system="standard" if color else None,
                      highlight=False, emoji=False, markup=False, legacy_windows=False, soft_wrap=False)
    head = header_lines(snap, hdr, vs.layer) if header else []
    rows = sort_rows(snap.rows(vs.view, vs.layer), vs.sort, vs.reverse) if snap else []
    limit = len(rows)
    if height is not None:
        # header, title, column header, footer
        limit = min(limit, max(0, height - len(head) - 2 - (1 if footer else 0)))
    if max_rows:
        limit = min(limit, max_rows)
    for line in head:
        console.print(Text(fit(line, width, ellipsis=ellipsis), no_wrap=True, overflow="crop"))
    console.print(Text(fit(title_line(vs, len(rows), limit), width, ellipsis=ellipsis), style="bold",
                       no_wrap=True, overflow="crop"))
    console.print(build_table(vs, rows[:limit], width, ellipsis), crop=True)
    lines = buf.getvalue().rstrip("\n").split("\n")
    if snap is not None and not rows:
        lines.append("(no IO in this view during the last interval)")
    if height is not None:
        body = lines[: height - (1 if footer else 0)]
        if footer:
            body += [""] * (height - 1 - len(body))
            fbuf = io.StringIO()
            fc = Console(file=fbuf, width=width, force_terminal=color,
                         color_system="standard" if color else None, legacy_windows=False)
            fc.print(footer_line(vs), no_wrap=True, overflow="crop", end="")
            body.append(fbuf.getvalue())
        return "\n".join(body)
    return "\n".join(lines)

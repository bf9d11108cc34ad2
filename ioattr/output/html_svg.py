"""Inline SVG plots for the HTML report, drawn by hand (no JS, no libraries).

Every plot is an <svg role="img"> with a <title> and a <desc>, and carries
data-points (how many data points it draws) so a test or a reader can tell
an empty frame from a plot. Every string placed in the SVG goes through
esc(): file names, index names, phases and queries come from the traced
host and are untrusted.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

# Tableau 10: distinguishable, and readable on white
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
OTHER_COLOR = "#c7c7c7"


def esc(v: object) -> str:
    """Text or attribute value, escaped (quotes too)."""
    return html.escape("" if v is None else str(v), quote=True)


def fmt_num(v: float | None, digits: int = 3) -> str:
    """Short human number: 950, 12.5k, 3.1M; '–' for missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    a = abs(v)
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:.{digits}g}{suffix}"
    if a == 0:
        return "0"
    if a >= 1:
        return f"{v:.{digits}g}" if a < 10 ** digits else f"{v:.0f}"
    return f"{v:.{digits}g}"


def fmt_bytes(v: float | None) -> str:
    if v is None:
        return "–"
    n = float(v)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def fmt_bytes_rate(v: float | None) -> str:
    """Tick label for bytes per second: 3 significant digits, 0 as 0."""
    if v is None:
        return "–"
    if not v:
        return "0"
    n = float(v)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}/s" if abs(n) >= 100 else f"{n:.3g} {unit}/s"
        n /= 1024
    return f"{n:.3g} TiB/s"


def fmt_us(v: float | None) -> str:
    """Microseconds as µs / ms / s."""
    if v is None:
        return "–"
    if v >= 1e6:
        return f"{v / 1e6:.3g} s"
    if v >= 1e3:
        return f"{v / 1e3:.3g} ms"
    return f"{v:.3g} µs"


def fmt_seconds(s: float) -> str:
    if s >= 3600:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    if s >= 120:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{s:.3g}s" if s < 10 else f"{s:.0f}s"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About n round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    out = []
    v = start
    while True:
        if v >= lo - step * 1e-9:
            out.append(round(v, 12))
        if v >= hi - step * 1e-9:
            break
        v += step
    return out


TIME_STEPS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400, 172800, 604800)


def time_ticks(span: float, n: int = 8) -> list[float]:
    """Tick times (seconds) at clock-friendly steps: 1 s, 5 min, 1 h, ..."""
    step = next((s for s in TIME_STEPS if span / s <= n), None)
    if step is None:
        return nice_ticks(0.0, span, n)
    return [i * step for i in range(int(span / step + 1e-9) + 1)]


def _trunc(s: str, n: int) -> str:
    return s if len(s) <= n else s[: max(n - 1, 1)] + "…"


def _text_width(s: str, size: float = 11) -> float:
    return len(s) * size * 0.58


@dataclass
class Series:
    name: str
    values: list[float | None]
    color: str = ""
    dash: str = ""          # stroke-dasharray for line charts


@dataclass
class PhaseSpan:
    name: str
    start: float            # seconds from the recording's start
    end: float


@dataclass
class TimeChart:
    """Stacked areas or lines over time, with phase bands and boundaries."""
    ident: str
    title: str
    desc: str
    xs: list[float]                     # point times, seconds from the recording's start
    series: list[Series]
    phases: list[PhaseSpan] = field(default_factory=list)
    kind: str = "stack"                 # stack | line
    y_label: str = ""
    y_fmt: object = fmt_num             # tick label formatter
    log: bool = False
    bytes_axis: bool = False            # ticks at round KiB/MiB/GiB values
    width: int = 960
    height: int = 280
    x_max: float | None = None

    def points(self) -> int:
        return sum(1 for s in self.series for v in s.values if v is not None)

    def svg(self) -> str:
        for i, s in enumerate(self.series):
            if not s.color:
                s.color = PALETTE[i % len(PALETTE)]
        ml, mr, mt, mb = 86, 220, 34, 40
        W, H = self.width, self.height
        pw, ph = W - ml - mr, H - mt - mb
        x_max = self.x_max if self.x_max is not None else max(self.xs + [p.end for p in self.phases] + [1e-9])
        x_max = max(x_max, 1e-9)

        def X(t: float) -> float:
            return ml + pw * min(max(t, 0.0), x_max) / x_max

        # y range
        if self.kind == "stack":
            tops = [sum((s.values[i] or 0.0) for s in self.series) for i in range(len(self.xs))]
            y_hi = max(tops + [0.0])
        else:
            vals = [v for s in self.series for v in s.values if v is not None]
            y_hi = max(vals + [0.0])
        if self.log:
            vals = [v for s in self.series for v in s.values if v is not None and v > 0]
            lo_e = math.floor(math.log10(min(vals))) if vals else 0
            hi_e = math.ceil(math.log10(max(vals))) if vals else 1
            if hi_e <= lo_e:
                hi_e = lo_e + 1
            ticks = [10.0 ** e for e in range(lo_e, hi_e + 1)]

            def Y(v: float) -> float:
                v = max(v, 10.0 ** lo_e)
                return mt + ph - ph * (math.log10(v) - lo_e) / (hi_e - lo_e)
        else:
            div = 1.0
            if self.bytes_axis:
                while y_hi / div >= 1024 and div < 1024 ** 4:
                    div *= 1024
            ticks = [t * div for t in nice_ticks(0.0, (y_hi if y_hi > 0 else 1.0) / div)]
            y_top = ticks[-1] if ticks else 1.0

            def Y(v: float) -> float:
                return mt + ph - ph * (v / y_top if y_top else 0.0)

        tid, did = f"{self.ident}-title", f"{self.ident}-desc"
        out = [f'<svg class="plot" id="{esc(self.ident)}" role="img" aria-labelledby="{tid} {did}" '
               f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
               f'data-points="{self.points()}" data-series="{len(self.series)}">',
               f'<title id="{tid}">{esc(self.title)}</title><desc id="{did}">{esc(self.desc)}</desc>']
        # phase bands, boundaries and labels
        row_end = [-1e9, -1e9]
        for i, p in enumerate(self.phases):
            x0, x1 = X(p.start), X(p.end)
            if i % 2 == 1:
                out.append(f'<rect class="band" x="{x0:.1f}" y="{mt}" width="{max(x1 - x0, 0):.1f}" '
                           f'height="{ph}" fill="#f1f3f6"/>')
            if i > 0:
                out.append(f'<line class="boundary" x1="{x0:.1f}" x2="{x0:.1f}" y1="{mt - 4}" y2="{mt + ph}" '
                           f'stroke="#6b7280" stroke-dasharray="4 3"><title>phase {esc(p.name)} starts at '
                           f'{p.start:.2f}s</title></line>')
            # label in the first of two rows where it does not overlap the previous one
            if x0 >= row_end[0]:
                row = 0
            elif x0 >= row_end[1]:
                row = 1
            else:
                row = None  # too crowded: the boundary's tooltip and the phases table name it
            if row is not None:
                label = _trunc(p.name, max(int((W - 4 - x0) / (11 * 0.58)), 3))
                y = mt - 20 + row * 11
                out.append(f'<text class="phase-label" x="{x0 + 3:.1f}" y="{y}" font-size="11" fill="#374151">'
                           f'<title>phase {esc(p.name)}: {p.start:.2f}s – {p.end:.2f}s</title>{esc(label)}</text>')
                row_end[row] = x0 + 3 + _text_width(label) + 6
        # grid and y axis
        for t in ticks:
            y = Y(t)
            out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e7eb"/>')
            out.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="#4b5563">'
                       f'{esc(self.y_fmt(t))}</text>')
        out.append(f'<text x="14" y="{mt + ph / 2:.0f}" font-size="11" fill="#374151" text-anchor="middle" '
                   f'transform="rotate(-90 14 {mt + ph / 2:.0f})">{esc(self.y_label)}</text>')
        # x axis
        for t in time_ticks(x_max):
            x = X(t)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{mt + ph}" y2="{mt + ph + 4}" stroke="#6b7280"/>')
            out.append(f'<text x="{x:.1f}" y="{mt + ph + 16}" font-size="11" text-anchor="middle" '
                       f'fill="#4b5563">{esc(fmt_seconds(t))}</text>')
        out.append(f'<text x="{ml + pw / 2:.0f}" y="{H - 6}" font-size="11" text-anchor="middle" '
                   f'fill="#374151">time since the recording started</text>')
        out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#9ca3af"/>')
        # data
        if self.kind == "stack":
            base = [0.0] * len(self.xs)
            for s in self.series:
                top = [base[i] + (s.values[i] or 0.0) for i in range(len(self.xs))]
                if not self.xs or not any(s.values[i] for i in range(len(self.xs))):
                    base = top
                    continue
                up = " ".join(f"{X(x):.1f},{Y(v):.1f}" for x, v in zip(self.xs, top))
                down = " ".join(f"{X(x):.1f},{Y(v):.1f}" for x, v in reversed(list(zip(self.xs, base))))
                if len(self.xs) == 1:  # one point: draw a bar-like sliver
                    x = X(self.xs[0])
                    up = f"{x - 3:.1f},{Y(top[0]):.1f} {x + 3:.1f},{Y(top[0]):.1f}"
                    down = f"{x + 3:.1f},{Y(base[0]):.1f} {x - 3:.1f},{Y(base[0]):.1f}"
                out.append(f'<polygon class="series" data-name="{esc(s.name)}" points="{up} {down}" '
                           f'fill="{s.color}" fill-opacity="0.85" stroke="{s.color}" stroke-width="0.8">'
                           f'<title>{esc(s.name)}</title></polygon>')
                base = top
        else:
            for s in self.series:
                segs, cur = [], []
                for x, v in zip(self.xs, s.values):
                    if v is None or (self.log and v <= 0):
                        if cur:
                            segs.append(cur)
                        cur = []
                        continue
                    cur.append((X(x), Y(v)))
                if cur:
                    segs.append(cur)
                dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
                for seg in segs:
                    d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in seg)
                    out.append(f'<path class="series" data-name="{esc(s.name)}" d="{d}" fill="none" '
                               f'stroke="{s.color}" stroke-width="1.8"{dash}><title>{esc(s.name)}</title></path>')
                    if len(seg) <= 60:
                        out.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.2" fill="{s.color}"/>' for x, y in seg)
        # legend
        lx, ly = ml + pw + 14, mt + 4
        for s in (reversed(self.series) if self.kind == "stack" else self.series):
            if ly > mt + ph:
                break
            if self.kind == "stack":
                out.append(f'<rect x="{lx}" y="{ly}" width="11" height="11" fill="{s.color}"/>')
            else:
                dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
                out.append(f'<line x1="{lx}" x2="{lx + 14}" y1="{ly + 6}" y2="{ly + 6}" stroke="{s.color}" '
                           f'stroke-width="2"{dash}/>')
            out.append(f'<text x="{lx + 18}" y="{ly + 10}" font-size="11" fill="#1f2937">'
                       f'<title>{esc(s.name)}</title>{esc(_trunc(s.name, 30))}</text>')
            ly += 17
        out.append("</svg>")
        return "".join(out)


@dataclass
class BarChart:
    """Horizontal bars, one per category (phase), with the value printed."""
    ident: str
    title: str
    desc: str
    labels: list[str]
    values: list[float | None]
    color: str = PALETTE[0]
    value_fmt: object = fmt_num
    width: int = 460
    missing: str = "not recorded"       # shown for a None value

    def points(self) -> int:
        return sum(1 for v in self.values if v is not None)

    def svg(self) -> str:
        row = 22
        # the labels' margin sized for wide glyphs (digits, "m": ~0.7 em in DejaVu Sans), not the
        # average letter: an end-anchored label wider than its margin is clipped at the left edge
        ml = min(max((_text_width(_trunc(x, 22), 11 * 1.2) for x in self.labels), default=40) + 12, 180)
        mr, mt = 70, 8
        H = mt + row * len(self.labels) + 10
        pw = self.width - ml - mr
        hi = max([v for v in self.values if v is not None] + [0.0]) or 1.0
        tid, did = f"{self.ident}-title", f"{self.ident}-desc"
        out = [f'<svg class="plot bars" id="{esc(self.ident)}" role="img" aria-labelledby="{tid} {did}" '
               f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {H}" width="{self.width}" '
               f'height="{H}" data-points="{self.points()}" data-series="1">',
               f'<title id="{tid}">{esc(self.title)}</title><desc id="{did}">{esc(self.desc)}</desc>']
        for i, (lab, v) in enumerate(zip(self.labels, self.values)):
            y = mt + i * row
            out.append(f'<text x="{ml - 6:.0f}" y="{y + 15}" font-size="11" text-anchor="end" fill="#1f2937">'
                       f'<title>{esc(lab)}</title>{esc(_trunc(lab, 22))}</text>')
            if v is None:
                out.append(f'<text x="{ml + 4:.0f}" y="{y + 15}" font-size="11" fill="#6b7280" '
                           f'font-style="italic">{esc(self.missing)}</text>')
                continue
            w = max(pw * max(v, 0.0) / hi, 0.0)
            out.append(f'<rect class="bar" x="{ml:.0f}" y="{y + 3}" width="{max(w, 1.0):.1f}" height="{row - 6}" '
                       f'fill="{self.color}"><title>{esc(lab)}: {esc(self.value_fmt(v))}</title></rect>')
            out.append(f'<text x="{ml + w + 4:.1f}" y="{y + 15}" font-size="11" fill="#1f2937">'
                       f'{esc(self.value_fmt(v))}</text>')
        out.append(f'<line x1="{ml:.0f}" x2="{ml:.0f}" y1="{mt}" y2="{H - 8}" stroke="#9ca3af"/>')
        out.append("</svg>")
        return "".join(out)


def share_bar(share: float | None, width: int = 160) -> str:
    """A small inline bar for a share of change in [-1, 1] around a centre line (CSS, no SVG)."""
    if share is None:
        return ""
    s = max(min(share, 1.0), -1.0)
    half = width / 2
    w = abs(s) * half
    left = half if s >= 0 else half - w
    cls = "pos" if s >= 0 else "neg"
    return (f'<span class="share" style="width:{width}px" aria-hidden="true">'
            f'<span class="zero" style="left:{half:.0f}px"></span>'
            f'<span class="fill {cls}" style="left:{left:.1f}px;width:{max(w, 0.5):.1f}px"></span></span>')


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, caption: str | None = None,
          numeric: Sequence[bool] | None = None, cls: str = "data", wrap: Sequence[int] = ()) -> str:
    """An HTML table; cells are escaped unless given as Raw. Columns in `wrap` hold long strings
    (paths, queries) that may break anywhere; the others keep their words whole."""
    out = [f'<table class="{cls}">']
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    # a header may break after "/" ("reads/<wbr>query"): a wide table of ratios fits the page
    out.append("<thead><tr>" + "".join(f'<th scope="col">{esc(h).replace("/", "/<wbr>")}</th>' for h in headers)
               + "</tr></thead><tbody>")
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            num = numeric[i] if numeric and i < len(numeric) else False
            body = c.html if isinstance(c, Raw) else esc("–" if c is None else c)
            cells.append(f'<td class="num">{body}</td>' if num else
                         f'<td class="wrap">{body}</td>' if i in wrap else f"<td>{body}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


@dataclass
class Raw:
    """Markup built here (already escaped), for table()."""
    html: str

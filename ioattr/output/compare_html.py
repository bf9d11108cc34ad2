"""`ioattr compare --html FILE`: one self-contained page (inline CSS and SVG, no scripts, nothing
fetched) with the runs, the per run x phase table, bars per phase (one bar per run) for the
headline terms, and the --by breakdown.

Everything from a recording (labels, phase, index and file names) is untrusted and escaped by
html_svg.esc / table(); the same Content-Security-Policy as the report page forbids scripts.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from ioattr import __version__
from ioattr.analysis.compare import BY_COLUMNS, COLUMNS
from ioattr.output.compare_view import RUN_COLUMNS, UNIT_NOTE, cell, change_line
from ioattr.output.html_report import page_head
from ioattr.output.html_svg import PALETTE, BarChart, esc, table

# the terms plotted, per phase one bar per run (and one line per run across phases)
PLOTTED = ("reads_per_query", "kb_read_per_query", "writes_per_unit", "kb_written_per_unit", "qps", "tps",
           "engine_cache_misses_per_query", "server_cpu_us_per_query")


def _label(key: str) -> str:
    return next(f"{h}: {what}" for k, h, what in COLUMNS if k == key)


def _bars(result: dict[str, Any], phase: str, idx: int) -> str:
    rows = [r for r in result["rows"] if r["phase"] == phase]
    figs = []
    for i, key in enumerate(PLOTTED):
        vals = [r.get(key) for r in rows]
        if all(v is None for v in vals):
            continue
        labels = [r["run"] for r in rows]
        header = next(h for k, h, _ in COLUMNS if k == key)
        chart = BarChart(f"p{idx}-{key}", f"{header} in phase {phase}",
                         f"{_label(key)}, phase {phase}: " + "; ".join(f"{lab}: {cell(r, key)}"
                                                                       for lab, r in zip(labels, rows)),
                         labels, vals, color=PALETTE[i % len(PALETTE)], missing="-")
        figs.append(f'<figure><figcaption><strong>{esc(header)}</strong></figcaption>{chart.svg()}</figure>')
    if not figs:
        return '<p class="notrec">No per-operation terms in this phase (no operation counters recorded).</p>'
    return '<div class="bars-grid">' + "".join(figs) + "</div>"


def render_compare_html(result: dict[str, Any]) -> str:
    labels = [i["label"] for i in result["runs"]]
    title = "ioattr compare: " + " vs ".join(labels)
    body = []
    for info in result["runs"]:
        if info.get("recording_state"):
            body.append(f'<p class="state-banner" role="alert" style="border:2px solid #b00;background:#fee;'
                        f'padding:.5em;font-weight:bold">{esc(info["label"])}: '
                        f'{esc(info["recording_state"]["message"])}</p>')
    body.append('<section id="runs"><h2>Runs</h2>')
    body.append(table([n for n, _ in RUN_COLUMNS], [[f(i) for _, f in RUN_COLUMNS] for i in result["runs"]],
                      wrap=[len(RUN_COLUMNS) - 1]))
    body.append("</section>")
    headers = ["phase", "run"] + [h for _, h, _ in COLUMNS]
    rows = [[r["phase"] + (" (open)" if r.get("open") else ""), r["run"]] + [cell(r, k) for k, _, _ in COLUMNS]
            for r in result["rows"]]
    body.append('<section id="table"><h2>Per run and phase</h2>')
    body.append(table(headers, rows, numeric=[False, False] + [True] * len(COLUMNS)))
    body.append("<p class=\"muted\">" + "<br>".join(esc(f"{h} = {what}") for _, h, what in COLUMNS)
                + "<br>" + esc(UNIT_NOTE) + "; '-': not recorded, or nothing to divide by.</p>")
    for n in result.get("notes") or []:
        body.append(f'<p class="notrec">{esc(n)}</p>')
    body.append("</section>")
    if result.get("changes"):  # explain's words, as the terminal table says them
        body.append('<section id="changes"><h2>Changes between runs</h2><ul>'
                    + "".join(f'<li data-significant="{str(c["significant"]).lower()}">{esc(change_line(c))}</li>'
                              for c in result["changes"]) + "</ul></section>")
    body.append('<section id="plots"><h2>Per phase, run by run</h2>')
    for idx, phase in enumerate(result["phases"]):
        body.append(f"<h3>{esc(phase)}</h3>{_bars(result, phase, idx)}")
    body.append("</section>")
    if result.get("by"):
        dim = result["by"]
        bh = ["phase", "run", dim] + [h for _, h, _ in BY_COLUMNS]
        brows = [[p["phase"], p["run"], p[dim]] + [cell(p, k) for k, _, _ in BY_COLUMNS]
                 for p in result.get("breakdown") or []]
        body.append(f'<section id="by"><h2>Storage IO by {esc(dim)}</h2>'
                    f'{table(bh, brows, numeric=[False, False, False] + [True] * len(BY_COLUMNS), wrap=[2])}'
                    "</section>")
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "".join([
        page_head(title),
        f'<header><h1>{esc(title)}</h1><p class="sub">phases: {esc(", ".join(result["phases"]))} · '
        f'generated {esc(now)} by ioattr {esc(__version__)}</p></header><main>',
        *body,
        "</main></body></html>\n",
    ])

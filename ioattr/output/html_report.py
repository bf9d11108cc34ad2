"""`--format html`: one self-contained page (inline CSS and SVG, no scripts, nothing fetched).

    render_html(rec, explanation=None, against=None) -> str

The page holds the recording's facts, its phases with the insert
benchmark's per-phase metrics, plots (pages read per index over time with
the phases marked, read/write bytes by file class, read/write latency
p50/p99, per-op metrics per phase), the top indexes and files, the engine
counters when recorded, and -- from `ioattr explain` -- the explanation:
the metric's change, contributors with their share of it, and the findings
with their verdicts and evidence. With --against both recordings get their
sections.

Everything from a recording (file names, queries, index and phase names,
notes) is untrusted and escaped; a Content-Security-Policy forbids scripts
and any fetch as a second line of defence. Each plot is an SVG with a
<title>/<desc>, and its numbers are repeated in a table under <details>.
A section whose data is missing (no page attribution, no engine counters,
no IO at all) says "not recorded" and why, instead of failing the page.
"""
from __future__ import annotations

import datetime as _dt
import os
import traceback
from typing import Any, Callable

from ioattr import __version__
from ioattr.output.html_data import (OTHER, TimeAxis, bytes_over_time, index_by_phase, latency_over_time,
                                     pages_over_time, time_axis)
from ioattr.output.html_svg import (OTHER_COLOR, PALETTE, BarChart, PhaseSpan, Raw, Series, TimeChart, esc, fmt_bytes,
                                    fmt_bytes_rate,
                                    fmt_num, fmt_seconds, fmt_us, share_bar, table)
from ioattr.analysis.phase_stats import PhaseStats, bulk_line, phase_stats, sizes_line
from ioattr.analysis.report import ReportRequest, build_report
from ioattr.analysis.direction import mark, words
from ioattr.analysis.rec_state import recording_state
from ioattr.output.render import engine_phase_lines as text_lines, summary_legend
from ioattr.engines import registry
from ioattr.format.reader import Recording
from ioattr.model import storage

#: each verdict's badge style; its words are explain's (ioattr/analysis/direction.py mark/words)
VERDICT_CLASS = {"supported": "v-supported", "refuted": "v-refuted", "inconclusive": "v-inconclusive",
                 "not_applicable": "v-na"}
REQUESTED_MAX_ROWS = 500
WRAP_DIMS = ("file", "query", "index", "thread", "process", "device", "cgroup")
DIM_COLUMNS = ("index", "level", "stage", "role", "file_class", "query")

# per-phase metrics shown as bars: (summary key, label, value formatter)
PER_OP = (
    ("reads_per_query", "storage reads per query (per SELECT)", fmt_num),
    ("kb_read_per_query", "KB read per query (per SELECT)", fmt_num),
    ("writes_per_insert", "storage writes per insert", fmt_num),
    ("kb_written_per_insert", "KB written per insert", fmt_num),
)
# counters shown per phase when recorded (first match of each row): the server's statement counts,
# each engine's headline counters (EngineAdapter.report_counters), then the process and host's
COUNTER_ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("queries (Com_select)", ("status:Com_select",)),
    ("statements (Questions)", ("status:Questions",)),
    ("rows inserted", registry.rows_inserted_keys()),  # rows (the benchmark's unit): the engines' and the server's
    ("INSERT statements", ("status:Com_insert",)),
    ("INSERT ... SELECT statements", ("status:Com_insert_select",)),
    *(row for engine in registry.ENGINES for row in engine.report_counters),
    # the traced processes' own (collectors/counters_host.py ProcCounters), summed over them
    ("CPU seconds, user (traced processes)", ("proc:cpu:user",)),
    ("CPU seconds, system (traced processes)", ("proc:cpu:sys",)),
    ("context switches (traced processes)", ("proc:ctxt",)),
)

CSS = """
:root { --fg:#111827; --muted:#4b5563; --line:#d1d5db; --bg2:#f9fafb; --accent:#1d4ed8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); margin: 0; background: #fff; }
header, main { max-width: 1240px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 18px; border-bottom: 1px solid var(--line); }
h1 { font-size: 22px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 19px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 6px; }
p.sub, .muted { color: var(--muted); }
nav ul { list-style: none; padding: 0; margin: 8px 0 12px; display: flex; flex-wrap: wrap; gap: 4px 14px; }
nav a { color: var(--accent); text-decoration: none; }
table.data, table.facts { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
table.data th, table.data td, table.facts th, table.facts td { border: 1px solid var(--line);
       padding: 3px 6px; vertical-align: top; text-align: left; }
table.data thead th { background: #eef2f7; position: sticky; top: 0; }
table.data tbody tr:nth-child(even) { background: var(--bg2); }
table.facts th { background: #eef2f7; font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td { overflow-wrap: break-word; }
td.wrap { overflow-wrap: anywhere; min-width: 9em; }
table.phases td:first-child { white-space: nowrap; font-weight: 600; }
table.phases th { font-size: 12px; }
caption { caption-side: top; text-align: left; color: var(--muted); padding: 2px 0; white-space: nowrap; }
.notrec { color: #92400e; background: #fffbeb; border: 1px solid #fcd34d; padding: 6px 10px;
          border-radius: 4px; display: inline-block; }
.section-error { color: #991b1b; background: #fef2f2; border: 1px solid #fca5a5; padding: 6px 10px; }
figure { margin: 8px 0 14px; }
figcaption { color: var(--muted); font-size: 13px; max-width: 960px; }
svg.plot { display: block; max-width: 100%; height: auto; font-family: inherit; }
.bars-grid { display: flex; flex-wrap: wrap; gap: 6px 28px; }
.bars-grid figure { margin: 4px 0; }
details { margin: 4px 0 12px; }
details summary { cursor: pointer; color: var(--accent); }
.badge { display: inline-block; min-width: 104px; text-align: center; font-weight: 700; font-size: 12px;
         letter-spacing: .04em; padding: 2px 8px; border-radius: 10px; margin-right: 8px; }
.v-supported { background: #15803d; color: #fff; }
.v-refuted { background: #e5e7eb; color: #374151; }
.v-inconclusive { background: #fde68a; color: #78350f; }
.v-na { background: #fff; color: #6b7280; border: 1px solid #d1d5db; }
.finding { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.finding.supported { border-left: 6px solid #15803d; }
.finding.inconclusive { border-left: 6px solid #f59e0b; }
.finding.refuted { border-left: 6px solid #9ca3af; }
.finding .title { font-weight: 600; }
.finding .summary { margin: 4px 0 0; }
.finding .label { font-weight: 600; }
.subhead { font-weight: 600; margin: 14px 0 2px; }
.headline { font-size: 18px; margin: 6px 0; }
.headline .value { font-weight: 700; font-variant-numeric: tabular-nums; }
.pct { display: inline-block; width: 4.2em; text-align: right; }
.share { position: relative; display: inline-block; height: 12px; background: #f3f4f6;
         vertical-align: middle; margin-left: 8px; }
.share .zero { position: absolute; top: -2px; width: 1px; height: 16px; background: #6b7280; }
.share .fill { position: absolute; top: 1px; height: 10px; }
.share .pos { background: #d62728; }
.share .neg { background: #1f77b4; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
"""


def page_head(title: str) -> str:
    """A self-contained page's head, up to <body>: no script may run, nothing is fetched
    (a Content-Security-Policy that allows only inline styles and data: images), the
    generator named. Shared by the report and compare pages."""
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="ioattr {esc(__version__)}">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
    ])


# -- small helpers -----------------------------------------------------------------------

def _not_recorded(what: str, why: str) -> str:
    return f'<p class="notrec"><strong>{esc(what)}: not recorded.</strong> {esc(why)}</p>'


def _section(render: Callable[[], str], name: str) -> str:
    """Render one section; a failure shows as a visible error instead of losing the page."""
    try:
        return render()
    except Exception as e:  # noqa: BLE001 - the rest of the page is still worth having
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return (f'<p class="section-error">The {esc(name)} section could not be rendered: '
                f'<code>{esc(detail)}</code></p>')


def _ts(v: Any) -> str:
    try:
        return _dt.datetime.fromtimestamp(float(v), _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError, OverflowError, OSError):
        return "–"


def _as_list(v: Any) -> list[Any]:
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _facts(rows: list[tuple[str, str]]) -> str:
    """A two-column facts table; values given as markup (already escaped)."""
    return ('<table class="facts"><tbody>' + "".join(f'<tr><th scope="row">{esc(k)}</th><td>{v}</td></tr>'
                                                     for k, v in rows) + "</tbody></table>")


def _list(items: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{x}</li>" for x in items) + "</ul>"


def _figure(chart: Any, caption: str, data_table: str) -> str:
    return (f'<figure>{chart.svg()}<figcaption>{esc(caption)}</figcaption>'
            f'<details><summary>The numbers behind this plot</summary>{data_table}</details></figure>')


def engine_phase_lines(summaries: list[dict[str, Any]]) -> list[str]:
    """Per phase, each engine's own terms (EngineAdapter.phase_line over the summary's
    phase_terms, e.g. MyRocks' "rocksdb"), escaped list items: the text report's lines
    (render.engine_phase_lines), so the two pages say the same."""

    return [esc(line) for line in text_lines(summaries)]


def _phase_of(x: float, spans: list[PhaseSpan]) -> str:
    name = ""
    for p in spans:
        if p.start <= x + 1e-9:
            name = p.name
    return name


# -- one recording -----------------------------------------------------------------------

class RecordingView:
    """The sections of one recording; `prefix` keeps element ids unique with --against."""

    def __init__(self, rec: Recording, prefix: str, label: str) -> None:
        self.rec, self.prefix, self.label = rec, prefix, label
        self.extra: list[tuple[str, str, Callable[[], str]]] = []   # more sections, after the phases
        self.meta = rec.meta
        self.ax: TimeAxis = time_axis(rec)
        self.spans = []
        for p in rec.phases():
            start = (float(p["start"]) if p.get("start") is not None else self.ax.t0) - self.ax.t0
            end = float(p["end"]) - self.ax.t0 if p.get("end") is not None else self.ax.end
            self.spans.append(PhaseSpan(str(p["name"]), max(start, 0.0), max(end, start)))
        self.stats: list[PhaseStats] = []
        self.summaries: list[dict[str, Any]] = []
        self.stats_error: str | None = None
        try:
            self.stats = [phase_stats(rec, n) for n in rec.phase_names()]
            self.summaries = [s.summary() for s in self.stats]
        except Exception as e:  # noqa: BLE001 - shown in the phases section
            self.stats_error = f"{type(e).__name__}: {e}"
        self.has_pages = rec.has_table("pages")
        self.has_counters = rec.has_table("counters")
        self.has_io = rec.has_table("io")

    def id(self, name: str) -> str:
        return f"{self.prefix}{name}"

    # sections: (id, heading, renderer)
    def sections(self) -> list[tuple[str, str, Callable[[], str]]]:
        return [
            ("facts", "Recording", self.facts),
            ("phases", "Phases", self.phases),
            *self.extra,
            ("per-op", "Per-operation metrics per phase", self.per_op),
            ("index-time", "Pages per index over time", self.index_time),
            ("bytes-time", "Read and write bytes over time by file class", self.bytes_time),
            ("latency", "IO latency over time", self.latency),
            ("top-indexes", "Top indexes", self.top_indexes),
            ("top-files", "Top files", self.top_files),
            ("counters", "Engine and host counters per phase", self.counters),
        ]

    def render(self, level: int = 2) -> str:
        out = []
        for sid, heading, fn in self.sections():
            out.append(f'<section id="{esc(self.id(sid))}" aria-labelledby="{esc(self.id(sid))}-h">'
                       f'<h{level} id="{esc(self.id(sid))}-h">{esc(heading)}</h{level}>'
                       f'{_section(fn, heading)}</section>')
        return "".join(out)

    # -- facts
    def facts(self) -> str:
        m = self.meta
        dur = self.ax.end
        degraded = m.get("degraded") or {}
        dropped = m.get("dropped") or {}
        servers = m.get("servers") or []
        notes = _as_list(m.get("notes"))
        deg_html = ("none" if not degraded else _list([f"<strong>{esc(k)}</strong>: {esc(v)}"
                                                       for k, v in (degraded.items() if isinstance(degraded, dict)
                                                                    else enumerate(degraded))]))
        if isinstance(dropped, dict):
            total_drop = self.rec.dropped_total()
            drop_html = f"{total_drop:,} events lost"
            if total_drop:
                drop_html += " (" + ", ".join(f"{esc(k)}: {esc(v)}" for k, v in dropped.items() if v) + ")"
        else:
            drop_html = esc(dropped)
        srv_items = []
        for s in servers if isinstance(servers, list) else []:
            if not isinstance(s, dict):
                continue
            bits = [f"pid {esc(s.get('pid'))}", esc(s.get("version") or s.get("flavor") or "unknown version")]
            bits.append("connected" if s.get("connected") else "not connected")
            for k in ("error", "names_error", "roles_error"):
                if s.get(k):
                    bits.append(f"{esc(k)}: {esc(s[k])}")
            if s.get("stage_probes"):
                bits.append(f"stage probes: {esc(s['stage_probes'])}")
            srv_items.append(", ".join(bits))
        tables = ", ".join(f"{esc(t)} ({n} chunk{'s' if n != 1 else ''})"
                           for t, n in self.rec.chunk_counts.items() if n) or "none"
        rows = [
            ("recording", f"<code>{esc(self.rec.path)}</code>"),
            ("host", esc(m.get("host"))),
            ("kernel", esc(m.get("kernel"))),
            ("tool", f"{esc(m.get('tool', 'ioattr'))} {esc(m.get('tool_version'))}"),
            ("status", esc(m.get("status"))),
            ("started", esc(_ts(m.get("started")))),
            ("duration", f"{esc(fmt_seconds(dur))} ({dur:.1f} s)"),
            ("interval", f"{esc(m.get('interval'))} s"),
            ("targets", ", ".join(esc(t) for t in _as_list(m.get("targets"))) or "–"),
            ("servers", _list(srv_items) if srv_items else "none seen"),
            ("probe sets", ", ".join(esc(p) for p in _as_list(m.get("probe_sets"))) or "–"),
            ("degraded", deg_html),
            ("drops", drop_html),
            ("page attribution", "yes" if self.has_pages else "no (not recorded)"),
            ("engine counters", "yes" if self.has_counters else "no (not recorded)"),
            ("tables", tables),
        ]
        if notes:
            rows.append(("notes", _list([f"{esc(_ts(n.get('time')) if isinstance(n, dict) else '')} "
                                         f"{esc(n.get('text') if isinstance(n, dict) else n)}" for n in notes])))
        return _facts(rows)

    # -- phases
    def phases(self) -> str:
        if self.stats_error:
            return f'<p class="section-error">per-phase metrics failed: <code>{esc(self.stats_error)}</code></p>'
        src = {p["name"]: p.get("source") for p in self.meta.get("phases") or [] if isinstance(p, dict)}
        # the denominators' names (ioattr/model/per.py): a query is a SELECT
        headers = ["phase", "start", "duration", "marked by", "SELECT/s (qps)", "statements/s", "ips (rows/s)",
                   "inserts/s (statements)", "reads/SELECT", "engine reads/SELECT", "KB read/SELECT",
                   "writes/insert", "KB written/insert", "CPU µs/SELECT", "ctx switches/SELECT",
                   "storage reads", "storage writes"]
        with_ops = any(s.get("ops") is not None for s in self.summaries)
        if with_ops:
            headers += ["ops/s", "KB read/op", "KB written/op"]
        rows = []
        for span, s in zip(self.spans, self.summaries):
            # an open phase (recording still written, or crashed) lasts till its last data
            rows.append([span.name + (" (open)" if s.get("open") else ""), fmt_seconds(span.start),
                         fmt_seconds(s["seconds"] if s.get("open") else span.end - span.start),
                         src.get(span.name) or "start",
                         fmt_num(s["qps"]), fmt_num(s.get("statements_per_s")), fmt_num(s["ips"]),
                         fmt_num(s.get("insert_stmts_ps")),
                         storage.fmt_sig(s["reads_per_query"]), storage.fmt_sig(s["engine_reads_per_query"]),
                         storage.fmt_sig(s["kb_read_per_query"]), storage.fmt_sig(s["writes_per_insert"]),
                         storage.fmt_sig(s["kb_written_per_insert"]), storage.fmt_sig(s["cpu_us_per_query"]),
                         storage.fmt_sig(s["context_switches_per_query"]),
                         f"{s['storage_reads']:,}", f"{s['storage_writes']:,}"]
                        + ([fmt_num(s.get("ops_per_s")), storage.fmt_sig(s.get("kb_read_per_op")),
                            storage.fmt_sig(s.get("kb_written_per_op"))] if with_ops else []))
        out = table(headers, rows, numeric=[False, True, True, False] + [True] * (len(headers) - 4),
                    cls="data phases")

        out += f"<p class=\"muted\">{esc(summary_legend(self.summaries))}</p>"
        # bulk loads (rows by statement kind, rows/s, per-row IO) and the tables' sizes from their files
        extra = [f"{esc(s['phase'])}: {esc(line)}" for s in self.summaries
                 for line in (bulk_line(s.get("bulk")), sizes_line(s.get("table_sizes"))) if line]
        if extra:
            out += "<p>Bulk loads and table sizes on disk, per phase:</p>" + _list(extra)
        lines = engine_phase_lines(self.summaries)
        if lines:
            out += "<p>The engines' own terms per phase (MyRocks: flush, compaction, WAL per transaction, " \
                   "write amplification, block-cache misses by kind), as in the text report:</p>" + _list(lines)
        if not self.has_counters:
            out += _not_recorded("Engine counters", "qps, ips and the per-query/per-insert metrics need the "
                                 "server's counters (record with a server connection); storage reads and writes "
                                 "are ioattr's own attribution.")
        return out

    # -- per-op bars
    def per_op(self) -> str:
        if self.stats_error:
            return f'<p class="section-error">per-phase metrics failed: <code>{esc(self.stats_error)}</code></p>'
        names = [s.name for s in self.spans]
        figs = []
        any_value = False
        for i, (key, label, f) in enumerate(PER_OP):
            vals = [s.get(key) for s in self.summaries]
            if all(v is None for v in vals):
                continue
            any_value = True
            per = "queries" if key.endswith("_query") else "inserts"
            chart = BarChart(self.id(f"bars-{key}"), f"{label} per phase",
                             f"{label} in each phase: " + "; ".join(f"{n}: {f(v)}" for n, v in zip(names, vals)),
                             names, vals, color=PALETTE[i % len(PALETTE)], value_fmt=f,
                             missing=f"n/a (no {per} counted)" if self.has_counters else "not recorded")
            figs.append(f'<figure><figcaption><strong>{esc(label)}</strong></figcaption>{chart.svg()}</figure>')
        rate_vals = []
        for key, label, color in (("storage_reads", "storage reads per second", PALETTE[4]),
                                  ("storage_writes", "storage writes per second", PALETTE[6])):
            vals = [s[key] / max(st.seconds, 1e-3) for s, st in zip(self.summaries, self.stats)]
            rate_vals.append(vals)
            chart = BarChart(self.id(f"bars-{key}"), f"{label} per phase",
                             f"{label} in each phase: " + "; ".join(f"{n}: {fmt_num(v)}" for n, v in zip(names, vals)),
                             names, vals, color=color)
            figs.append(f'<figure><figcaption><strong>{esc(label)}</strong></figcaption>{chart.svg()}</figure>')
        out = '<div class="bars-grid">' + "".join(figs) + "</div>"
        if not any_value:
            out += _not_recorded("Per-query and per-insert metrics (" + ", ".join(lab for _, lab, _ in PER_OP) + ")",
                                 "the query and insert counts come from the engine counters; the per-second "
                                 "rates above are from ioattr's attribution alone.")
        headers = ["phase"] + [lab for _, lab, _ in PER_OP] + ["storage reads/s", "storage writes/s"]
        rows = [[n] + [fmt_num(s.get(k)) for k, _, _ in PER_OP] + [fmt_num(rate_vals[0][i]), fmt_num(rate_vals[1][i])]
                for i, (n, s) in enumerate(zip(names, self.summaries))]
        out += f'<details><summary>The numbers behind these bars</summary>' \
               f'{table(headers, rows, numeric=[False] + [True] * (len(headers) - 1))}</details>'
        return out

    # -- time plots
    def _time_table(self, names: list[str], series: dict[str, list[float | None]], fmt=fmt_num) -> str:
        headers = ["time (s)", "phase"] + names
        rows = []
        for i, x in enumerate(self.ax.xs):
            vals = [series[n][i] for n in names]
            if not any(v for v in vals):
                continue
            rows.append([f"{x:.2f}", _phase_of(x, self.spans)] + [fmt(v) for v in vals])
        return table(headers, rows, numeric=[True, False] + [True] * len(names))

    def _stack_chart(self, ident: str, title: str, y_label: str, names: list[str], rates: dict[str, list[float]],
                     totals: dict[str, float], unit_fmt, caption: str, total_fmt=fmt_num,
                     bytes_axis: bool = False) -> str:
        series = [Series(n, list(rates[n]), OTHER_COLOR if n == OTHER else PALETTE[i % len(PALETTE)])
                  for i, n in enumerate(names)]
        desc = (f"{title}; phases: " + ", ".join(p.name for p in self.spans) + ". Totals: "
                + "; ".join(f"{n}: {total_fmt(totals[n])}" for n in names))
        chart = TimeChart(self.id(ident), title, desc, self.ax.xs, series, self.spans, kind="stack",
                          y_label=y_label, y_fmt=unit_fmt, x_max=self.ax.end, bytes_axis=bytes_axis)
        totals_table = table(["series", "total"], [[n, total_fmt(totals[n])] for n in names],
                             numeric=[False, True])
        return _figure(chart, caption, totals_table + self._time_table(names, rates, unit_fmt))

    def index_time(self) -> str:
        if not self.has_pages:
            return _not_recorded("Page attribution", "the recording has no pages table (no server with page "
                                 "files was traced, or its files could not be mapped); see the file plots below.")
        out = []
        for op, verb in (("read", "read"), ("write", "written")):
            names, rates, totals = pages_over_time(self.rec, self.ax, op)
            if not names:
                if op == "read":
                    out.append(_not_recorded("Page reads", "no page of an engine's files was read from storage in this recording."))
                continue
            out.append(f'<p class="subhead">Pages {verb} per second, by index</p>')
            out.append(self._stack_chart(
                f"index-{op}", f"Pages {verb} per second by index over time", f"pages {verb} / s",
                names, rates, totals, fmt_num,
                f"Stacked: the {len([n for n in names if n != OTHER])} indexes with the most pages {verb}"
                f"{f' (the rest folded into {OTHER!r})' if OTHER in names else ''}; "
                f"[page type] where a page belongs to no index. Dashed lines mark phase boundaries; "
                f"shaded bands alternate phases. {'Binned' if self.ax.binned else 'One point per interval'}."))
            if op == "read":
                phases = [p.name for p in self.spans]
                rows = [[n] + [fmt_num(v) for v in vals] for n, vals in index_by_phase(self.rec, "read", phases)]
                pivot = table(["index"] + phases, rows, numeric=[False] + [True] * len(phases), wrap=(0,))
                out.append(f"<details><summary>Pages read per index and phase</summary>{pivot}</details>")
        return "".join(out)

    def bytes_time(self) -> str:
        if not self.has_io:
            return _not_recorded("File IO", "the recording has no IO chunks yet.")
        out = []
        for op, verb in (("read", "read"), ("write", "written")):
            names, rates, totals = bytes_over_time(self.rec, self.ax, op)
            if not names:
                out.append(f'<p class="muted">No bytes {verb} at the syscall layer.</p>')
                continue
            out.append(self._stack_chart(
                f"bytes-{op}", f"Bytes {verb} per second by file class over time", f"bytes {verb} / s",
                names, rates, totals, fmt_bytes_rate,
                "Syscall layer (what the traced processes asked for), stacked by file class.",
                total_fmt=fmt_bytes, bytes_axis=True))
        return "".join(out)

    def latency(self) -> str:
        if not self.has_io:
            return _not_recorded("File IO", "the recording has no IO chunks yet.")
        lat = latency_over_time(self.rec, self.ax)
        styles = {"read p50": (PALETTE[0], ""), "read p99": (PALETTE[0], "5 3"),
                  "write p50": (PALETTE[1], ""), "write p99": (PALETTE[1], "5 3")}
        names = [n for n in styles if any(v is not None for v in lat[n])]
        if not names:
            return '<p class="muted">No reads or writes at the syscall layer.</p>'
        series = [Series(n, lat[n], styles[n][0], styles[n][1]) for n in names]
        desc = ("Latency percentiles of syscall-layer reads and writes per interval, log scale, in microseconds; "
                "phases: " + ", ".join(p.name for p in self.spans))
        chart = TimeChart(self.id("latency-plot"), "Read and write latency (p50, p99) over time", desc, self.ax.xs,
                          series, self.spans, kind="line", y_label="latency (log scale)", y_fmt=fmt_us, log=True,
                          x_max=self.ax.end)
        return _figure(chart, "p50 (solid) and p99 (dashed) of each interval's syscall-layer reads and writes, "
                              "from the recorded latency histograms (log scale).",
                       self._time_table(names, lat, fmt_us))

    # -- tables
    def top_indexes(self) -> str:
        if not self.has_pages:
            return _not_recorded("Page attribution", "no pages table in this recording.")
        # the split report: rows of IO that carried no classified page (other files, fsync) are
        # not page rows; pages and their bytes, and the IO operations that carried them
        rep = build_report(self.rec, ReportRequest(by=["index", "level", "op"], layer="syscall"))
        rows = [[r.get("index") or "(not an index page)", r.get("level"), r["op"], f"{r['pages']:,}",
                 f"{r['count']:,}", fmt_bytes(r["bytes"])] for r in rep["rows"] if r.get("pages")][:20]
        return table(["index", "level", "op", "pages", "IO ops", "bytes"], rows,
                     numeric=[False, False, False, True, True, True],
                     wrap=(0,),
                     caption="Pages read and written (InnoDB pages, PostgreSQL blocks, MyRocks SST blocks), by index and B-tree level (whole recording)")

    def top_files(self) -> str:
        if not self.has_io:
            return _not_recorded("File IO", "the recording has no IO chunks yet.")
        rep = build_report(self.rec, ReportRequest(by=["file", "file_class", "op"], layer="syscall", top=20))
        rows = [[_file_cell(r.get("file"), r.get("relation")), r.get("file_class"),
                 r["op"], f"{r['count']:,}", fmt_bytes(r["bytes"]), fmt_us(r["latency_us"]["p50"]),
                 fmt_us(r["latency_us"]["p99"])] for r in rep["rows"]]
        return table(["file", "class", "op", "ops", "bytes", "p50", "p99"], rows,
                     numeric=[False, False, False, True, True, True, True], wrap=(0,),
                     caption="Syscall-layer IO by file (whole recording, by bytes)")

    def counters(self) -> str:
        if not self.has_counters:
            return _not_recorded("Engine and host counters", "the recording has no counters table (recorded "
                                 "without a server connection, or by an ioattr without counter collectors).")
        if self.stats_error:
            return f'<p class="section-error">per-phase counters failed: <code>{esc(self.stats_error)}</code></p>'
        names = [s.name for s in self.spans]
        rows = []
        for label, keys in COUNTER_ROWS:
            vals = [st.counter(*keys) for st in self.stats]
            if all(v is None for v in vals):
                continue
            # counts in full ("30,000 rows", not "30k" or a statement count)
            rows.append([label] + [f"{v:,.0f}" if v is not None and float(v).is_integer() else fmt_num(v)
                                   for v in vals])
        out = (table(["counter (change during the phase)"] + names, rows, numeric=[False] + [True] * len(names))
               if rows else '<p class="muted">None of the usual counters were recorded.</p>')
        every = sorted({k for st in self.stats for k in st.counters if ":" in k and "_last:" not in k
                        and "_max:" not in k})
        if every:
            all_rows = [[k] + [fmt_num(st.counters.get(k)) for st in self.stats] for k in every]
            out += (f"<details><summary>All {len(every)} counters (change during each phase)</summary>"
                    f"{table(['counter'] + names, all_rows, numeric=[False] + [True] * len(names))}</details>")
        return out


# -- the explanation ---------------------------------------------------------------------

def render_explanation(r: dict[str, Any]) -> str:
    b, t = r.get("baseline") or {}, r.get("target") or {}
    same = b.get("recording") == t.get("recording")
    where = (f"phase <strong>{esc(b.get('phase'))}</strong> → <strong>{esc(t.get('phase'))}</strong>" if same else
             f"<code>{esc(b.get('recording'))}</code> phase <strong>{esc(b.get('phase'))}</strong> → "
             f"<code>{esc(t.get('recording'))}</code> phase <strong>{esc(t.get('phase'))}</strong>")
    bv, tv = b.get("value"), t.get("value")
    ratio = (f" (×{fmt_num(tv / bv)})" if isinstance(bv, (int, float)) and isinstance(tv, (int, float)) and bv
             else "")
    out = [f'<p class="headline"><code>{esc(r.get("metric"))}</code> ({esc(r.get("unit"))}): '
           f'<span class="value">{esc(fmt_num(bv, 4))}</span> → <span class="value">{esc(fmt_num(tv, 4))}</span>'
           f'{esc(ratio)}, change {esc(fmt_num(r.get("change"), 4))} — {where}</p>']
    # explain's warnings (recordings with different probe settings) and its noise guard, up front
    out += [f'<p class="notrec" role="alert" data-explain-warning="1">WARNING: {esc(w)}</p>'
            for w in r.get("warnings") or []]
    if r.get("no_significant_change"):
        out.append(f'<p class="notrec" data-significant="false">{esc(r["no_significant_change"])}</p>')
        if r.get("changed_elsewhere"):
            out.append(f'<p class="notrec">{esc(r["changed_elsewhere"])}</p>')
    if isinstance(bv, (int, float)) and isinstance(tv, (int, float)):
        chart = BarChart("explain-metric", f"{r.get('metric')}: baseline and target",
                         f"{r.get('metric')} {r.get('unit')}: baseline {b.get('phase')} {fmt_num(bv, 4)}, "
                         f"target {t.get('phase')} {fmt_num(tv, 4)}",
                         [f"baseline: {b.get('phase')}", f"target: {t.get('phase')}"], [bv, tv], color=PALETTE[3],
                         width=620)
        out.append(chart.svg())
    # contributors
    out.append('<h3 id="contributors-h">What changed, by contributor</h3>')
    rows = []
    for i, c in enumerate(r.get("contributors") or [], 1):
        d = c.get("dims") or {}
        share = c.get("share_of_change")
        if d.get("other"):
            dims = [Raw("<em>(everything else)</em>")] + [""] * (len(DIM_COLUMNS) - 1)
        elif not any(d.get(k) is not None for k in DIM_COLUMNS):
            dims = [Raw("<em>(unattributed)</em>")] + [""] * (len(DIM_COLUMNS) - 1)
        else:
            dims = [d.get(k) for k in DIM_COLUMNS[:-1]] + [
                Raw(f'<span class="mono">{esc(d.get("query"))}</span>') if d.get("query") else None]
        pct = f"{100 * share:.1f}%" if isinstance(share, (int, float)) else "–"
        rows.append([i] + dims + [fmt_num(c.get("baseline_per_op"), 4), fmt_num(c.get("target_per_op"), 4),
                                  Raw(f'<span class="pct">{esc(pct)}</span>{share_bar(share)}')])
    out.append(table(["#", *DIM_COLUMNS, "baseline per op", "target per op", "share of change"], rows,
                     numeric=[True] + [False] * len(DIM_COLUMNS) + [True, True, True], cls="data contributors",
                     wrap=(1, 6),
                     caption="Contributors to the change, biggest first"))
    out.append('<p class="muted">Each row: the metric\'s part from that index × level × stage × role × file class '
               '× query, per operation, in the baseline and the target; the share is of the gross change (the '
               'sum of the contributors\' increases, or decreases; red: grew, blue: shrank), so what moved '
               'with the change sums to 100%.' + (f' Basis: {esc(r["share_basis"])}.' if r.get("share_basis")
                                                  else '') + '</p>')
    # findings
    findings = r.get("findings") or []
    counts: dict[str, int] = {}
    for f in findings:  # by the words the text says them in (a refuted condition of both sides apart)
        counts[words(f)] = counts.get(words(f), 0) + 1
    out.append('<h3 id="findings-h">Findings</h3>')
    out.append('<p class="muted">' + "; ".join(f"{esc(w)}: {n}" for w, n in counts.items()) + "</p>")
    for f in findings:
        verdict = f.get("verdict")
        label, cls = mark(f), VERDICT_CLASS.get(str(verdict), "v-na")
        ev = f.get("evidence") or {}
        nums = [(k, v) for k, v in ev.items() if k != "summary"]
        ev_html = ""
        if nums:
            ev_html = ("<details><summary>Evidence</summary>"
                       + table(["measure", "value"], [[k, fmt_num(v, 4) if isinstance(v, float) else v]
                                                      for k, v in nums], numeric=[False, True])
                       + "</details>")
        out.append(f'<div class="finding {esc(verdict)}" data-finding="{esc(f.get("id"))}" '
                   f'data-verdict="{esc(verdict)}"><span class="badge {cls}">{esc(label)}</span>'
                   f'<span class="title">{esc(f.get("title"))}</span>'
                   f'<p class="summary">{esc(ev.get("summary", ""))}</p>{_advice_html(f)}{ev_html}</div>')
    missing = r.get("missing") or []
    out.append('<h3 id="missing-h">Missing evidence</h3>')
    out.append(_list([esc(m) for m in missing]) if missing else '<p class="muted">None: every evidence source '
                                                                  'was recorded.</p>')
    notes = r.get("notes") or []
    if notes:
        out.append('<h3 id="notes-h">Notes</h3>' + _list([esc(n) for n in notes]))
    return "".join(out)


# -- the page ----------------------------------------------------------------------------

def _opt(v: Any, fmt: Any) -> str:
    return "-" if v is None else fmt(v)


def _file_cell(path: str | None, relation: str | None) -> Raw:
    """A file as every file view names it: a PostgreSQL relation's file by its relation (a report
    row's `relation`: labels.relation_label), the path in its title; any other file by its path."""
    if not path:
        return Raw('<span class="mono">(unknown file)</span>')
    name = relation or path
    title = f' title="{esc(path)}"' if name != path else ""
    return Raw(f'<span class="mono"{title}>{esc(name)}</span>')


def render_requested(report: dict[str, Any], by: list[str], request: dict[str, Any]) -> str:
    """The breakdown `ioattr report --by ...` asked for, as in its table/JSON forms."""
    dims = [d for d in dict.fromkeys(x.strip() for x in by if x.strip()) if d not in ("layer", "op")]
    filters = [f"{k} {v}" for k, v in request.items() if v is not None]
    rows_in = report.get("rows") or []
    shown = rows_in[:REQUESTED_MAX_ROWS]
    unit = "pages" if report.get("unit") == "pages" else "ops"
    # --by query: the statement's executions in the row's scope and the row's IO per execution
    execs = any("executions" in r for r in rows_in)
    # --by file: a relation's file by its relation's name (the row's `relation`), as top and the
    # file table name it
    rows = [[_file_cell(r[d], r.get("relation")) if d == "file" and r.get(d) else r.get(d) for d in dims]
            + [r.get("layer"), r.get("op"), f"{r['count']:,}", fmt_bytes(r["bytes"]),
                                        fmt_us((r.get("latency_us") or {}).get("p50")),
                                        fmt_us((r.get("latency_us") or {}).get("p99"))]
            + ([_opt(r.get("executions"), lambda v: f"{v:,}"), _opt(r.get("count_per_execution"), fmt_num),
                _opt(r.get("bytes_per_execution"), fmt_bytes)] if execs else []) for r in shown]
    cut = f", the first {len(shown):,} shown (use --top or --format csv for all)" if len(shown) < len(rows_in) else ""
    out = [f'<p>By <strong>{esc(", ".join(dims + ["layer", "op"]))}</strong>'
           f'{(" — " + esc(", ".join(filters))) if filters else ""}; {len(rows_in):,} rows{esc(cut)}.</p>']
    extra = ["executions", f"{unit}/execution", "bytes/execution"] if execs else []
    out.append(table(dims + ["layer", "op", unit, "bytes", "p50", "p99"] + extra, rows,
                     numeric=[False] * (len(dims) + 2) + [True] * (4 + len(extra)),
                     wrap=[i for i, d in enumerate(dims) if d in WRAP_DIMS]))
    if report.get("dropped"):
        out.append(f'<p class="notrec">{report["dropped"]:,} events were dropped (a BPF map was full).</p>')
    return "".join(out)


def _state_banners(recs: list[Recording]) -> list[str]:
    """A banner per recording that is not complete (still being written, stopped by an error,
    crashed): at the top, before any number from it."""

    out = []
    for r in recs:
        st = recording_state(r)
        if st is not None:
            out.append(f'<p class="state-banner" role="alert" data-state="{esc(st["status"])}" '
                       'style="border:2px solid #b00;background:#fee;padding:.5em;font-weight:bold">'
                       f'{esc(str(r.path))}: {esc(st["message"])}</p>')
    return out


def render_html(rec: Recording, explanation: dict[str, Any] | None = None, against: Recording | None = None,
                *, report: dict[str, Any] | None = None, by: list[str] | None = None,
                request: dict[str, Any] | None = None) -> str:
    """The whole page. `explanation` (from ioattr.analysis.explain.explain) adds the explanation section and
    `against` the other recording's sections; `report` (from build_report, grouped by `by`) adds the
    breakdown `ioattr report` was asked for."""
    views = [RecordingView(rec, "r0-", "baseline" if against is not None else "")]
    if against is not None:
        views.append(RecordingView(against, "r1-", "target"))
    name = os.path.basename(str(rec.path).rstrip("/")) or str(rec.path)
    kind = "explanation" if explanation is not None else "report"
    title = f"ioattr {kind}: {name}" + (f" vs {os.path.basename(str(against.path).rstrip('/'))}" if against else "")
    toc = []
    body = []
    if explanation is not None:
        toc.append(("explanation", "Explanation"))
        body.append(f'<section id="explanation" aria-labelledby="explanation-h"><h2 id="explanation-h">Why did '
                    f'{esc(explanation.get("metric"))} change?</h2>'
                    f'{_section(lambda: render_explanation(explanation), "explanation")}</section>')
    if report is not None:
        views[0].extra.append(("requested", "Requested breakdown",
                               lambda: render_requested(report, by or ["file"], request or {})))
    for v in views:
        if against is not None:
            head = f"{v.label.capitalize()} recording: {v.rec.path}"
            toc.append((v.id("recording"), f"{v.label.capitalize()} recording"))
            body.append(f'<h2 id="{esc(v.id("recording"))}" class="recording-head">{esc(head)}</h2>')
            body.append(v.render(level=3))
        else:
            for sid, heading, _ in v.sections():
                toc.append((v.id(sid), heading))
            body.append(v.render(level=2))
    phases = ", ".join(p.name for p in views[0].spans)
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "".join([
        page_head(title),
        f'<header><h1>{esc(title)}</h1><p class="sub">host {esc(rec.meta.get("host"))} · kernel '
        f'{esc(rec.meta.get("kernel"))} · {esc(fmt_seconds(views[0].ax.end))} · phases: {esc(phases)} · '
        f'generated {esc(now)} by ioattr {esc(__version__)}</p>',
        *_state_banners([v.rec for v in views]),
        '<nav aria-label="Sections"><ul>' + "".join(f'<li><a href="#{esc(i)}">{esc(h)}</a></li>' for i, h in toc)
        + "</ul></nav></header><main>",
        *body,
        "</main></body></html>\n",
    ])


def _advice_html(f: dict) -> str:
    """What a supported finding means and what to try next (explain_text.NEXT_STEPS, as in the text)."""
    if f.get("verdict") != "supported":
        return ""
    out = ""
    if f.get("mechanism"):
        out += f'<p class="summary"><span class="label">Why:</span> {esc(f["mechanism"])}</p>'
    if f.get("next_step"):
        out += f'<p class="summary"><span class="label">Try:</span> {esc(f["next_step"])}</p>'
    return out

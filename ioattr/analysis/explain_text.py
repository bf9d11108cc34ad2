"""The readable form of an explanation."""
from __future__ import annotations

import re
import textwrap
from typing import Any

from ioattr.analysis.direction import mark
from ioattr.analysis.phase_stats import bulk_line
from ioattr.model.explain_math import plural
from ioattr.engines import registry
from ioattr.engines.base import AdviceField

#: What each of the MySQL/MariaDB server's findings (ioattr.analysis.findings) means in a
#: benchmarker's terms, and the one thing to try next, keyed by finding id; an engine's own
#: findings' entries live with them (EngineAdapter.next_steps, e.g. ioattr/engines/innodb/findings.py
#: NEXT_STEPS), found by the finding's "engine" (next_steps). The one place each text lives: the text
#: output prints it under supported findings, and explain() puts it in every finding of the JSON
#: ("mechanism", "next_step"). {name} fields are filled from the finding's evidence and the target
#: server's settings (meta.json "settings"); a field that is unknown is left out with its sentence part.
NEXT_STEPS: dict[str, tuple[str, str]] = {
    "optimizer_reads": (
        "before a query runs, the optimizer estimates how many rows each range of each candidate "
        "index holds (index dives: records_in_range), reading the pages at both ends of every range "
        "and up to 10 pages between them where the two paths part; with a cold buffer pool those are "
        "storage reads the query itself may never need",
        "see which index and how many dives per query above, then bound them: eq_range_index_dive_limit"
        "{dive_limit} for IN lists (statistics instead of dives), fewer candidate indexes (FORCE INDEX "
        "or dropping unused ones); open ranges (col >= ?) are always dived, so keep the upper levels "
        "and range starts of that index cached ({cache_setting})"),
}


def _mib(v: Any) -> str | None:
    return f"{v / 2**20:.0f} MiB" if isinstance(v, (int, float)) and v > 0 else None


def _fields(f: dict[str, Any], settings: dict[str, Any]) -> dict[str, str]:
    """The {name} fields of NEXT_STEPS: ' (now X)' where X is known, else ''."""
    ev = f.get("evidence") or {}

    def now(v: Any, prefix: str = " (now ", suffix: str = ")") -> str:
        return "" if v is None else f"{prefix}{v}{suffix}"

    def field(spec: AdviceField) -> str:
        v: Any = None
        for v in [ev.get(k) for k in spec.evidence] + [settings.get(k) for k in spec.settings]:
            if v:  # as `a or b or c`: the first truthy, else the last
                break
        return now(_mib(v) if spec.mib else v, spec.prefix, spec.suffix)

    return {
        # the engines' own settings (EngineAdapter.advice_fields), then the server's
        **{name: field(spec) for name, spec in registry.advice_fields().items()},
        # the server's texts name the cache of its engine by the engine's setting
        "cache_setting": registry.cache_setting(settings) or "the engine's cache size",
        "dive_limit": now(ev.get("eq_range_index_dive_limit") or settings.get("eq_range_index_dive_limit")),
        "data": "the size of the data and indexes the statements read" if _mib(ev.get("data_bytes")) is None
                else f"the {_mib(ev.get('data_bytes'))} the tables read take on disk ({ev.get('tables_read')})",
    }


def next_steps(f: dict[str, Any]) -> tuple[str, str] | None:
    """A finding's (mechanism, next step) texts: its engine's (the finding's "engine", set by
    findings.run_findings), the server's (NEXT_STEPS), else the first engine's that has its id."""
    fid = f.get("id", "")
    if f.get("engine"):
        try:
            return registry.by_name(str(f["engine"])).next_steps.get(fid)
        except KeyError:
            return None
    if fid in NEXT_STEPS:
        return NEXT_STEPS[fid]
    return next((e.next_steps[fid] for e in registry.ENGINES if fid in e.next_steps), None)


def advice(f: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, str | None]:
    """{"mechanism", "next_step"} of a finding (None for a finding without an entry)."""
    entry = next_steps(f)
    if entry is None:
        return {"mechanism": None, "next_step": None}
    fields = _fields(f, settings or {})
    mechanism, step = entry
    if f.get("mirrored"):
        # a decrease: the mechanism undone explains it, and there is nothing to fix
        return {"mechanism": "the reverse of: " + mechanism.format_map(fields), "next_step": None}
    return {"mechanism": mechanism.format_map(fields), "next_step": step.format_map(fields)}


def _dims(d: dict[str, Any]) -> str:
    if d.get("other"):
        return "(everything else)"
    parts = [f"{k}={v}" for k, v in d.items() if v is not None]
    return " ".join(parts) if parts else "(unattributed)"


def _side(label: str, s: dict[str, Any], unit: str) -> str:
    ops = s.get("ops")
    what = [] if ops is None else [f"{ops:.0f} {plural(unit.removeprefix('per '), ops)}" if unit != "per second"
                                   else f"{ops:.0f} ops"]
    if s.get("storage_ios") is not None:
        what.append(f"{s['storage_ios']} storage IOs")
    if s.get("seconds") is not None:
        what.append(f"{s['seconds']:.3g} s")
    return f"{label}: {s['recording']} ({s['phase']}) = {s['value']:.4g}" + (f"  [{', '.join(what)}]" if what else "")


def _engine_lines(s: dict[str, Any]) -> list[str]:
    """The engines' own per-phase lines under a side (MyRocks: flush, compaction, WAL, amplification),
    after the phase's bulk-load terms when it inserted rows (phase_stats.bulk_line)."""

    bulk = bulk_line(s.get("bulk"))
    out = [] if bulk is None else ["    " + bulk]
    for engine in registry.ENGINES:
        terms = s.get(engine.name)
        line = engine.phase_line(terms) if isinstance(terms, dict) else None
        if line:
            out.append("    " + line)
    return out


#: a line's label, after its indent: continuation lines of a wrapped line align after it
_LABEL = re.compile(r" *(?:\[[^\]]+\] |[a-z]+: |WARNING: |\s*-?[0-9.]+%\s+\S+ -> \S+\s+)")


def wrap(line: str, width: int | None) -> list[str]:
    """One output line wrapped to `width` columns at spaces, never inside a word (a value such as
    `stage=estimate` or a path stays whole, even when longer than the width), continuation lines
    indented past the line's label (`[SUPPORTED] `, `why: `, a contributor's numbers)."""
    if not width or len(line) <= width:
        return [line]
    m = _LABEL.match(line)
    hang = len(m.group(0)) if m else len(line) - len(line.lstrip(" ")) + 2
    hang = min(hang, max(width // 2, 1))
    return textwrap.wrap(line, width=width, subsequent_indent=" " * hang, break_long_words=False,
                         break_on_hyphens=False, drop_whitespace=True) or [line]


def render_text(r: dict[str, Any], width: int | None = None) -> str:
    """The explanation as text; each line wrapped to `width` columns (None: not wrapped)."""
    return "".join(x + "\n" for line in _lines(r) for x in wrap(line, width))


def _lines(r: dict[str, Any]) -> list[str]:
    b, t = r["baseline"], r["target"]
    lines = [f"WARNING: {w}" for w in r.get("warnings") or []]
    lines += [f"{r['metric']} ({r['unit']}): {b['value']:.4g} -> {t['value']:.4g}",
              "  " + _side("baseline", b, r["unit"])]
    lines += _engine_lines(b)
    lines.append("  " + _side("target", t, r["unit"]))
    lines += _engine_lines(t)
    if r.get("no_significant_change"):
        lines.append(f"  {r['no_significant_change']}")
        if r.get("changed_elsewhere"):
            lines.append(f"  {r['changed_elsewhere']}")
    elif r.get("direction") == "decrease":
        lines.append("  a decrease: each finding tests the reverse of its mechanism (its numbers read "
                     "target -> baseline)")
    lines.append("")
    basis = r.get("share_basis") or "share of the change"
    lines.append(f"What changed, by contributor (per op, baseline -> target, {basis}):")
    for c in r["contributors"]:
        lines.append(f"  {100 * c['share_of_change']:6.1f}%  {c['baseline_per_op']:10.4g} -> "
                     f"{c['target_per_op']:<10.4g}  {_dims(c['dims'])}")
    lines.append("")
    lines.append("Findings (most explained first):")
    # an engine that did none of the IO compared (InnoDB beside MyRocks): its findings in one line
    idle: dict[str, list[dict[str, Any]]] = {}
    for f in r["findings"]:
        if f["verdict"] == "not_applicable" and (f.get("evidence") or {}).get("engine_idle"):
            idle.setdefault(str(f["evidence"]["engine_idle"]), []).append(f)
    for f in r["findings"]:
        if any(f in group for group in idle.values()):
            continue
        lines.append(f"  [{mark(f)}] {f['title']}")
        lines.append(f"      {f['evidence'].get('summary', '')}")
        if f["verdict"] == "supported":
            tip = f if "next_step" in f else {**f, **advice(f)}
            if tip.get("mechanism"):
                lines.append(f"      why: {tip['mechanism']}")
            if tip.get("next_step"):
                lines.append(f"      try: {tip['next_step']}")
    for engine, group in idle.items():
        lines.append(f"  [{mark(group[0])}] {len(group)} {engine} findings")
        lines.append(f"      {group[0]['evidence'].get('summary', '')}")
    for m in r.get("missing") or []:
        lines.append(f"  missing: {m}")
    for n in r.get("notes") or []:
        lines.append(f"  note: {n}")
    return [x for line in lines for x in line.split("\n")]

"""`ioattr explain`: why a per-operation IO metric changed between two phases.

1. The metric (default reads_per_query: storage reads / Com_select) is
   computed for the baseline and the target phase (of one recording, or of
   two with --against).
2. Its change is decomposed over the attribution dimensions (index x level
   x stage x role x file_class x query): each contributor's per-operation
   value in target minus baseline, over the total change. The biggest
   contributors are listed, the rest folded into one `other` row, so the
   shares sum to 1.
3. Findings test the known causes (ioattr.findings), each with a verdict
   computed from the evidence: supported, refuted, inconclusive when
   evidence is missing, not_applicable when the cause can't move this metric.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ioattr.dimensions import RERUN_FULL, stage_mode
from ioattr.errors import UsageError
from ioattr.findings import Evidence, run_findings
from ioattr import storage
from ioattr.phase_stats import PhaseStats, phase_stats, pick_phase
from ioattr.reader import Recording

DIMS = ("index", "level", "stage", "role", "file_class", "query")


@dataclass(frozen=True)
class Metric:
    name: str
    op: str            # read | write
    measure: str       # ops | bytes
    per: str           # query | insert
    help: str


METRICS = {m.name: m for m in (
    Metric("reads_per_query", "read", "ops", "query", "storage reads per query (Com_select)"),
    Metric("read_bytes_per_query", "read", "bytes", "query", "bytes read from storage per query"),
    Metric("writes_per_insert", "write", "ops", "insert", "storage writes per inserted row"),
    Metric("write_bytes_per_insert", "write", "bytes", "insert", "bytes written to storage per inserted row"),
)}


@dataclass
class Side:
    rec: Recording
    phase: str
    stats: PhaseStats
    denominator: float | None   # queries or inserts in the phase; None when no counters
    unit: str                   # "query" / "insert", or "second" as the fallback


def contributors(rec: Recording, phase: str, metric: Metric) -> dict[tuple, float]:
    """Numerator of the metric per (index, level, stage, role, file_class, query): the phase's
    storage IO (ioattr/storage.py) split by page dimensions the way `report` splits it, so the
    contributors add up to exactly the numerator of the metric (PhaseStats reads/writes)."""
    from ioattr.report import ReportRequest, build_report

    rep = build_report(rec, ReportRequest(by=list(DIMS), phase=phase, layer="syscall"))
    out: dict[tuple, float] = {}
    for r in rep["rows"]:
        if r["op"] != metric.op or not storage.is_storage(r["layer"], r["file_class"]):
            continue
        key = tuple(r[d] for d in DIMS)
        out[key] = out.get(key, 0.0) + float(r["count"] if metric.measure == "ops" else r["bytes"])
    return out


def _side(rec: Recording, phase: str, metric: Metric) -> Side:
    st = phase_stats(rec, phase)
    if st.io_ops == 0:
        raise UsageError(f"phase {phase!r} of {rec.path} has no IO operations to explain")
    denom = st.queries if metric.per == "query" else st.inserts
    if denom:
        return Side(rec, phase, st, denom, metric.per)
    return Side(rec, phase, st, st.seconds, "second")


def explain(rec: Recording, *, baseline: str | None, target: str | None, against: Recording | None = None,
            metric: str = "reads_per_query", top: int = 8) -> dict[str, Any]:
    if metric not in METRICS:
        raise UsageError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    m = METRICS[metric]
    other = against or rec
    if against is None:
        if len(rec.phase_names()) < 2 and (baseline is None or target is None):
            raise UsageError(f"{rec.path} has one phase ({rec.phase_names()[0]}); "
                             "mark phases while recording, or compare runs with --against")
        b_name = pick_phase(rec, baseline, 0)
        t_name = pick_phase(rec, target, -1)
        if b_name == t_name:
            raise UsageError(f"baseline and target are the same phase ({b_name}); pick two different ones")
    else:
        b_name = pick_phase(rec, baseline, -1)
        t_name = pick_phase(other, target if target is not None else (
            b_name if b_name in other.phase_names() else None), -1)
    base = _side(rec, b_name, m)
    targ = _side(other, t_name, m)
    notes = []
    unit = m.per
    if base.unit != targ.unit or base.unit == "second":
        unit = "second"
        base.denominator, targ.denominator = base.stats.seconds, targ.stats.seconds
        notes.append(f"no {m.per} counts (engine counters missing): the metric is per second instead")
    name = m.name if unit == m.per else m.name.replace(f"_per_{m.per}", "_per_second")

    cb = contributors(rec, b_name, m)
    ct = contributors(other, t_name, m)
    vb = sum(cb.values()) / base.denominator
    vt = sum(ct.values()) / targ.denominator
    change = vt - vb
    rows = []
    for key in set(cb) | set(ct):
        pb = cb.get(key, 0.0) / base.denominator
        pt = ct.get(key, 0.0) / targ.denominator
        rows.append((key, pb, pt, pt - pb))
    rows.sort(key=lambda r: abs(r[3]), reverse=True)
    shown, rest = rows[:top], rows[top:]
    out_rows = []
    for key, pb, pt, d in shown:
        out_rows.append({"dims": dict(zip(DIMS, key)), "baseline_per_op": _r(pb), "target_per_op": _r(pt),
                         "share_of_change": _r(d / change) if change else 0.0})
    if rest or not out_rows:
        pb = sum(r[1] for r in rest)
        pt = sum(r[2] for r in rest)
        out_rows.append({"dims": {"other": True}, "baseline_per_op": _r(pb), "target_per_op": _r(pt),
                         "share_of_change": _r((pt - pb) / change) if change else 0.0})
    if change:
        # rounding must not make shares miss 1: put the residue on the `other`/last row
        residue = 1.0 - sum(r["share_of_change"] for r in out_rows)
        out_rows[-1]["share_of_change"] = _r(out_rows[-1]["share_of_change"] + residue)

    ev = Evidence(metric=m, base=base, target=targ, base_contrib=cb, target_contrib=ct, change=change)
    findings = run_findings(ev)
    missing = []
    if not (_has_engine_counters(rec) and _has_engine_counters(other)):
        missing.append("engine counters (recorded without a server connection)")
    modes = {stage_mode(r.meta) for r in (rec, other)}
    if None in modes:
        missing.append("query/stage attribution (stage probes were not attached)")
    elif "statement" in modes:
        missing.append("query stages: " + RERUN_FULL + " (statements and roles are attributed)")
    return {
        "metric": name,
        "unit": f"per {unit}",
        "baseline": {"recording": str(rec.path), "phase": b_name, "value": _r(vb)},
        "target": {"recording": str(other.path), "phase": t_name, "value": _r(vt)},
        "change": _r(change),
        "contributors": out_rows,
        "findings": findings,
        "missing": missing,
        "notes": notes,
    }


def _has_engine_counters(rec: Recording) -> bool:
    """Whether the server's own counters (SHOW GLOBAL STATUS) were recorded, not just host ones."""
    if not rec.has_table("counters"):
        return False
    return bool(rec.query("SELECT 1 FROM counters WHERE source = 'status' LIMIT 1"))


def _r(v: float) -> float:
    return round(float(v), 6)

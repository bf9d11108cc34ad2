"""`ioattr explain`: why a per-operation IO metric changed between two phases.

1. The metric (default reads_per_query: storage reads / Com_select) is
   computed for the baseline and the target phase (of one recording, or of
   two with --against).
2. Its change is decomposed over the attribution dimensions (index x level
   x stage x role x file_class x query): each contributor's per-operation
   value in target minus baseline, over the gross change (ioattr/model/explain_math:
   the sum of the contributors' increases for an increase, of their decreases
   for a decrease), so no share exceeds 100% and those that moved with the
   change sum to 100%. The biggest movers are listed, the rest folded into
   one `other` row. A change within noise (few operations or IOs, a few
   percent) is said as "no significant change" and supports no cause.
   Run-vs-run: the positional recording is the baseline, --against the target.
3. Findings test the known causes (ioattr.analysis.findings), each with a verdict
   computed from the evidence: supported, refuted, inconclusive when
   evidence is missing, not_applicable when the cause can't move this metric.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ioattr.model import explain_math as em
from ioattr.analysis.explain_text import advice
from ioattr.analysis.findings import Evidence, run_findings
from ioattr.analysis.report import ReportRequest, build_report
from ioattr.analysis.phase_stats import PhaseStats, phase_stats, pick_phase
from ioattr.engines import registry
from ioattr.errors import UsageError
from ioattr.format.reader import Recording
from ioattr.model import storage
from ioattr.model.dimensions import RERUN_FULL, engine_label, native_engine, stage_mode
from ioattr.model.evidence import DIMS  # the contributor key's dimensions, in I_INDEX... order


@dataclass(frozen=True)
class Metric:
    name: str
    op: str            # read | write
    measure: str       # ops | bytes
    per: str           # query | insert
    help: str


METRICS = {m.name: m for m in (
    Metric("reads_per_query", "read", "ops", "query", "storage reads per query (per SELECT: Com_select less ioattr's own)"),
    Metric("read_bytes_per_query", "read", "bytes", "query", "bytes read from storage per query (per SELECT)"),
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
    ops: float | None = None    # the phase's queries / inserts (None: not counted), whatever the unit


def contributors(rec: Recording, phase: str, metric: Metric) -> dict[tuple, float]:
    """Numerator of the metric per (index, level, stage, role, file_class, query): the phase's
    storage IO (ioattr/model/storage.py) split by page dimensions the way `report` splits it, so the
    contributors add up to exactly the numerator of the metric (PhaseStats reads/writes)."""
    rep = build_report(rec, ReportRequest(by=list(DIMS), phase=phase, layer="syscall"))
    out: dict[tuple, float] = {}
    for r in rep["rows"]:
        if r["op"] != metric.op or not storage.is_storage(r["layer"], r["file_class"]) \
                or r["query"] == storage.INTERNAL_QUERY_LABEL:  # ioattr's own: not storage IO either
            continue
        key = tuple(r[d] for d in DIMS)
        out[key] = out.get(key, 0.0) + float(r["count"] if metric.measure == "ops" else r["bytes"])
    return out


def _ops(st: PhaseStats, metric: Metric) -> float | None:
    return st.queries if metric.per == "query" else st.inserts


def _side(rec: Recording, phase: str, metric: Metric) -> Side:
    st = phase_stats(rec, phase)
    denom = _ops(st, metric)
    if denom:
        return Side(rec, phase, st, denom, metric.per, denom)
    return Side(rec, phase, st, st.seconds, "second", denom)


def server_settings(rec: Recording) -> dict[str, Any]:
    """What the server told the recorder about itself (meta.json "settings", per server pid):
    the connected server's, or the first one's when several were traced; {} when not connected."""
    per_pid = rec.meta.get("settings") or {}
    servers = [s for s in rec.meta.get("servers") or [] if isinstance(s, dict)]
    if not isinstance(per_pid, dict) or not per_pid:
        # a server of its own engine (PostgreSQL) keeps its settings in its servers[] entry
        own = [s["settings"] for s in servers if s.get("connected") and isinstance(s.get("settings"), dict)]
        return dict(own[0]) if own else {}
    connected = [str(s.get("pid")) for s in servers if s.get("connected")]
    for pid in connected + sorted(per_pid):
        if isinstance(per_pid.get(pid), dict):
            return dict(per_pid[pid])
    return {}


def _phase_counts(rec: Recording, metric: Metric) -> list[em.PhaseCounts]:
    out = []
    for name in rec.phase_names():
        st = phase_stats(rec, name)
        out.append(em.PhaseCounts(name, _ops(st, metric), st.reads if metric.op == "read" else st.writes,
                                  em.phase_kind(st.queries, st.inserts)))
    return out


def _pick_one(rec: Recording, metric: Metric, baseline: str | None, target: str | None) -> tuple[str, str, str | None]:
    """Baseline and target phases of one recording: the named ones, else comparable ones."""
    if baseline is not None and target is not None:
        return pick_phase(rec, baseline, 0), pick_phase(rec, target, -1), None
    for name in (baseline, target):
        if name is not None:
            pick_phase(rec, name, 0)  # an unknown phase is bad usage, said first
    counts = _phase_counts(rec, metric)
    chosen = em.choose_phases(counts, metric.per, baseline, target)
    if chosen is not None:
        return chosen
    if all(p.denominator is None for p in counts):
        # no operation counts at all (no server connection): first and last phase, per second
        return pick_phase(rec, baseline, 0), pick_phase(rec, target, -1), None
    have = "; ".join(em.why_not(p, metric.per) for p in counts)
    raise UsageError(f"{rec.path}: no two comparable phases (of one kind of work, each with at least {em.MIN_OPS} "
                     f"{em.plural(metric.per)}) to compare for {metric.name} ({have}); "
                     f"name them with --baseline/--target, or choose another --metric")


def _last_comparable(rec: Recording, metric: Metric, prefer: str | None = None,
                     kind: str | None = None) -> tuple[str, str | None]:
    """A recording's phase to compare run against run, and its kind of work (em.phase_kind):
    `prefer` when it has at least MIN_OPS operations and is of `kind`, else the last such phase
    of `kind`, else the last with MIN_OPS, else the last phase (then said to be noise)."""
    counts = _phase_counts(rec, metric)
    ok = [p for p in counts if em.usable(p, em.MIN_OPS)]
    same = [p for p in ok if kind is None or p.kind == kind] or ok
    for p in same:
        if p.name == prefer:
            return p.name, p.kind
    if same:
        return same[-1].name, same[-1].kind
    last = rec.phase_names()[-1]
    return last, next((p.kind for p in counts if p.name == last), None)


def probe_differences(a: Recording, b: Recording) -> tuple[list[str], set[str], list[str]]:
    """How two recordings' probe settings differ, which dimensions are comparable on both, and
    the differences that are only the engines' (an engine's own server, PostgreSQL, has no
    stages inside statements however it is recorded: a setting no one chose, not a warning).

    Returns (differences in words, dimensions to fold to null on both sides, engine notes)."""
    diffs: list[str] = []
    fold: set[str] = set()
    notes: list[str] = []
    ma, mb = stage_mode(a.meta), stage_mode(b.meta)
    coarse = a if ma == "statement" and mb == "full" else b if mb == "statement" and ma == "full" else None
    if coarse is not None and native_engine(coarse.meta) is not None:
        fold.add("stage")
        notes.append(f"stages compared per statement: {engine_label(coarse.meta)} ({coarse.path}) has no stages "
                     "inside statements (parse, optimize, execute), an engine difference, not a probe setting")
    elif ma != mb:
        diffs.append(f"stages {ma or 'off'} vs {mb or 'off'}")
        fold.add("stage")  # the finer mode's stages can't be compared with the other's nulls
        if ma is None or mb is None:
            fold.add("query")
    sa, sb = set(a.meta.get("probe_sets") or []), set(b.meta.get("probe_sets") or [])
    if sa != sb:
        only = [f"{', '.join(sorted(x - y))} only in {r.path}" for x, y, r in ((sa, sb, a), (sb, sa, b)) if x - y]
        diffs.append("probe sets: " + "; ".join(only))
    return diffs, fold, notes


def _fold(c: dict[tuple, float], fold: set[str], keep_stages: tuple[str, ...] = ()) -> dict[tuple, float]:
    """Set the folded dimensions to null, except the stages both recordings traced alike
    (keep_stages: `estimate`, the index dives, which every mode since it exists traces)."""
    if not fold:
        return c
    idx = [DIMS.index(d) for d in fold]
    stage = DIMS.index("stage")
    out: dict[tuple, float] = {}
    for k, v in c.items():
        k2 = tuple(None if i in idx and not (i == stage and x in keep_stages) else x for i, x in enumerate(k))
        out[k2] = out.get(k2, 0.0) + v
    return out


def explain(rec: Recording, *, baseline: str | None, target: str | None, against: Recording | None = None,
            metric: str = "reads_per_query", top: int = 8) -> dict[str, Any]:
    """Baseline is `rec` (its phase `baseline`); target is `against` (or `rec` again) at `target`."""
    if metric not in METRICS:
        raise UsageError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    m = METRICS[metric]
    other = against or rec
    notes: list[str] = []
    warnings: list[str] = []
    if against is None:
        if len(rec.phase_names()) < 2 and (baseline is None or target is None):
            raise UsageError(f"{rec.path} has one phase ({rec.phase_names()[0]}); "
                             "mark phases while recording, or compare runs with --against")
        b_name, t_name, why = _pick_one(rec, m, baseline, target)
        if b_name == t_name:
            raise UsageError(f"baseline and target are the same phase ({b_name}); pick two different ones")
        if why:
            notes.append(why)
    else:
        if baseline is not None:
            b_name = pick_phase(rec, baseline, -1)
            kind = next((p.kind for p in _phase_counts(rec, m) if p.name == b_name), None)
        else:
            b_name, kind = _last_comparable(rec, m)
        if target is not None:
            t_name = pick_phase(other, target, -1)
        else:
            t_name, _ = _last_comparable(other, m, prefer=b_name, kind=kind)
        if baseline is None or target is None:
            enough = f"at least {em.MIN_OPS} {em.plural(m.per)}"
            notes.append(f"phases picked: baseline {b_name} of {rec.path}, target {t_name} of {other.path} "
                         f"(the same name when both have it with {enough}, else each one's last "
                         + (f"{kind} " if kind else "") + f"phase with {enough})")
    base = _side(rec, b_name, m)
    targ = _side(other, t_name, m)
    unit = m.per
    if base.unit != targ.unit or base.unit == "second":
        unit = "second"
        base.denominator, targ.denominator = base.stats.seconds, targ.stats.seconds
        for s in (base, targ):
            if s.ops is None:
                why = ("no counter snapshot in it" if _has_engine_counters(s.rec)
                       else "engine counters missing: recorded without a server connection")
                notes.append(f"phase {s.phase} of {s.rec.path}: no {m.per} counts ({why}): "
                             f"the metric is per second instead")
            elif not s.ops:
                notes.append(f"phase {s.phase} has no {em.plural(m.per)}: {m.name} is undefined there, "
                             f"so the metric is per second instead")
    name = m.name if unit == m.per else m.name.replace(f"_per_{m.per}", "_per_second")

    diffs, fold, engine_notes = probe_differences(rec, other) if against is not None else ([], set(), [])
    notes += engine_notes
    # the optimizer's index dives are stage estimate in both --stages modes: comparable when both
    # recordings traced them (or one is of an engine that has none: it counts none), even where
    # the other stages are folded
    keep = ("estimate",) if all(r.meta.get("estimate_stage") or native_engine(r.meta) for r in (rec, other)) else ()
    if diffs:
        warnings.append("the recordings were made with different probe settings (" + "; ".join(diffs) + "): "
                        "compared only on what both have"
                        + (f" ({', '.join(sorted(fold))} folded to null on both sides"
                           + (", stage estimate kept: both traced it" if keep and "stage" in fold else "") + ")"
                           if fold else ""))
    cb = _fold(contributors(rec, b_name, m), fold, keep)
    ct = _fold(contributors(other, t_name, m), fold, keep)
    cmp = em.compare(cb, ct, base.denominator, targ.denominator)
    vb, vt, change, gross = cmp.baseline, cmp.target, cmp.change, cmp.gross
    shown, rest = cmp.rows[:top], cmp.rows[top:]
    out_rows = []
    for key, pb, pt, d in shown:
        out_rows.append({"dims": dict(zip(DIMS, key)), "baseline_per_op": _r(pb), "target_per_op": _r(pt),
                         "share_of_change": _r(em.share(d, gross) or 0.0)})
    if rest or not out_rows:
        pb = sum(r[1] for r in rest)
        pt = sum(r[2] for r in rest)
        out_rows.append({"dims": {"other": True}, "baseline_per_op": _r(pb), "target_per_op": _r(pt),
                         "share_of_change": _r(em.share(pt - pb, gross) or 0.0)})

    counts = [em.SideCounts(s.phase, s.ops, s.stats.reads if m.op == "read" else s.stats.writes,
                            s.stats.seconds, _intervals(s.rec, s.phase, m)) for s in (base, targ)]
    noise = em.noise_reason(counts[0], counts[1], vb, vt, metric=name, per=m.per, per_second=unit == "second")
    elsewhere = other_changes(base, targ, m) if noise is not None else None
    settings = {"baseline": server_settings(rec), "target": server_settings(other)}
    ev = Evidence(metric=m, base=base, target=targ, base_contrib=cb, target_contrib=ct, change=change,
                  gross=gross, settings_base=settings["baseline"], settings_target=settings["target"])
    findings = run_findings(ev, noise=noise)
    for f in findings:  # what it means and what to try next: one table, ioattr/analysis/explain_text.NEXT_STEPS
        f.update(advice(f, settings["target"]))
    missing = []
    if not (_has_engine_counters(rec) and _has_engine_counters(other)):
        missing.append("engine counters (recorded without a server connection)")
    modes = {stage_mode(r.meta) for r in (rec, other)}
    if None in modes:
        missing.append("query/stage attribution (stage probes were not attached)")
    elif any(stage_mode(r.meta) == "statement" and native_engine(r.meta) is None for r in (rec, other)):
        # (an engine's own server, PostgreSQL, has no stages to rerun with)
        dives = all(r.meta.get("estimate_stage") for r in (rec, other))
        missing.append("query stages: " + RERUN_FULL + " (statements and roles are attributed"
                       + (", and the optimizer's index dives as stage estimate)" if dives else ")"))
    return {
        "metric": name,
        "unit": f"per {unit}",
        "baseline": {"recording": str(rec.path), "phase": b_name, "value": _r(vb), "ops": _ops_out(base),
                     "storage_ios": int(counts[0].ios), "seconds": round(base.stats.seconds, 3),
                     "bulk": base.stats.bulk(),
                     **base.stats.engines},
        "target": {"recording": str(other.path), "phase": t_name, "value": _r(vt), "ops": _ops_out(targ),
                   "storage_ios": int(counts[1].ios), "seconds": round(targ.stats.seconds, 3),
                   "bulk": targ.stats.bulk(),
                   **targ.stats.engines},
        "change": _r(change),
        "gross_change": _r(gross),
        "share_basis": em.basis_label(gross, unit),
        "direction": "decrease" if (gross or change) < 0 else ("increase" if (gross or change) > 0 else "none"),
        "significant": noise is None,
        "no_significant_change": noise,
        "changed_elsewhere": elsewhere,
        "contributors": out_rows,
        "findings": findings,
        "settings": settings,
        "missing": missing,
        "notes": notes,
        "warnings": warnings,
    }


def _intervals(rec: Recording, phase: str, m: Metric) -> tuple[tuple[float, float], ...]:
    """The phase's per-interval (engine reads, queries) from the counter snapshots the recorder
    takes every interval (the engine's own count of its storage reads, registry.storage_reads_keys(),
    and storage.QUERIES of the connected server), for reads per query: the phase's own variation
    (explain_math.noise_reason); () for the other metrics and without those counters."""
    if m.op != "read" or m.per != "query" or not rec.has_table("counters"):
        return ()
    return next(filter(None, (_intervals_of(rec, phase, key) for key in registry.storage_reads_keys())), ())


def _intervals_of(rec: Recording, phase: str, reads: str) -> tuple[tuple[float, float], ...]:
    """_intervals from one engine's reads counter ("source:name")."""
    (src_n, num), (src_d, den) = (reads.split(":", 1), storage.QUERIES.split(":", 1))
    rows = rec.query("SELECT ts, name, max(value) FROM counters WHERE phase = ? AND ((source = ? AND name = ?) "
                     "OR (source = ? AND name = ?)) GROUP BY ts, name ORDER BY ts", [phase, src_n, num, src_d, den])
    snaps: dict[float, dict[str, float]] = {}
    for ts, name, v in rows:
        snaps.setdefault(float(ts), {})[name] = float(v)
    pts = [(v[num], v[den]) for _, v in sorted(snaps.items()) if num in v and den in v]
    return tuple((n1 - n0, d1 - d0) for (n0, d0), (n1, d1) in zip(pts, pts[1:]) if n1 >= n0 and d1 >= d0)


def read_intervals(rec: Recording, phase: str) -> tuple[tuple[float, float], ...]:
    """A phase's per-interval (engine reads, queries): what reads per query's noise model reads
    the phase's own variation from (for compare's changes between runs, the same as explain's)."""
    return _intervals(rec, phase, METRICS["reads_per_query"])


#: what other_changes() looks at: (what, PhaseStats attribute, op, unit of the attribute)
_OTHER_TERMS = (("storage reads", "reads", "read", "ops"), ("KB read", "read_bytes", "read", "bytes"),
                ("storage writes", "writes", "write", "ops"), ("KB written", "write_bytes", "write", "bytes"))
#: a rate that moved by this factor either way (and one side did at least em.MIN_IOS IOs) is said
OTHER_CHANGE_FACTOR = 1.25


def other_changes(base: Side, targ: Side, m: Metric) -> str | None:
    """When the asked metric did not change, what did: the phases' storage reads, writes and
    their KB, per query (reads) or per row inserted (writes) where both phases have them, else
    per second, where one moved by OTHER_CHANGE_FACTOR, and the metric to ask for it.

    Why: explain's default is reads per query, and a phase change that moved writes (a read-only
    run against a read-write one, data that fits the cache) answered only "no significant
    change" and a page of inconclusive findings, leaving the user to guess the metric."""
    moved = []
    for what, attr, op, measure in _OTHER_TERMS:
        if op == m.op and measure == m.measure:
            continue
        b, t = float(getattr(base.stats, attr)), float(getattr(targ.stats, attr))
        ios = (base.stats.reads, targ.stats.reads) if op == "read" else (base.stats.writes, targ.stats.writes)
        if max(ios) < em.MIN_IOS:
            continue
        # per query (reads) or per row inserted (writes) where both sides have them, so a change
        # of throughput alone is not said; per second where a side has none
        per = "query" if op == "read" else "insert"
        db, dt = (base.stats.queries, targ.stats.queries) if op == "read" else (base.stats.inserts, targ.stats.inserts)
        if not (db and dt):
            per, db, dt = "second", base.stats.seconds, targ.stats.seconds
        rb, rt = b / db, t / dt
        if min(rb, rt) * OTHER_CHANGE_FACTOR <= max(rb, rt):
            scale = 1024.0 if measure == "bytes" else 1.0
            moved.append((op, measure, f"{what} per {per} {storage.fmt_sig(rb / scale)} -> "
                                       f"{storage.fmt_sig(rt / scale)}"))
    if not moved:
        return None
    tries = []
    for op in dict.fromkeys(o for o, _, _ in moved):
        measures = {ms for o, ms, _ in moved if o == op}
        measure = "ops" if "ops" in measures else "bytes"
        want = "query" if op == "read" else "insert"
        cand = next(x for x in METRICS.values() if x.op == op and x.per == want and x.measure == measure)
        if cand is m:
            continue
        if _ops(base.stats, cand) and _ops(targ.stats, cand):
            tries.append(f"--metric {cand.name}")
        else:
            tries.append(f"not --metric {cand.name}: a side has no {em.plural(want)}; compare's per-transaction "
                         "columns rate them")
    return (f"{m.name.replace('_', ' ')} did not change, but " + "; ".join(s for _, _, s in moved)
            + (" (" + "; ".join(tries) + ")" if tries else ""))


def _ops_out(s: Side) -> float | None:
    """The phase's queries / inserts (whatever the metric's unit ended up being); None: not counted."""
    return None if s.ops is None else _r(s.ops)


def _has_engine_counters(rec: Recording) -> bool:
    """Whether the server's own counters (SHOW GLOBAL STATUS) were recorded, not just host ones."""
    if not rec.has_table("counters"):
        return False
    # a MySQL/MariaDB server's SHOW GLOBAL STATUS, or an engine's own server's (PostgreSQL: pg_stat_*)
    return bool(rec.query("SELECT 1 FROM counters WHERE source = 'status' OR source LIKE 'pg\\_%' ESCAPE '\\' "
                          "LIMIT 1"))


def _r(v: float) -> float:
    return round(float(v), 6)

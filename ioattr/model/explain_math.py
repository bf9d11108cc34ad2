"""The arithmetic of `ioattr explain`, kept pure (no recording, no database) so it is tested
in isolation (tests/unit/test_explain_math.py): what a share means, when a change is noise,
and which phases are comparable.

Shares. A contributor's share is its per-operation change over the *gross* change in the
direction of the net change: for an increase, the sum of the contributors' increases (what
grew), for a decrease the sum of their decreases. Contributors that moved with the change
then have shares that sum to exactly 100%, each at most 100%; one that moved against it has a
negative share, never below -100%. A share of the *net* change instead blows up when the net
change is small (a 0.1% change made of +5% here and -4.9% there gave "-12,240%"), which says
nothing. The same holds for any set of contributors (a finding's share): at most 100%.

Noise. A change is "no significant change" (and no cause is supported by it) when:
  - a side has fewer than MIN_OPS of the operations the metric divides by (queries, inserts):
    a per-query number over 12 queries is not a rate;
  - both sides together issued fewer than MIN_IOS storage IOs (one side with none and the
    other with thousands is a real change, so it is the bigger side that counts);
  - the relative change is below MIN_RELATIVE of the larger value;
  - the change is within Z_MIN standard deviations of counting noise (IO counts are taken as
    Poisson: var(n/d) = n/d^2);
  - for reads per query, the change is within Z_MIN standard errors of the phases' own
    variation: the engine's per-interval storage reads per query (SideCounts.intervals, from the counter
    snapshots the recorder takes every interval), the standard error of each phase's ratio
    estimated from its intervals' spread (interval_se). InnoDB's miss rate moves with the
    throughput (innodb_old_blocks_time is in milliseconds), so two halves of one steady run
    differ by more than counting noise; their intervals show by how much.
  - for a per-second metric, a phase is shorter than MIN_SECONDS (a per-operation metric
    takes its significance from the counts, not from the duration).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

MIN_OPS = 30
#: how a change within noise is said (ioattr/analysis/direction.py has the rest of the words)
NO_SIGNIFICANT_CHANGE = "no significant change"
MIN_IOS = 100
MIN_RELATIVE = 0.05
MIN_SECONDS = 1.0
Z_MIN = 3.0
LOAD_ROWS_PER_QUERY = 10


def plural(per: str, n: float | None = None) -> str:
    """'query' -> 'queries', 'insert' -> 'inserts' (the singular for a count of exactly 1)."""
    if n == 1:
        return per
    return per[:-1] + "ies" if per.endswith("y") else per + "s"


def gross_change(deltas: list[float]) -> float:
    """The sum of the per-contributor changes that go the way of the net change (signed).

    0 when nothing changed. When the net change is exactly 0 but contributors moved, the
    gross increase is used (the shares then say what grew and what shrank by as much)."""
    net = sum(deltas)
    if net < 0:
        return sum(d for d in deltas if d < 0)
    return sum(d for d in deltas if d > 0)


def share(delta: float, gross: float) -> float | None:
    """delta over the gross change, within [-1, 1]; None when nothing changed.

    The clamp only absorbs float rounding: a set of contributors can't exceed the gross."""
    if not gross:
        return None
    return max(-1.0, min(1.0, delta / gross))


def basis_label(gross: float, unit: str) -> str:
    """How the shares were computed, for the output."""
    if gross < 0:
        return f"share of the gross decrease (the sum of the contributors' decreases, {-gross:.4g} per {unit})"
    return f"share of the gross increase (the sum of the contributors' increases, {gross:.4g} per {unit})"


@dataclass
class Comparison:
    """Two sides' contributors as per-operation figures: the totals, the change, and one row
    per contributor key (baseline per op, target per op, change), biggest change first."""
    baseline: float
    target: float
    change: float
    gross: float
    rows: list[tuple[tuple, float, float, float]]


def compare(base: dict[tuple, float], target: dict[tuple, float], base_ops: float,
            target_ops: float) -> Comparison:
    """Per-operation figures of a comparison (phase vs phase or run vs run): each side's
    storage IO (or bytes) per key over its own operations. A key one side lacks counts 0
    there (a cause that appeared or vanished is all change). Operations must be > 0: a side
    without them is compared per second instead (the caller's choice)."""
    if base_ops <= 0 or target_ops <= 0:
        raise ValueError(f"per-operation figures need operations on both sides ({base_ops}, {target_ops})")
    vb = sum(base.values()) / base_ops
    vt = sum(target.values()) / target_ops
    rows = []
    for key in set(base) | set(target):
        pb = base.get(key, 0.0) / base_ops
        pt = target.get(key, 0.0) / target_ops
        rows.append((key, pb, pt, pt - pb))
    rows.sort(key=lambda r: (-abs(r[3]), repr(r[0])))
    return Comparison(vb, vt, vt - vb, gross_change([r[3] for r in rows]), rows)


@dataclass
class SideCounts:
    """What one side of a comparison counted."""
    phase: str
    denominator: float | None    # queries / inserts (None: not counted; 0: none happened)
    ios: float                   # storage IO operations in the metric's direction (reads or writes)
    seconds: float
    intervals: tuple[tuple[float, float], ...] = ()   # per interval: (engine IOs, operations)


def noise_reason(base: SideCounts, target: SideCounts, vb: float, vt: float, *, metric: str,
                 per: str, per_second: bool) -> str | None:
    """Why the change from vb to vt is within noise, with the numbers; None when it is significant."""
    head = f"{NO_SIGNIFICANT_CHANGE}: {metric} {vb:.4g} -> {vt:.4g}"
    if not per_second:
        for s in (base, target):
            if s.denominator is not None and s.denominator < MIN_OPS:
                return f"{head}; phase {s.phase} has {s.denominator:.0f} {plural(per, s.denominator)} (fewer than {MIN_OPS})"
    else:
        for s in (base, target):
            if s.seconds < MIN_SECONDS:
                return f"{head}; phase {s.phase} lasted {s.seconds:.2f} s (a rate over less than {MIN_SECONDS:g} s)"
    if max(base.ios, target.ios) < MIN_IOS:
        return (f"{head}; {base.ios:.0f} and {target.ios:.0f} storage IOs "
                f"(fewer than {MIN_IOS} on either side)")
    top = max(abs(vb), abs(vt))
    rel = abs(vt - vb) / top if top else 0.0
    if rel < MIN_RELATIVE:
        return f"{head} ({100 * rel:.1f}%, within {100 * MIN_RELATIVE:.0f}%)"
    z = z_score(base, target)
    if z is not None and z < Z_MIN:
        return f"{head}; within counting noise ({z:.1f} standard deviations, fewer than {Z_MIN:g})"
    if not per_second:
        se = [interval_se(s.intervals) for s in (base, target)]
        if se[0] is not None and se[1] is not None and (se[0] or se[1]):
            zi = abs(vt - vb) / math.sqrt(se[0] ** 2 + se[1] ** 2)
            if zi < Z_MIN:
                return (f"{head}; within the phases' own variation ({zi:.1f} standard errors of their "
                        f"intervals, fewer than {Z_MIN:g}: +-{se[0]:.3g} and +-{se[1]:.3g} per {per})")
    return None


def interval_se(intervals: tuple[tuple[float, float], ...]) -> float | None:
    """The standard error of a phase's ratio sum(n)/sum(d) from its intervals' spread (the
    ratio estimator's: sum(d_i^2 (r_i - r)^2) / sum(d)^2 * k/(k-1)); None with fewer than two
    intervals with operations."""
    rows = [(n, d) for n, d in intervals if d > 0]
    if len(rows) < 2:
        return None
    total = sum(d for _, d in rows)
    r = sum(n for n, _ in rows) / total
    k = len(rows)
    var = sum((n - r * d) ** 2 for n, d in rows) / total ** 2 * k / (k - 1)
    return math.sqrt(var)


def z_score(base: SideCounts, target: SideCounts) -> float | None:
    """|rate_t - rate_b| in standard deviations of Poisson counting noise (IO ops per denominator)."""
    db = base.denominator or base.seconds
    dt = target.denominator or target.seconds
    if not db or not dt:
        return None
    var = base.ios / db ** 2 + target.ios / dt ** 2
    if var <= 0:
        return None
    return abs(target.ios / dt - base.ios / db) / math.sqrt(var)


@dataclass
class PhaseCounts:
    """A phase as a candidate side: its operations (None: not counted), its storage IO, and its
    kind of work (phase_kind: "query" or "load"; None: unknown)."""
    name: str
    denominator: float | None
    ios: float
    kind: str | None = None


def phase_kind(queries: float | None, inserts: float | None) -> str | None:
    """"load" when the phase inserted at least LOAD_ROWS_PER_QUERY rows per query it ran (a bulk
    load, an insert-only phase), "query" otherwise (the insert benchmark's q phases insert about
    as many rows as they run queries); None when neither was counted. Only phases of one kind are
    compared by default: a load phase's reads per query are not a query phase's."""
    if queries is None and inserts is None:
        return None
    return "load" if (inserts or 0) >= LOAD_ROWS_PER_QUERY * max(queries or 0, 1) else "query"


def usable(p: PhaseCounts, min_ops: float) -> bool:
    """A phase with the metric's operations: one without storage IO is still a baseline (0 per op)."""
    return p.denominator is not None and p.denominator >= min_ops


def why_not(p: PhaseCounts, per: str) -> str:
    if p.denominator is None:
        return f"{p.name}: no {per} counts"
    if p.denominator == 0:
        return f"{p.name}: no {plural(per)}"
    return f"{p.name}: {p.denominator:.0f} {plural(per, p.denominator)}"


def choose_phases(phases: list[PhaseCounts], per: str, baseline: str | None = None,
                  target: str | None = None) -> tuple[str, str, str] | None:
    """Two comparable phases, and why: both with at least MIN_OPS of the operations the metric
    divides by (a phase with fewer is never the baseline: its per-operation figure is not a
    rate; it is the target only when no other qualifies, and the change is then noise), and
    of the same kind of work (phase_kind: query phases with query phases, never a load phase
    against a query phase).

    The target is the last such phase, the baseline the first one of the target's kind; a phase
    named by the user is kept and the other side chosen among the phases of its kind.
    None when no two phases qualify. Storage IO is not required: a phase whose queries read
    nothing is a baseline of 0 reads per query."""
    ok = [p for p in phases if usable(p, MIN_OPS)]
    by_name = {p.name: p for p in phases}
    anchor = by_name.get(target) if target is not None else by_name.get(baseline) if baseline is not None else \
        (ok[-1] if ok else None)
    kind = anchor.kind if anchor is not None else None
    # phases of unknown kind (nothing counted) are compared with any; the others only within one kind
    same = [p.name for p in ok if kind is None or p.kind == kind]
    names = [p.name for p in ok]
    b = baseline if baseline is not None else next((n for n in same if n != target), None)
    t = target if target is not None else next((n for n in reversed(same) if n != b), None)
    if t is None and b is not None:
        # the target may have fewer (the change is then called noise, with the count); the
        # baseline never does
        after = [p for p in phases[[p.name for p in phases].index(b) + 1:]] if b in by_name else []
        t = next((p.name for p in reversed(after) if usable(p, 1) and (kind is None or p.kind in (kind, None))),
                 None)
        if t is not None:
            names.append(t)
    if b is None or t is None or b == t:
        return None
    skipped = [why_not(p, per) for p in phases if p.name not in names]
    other_kind = [p.name for p in ok if p.name not in same]
    what = f"{kind} phases" if kind else "phases"
    why = (f"phases picked: baseline {b} and target {t}, the "
           f"{'first' if baseline is None else 'given'} and "
           f"{'last' if target is None else 'given'} {what} with at least {MIN_OPS} {plural(per)}")
    if skipped:
        why += f"; skipped (fewer than {MIN_OPS} {plural(per)}) " + ", ".join(skipped)
    if other_kind and kind:
        why += f"; not compared with {kind} phases: " + ", ".join(
            f"{n} ({by_name[n].kind})" for n in other_kind)
    return b, t, why

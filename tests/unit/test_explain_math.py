"""explain's arithmetic (ioattr/model/explain_math.py), pure: shares over the gross change, the noise
guard, and the choice of comparable phases. No root, no server; runs in milliseconds."""
from __future__ import annotations

import pytest

from ioattr.model import explain_math as em


def test_shares_are_over_the_gross_increase() -> None:
    # net +0.1 made of +5 and -4.9: over the net change one contributor would be 5000%
    deltas = [5.0, -4.9]
    g = em.gross_change(deltas)
    assert g == 5.0
    assert em.share(5.0, g) == 1.0
    assert em.share(-4.9, g) == pytest.approx(-0.98)
    # what moved with the change sums to 100%, each contributor within [-100%, 100%]
    deltas = [3.0, 1.0, -0.5, 0.0]
    g = em.gross_change(deltas)
    shares = [em.share(d, g) for d in deltas]
    assert sum(s for s in shares if s > 0) == pytest.approx(1.0)
    assert all(-1.0 <= s <= 1.0 for s in shares)
    # a set of contributors (a finding) can't exceed the gross either
    assert em.share(3.0 + 1.0 - 0.5, g) == pytest.approx(0.875)


def test_shares_of_a_decrease_are_positive_for_what_decreased() -> None:
    deltas = [-2.0, -1.0, 0.5]
    g = em.gross_change(deltas)
    assert g == -3.0
    assert em.share(-2.0, g) == pytest.approx(2 / 3)
    assert em.share(0.5, g) == pytest.approx(-1 / 6)
    assert "gross decrease" in em.basis_label(g, "query")
    assert "gross increase" in em.basis_label(1.0, "query")


def test_no_change_has_no_shares() -> None:
    assert em.gross_change([]) == 0.0
    assert em.share(0.0, 0.0) is None
    # net 0 but contributors moved: shares over what grew
    assert em.gross_change([1.0, -1.0]) == 1.0


def _s(phase: str, ops: float | None, ios: float, seconds: float = 10.0) -> em.SideCounts:
    return em.SideCounts(phase, ops, ios, seconds)


def test_noise_few_operations() -> None:
    why = em.noise_reason(_s("a", 12, 500), _s("b", 5000, 20000), 40.0, 4.0, metric="reads_per_query",
                          per="query", per_second=False)
    assert why and "phase a has 12 queries (fewer than 30)" in why and "40 -> 4" in why


def test_noise_few_ios_on_both_sides_but_not_one() -> None:
    why = em.noise_reason(_s("a", 1000, 20), _s("b", 1000, 60), 0.02, 0.06, metric="m", per="query",
                          per_second=False)
    assert why and "20 and 60 storage IOs" in why
    # the seed case: almost no reads in the baseline, thousands in the target -- significant
    assert em.noise_reason(_s("q100", 3000, 2), _s("q1000", 3000, 41000), 0.0008, 13.7, metric="m",
                           per="query", per_second=False) is None


def test_noise_small_relative_change() -> None:
    # the write_bytes_per_insert case: 1.096e6 -> 1.095e6 over plenty of IO
    why = em.noise_reason(_s("q100", 3000, 90000), _s("q1000", 3000, 89900), 1.096e6, 1.095e6, metric="wbpi",
                          per="insert", per_second=False)
    assert why and "0.1%, within 5%" in why
    # 5.7% but within counting noise: 400 vs 423 IOs over 1000 ops each
    why = em.noise_reason(_s("a", 1000, 400), _s("b", 1000, 424), 0.4, 0.424, metric="m", per="query",
                          per_second=False)
    assert why and "standard deviations" in why


def test_noise_short_phase_matters_only_per_second() -> None:
    assert em.noise_reason(_s("a", None, 5000, 0.3), _s("b", None, 9000, 5), 16666.0, 1800.0, metric="m",
                           per="query", per_second=True)
    assert em.noise_reason(_s("a", 5000, 5000, 0.3), _s("b", 5000, 9000, 5), 1.0, 1.8, metric="m",
                           per="query", per_second=False) is None


P = em.PhaseCounts


def test_choose_phases_skips_phases_without_the_denominator() -> None:
    phases = [P("main", 1, 90), P("setup", 0, 500), P("l.i0", 0, 200), P("q100", 3000, 16), P("q1000", 3100, 900)]
    b, t, why = em.choose_phases(phases, "query")
    assert (b, t) == ("q100", "q1000")
    assert "baseline q100 and target q1000" in why and "setup: no queries" in why and "main: 1 query" in why


def test_choose_phases_around_a_named_one_and_fallbacks() -> None:
    phases = [P("a", 100, 10), P("b", 100, 10), P("c", 5, 10)]
    assert em.choose_phases(phases, "query", target="b")[:2] == ("a", "b")
    assert em.choose_phases(phases, "query", baseline="b")[:2] == ("b", "a")
    # fewer than two with 30 ops: none is picked (a phase of 10 inserts is not a baseline)
    assert em.choose_phases([P("a", 10, 10), P("b", 0, 10), P("c", 5, 10)], "insert") is None
    assert em.choose_phases([P("a", 10, 10), P("b", None, 10)], "query") is None
    # a phase whose queries read nothing is a baseline (0 reads per query), not skipped
    assert em.choose_phases([P("a", 100, 0), P("b", 100, 50)], "query")[:2] == ("a", "b")


def test_choose_phases_compares_one_kind_of_work() -> None:
    """A load phase (more rows inserted than queries) is never the default baseline of a query
    phase: the insert benchmark's l.i0 (1 query) and l.i1 (a big load with 40 SELECTs)."""
    phases = [P("l.i0", 1, 500, "load"), P("l.i1", 40, 900, "load"), P("q100", 3000, 16, "query"),
              P("q1000", 3100, 900, "query")]
    b, t, why = em.choose_phases(phases, "query")
    assert (b, t) == ("q100", "q1000")
    assert "query phases" in why and "l.i0: 1 query" in why and "l.i1 (load)" in why
    assert em.phase_kind(40, 100000) == "load" and em.phase_kind(3000, 100) == "query"
    assert em.phase_kind(3188, 3000) == "query"  # a q1000 phase on a large table: ~1 row per query
    # the target may have fewer than 30 when nothing else qualifies (then noise); never the baseline
    assert em.choose_phases([P("main", 300, 10, "query"), P("scan", 2, 900, "query")], "query")[:2] == \
        ("main", "scan")
    assert em.choose_phases([P("main", 2, 10, "query"), P("scan", 300, 900, "query")], "query") is None
    assert em.phase_kind(None, None) is None


class _Rec:
    """What probe_differences reads of a recording: its path and meta.json."""
    def __init__(self, path: str, **meta: object) -> None:
        self.path, self.meta = path, meta


def test_probe_differences_fold_what_one_side_lacks() -> None:
    from ioattr.analysis.explain import _fold, probe_differences

    full = _Rec("A", stages="full", probe_sets=["syscalls", "stage", "block"])
    stmt = _Rec("B", stages="statement", probe_sets=["syscalls", "stage"])
    off = _Rec("C", stage_probes=False, probe_sets=["syscalls"])
    assert probe_differences(full, full) == ([], set(), [])
    diffs, fold, notes = probe_differences(full, stmt)
    assert fold == {"stage"} and "stages full vs statement" in diffs[0] and "block only in A" in diffs[1]
    assert notes == []
    diffs, fold, _ = probe_differences(stmt, off)
    assert fold == {"stage", "query"} and "stages statement vs off" in diffs[0]
    # two default recordings of different engines: PostgreSQL's own server has no stages inside
    # statements however it is recorded, so that is no probe-setting difference (no warning)
    mariadb = _Rec("I", stages="full", probe_sets=["syscalls", "stage"], servers=[{"pid": 1, "flavor": "mariadb"}])
    pg = _Rec("P", stages="statement", probe_sets=["syscalls", "stage"],
              servers=[{"pid": 2, "flavor": "postgresql", "engine": "postgres"}])
    for a, b in ((pg, mariadb), (mariadb, pg)):
        diffs, fold, notes = probe_differences(a, b)
        assert diffs == [] and fold == {"stage"}, (diffs, fold)
        assert len(notes) == 1 and "PostgreSQL (P) has no stages inside statements" in notes[0], notes
    # a MariaDB recorded with --stages statement against PostgreSQL: the same stages, nothing to say
    assert probe_differences(_Rec("S", stages="statement", probe_sets=["syscalls", "stage"],
                                  servers=[{"pid": 3, "flavor": "mariadb"}]), pg) == ([], set(), [])
    # folding merges the keys that differ only in the folded dimensions
    c = {("i", "leaf", "execute", "connection", "tablespace", "q"): 2.0,
         ("i", "leaf", "optimize", "connection", "tablespace", "q"): 3.0}
    assert _fold(c, {"stage"}) == {("i", "leaf", None, "connection", "tablespace", "q"): 5.0}
    # index dives are stage estimate in both modes: kept when both recordings traced them
    c[("i", "leaf", "estimate", "connection", "tablespace", "q")] = 7.0
    assert _fold(c, {"stage"}, ("estimate",)) == {("i", "leaf", None, "connection", "tablespace", "q"): 5.0,
                                                  ("i", "leaf", "estimate", "connection", "tablespace", "q"): 7.0}


def test_per_operation_figures_and_their_change() -> None:
    """Each side's IO per key over its own operations; the totals are the sums of the rows."""
    base = {("k", "leaf"): 300.0, ("PRIMARY", "leaf"): 100.0}
    targ = {("k", "leaf"): 300.0, ("PRIMARY", "leaf"): 2500.0, ("PRIMARY", "non_leaf"): 50.0}
    c = em.compare(base, targ, 100.0, 250.0)
    assert (c.baseline, c.target, c.change) == (4.0, 11.4, 11.4 - 4.0)
    assert c.rows == [(("PRIMARY", "leaf"), 1.0, 10.0, 9.0),          # biggest change first
                      (("k", "leaf"), 3.0, 1.2, 1.2 - 3.0),
                      (("PRIMARY", "non_leaf"), 0.0, 0.2, 0.2)]       # absent in the baseline: 0 there
    assert c.gross == 9.0 + 0.2
    assert [round(em.share(r[3], c.gross), 6) for r in c.rows] == [round(9.0 / 9.2, 6), round(-1.8 / 9.2, 6),
                                                                   round(0.2 / 9.2, 6)]


def test_run_vs_run_with_a_zero_baseline() -> None:
    """A baseline run whose queries read nothing is 0 per query, and all of the change is
    the target's; nothing moved on either side: no change and no shares."""
    c = em.compare({}, {("i", "leaf"): 1500.0}, 3000.0, 3000.0)
    assert (c.baseline, c.target, c.change, c.gross) == (0.0, 0.5, 0.5, 0.5)
    assert em.share(c.rows[0][3], c.gross) == 1.0
    none = em.compare({}, {}, 10.0, 20.0)
    assert (none.baseline, none.target, none.change, none.gross, none.rows) == (0.0, 0.0, 0.0, 0.0, [])
    assert em.share(0.0, none.gross) is None
    # zero baseline, significant target: not noise (all of it is change)
    assert em.noise_reason(_s("a", 3000, 0), _s("b", 3000, 1500), 0.0, 0.5, metric="m", per="query",
                           per_second=False) is None
    # both zero: no significant change, said with the numbers
    assert em.noise_reason(_s("a", 3000, 0), _s("b", 3000, 0), 0.0, 0.0, metric="m", per="query",
                           per_second=False) == "no significant change: m 0 -> 0; 0 and 0 storage IOs (fewer than 100 on either side)"
    with pytest.raises(ValueError):
        em.compare({}, {}, 0.0, 10.0)  # no operations: the caller compares per second instead


def test_z_score_is_poisson_counting_noise() -> None:
    # 400 vs 424 IOs over 1000 ops each: |0.424 - 0.4| / sqrt(400/1e6 + 424/1e6)
    assert em.z_score(_s("a", 1000, 400), _s("b", 1000, 424)) == pytest.approx(0.024 / (824e-6) ** 0.5)
    # per second when there is no denominator; none at all without either
    assert em.z_score(_s("a", None, 100, 10.0), _s("b", None, 400, 10.0)) == pytest.approx(30 / (5.0) ** 0.5)
    assert em.z_score(_s("a", None, 0, 0.0), _s("b", 10, 5)) is None
    assert em.z_score(_s("a", 10, 0), _s("b", 10, 0)) is None


def test_plural() -> None:
    assert [em.plural("query"), em.plural("query", 1), em.plural("insert"), em.plural("insert", 2)] == [
        "queries", "query", "inserts", "inserts"]


def test_noise_takes_the_phases_own_interval_variation() -> None:
    """Counting noise alone calls 0.039 -> 0.045 (4,000+ reads a side) a change; the second
    phase's intervals (0.039 ... 0.075, as measured on one steady run) say it is within its own
    variation. Steady intervals keep the same change significant."""
    a = ((1880, 47331), (2223, 55468), (2238, 57699), (331, 9554))
    b = ((519, 13244), (2138, 49574), (1060, 24114), (611, 8144))
    va, vb = sum(n for n, _ in a) / sum(d for _, d in a), sum(n for n, _ in b) / sum(d for _, d in b)
    base = em.SideCounts("a", sum(d for _, d in a), sum(n for n, _ in a), 3.2, a)
    target = em.SideCounts("b", sum(d for _, d in b), sum(n for n, _ in b), 3.6, b)
    why = em.noise_reason(base, target, va, vb, metric="m", per="query", per_second=False)
    assert why is not None and "own variation" in why
    steady = tuple((round(0.0455 * d), d) for _, d in b)
    target = em.SideCounts("b", sum(d for _, d in steady), sum(n for n, _ in steady), 3.6, steady)
    vs = sum(n for n, _ in steady) / sum(d for _, d in steady)
    assert em.noise_reason(base, target, va, vs, metric="m", per="query", per_second=False) is None
    assert em.interval_se(((5, 100),)) is None

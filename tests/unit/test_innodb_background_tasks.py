"""InnoDB's background_tasks finding (ioattr/engines/innodb/findings.py) on hand-made evidence:
its verdicts and what its summary names, without a server (the planted scenario is
tests/test_explain_background.py)."""
from __future__ import annotations

from types import SimpleNamespace

from ioattr.engines.innodb import findings as inf
from ioattr.model.evidence import Evidence

Q = "SELECT c FROM sbtest1 WHERE id=?"
STMT = ("sbtest.sbtest1.PRIMARY", "leaf", "statement", "connection", "tablespace", Q)
SAMPLE = ("sbtest.sbtest1.k_1", "leaf", "background", "innodb_worker", "tablespace", None)
UNDO = (None, None, "background", "innodb_worker", "system_tablespace", None)
STATS = ("mysql.innodb_index_stats.PRIMARY", "leaf", "background", "innodb_worker", "tablespace", None)
PURGE = ("sbtest.sbtest1.PRIMARY", "leaf", "background", "purge", "tablespace", None)


def _side(ops: float) -> SimpleNamespace:
    return SimpleNamespace(stats=SimpleNamespace(counters={}, counter=lambda *n: None), denominator=ops,
                           unit="query", phase="p")


def _ev(bc: dict, tc: dict, settings: dict | None = None) -> Evidence:
    base, target = _side(1000), _side(1000)
    metric = SimpleNamespace(op="read", measure="ops", per="query")
    change = sum(tc.values()) / 1000 - sum(bc.values()) / 1000
    return Evidence(metric=metric, base=base, target=target, base_contrib=bc, target_contrib=tc, change=change,
                    gross=abs(change), settings_target=settings or {})


def test_a_recalculation_in_the_target_is_supported_and_named() -> None:
    f = inf.background_tasks(_ev({STMT: 40}, {STMT: 40, SAMPLE: 30, UNDO: 8, STATS: 2},
                                 {"innodb_stats_auto_recalc": "ON"}))
    ev = f["evidence"]
    assert f["verdict"] == "supported" and ev["share_of_change"] == 1.0, f
    assert ev["baseline_per_op"] == 0 and ev["target_per_op"] == 0.04, ev
    assert ev["statistics_recalculated"] is True and ev["innodb_stats_auto_recalc"] == "ON", ev
    # the user's indexes first, biggest first; the stats table is said as the recalculation
    assert ev["indexes"].split(", ")[:2] == ["sbtest.sbtest1.k_1", "[system_tablespace]"], ev
    assert "of sbtest.sbtest1.k_1 (0.03/query), [system_tablespace] (0.008/query)" in ev["summary"], ev
    assert "a statistics recalculation ran there" in ev["summary"] and "innodb_stats_auto_recalc=ON" in ev["summary"]


def test_statements_that_read_more_refute_it() -> None:
    f = inf.background_tasks(_ev({STMT: 40, SAMPLE: 5}, {STMT: 400, SAMPLE: 5}))
    assert f["verdict"] == "refuted" and f["evidence"]["share_of_change"] == 0.0, f
    assert f["evidence"]["statistics_recalculated"] is False
    assert "a statistics recalculation" not in f["evidence"]["summary"]


def test_purge_is_not_a_background_task_here() -> None:
    """purge_reads has its own finding: its IO is not counted twice."""
    f = inf.background_tasks(_ev({STMT: 40}, {STMT: 40, PURGE: 50}))
    assert f["verdict"] == "refuted" and f["evidence"]["target_per_op"] == 0, f


def test_without_roles_it_is_inconclusive() -> None:
    """A recording without thread roles can't tell InnoDB's tasks from the statements."""
    def anon(k: tuple) -> tuple:
        return tuple(None if i == 3 else v for i, v in enumerate(k))
    f = inf.background_tasks(_ev({anon(STMT): 40}, {anon(STMT): 40, anon(SAMPLE): 30}))
    assert f["verdict"] == "inconclusive", f


def test_a_recalculation_in_the_baseline_is_the_mirror() -> None:
    """Reads fell because the recalculation ran in the baseline: explain's direction code reads
    the evidence the other way, and the finding holds as its mirror."""
    f = inf.background_tasks(_ev({STMT: 40}, {STMT: 40, SAMPLE: 30}).mirrored())
    assert f["verdict"] == "supported" and f["evidence"]["baseline_per_op"] == 0.03, f
    assert f["mirror_title"].startswith("Less IO by InnoDB background tasks"), f

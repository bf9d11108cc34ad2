"""PostgreSQL's explain findings (ioattr/engines/postgres/findings.py) on hand-made evidence: the
verdicts' edges without a server (the planted scenarios are tests/test_postgres_findings.py)."""
from __future__ import annotations

from types import SimpleNamespace

from ioattr.model.evidence import Evidence
from ioattr.engines.postgres import findings as pf

IOS = "SELECT count ( id ) FROM h WHERE id BETWEEN ? AND ?"
INS = "INSERT INTO f SELECT ?"
HEAP = ("postgres.public.h", None, None, "connection", "relation", IOS)
INDEX = ("postgres.public.h_id", "leaf", None, "connection", "relation", IOS)
WAL = (None, None, None, "connection", "wal", INS)
REL = ("postgres.public.f", None, None, "connection", "relation", INS)
RELATIONS = {"/d/base/5/100": {"relation": "postgres.public.h", "kind": "table"},
             "/d/base/5/101": {"relation": "postgres.public.h_id", "kind": "index"}}


class _Rec:
    """A recording's answers: our WAL bytes written in the phase; the checkpoints counted at each
    phase's last snapshot (phase -> checkpoints_req); meta.json's relations."""

    def __init__(self, wal_bytes: float = 0.0, checkpoints: dict[str, float] | None = None) -> None:
        self.wal_bytes = wal_bytes
        self.checkpoints = checkpoints or {}
        self.meta = {"relations": RELATIONS}

    def query(self, sql: str, params: list) -> list[tuple]:
        if "FROM counters" in sql:
            return [(ph, 7, "checkpoints_req", v) for ph, v in self.checkpoints.items() if ph in params]
        return [(self.wal_bytes,)]


def _side(counters: dict[str, float], ops: float, unit: str, wal_bytes: float = 0.0, phase: str = "p",
          rec: _Rec | None = None) -> SimpleNamespace:
    return SimpleNamespace(stats=SimpleNamespace(counters=counters, counter=lambda *n: next(
        (counters[x] for x in n if x in counters), None)), denominator=ops, unit=unit, rec=rec or _Rec(wal_bytes),
        phase=phase)


def _ev(base: SimpleNamespace, target: SimpleNamespace, bc: dict, tc: dict, op: str, settings: dict | None = None
        ) -> Evidence:
    metric = SimpleNamespace(op=op, measure="ops" if op == "read" else "bytes", per="query" if op == "read" else "insert")
    change = sum(tc.values()) / target.denominator - sum(bc.values()) / base.denominator
    return Evidence(metric=metric, base=base, target=target, base_contrib=bc, target_contrib=tc, change=change,
                    gross=abs(change), settings_target=settings or {"full_page_writes": "on"})


def _wal(fpi: float, nbytes: float, checkpoints: float = 0.0) -> dict[str, float]:
    return {"pg_stat_wal:wal_fpi": fpi, "pg_stat_wal:wal_bytes": nbytes, "pg_stat_wal:wal_records": 4000.0,
            "pg_stat_bgwriter:checkpoints_req": checkpoints, "pg_stat_database:tup_inserted": 2000.0}


def test_full_page_writes_verdicts() -> None:
    base = _side(_wal(3, 250_000), 2000, "insert", 260_000)
    target = _side(_wal(280, 2_500_000), 2000, "insert", 2_520_000)
    f = pf.full_page_writes(_ev(base, target, {WAL: 260_000, REL: 140_000}, {WAL: 2_520_000, REL: 140_000}, "write"))
    ev = f["evidence"]
    assert f["verdict"] == "supported" and ev["share_of_change"] == 1.0, f
    assert ev["wal_fpi_per_op_baseline"] == 0.0015 and ev["wal_fpi_per_op_target"] == 0.14
    assert ev["wal_bytes_per_op_target"] == 1250 and ev["wal_write_bytes_per_op_target"] == 1260
    assert ev["checkpoints_between"] is None  # two recordings: nothing is between them
    # one recording: the checkpoints completed after the baseline, by the target's end
    one = _Rec(0.0, {"base": 3.0, "target": 4.0})
    b1, t1 = _side(_wal(3, 250_000), 2000, "insert", phase="base", rec=one), \
        _side(_wal(280, 2_500_000), 2000, "insert", phase="target", rec=one)
    f = pf.full_page_writes(_ev(b1, t1, {WAL: 260_000}, {WAL: 2_520_000}, "write"))
    assert f["verdict"] == "supported" and f["evidence"]["checkpoints_between"] == 1, f
    # no checkpoint between: WAL grew for another reason (bigger rows), FPIs per row flat -> refuted
    flat = _side(_wal(3, 500_000), 2000, "insert", 510_000)
    f = pf.full_page_writes(_ev(base, flat, {WAL: 260_000}, {WAL: 510_000}, "write"))
    assert f["verdict"] == "refuted", f
    # wider rows and no checkpoint: WAL grew by far more than the few extra page images (splits) can be
    wide = _side(_wal(10, 2_500_000), 2000, "insert", 2_520_000)
    f = pf.full_page_writes(_ev(base, wide, {WAL: 260_000}, {WAL: 2_520_000}, "write"))
    assert f["verdict"] == "refuted" and f["evidence"]["fpi_part_of_wal_growth"] < 0.03, f
    # FPIs rose but the WAL is not what moved the metric (relation writes did)
    f = pf.full_page_writes(_ev(base, target, {WAL: 260_000, REL: 0}, {WAL: 262_000, REL: 5_000_000}, "write"))
    assert f["verdict"] == "refuted" and f["evidence"]["share_of_change"] < 0.03, f
    # full_page_writes=off: no page images whatever the checkpoints
    f = pf.full_page_writes(_ev(base, target, {WAL: 260_000}, {WAL: 2_520_000}, "write", {"full_page_writes": "off"}))
    assert f["verdict"] == "refuted", f
    # one side without pg_stat_wal (a server before 14): inconclusive
    old = _side({"pg_stat_database:tup_inserted": 2000.0}, 2000, "insert", 260_000)
    assert pf.full_page_writes(_ev(old, target, {WAL: 260_000}, {WAL: 2_520_000}, "write"))["verdict"] == "inconclusive"


def test_heap_fetches_verdicts() -> None:
    statio = {"pg_stat_database:blks_read": 1.0}
    base = _side({**statio, "pg_statio:postgres.public.h:heap_blks_read": 0.0,
                  "pg_statio:postgres.public.h:heap_blks_hit": 0.0}, 40, "query")
    target = _side({**statio, "pg_statio:postgres.public.h:heap_blks_read": 180.0,
                    "pg_statio:postgres.public.h:heap_blks_hit": 9000.0}, 40, "query")
    f = pf.heap_fetches(_ev(base, target, {INDEX: 55}, {INDEX: 110, HEAP: 180}, "read"))
    ev = f["evidence"]
    assert f["verdict"] == "supported" and ev["tables"] == "postgres.public.h", f
    assert ev["baseline_per_op"] == 0 and ev["target_per_op"] == 4.5 and ev["index_per_op_target"] == 2.75
    assert ev["heap_blks_read_per_op_target"] == 4.5 and ev["heap_blks_per_op_target"] == 229.5
    assert "VACUUM (or autovacuum) sets the visibility map" in ev["summary"]
    # the other way round (the target after VACUUM): the heap reads fell
    f = pf.heap_fetches(_ev(target, base, {INDEX: 110, HEAP: 180}, {INDEX: 55}, "read"))
    assert f["verdict"] == "refuted", f
    # heap reads unchanged while index reads grew (a longer range, all visible)
    f = pf.heap_fetches(_ev(base, target, {INDEX: 55, HEAP: 10}, {INDEX: 300, HEAP: 10}, "read"))
    assert f["verdict"] == "refuted", f
    # our heap reads rose but PostgreSQL's heap block count per query did not: inconclusive
    f = pf.heap_fetches(_ev(base, base, {INDEX: 55}, {INDEX: 110, HEAP: 180}, "read"))
    assert f["verdict"] == "inconclusive", f
    # plain index scans (pgbench -S): one heap visit per query on both sides, more of them missed
    # shared buffers (a smaller shared_buffers): not index-only scans, refuted
    plain_b = _side({**statio, "pg_statio:postgres.public.h:heap_blks_read": 5.0,
                     "pg_statio:postgres.public.h:heap_blks_hit": 35.0}, 40, "query")
    plain_t = _side({**statio, "pg_statio:postgres.public.h:heap_blks_read": 28.0,
                     "pg_statio:postgres.public.h:heap_blks_hit": 12.0}, 40, "query")
    f = pf.heap_fetches(_ev(plain_b, plain_t, {INDEX: 1, HEAP: 5}, {INDEX: 1, HEAP: 28}, "read"))
    assert f["verdict"] == "refuted" and "missed shared buffers" in f["evidence"]["summary"], f


def _cluster(shared_buffers: int) -> _Rec:
    rec = _Rec()
    rec.meta = {"relations": RELATIONS, "servers": [{"pid": 1, "engine": "postgres", "connected": True,
                                                     "settings": {"shared_buffers": shared_buffers}}]}
    return rec


def test_working_set_from_blks_read_against_blks_hit() -> None:
    def side(read: float, hit: float, sb: int) -> SimpleNamespace:
        return _side({"pg_stat_database:blks_read": read, "pg_stat_database:blks_hit": hit}, 100, "query",
                     rec=_cluster(sb))

    big, small = side(10, 390, 128 << 20), side(70, 330, 32 << 20)
    f = pf.working_set(_ev(big, small, {HEAP: 10}, {HEAP: 70}, "read"))
    ev = f["evidence"]
    assert f["verdict"] == "supported" and ev["setting_changed"], f
    assert (ev["miss_ratio_baseline"], ev["miss_ratio_target"]) == (0.025, 0.175)
    assert (ev["blks_read_per_op_baseline"], ev["blks_read_per_op_target"]) == (0.1, 0.7)
    assert "shared_buffers 128 MiB -> 32 MiB (changed)" in ev["summary"] and ev["shared_buffers"] == 32 << 20
    # as many misses per block asked for on both sides: refuted (the reads rose for another reason)
    f = pf.working_set(_ev(big, side(20, 780, 128 << 20), {HEAP: 10}, {HEAP: 20}, "read"))
    assert f["verdict"] == "refuted", f
    # a recording without pg_stat_database (a MySQL server's): not applicable
    mysql = _side({"status:Com_select": 100.0}, 100, "query")
    assert pf.working_set(_ev(mysql, mysql, {}, {HEAP: 1.0}, "read"))["verdict"] == "not_applicable"


def test_autovacuum_when_its_workers_did_the_change() -> None:
    side = _side({"pg_stat_database:blks_read": 1.0}, 100, "query")
    worker = ("postgres.public.h", None, None, "autovacuum_worker", "relation", None)
    f = pf.autovacuum(_ev(side, side, {HEAP: 10}, {HEAP: 10, worker: 90}, "read"))
    assert f["verdict"] == "supported" and f["evidence"]["relations"] == "postgres.public.h", f
    assert f["evidence"]["target_per_op"] == 0.9 and f["evidence"]["share_of_change"] == 1.0
    f = pf.autovacuum(_ev(side, side, {HEAP: 10}, {HEAP: 100}, "read"))
    assert f["verdict"] == "refuted", f
    assert f["evidence"]["per_relation"] == {} and f["evidence"]["vacuum_statements_share"] is None


def test_vacuum_statements_are_vacuums_io_per_relation() -> None:
    """A VACUUM (or ANALYZE) statement's IO is vacuum's as an autovacuum worker's is, per relation."""
    side = _side({"pg_stat_database:blks_read": 1.0}, 100, "query")
    vac = ("postgres.public.h", None, "execute", "connection", "relation", "VACUUM h")
    vac_idx = ("postgres.public.h_id", "leaf", "execute", "connection", "relation", "vacuum (verbose) h")
    worker = ("postgres.public.g", None, None, "autovacuum_worker", "relation", None)
    f = pf.autovacuum(_ev(side, side, {HEAP: 10}, {HEAP: 10, vac: 60, vac_idx: 10, worker: 30}, "read"))
    ev = f["evidence"]
    assert f["verdict"] == "supported" and ev["share_of_change"] == 1.0, f
    assert ev["per_relation"] == {"postgres.public.h": 0.6, "postgres.public.g": 0.3, "postgres.public.h_id": 0.1}
    assert (ev["vacuum_statements_share"], ev["autovacuum_workers_share"]) == (0.7, 0.3)
    assert "autovacuum workers and VACUUM/ANALYZE statements' reads" in ev["summary"], ev
    assert [pf.is_vacuum(k) for k in (vac, vac_idx, worker, HEAP, INDEX, WAL)] == [True, True, True, False, False,
                                                                               False]
    assert pf.is_vacuum(("t", None, None, "connection", "relation", "ANALYZE t;"))
    assert not pf.is_vacuum(("t", None, None, "connection", "relation", "SELECT vacuum FROM t"))


def test_not_applicable_without_postgres_or_for_the_other_op() -> None:
    mysql = _side({"status:Com_select": 100.0}, 100, "query")
    assert pf.full_page_writes(_ev(mysql, mysql, {}, {WAL: 1.0}, "write"))["verdict"] == "not_applicable"
    assert pf.heap_fetches(_ev(mysql, mysql, {}, {HEAP: 1.0}, "read"))["verdict"] == "not_applicable"
    pg = _side({**_wal(1, 1000), "pg_statio:postgres.public.h:heap_blks_read": 1.0}, 100, "query")
    assert pf.full_page_writes(_ev(pg, pg, {}, {HEAP: 1.0}, "read"))["verdict"] == "not_applicable"
    assert pf.heap_fetches(_ev(pg, pg, {}, {WAL: 1.0}, "write"))["verdict"] == "not_applicable"


def test_planning_reads_added_or_moved() -> None:
    """The planner's reads of an index the execution never read (and their heap visits) are
    added; of the index the execution then scans, moved: refuted as extra IO."""
    from ioattr.engines.postgres.planning import planning_reads

    def key(rel: str, level: str | None, stage: str) -> tuple:
        return (rel, level, stage, "connection", "relation", IOS)

    probe, heap = key("postgres.public.h_id", "leaf", "optimize"), key("postgres.public.h", None, "optimize")
    executed = key("postgres.public.h", None, "execute")
    base, target = _side({}, 100, "query"), _side({}, 100, "query")
    f = planning_reads(_ev(base, target, {executed: 100}, {executed: 100, probe: 300, heap: 600}, "read"))
    assert f["verdict"] == "supported" and f["evidence"]["added_share"] == 1.0, f
    assert f["evidence"]["probed_indexes"] == "postgres.public.h_id", f
    # the execution scans h_id too: the planner only read its pages earlier
    scan = key("postgres.public.h_id", "leaf", "execute")
    f = planning_reads(_ev(base, target, {scan: 100}, {scan: 100, probe: 300, heap: 600}, "read"))
    assert f["verdict"] == "refuted" and f["evidence"]["planning_share"] == 1.0, f
    # no stages inside statements: nothing to tell
    f = planning_reads(_ev(base, target, {HEAP: 100}, {HEAP: 400}, "read"))
    assert f["verdict"] == "inconclusive", f

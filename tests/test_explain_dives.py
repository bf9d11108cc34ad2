"""explain counts the optimizer's index dives as a cause only for the reads they add.

One private MariaDB (8M buffer pool, O_DIRECT), recorded with defaults, two planted workloads:

  - sysbench's ranges (`id BETWEEN ? AND ?+99` on PRIMARY, text statements so each has its
    query): the dives read the range's leaves, which the scan then finds in the buffer pool.
    Against point selects (no range to estimate), the rise in reads is largely dive reads, all
    of them moved: the optimizer's finding is not supported, its added part is ~0.
  - a table with three secondary indexes and a query that ranges over all three: the plan uses
    the narrow range on ix_a (the server's EXPLAIN says so), but the optimizer first dives into
    the wide ranges of ix_b and ix_c, reading up to 10 leaves per level of each (the insert
    benchmark's case). Against the same query without those two conditions, the dives into
    ix_b and ix_c are added reads: supported and first.

Ground truth: the server's EXPLAIN (plan and candidate indexes), the statements sent, and the
recording's own rows by stage and index (report --by stage,index,query), which the finding's
added and moved parts must add up to.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.helpers import assert_no_ioattr_programs, ioattr, record_marked_phases

ROWS = 40_000          # d.u: ix_b and ix_c hold 130-byte keys, ~7 MB each, with PRIMARY several times the pool
SB_ROWS = 50_000       # sbtest1, ~12 MB
QUERIES = 300
WIDE = "CHAR(120) NOT NULL"


@pytest.fixture(scope="module")
def server():
    from tests.fixtures_mariadb import private_server, seq_table

    with private_server(*seq_table("d.u", f"(id INT PRIMARY KEY, a INT NOT NULL, b {WIDE}, c {WIDE}, "
                                   "pad CHAR(100) NOT NULL DEFAULT 'p', KEY ix_a (a), KEY ix_b (b), KEY ix_c (c)) "
                                   "ENGINE=InnoDB",
                                   f"(id, a, b, c) SELECT seq, (seq * 7919) % {ROWS}, "
                                   f"RPAD(LPAD((seq * 104729) % {ROWS}, 6, '0'), 120, 'x'), "
                                   f"RPAD(LPAD((seq * 15485863) % {ROWS}, 6, '0'), 120, 'y')", ROWS),
                        buffer_pool="8M", flush_method="O_DIRECT") as db:
        db.sysbench("oltp_read_only", "prepare", table_size=SB_ROWS)
        yield db
    assert_no_ioattr_programs()


def _explain(rec: Path) -> dict:
    r = ioattr("explain", str(rec), "--baseline", "base", "--target", "target", "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _optimizer(res: dict) -> dict:
    return next(f for f in res["findings"] if f["id"] == "optimizer_reads")


def _estimate_reads(rec: Path, phase: str) -> dict[str, int]:
    """Storage reads in stage estimate by index, as the recording's report says."""
    r = ioattr("report", str(rec), "--by", "stage,index", "--phase", phase, "--layer", "syscall", "--format", "json")
    assert r.returncode == 0, r.stderr
    out: dict[str, int] = {}
    for row in json.loads(r.stdout)["rows"]:
        if row["stage"] == "estimate" and row["op"] == "read":
            out[row["index"]] = out.get(row["index"], 0) + row["count"]
    return out


def test_sysbench_ranges_dives_are_moved_not_added(server, tmp_path: Path) -> None:
    server.restart()
    rec = tmp_path / "rec"
    text = ("--db-ps-mode=disable", "--rand-type=uniform")

    def points(_cur) -> None:
        server.sysbench("oltp_point_select", *text, "run", table_size=SB_ROWS, events=3000)

    def ranges(_cur) -> None:
        server.sysbench("oltp_read_only", *text, "--point-selects=0", "--skip-trx=on", "run", table_size=SB_ROWS, events=300)

    record_marked_phases(server, rec, [("base", points), ("target", ranges)])
    # ground truth: the ranges dive into PRIMARY only (the one index their WHERE can use)
    plan = server.query("EXPLAIN SELECT c FROM sbtest.sbtest1 WHERE id BETWEEN 100 AND 199")[0]
    assert plan[5] == "PRIMARY" and plan[4] == "PRIMARY", plan
    est = _estimate_reads(rec, "target")
    assert set(est) <= {"sbtest.sbtest1.PRIMARY", "[ibuf_bitmap]"} and est.get("sbtest.sbtest1.PRIMARY"), est
    assert _estimate_reads(rec, "base") == {}

    res = _explain(rec)
    assert res["significant"] and res["direction"] == "increase", res
    f = _optimizer(res)
    ev = f["evidence"]
    # the dives are a real part of the rise, and every read of them is moved: not the cause
    assert ev["dives_share"] >= 0.15, ev
    assert ev["added_target_per_op"] == 0 and ev["added_baseline_per_op"] == 0, ev
    assert ev["moved_target_per_op"] == pytest.approx(sum(est.values()) / res["target"]["ops"], rel=1e-4), ev
    assert f["verdict"] == "refuted", f
    assert "moved IO, not extra" in ev["summary"] and "added" in ev["summary"], ev


def _ranges(rnd: random.Random, three: bool):
    def work(cur) -> None:
        for _ in range(QUERIES):
            a = rnd.randrange(ROWS)
            if three:  # b and c from the lower half up: wide ranges the plan will not use
                b, c = f"{rnd.randrange(ROWS // 2):06d}", f"{rnd.randrange(ROWS // 2):06d}"
                cur.execute("SELECT pad FROM d.u WHERE a BETWEEN %s AND %s + 3 AND b > %s AND c > %s", (a, a, b, c))
            else:
                cur.execute("SELECT pad FROM d.u WHERE a BETWEEN %s AND %s + 3", (a, a))
            cur.fetchall()
    return work


def test_dives_into_indexes_the_plan_does_not_use_are_added(server, tmp_path: Path) -> None:
    # ground truth: the plan ranges over ix_a; ix_b and ix_c are candidates (dived into), not used
    plan = server.query("EXPLAIN SELECT pad FROM d.u WHERE a BETWEEN 500 AND 503 AND b > '010000' AND c > '005000'")[0]
    assert plan[5] == "ix_a" and {"ix_b", "ix_c"} <= set(plan[4].split(",")), plan
    server.restart()
    server.query("SELECT id FROM d.u WHERE id = 1")  # open the table before recording
    rnd = random.Random(3)
    rec = tmp_path / "rec"
    record_marked_phases(server, rec, [("base", _ranges(rnd, False)), ("target", _ranges(rnd, True))])
    est = _estimate_reads(rec, "target")
    assert est.get("d.u.ix_b") and est.get("d.u.ix_c"), est
    assert not {"d.u.ix_b", "d.u.ix_c"} & set(_estimate_reads(rec, "base")), _estimate_reads(rec, "base")

    res = _explain(rec)
    assert res["significant"] and res["direction"] == "increase", res
    f = _optimizer(res)
    ev = f["evidence"]
    assert f["verdict"] == "supported" and res["findings"][0]["id"] == "optimizer_reads", \
        [(x["id"], x["verdict"], x["evidence"].get("share_of_change")) for x in res["findings"]]
    assert ev["unused_indexes"] == "d.u.ix_b, d.u.ix_c", ev
    # the added part is exactly the dives into ix_b and ix_c, per query
    added = (est["d.u.ix_b"] + est["d.u.ix_c"]) / res["target"]["ops"]
    assert ev["added_target_per_op"] == pytest.approx(added, rel=1e-4), (ev, est)
    assert ev["added_baseline_per_op"] == 0, ev
    assert ev["share_of_change"] >= 0.5 and ev["share_of_change"] <= ev["dives_share"] + 1e-6, ev
    assert "into indexes the statements' execution did not read: d.u.ix_b, d.u.ix_c" in ev["summary"], ev

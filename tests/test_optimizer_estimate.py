"""The optimizer's index dives are stage `estimate` in a default recording.

A private MariaDB with an 8 MB buffer pool and a secondary index (k, pad) of ~18 MB, so
its leaves are cold: `SELECT count(*) ... WHERE k IN (N values)` makes the optimizer
estimate the N equality ranges of index k (handler::multi_range_read_info_const ->
ha_innobase::records_in_range, one dive per range below eq_range_index_dive_limit), and
those dives read the leaves from storage before execution (which then finds them
cached: the query is covered by k). A primary-key point select is a const table: the
optimizer estimates no range, so it must neither pay for nor hit the estimate probes.

Ground truth: the statements the test sent (estimates counted per statement digest), the
server's EXPLAIN (which indexes a query can range-scan), and eq_range_index_dive_limit:
with an IN list at or past the limit MariaDB uses index statistics instead of dives, so
the estimate stage must read nothing at all. The dives' reads are pages the execution then
reads (moved, not added): explain does not call them the cause (ioattr/analysis/dives.py).
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from tests.helpers import ioattr, record_marked_phases

ROWS = 150_000
IN_VALUES = 50          # equality ranges per query (below the default dive limit of 200)
DIVE_QUERIES = 200
POINT_QUERIES = 1500
PAD = "CHAR(100) NOT NULL DEFAULT 'p'"


@pytest.fixture(scope="module")
def server():
    from tests.fixtures_mariadb import private_server, seq_table

    # ANALYZE TABLE (seq_table): rec_per_key for k, what replaces dives past the limit
    with private_server(*seq_table("b.t", f"(id INT PRIMARY KEY, k INT NOT NULL, pad {PAD}, c CHAR(60) NOT NULL, "
                                   "KEY k (k, pad)) ENGINE=InnoDB",
                                   f"(id, k, c) SELECT seq, (seq * 7919) % {ROWS}, 'x'", ROWS),
                        buffer_pool="8M") as db:
        yield db


def _in_list(rnd: random.Random) -> str:
    return ", ".join(str(v) for v in rnd.sample(range(ROWS), IN_VALUES))


def _dives(rnd: random.Random):
    def work(cur) -> None:
        for _ in range(DIVE_QUERIES):
            cur.execute(f"SELECT count(*) FROM b.t WHERE k IN ({_in_list(rnd)})")
    return work


def _points(rnd: random.Random):
    def work(cur) -> None:
        for _ in range(POINT_QUERIES):
            cur.execute("SELECT c FROM b.t WHERE id = %s", (1 + rnd.randrange(ROWS),))
    return work


def _record(db, rec: Path, phases: list[tuple[str, object]], *extra: str, dive_limit: int = 200) -> None:
    """Cold restart, eq_range_index_dive_limit set globally (the recorder reads it when it
    connects), then each (name, work) as a phase started by an SQL marker."""
    db.restart()
    db.query(f"SET GLOBAL eq_range_index_dive_limit = {dive_limit}")
    db.query("SELECT id FROM b.t WHERE id = 1")  # open the table before recording
    record_marked_phases(db, rec, phases, "--interval", "0.25", *extra)


def _rows(rec: Path, phase: str, by: str) -> list[dict]:
    r = ioattr("report", str(rec), "--by", by, "--phase", phase, "--layer", "syscall", "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["rows"]


def _estimate_reads(rec: Path, phase: str) -> dict[str | None, int]:
    """Storage read operations in stage estimate, by index (pages of no index by page type:
    reading a secondary-index page from disk also reads its change-buffer bitmap page)."""
    out: dict[str | None, int] = {}
    for row in _rows(rec, phase, "index,page_type,stage"):
        if row["stage"] == "estimate" and row["op"] == "read":
            key = row["index"] or f"[{row['page_type']}]"
            out[key] = out.get(key, 0) + row["count"]
    return out


def _estimates(rec: Path, phase: str) -> dict[str, int]:
    """Index range estimates per statement text in a phase (the statements table)."""
    import duckdb

    con = duckdb.connect()
    rows = con.execute(
        "SELECT query, sum(count), sum(estimates) FROM read_parquet(?, union_by_name = true) "
        "WHERE phase = ? GROUP BY query", [str(rec / "statements" / "*.parquet"), phase]).fetchall()
    return {q: (int(n), int(e or 0)) for q, n, e in rows}


def _explain(rec: Path, *args: str) -> dict:
    r = ioattr("explain", str(rec), "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _finding(res: dict, fid: str) -> dict:
    return next(f for f in res["findings"] if f["id"] == fid)


def test_default_recording_attributes_dives(server, tmp_path: Path) -> None:
    # ground truth from the server: the IN query can range-scan k only (one index to estimate),
    # the point select is a const table (no range estimated at all)
    plan = server.query(f"EXPLAIN SELECT count(*) FROM b.t WHERE k IN ({_in_list(random.Random(1))})")
    assert [(r[3], r[4]) for r in plan] == [("range", "k")], plan
    assert [r[3] for r in server.query("EXPLAIN SELECT c FROM b.t WHERE id = 5")] == ["const"]

    rnd = random.Random(5)
    rec = tmp_path / "rec"
    _record(server, rec, [("points", _points(rnd)), ("dives", _dives(rnd))])
    meta = json.loads((rec / "meta.json").read_text())
    # the default reads the fine stages from the server's THD (no stage uprobe)
    assert meta["stages"] == "full" and meta["estimate_stage"] is True, meta

    # the point selects paid nothing: no estimate probe hit, no estimate-stage IO
    points = _estimates(rec, "points")
    point_sql = [q for q in points if q and q.startswith("SELECT c FROM b.t WHERE id")]
    assert len(point_sql) == 1 and points[point_sql[0]][0] == POINT_QUERIES, points
    assert sum(e for _, e in points.values()) == 0, points
    assert _estimate_reads(rec, "points") == {}
    assert sum(r["count"] for r in _rows(rec, "points", "phase") if r["op"] == "read") > 0  # but it did read

    # the IN queries: one index estimate each (k, as EXPLAIN says), and the dives' reads are k's
    dives = _estimates(rec, "dives")
    in_sql = [q for q in dives if q and q.startswith("SELECT count(*) FROM b.t WHERE k IN")]
    assert len(in_sql) == 1, dives
    assert dives[in_sql[0]] == (DIVE_QUERIES, DIVE_QUERIES), dives
    est = _estimate_reads(rec, "dives")
    assert set(est) <= {"b.t.k", "[ibuf_bitmap]"} and est.get("b.t.k"), est
    total = sum(r["count"] for r in _rows(rec, "dives", "stage") if r["op"] == "read")
    # the query is covered by k: execution finds the leaves the dives read (some evicted again
    # by later dives within one query excepted), so the dives do almost all of the reads
    assert sum(est.values()) >= 0.9 * total, (est, total)
    # a dive reads at most the leaf of each of its IN_VALUES ranges plus the non-leaf levels
    per_estimate = est["b.t.k"] / DIVE_QUERIES
    assert 1 <= per_estimate <= IN_VALUES + 3, per_estimate

    res = _explain(rec, "--baseline", "points", "--target", "dives")
    f = _finding(res, "optimizer_reads")
    ev = f["evidence"]
    # the dives read the very leaves the covering scan of k then reads (the control below: with
    # no dives, execution reads them): moved IO, not added, so not the cause of the rise
    assert ev["dives_share"] >= 0.9 and ev["moved_share"] >= 0.9, ev
    assert ev["share_of_change"] == 0 and ev["added_target_per_op"] == 0, ev
    assert f["verdict"] == "refuted" and "moved IO, not extra" in ev["summary"], f
    assert ev["indexes"] == "b.t.k" and ev["eq_range_index_dive_limit"] == 200, ev
    assert ev["estimates_baseline"] == 0 and ev["estimates_target"] == DIVE_QUERIES, ev
    # per query: the phase's queries are the workload's SELECTs plus the marker statement
    queries = res["target"]["ops"]
    assert queries == DIVE_QUERIES + 1, res["target"]
    assert ev["estimates_per_query_target"] == pytest.approx(DIVE_QUERIES / queries, abs=1e-6), ev
    assert ev["reads_per_estimate_target"] == pytest.approx(sum(est.values()) / DIVE_QUERIES, abs=1e-6), ev
    assert "b.t.k" in ev["summary"] and "eq_range_index_dive_limit=200" in ev["summary"], ev
    assert "--stages full" not in ev["summary"], ev
    assert f["next_step"] and "eq_range_index_dive_limit" in f["next_step"], f

    # a recording made before the estimate stage existed (its meta.json has no "estimate_stage",
    # so its dives' reads would be stage null, and its default was --stages statement): still
    # inconclusive, and it says why
    old = tmp_path / "old"
    shutil.copytree(rec, old)
    meta.pop("estimate_stage")
    meta["stages"] = "statement"
    (old / "meta.json").write_text(json.dumps(meta))
    f = _finding(_explain(old, "--baseline", "points", "--target", "dives"), "optimizer_reads")
    assert f["verdict"] == "inconclusive", f
    assert "no estimate stage" in f["evidence"]["summary"] and "--stages full" in f["evidence"]["summary"], f


def test_dives_past_the_limit_refute(server, tmp_path: Path) -> None:
    """The planted control: the same queries with eq_range_index_dive_limit below the IN list's
    length. MariaDB then takes rows per key from index statistics and dives into nothing:
    the optimizer still estimates k (the probe is hit once per query) but reads nothing, and
    the same rise in reads (now execution's index-only scan) refutes the optimizer."""
    rnd = random.Random(6)
    rec = tmp_path / "rec"
    _record(server, rec, [("points", _points(rnd)), ("dives", _dives(rnd))], dive_limit=IN_VALUES // 5)
    dives = _estimates(rec, "dives")
    in_sql = [q for q in dives if q and q.startswith("SELECT count(*) FROM b.t WHERE k IN")]
    assert dives[in_sql[0]] == (DIVE_QUERIES, DIVE_QUERIES), dives
    assert _estimate_reads(rec, "dives") == {}  # exact: statistics instead of dives
    res = _explain(rec, "--baseline", "points", "--target", "dives")
    assert res["significant"], res
    f = _finding(res, "optimizer_reads")
    assert f["verdict"] == "refuted", f
    assert f["evidence"]["eq_range_index_dive_limit"] == IN_VALUES // 5, f
    assert f["evidence"]["reads_per_estimate_target"] == 0, f


def test_full_stages_nest_estimate_in_optimize(server, tmp_path: Path) -> None:
    """--stages full keeps parse/optimize/execute/commit (read from the server's THD at IO time);
    the dives are still `estimate`, and the optimizer finding counts optimize and estimate together."""
    rnd = random.Random(8)
    rec = tmp_path / "rec"
    _record(server, rec, [("points", _points(rnd)), ("dives", _dives(rnd))], "--stages", "full")
    assert _estimate_reads(rec, "dives").get("b.t.k"), _estimate_reads(rec, "dives")
    rows = [r for r in _rows(rec, "points", "stage,query") if r["op"] == "read"]
    # a primary-key point select is a const table: MariaDB reads its row while optimizing
    # (make_join_statistics, stage "Statistics"), never in an index dive
    points = {r["stage"] for r in rows if (r["query"] or "").startswith("SELECT c FROM b.t WHERE id")}
    assert points == {"optimize"}, rows
    assert "estimate" not in {r["stage"] for r in rows}, rows
    f = _finding(_explain(rec, "--baseline", "points", "--target", "dives"), "optimizer_reads")
    # (the covering IN list's dives are moved IO, as in the default mode: not the cause)
    assert f["verdict"] == "refuted" and f["evidence"]["stages"] == "optimize, estimate", f
    assert f["evidence"]["moved_share"] >= 0.9 and f["evidence"]["added_target_per_op"] == 0, f

    # run against run across modes: the fine stages fold to null, estimate (traced by both) stays
    plain = tmp_path / "statement"
    _record(server, plain, [("dives", _dives(rnd))], "--stages", "statement")
    res = _explain(rec, "--against", str(plain), "--baseline", "points", "--target", "dives")
    assert any("stage estimate kept" in w for w in res["warnings"]), res["warnings"]
    assert {c["dims"].get("stage") for c in res["contributors"]} <= {None, "estimate"}, res["contributors"]
    f = _finding(res, "optimizer_reads")
    assert f["verdict"] == "refuted" and f["evidence"]["stages"] == "estimate", f
    assert f["evidence"]["moved_share"] >= 0.9, f


def test_which_statements_pay(server, tmp_path: Path) -> None:
    """Who hits the estimate probes, statement by statement, against MariaDB's plans: a
    primary-key point select (EXPLAIN: const) and an INSERT estimate nothing; a single-table
    UPDATE or DELETE by primary key runs the range optimizer (one estimate) but a unique
    range is never dived (rows = 1), so it reads nothing in estimate; a join estimates each
    table's index that has a constant range (a: PRIMARY by id, b2: k; EXPLAIN names those)."""
    join = "SELECT count(*) FROM b.t a JOIN b.t b2 ON a.c = b2.c WHERE a.id < 100 AND b2.k < 100"
    assert [(r[2], r[4]) for r in server.query("EXPLAIN " + join)] in (
        [("a", "PRIMARY"), ("b2", "k")], [("b2", "k"), ("a", "PRIMARY")])
    stmts = {
        "point": ("SELECT c FROM b.t WHERE id = {i}", 0),
        "insert": ("INSERT INTO b.t (id, k, c) VALUES ({i} + 1000000, 1, 'i')", 0),
        "update": ("UPDATE b.t SET c = 'u' WHERE id = {i}", 1),
        "delete": ("DELETE FROM b.t WHERE id = {i} + 1000000", 1),
        "join": (join, 2),
    }

    def run(sql: str):
        def work(cur) -> None:
            for i in range(1, 21):
                cur.execute(sql.format(i=i))
            cur.execute("COMMIT")
        return work

    rec = tmp_path / "rec"
    _record(server, rec, [(name, run(sql)) for name, (sql, _) in stmts.items()])
    for name, (sql, per_query) in stmts.items():
        got = {q: v for q, v in _estimates(rec, name).items() if q and q.split()[0] in ("SELECT", "INSERT", "UPDATE",
                                                                                       "DELETE")
               and "ioattr:phase" not in q and q != "SELECT ?"}
        assert len(got) == 1 and list(got.values())[0] == (20, 20 * per_query), (name, got)
        if name != "join":
            assert _estimate_reads(rec, name) == {}, name

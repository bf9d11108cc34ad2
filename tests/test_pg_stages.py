"""Stages inside a PostgreSQL statement (bpf/pg_stage.bpf.h, ioattr/engines/postgres/stages.py) and the
planning-reads finding, on PostgreSQL 15 and 18, recorded with defaults.

Planted: a table `ends` (20,000 live rows, k = id, analyzed: the histogram of k ends at 20,000)
and 30,000 more rows with k past that end, deleted and not vacuumed: the index on k ends in
dead entries. After a restart (shared_buffers empty) one connection runs
  phase `inside`: SELECT pad FROM ends WHERE id = 7 AND (k > 100 OR pad IS NULL)    (inside the histogram)
  phase `past`:   SELECT pad FROM ends WHERE id = 9 AND (k > 40000 OR pad IS NULL)  (past its end)
Both run by the primary key (EXPLAIN checked after: an OR arm can't be scanned on ends_k alone),
so the k index is never executed; the planner still estimates the arm. For `k > 40000`
the planner asks get_actual_variable_range for k's actual maximum: it walks the index's end
from the right, over the dead entries, visiting their heap pages.

Ground truth: pg_statio idx_blks_read of ends_k and heap_blks_read of ends per phase (reads into
shared buffers, one 8 KiB pread each). Every ends_k read is in stage optimize, equal to
idx_blks_read x 8 KiB in each phase; the past phase reads far more of it; the table's reads per
phase equal heap_blks_read; execute reads ends_k never. explain (past against inside) supports
the planning-reads finding and names ends_k; the other way round its mirror.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from ioattr.host.pg_sandbox import PrivatePostgres
from tests.fixtures_postgres import started_cluster
from tests.helpers import Background, ioattr, report_json, wait_phase

PAGE = 8192
# k's range inside an OR: the planner estimates it (its selectivity), no plan can scan ends_k for it
QUERIES = {"inside": "SELECT pad FROM ends WHERE id = 7 AND (k > 100 OR pad IS NULL)",
           "past": "SELECT pad FROM ends WHERE id = 9 AND (k > 40000 OR pad IS NULL)"}
TEXT = "SELECT pad FROM ends WHERE id = ? AND (k > ? OR pad IS NULL)"
RUNS = 40  # statements per phase (the first plans cold; explain wants 30+ queries a phase)


@pytest.fixture(scope="module", params=[15, 18], ids=["pg15", "pg18"])
def planted(request: pytest.FixtureRequest) -> Iterator[PrivatePostgres]:
    for pg in started_cluster(request.param):
        pg.execute("CREATE TABLE ends (id int PRIMARY KEY, k int, pad text) WITH (autovacuum_enabled = off); "
                   "INSERT INTO ends SELECT g, g, md5(g::text) FROM generate_series(1, 20000) g; "
                   "CREATE INDEX ends_k ON ends (k); ANALYZE ends; "
                   "INSERT INTO ends SELECT g, g, md5(g::text) FROM generate_series(20001, 50000) g; "
                   "DELETE FROM ends WHERE id > 20000; CHECKPOINT")
        yield pg


def _statio(pg: PrivatePostgres) -> tuple[int, int]:
    """(ends_k idx_blks_read, ends heap_blks_read) as the server counts them now."""
    with pg.connect() as d:
        (idx,) = d.execute("SELECT idx_blks_read FROM pg_statio_all_indexes WHERE indexrelname = 'ends_k'").fetchone()
        (heap,) = d.execute("SELECT heap_blks_read FROM pg_statio_all_tables WHERE relname = 'ends'").fetchone()
    return int(idx), int(heap)


def _record(pg: PrivatePostgres, rec: Path) -> dict[str, tuple[int, int]]:
    """The planted phases, recorded with defaults; pg_statio's reads per phase."""
    pg.restart()
    truth: dict[str, tuple[int, int]] = {}
    bg = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "0.3")
    try:
        bg.wait_recording()
        assert "stages parse, optimize, execute" in bg.stderr, bg.stderr
        with pg.connect(sslmode="disable") as c:
            for phase, sql in QUERIES.items():
                c.execute(f"SELECT 'ioattr:phase={phase}'")
                wait_phase(rec, phase)
                c.execute("SELECT pg_stat_force_next_flush()")
                before = _statio(pg)
                for _ in range(RUNS):
                    c.execute(sql).fetchall()
                c.execute("SELECT pg_stat_force_next_flush()")
                after = _statio(pg)
                truth[phase] = (after[0] - before[0], after[1] - before[1])
            c.execute("SELECT 'ioattr:phase=end'")
            wait_phase(rec, "end")
            plans = {p: "\n".join(r[0] for r in c.execute("EXPLAIN " + q).fetchall()) for p, q in QUERIES.items()}
        code, err = bg.stop()
        assert code == 0, err
    finally:
        bg.stop()
    for phase, plan in plans.items():  # both by the primary key: the k index is never executed
        assert "ends_pkey" in plan and "ends_k" not in plan, (phase, plan)
    return truth


def test_planning_reads_are_their_own_stage(planted: PrivatePostgres, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    truth = _record(planted, rec)
    relations = json.loads((rec / "meta.json").read_text())["relations"]
    rows = report_json(rec, "--by", "phase,stage,query,file", "--layer", "syscall")["rows"]

    def reads(phase: str, relation: str) -> dict[str | None, int]:
        out: dict[str | None, int] = {}
        for r in rows:
            if (r["op"] == "read" and r["phase"] == phase
                    and (relations.get(r["file"]) or {}).get("relation") == relation):
                out[r["stage"]] = out.get(r["stage"], 0) + r["bytes"]
        return out

    for phase in QUERIES:
        idx_read, heap_read = truth[phase]
        k = reads(phase, "postgres.public.ends_k")
        # every read of the k index is the planner's, and pg_statio counts each one
        assert set(k) <= {"optimize"} and k.get("optimize", 0) == idx_read * PAGE, (phase, k, truth)
        heap = reads(phase, "postgres.public.ends")
        assert sum(heap.values()) == heap_read * PAGE, (phase, heap, truth)
        assert set(heap) <= {"optimize", "execute"}, (phase, heap)
    # past the histogram's end the planner walks the dead end of the index and visits the heap
    assert truth["past"][0] >= 10 and truth["past"][0] >= 5 * max(truth["inside"][0], 1), truth
    assert reads("past", "postgres.public.ends").get("optimize", 0) >= 10 * PAGE, rows
    # the statements' own rows: parse/optimize/execute, under their text
    stages = {r["stage"] for r in rows if r["query"] == TEXT and r["op"] == "read"}
    assert "optimize" in stages and stages <= {"parse", "optimize", "execute"}, stages

    # explain: the past phase's extra reads are planning reads the execution did not need
    for base, target, title in (("inside", "past", "Reads while queries are planned"),
                                ("past", "inside", "Fewer reads while queries are planned")):
        r = ioattr("explain", str(rec), "--baseline", base, "--target", target, "--format", "json")
        assert r.returncode == 0, r.stderr
        found = {f["id"]: f for f in json.loads(r.stdout)["findings"]}
        f = found["planning_reads"]
        assert f["verdict"] == "supported" and f["title"].startswith(title), f
        assert "ends_k" in f["evidence"]["probed_indexes"] and f["evidence"]["added_share"] >= 0.5, f
        # the planner's reads are not a scan's heap visits, nor shared buffers too small
        assert found["heap_fetches"]["verdict"] != "supported", found["heap_fetches"]
        assert found["working_set"]["verdict"] != "supported", found["working_set"]

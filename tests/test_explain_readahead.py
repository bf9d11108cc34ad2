"""explain tells InnoDB's read-ahead used (moved IO) from wasted (added IO): a planted scan whose
read-ahead is all used is not a cause.

A private MariaDB (8 MiB buffer pool, O_DIRECT) holds b.t, 100K rows of ~220 bytes (~1,400 leaf
pages, ~22 extents of 64 pages, loaded in key order so each extent's pages are in key order).
Recorded with defaults, two phases on one connection:

  points  200 point selects at random ids: about one page read each, no read-ahead (baseline);
  scan    the table read in key order by 40 consecutive ranges: linear read-ahead (threshold 56)
          reads each next extent before the scan gets there, and the scan reads every page of the
          table, so every page read ahead is one it then used (the known answer: all moved).

Ground truth: Innodb_buffer_pool_read_ahead, _read_ahead_evicted and Com_select around each phase.
explain points -> scan: the read-ahead is the scan's own reads issued early, so readahead_waste is
refuted and says "moved IO, not extra", its used pages per query InnoDB's own count.
The wasted (added) side is tested on stub evidence (tests/unit/test_findings_core.py): MariaDB
10.11 left Innodb_buffer_pool_read_ahead_evicted at 0 in a run planted to waste (random 2,000-row
ranges at innodb_read_ahead_threshold=8: 989 pages read ahead, ~1,860 pages evicted from the pool).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.helpers import assert_no_ioattr_programs, ioattr, record_marked_phases

ROWS = 100000
STATUS = ("Com_select", "Innodb_buffer_pool_read_ahead", "Innodb_buffer_pool_read_ahead_evicted")


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, int]]]:
    from tests import fixtures_mariadb

    rec = tmp_path_factory.mktemp("readahead") / "rec"
    rnd = random.Random(33)
    with fixtures_mariadb.private_server(
            "CREATE DATABASE b", "CREATE TABLE b.t (id INT PRIMARY KEY, c CHAR(200) NOT NULL) ENGINE=InnoDB",
            f"INSERT INTO b.t SELECT seq, MD5(seq) FROM b.seq_1_to_{ROWS}",
            buffer_pool="8M", extra_options={"innodb_stats_persistent": "OFF"}) as db:
        def points(cur) -> None:
            for _ in range(200):
                cur.execute(f"SELECT c FROM b.t WHERE id = {rnd.randint(1, ROWS)}")
                cur.fetchall()

        def scan(cur) -> None:
            step = ROWS // 40
            for lo in range(1, ROWS + 1, step):
                cur.execute(f"SELECT COUNT(c) FROM b.t WHERE id BETWEEN {lo} AND {lo + step - 1}")
                cur.fetchall()

        def status() -> dict[str, int]:
            return {n: db.status(n) for n in STATUS}

        truth = record_marked_phases(db, rec, [("points", points), ("scan", scan)],
                                     measure=status)
    assert_no_ioattr_programs()
    return rec, {p: {k: after[k] - before[k] for k in before} for p, (before, after) in truth.items()}


def _explain(rec: Path, target: str) -> tuple[dict, str]:
    args = (str(rec), "--baseline", "points", "--target", target)
    r = ioattr("explain", *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    t = ioattr("explain", *args)
    assert t.returncode == 0, t.stderr
    f = next(x for x in json.loads(r.stdout)["findings"] if x["id"] == "readahead_waste")
    return json.loads(r.stdout), f


def test_ground_truth(recording: tuple[Path, dict[str, dict[str, int]]]) -> None:
    _, truth = recording
    assert truth["points"]["Innodb_buffer_pool_read_ahead"] == 0, truth
    scan = truth["scan"]
    # the scan read most of the table ahead, and read every page of the table itself
    assert scan["Innodb_buffer_pool_read_ahead"] > 500, scan
    assert scan["Innodb_buffer_pool_read_ahead_evicted"] < 0.05 * scan["Innodb_buffer_pool_read_ahead"], scan


def test_read_ahead_the_scan_used_is_moved_io(recording: tuple[Path, dict[str, dict[str, int]]]) -> None:
    rec, truth = recording
    res, f = _explain(rec, "scan")
    assert res["significant"] and res["direction"] == "increase", res
    assert f["verdict"] == "refuted", f
    ev = f["evidence"]
    q = res["target"]["ops"]
    ra, wasted = truth["scan"]["Innodb_buffer_pool_read_ahead"], truth["scan"]["Innodb_buffer_pool_read_ahead_evicted"]
    assert ev["used_per_op_target"] == pytest.approx((ra - wasted) / q, rel=0.05), (ev, truth["scan"], q)
    assert ev["used_per_op_baseline"] == 0 and ev["wasted_per_op_baseline"] == 0, ev
    # most of the change is read-ahead the scan used: moved, not a cause
    assert ev["moved_share"] >= 0.15, ev
    assert ev["share_of_change"] < 0.03, ev
    assert "moved IO, not extra" in ev["summary"], ev["summary"]
    assert "used (moved" in ev["summary"] and "wasted (added" in ev["summary"], ev["summary"]

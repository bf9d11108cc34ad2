"""explain names InnoDB's background statistics recalculation when it is what changed.

Phases a and b of one recording (defaults, 8 MiB buffer pool, O_DIRECT) each run 400 point
selects on a small cached table; b runs a one-row INSERT into d.big first. d.big (100,000
rows) was loaded with innodb_stats_auto_recalc OFF, so the load's changes were counted and not
acted on; it is ON when the recording starts. b's INSERT finds more than a tenth of the table
changed since its statistics were taken, so InnoDB queues a background recalculation, which a
worker of its thread pool runs (at least 10 s after the last one): it samples d.big's two
indexes from storage (100 pages each, the table's STATS_SAMPLE_PAGES: with the default 20,
~30 reads, too few for explain to call significant) and writes mysql.innodb_table_stats and
innodb_index_stats. The phase waits until the statistics table says it ran.

Ground truth: mysql.innodb_table_stats.last_update (changed in b, not in a) and the server's
Innodb_data_reads over each phase's work (a: none; b: the INSERT's descents of d.big and the
sampling). Not Innodb_buffer_pool_reads: that leaves out read-ahead, which the sampling can set
off (a CI run: 234 storage IOs in b, every one in Innodb_data_reads).

  - explain --baseline a --target b: reads per query rose; background_tasks is supported and
    first and names the sampled indexes; its reads are the server's in b but for the INSERT's.
  - explain --baseline b --target a: the mirror, worded as less background IO.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import assert_no_ioattr_programs, explain_json_and_text, record_marked_phases, wait_until

ROWS = 100_000
SELECTS = 400


@pytest.fixture(scope="module")
def server():
    from tests.fixtures_mariadb import private_server

    with private_server("CREATE DATABASE d",
                        "CREATE TABLE d.big (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR(200) NOT NULL DEFAULT 'p', "
                        "KEY k (k)) ENGINE=InnoDB STATS_SAMPLE_PAGES=100",
                        f"INSERT INTO d.big (id, k) SELECT seq, (seq * 7919) % {ROWS} FROM d.seq_1_to_{ROWS}",
                        "CREATE TABLE d.h (id INT PRIMARY KEY, c INT NOT NULL) ENGINE=InnoDB",
                        "INSERT INTO d.h SELECT seq, seq FROM d.seq_1_to_100",
                        buffer_pool="8M", flush_method="O_DIRECT",
                        extra_options={"innodb_stats_auto_recalc": "OFF"}) as db:
        yield db
    assert_no_ioattr_programs()


def _last_update(db) -> str:
    return str(db.query("SELECT last_update FROM mysql.innodb_table_stats "
                        "WHERE database_name = 'd' AND table_name = 'big'")[0][0])


def test_a_statistics_recalculation_in_one_phase(server, tmp_path: Path) -> None:
    db = server
    stamps: dict[str, tuple[str, str]] = {}

    def work(cur, recalc: bool) -> None:
        before = _last_update(db)
        if recalc:
            cur.execute("INSERT INTO d.big (id, k) VALUES (%s, 7)", (ROWS + 1,))
            wait_until(lambda: _last_update(db) != before, 120, "InnoDB's background statistics recalculation",
                       interval=0.2)
        for i in range(SELECTS):
            cur.execute("SELECT c FROM d.h WHERE id = %s", (1 + i % 100,))
            cur.fetchall()
        stamps["b" if recalc else "a"] = (before, _last_update(db))

    for i in range(1, 101):  # the small table cached, as it will be in both phases
        db.query("SELECT c FROM d.h WHERE id = %s", (i,))
    db.query("SET GLOBAL innodb_stats_auto_recalc = ON")
    rec = tmp_path / "rec"
    try:
        truth = record_marked_phases(db, rec, [("a", lambda cur: work(cur, False)), ("b", lambda cur: work(cur, True))],
                                     measure=lambda: db.status("Innodb_data_reads"))
    finally:
        db.query("SET GLOBAL innodb_stats_auto_recalc = OFF")
    reads = {p: after - before for p, (before, after) in truth.items()}
    # ground truth: the recalculation ran in b only, and b read what a did and the sampling more
    assert stamps["a"][0] == stamps["a"][1] and stamps["b"][0] != stamps["b"][1], stamps
    assert reads["b"] >= reads["a"] + 100, reads

    res, text = explain_json_and_text(str(rec), "--baseline", "a", "--target", "b")
    assert res["direction"] == "increase" and res["significant"], res
    first = next(f for f in res["findings"] if f["verdict"] == "supported")
    ev = first["evidence"]
    assert first["id"] == "background_tasks", [(f["id"], f["verdict"]) for f in res["findings"]]
    assert ev["innodb_stats_auto_recalc"] == "ON", ev
    assert ev["share_of_change"] >= 0.8 and ev["baseline_per_op"] == 0, ev
    assert {"d.big.PRIMARY", "d.big.k"} <= set(ev["indexes"].split(", ")), ev
    # the tasks' reads are the server's reads in b but for the INSERT's: its descents of d.big's
    # two B-trees (PRIMARY three levels, k two) and an undo page or two, when the 8 MiB pool no
    # longer holds them after the load: up to ~8 (a CI run: 5). The evidence's per-query figure
    # is rounded, so the product is too.
    tasks_reads = round(ev["target_per_op"] * res["target"]["ops"])
    assert reads["b"] - 10 <= tasks_reads <= reads["b"], (tasks_reads, reads)
    assert "[SUPPORTED] InnoDB background tasks did the IO" in text, text
    assert "innodb_stats_auto_recalc=OFF" in " ".join(text.split()), text  # what to try

    res, text = explain_json_and_text(str(rec), "--baseline", "b", "--target", "a")
    assert res["direction"] == "decrease" and res["significant"], res
    first = next(f for f in res["findings"] if f["verdict"] == "supported")
    assert first["id"] == "background_tasks" and first["title"].startswith("Less IO by InnoDB background tasks"), \
        first

"""What each "per X" divides by (ioattr/model/per.py), against the benchmark's and the server's counts.

sysbench oltp_read_write with its defaults (1 thread, server-side prepared statements) wrapped by
`ioattr record --ops-pattern`: the phase's statements are the queries sysbench printed (BEGIN,
COMMIT and every prepared execution: Questions less ioattr's own), its SELECTs sysbench's reads,
its transactions sysbench's, and its operations sysbench's own events, so KB per event is
ioattr's bytes over sysbench's total events.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import need_tool
from tests.helpers import IOATTR, assert_rate, report_json

ROWS = 10000
EVENTS = 300
COUNTERS = ("Questions", "Com_select", "Com_commit", "Com_rollback", "Com_stmt_execute")


@pytest.fixture(scope="module")
def server() -> Iterator:
    from tests.fixtures_mariadb import private_server

    need_tool("sysbench")
    with private_server() as db:
        db.sysbench("oltp_read_write", "prepare", table_size=ROWS)
        yield db


def _status(db) -> dict[str, int]:  # type: ignore[no-untyped-def]
    rows = db.query("SHOW GLOBAL STATUS WHERE Variable_name IN (%s)" % ", ".join(f"'{c}'" for c in COUNTERS))
    return {str(k): int(v) for k, v in rows}


def _sysbench_counts(out: str) -> dict[str, int]:
    """What sysbench printed: queries by kind, transactions, its events."""
    got = {}
    for key, pattern in (("read", r"read:\s+(\d+)"), ("write", r"write:\s+(\d+)"), ("other", r"other:\s+(\d+)"),
                         ("total", r"total:\s+(\d+)"), ("transactions", r"transactions:\s+(\d+)"),
                         ("events", r"total number of events:\s+(\d+)"), ("errors", r"ignored errors:\s+(\d+)")):
        m = re.search(pattern, out)
        assert m, (key, out)
        got[key] = int(m.group(1))
    return got


def test_statements_selects_transactions_and_ops_are_the_benchmarks(server, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    before = _status(server)
    run = subprocess.run([IOATTR, "record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.5",
                          "--ops-pattern", r"total number of events:\s+(\d+)", "--",
                          "sysbench", "oltp_read_write", "--db-driver=mysql", f"--mysql-socket={server.socket}",
                          "--mysql-user=root", "--mysql-db=sbtest", f"--table-size={ROWS}", f"--events={EVENTS}",
                          "--time=0", "run"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    grew = {k: v - before[k] for k, v in _status(server).items()}
    bench = _sysbench_counts(run.stdout)
    assert bench["events"] == bench["transactions"] == EVENTS and bench["errors"] == 0, bench
    # sysbench's queries are statements: each one a prepared execution, BEGIN and COMMIT included
    assert bench["total"] == 20 * EVENTS and bench["read"] == 14 * EVENTS, bench
    assert grew["Com_stmt_execute"] == bench["total"], (grew, bench)
    assert "fallback" not in run.stderr, run.stderr  # the wire counted every statement in clear

    rep = report_json(rec, "--by", "phase")
    [s] = rep["summary"]
    # ioattr's own statements (its counters, names, roles) are taken off: exactly the benchmark's,
    # and its connection's COM_QUIT, which the server counts as a Question (the wire saw it)
    import duckdb

    quits = duckdb.connect().execute("SELECT sum(count) FROM read_parquet(?, union_by_name = true) "
                                     "WHERE command = 'quit'", [str(rec / "statements" / "*.parquet")]).fetchone()[0]
    assert quits == 1 and s["statements"] == bench["total"] + quits, (s, bench, grew, quits)
    assert s["selects"] == bench["read"], (s, bench, grew)
    # 1 row inserted in 20 statements: an OLTP mix, not a load (no "bulk:" terms)
    assert s["bulk"] is None, s
    assert s["transactions"] == bench["transactions"] == grew["Com_commit"], (s, grew)
    assert grew["Questions"] > s["statements"] and grew["Com_select"] > s["selects"], grew  # ioattr's own
    # rates over the phase's seconds (the JSON's "seconds" is rounded to ms)
    assert_rate(s["qps"], s["selects"], s["seconds"], s)
    assert_rate(s["statements_per_s"], s["statements"], s["seconds"], s)
    # the benchmark's own operations, from its output: KB per event = ioattr's bytes / sysbench's events
    assert s["ops"] == EVENTS, s
    assert_rate(s["ops_per_s"], EVENTS, s["seconds"], s)
    rows = report_json(rec, "--by", "phase,file_class,query", "--layer", "syscall")["rows"]
    from ioattr.model import storage

    written = sum(r["bytes"] for r in rows if r["op"] == "write" and storage.is_storage(r["layer"], r["file_class"])
                  and r["query"] != storage.INTERNAL_QUERY_LABEL)
    assert written > 0 and s["kb_written_per_op"] == storage.sig(written / 1024 / EVENTS, 4), (s, written)
    assert s["reads_per_op"] == storage.sig(s["storage_reads"] / EVENTS, 4), s

    # every table names its denominators; compare shows the same per-op figures
    text = subprocess.run([IOATTR, "report", str(rec), "--by", "phase"], capture_output=True, text=True,
                          check=True).stdout
    assert "legend: qps: SELECTs per second" in text and "stmt/s" in text and "KB w/op" in text, text
    cmp = json.loads(subprocess.run([IOATTR, "compare", str(rec), "--format", "json"], capture_output=True,
                                    text=True, check=True).stdout)
    [row] = cmp["rows"]
    assert (row["statements"], row["queries"], row["ops"]) == (bench["total"] + quits, bench["read"], EVENTS), row
    assert row["kb_written_per_op"] == s["kb_written_per_op"], (row, s)
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["phases"][0]["ops"] == EVENTS and meta["ops_pattern"], meta["phases"]


def test_ops_given_at_marks(server, tmp_path: Path) -> None:
    """`ioattr mark --ops N`: the benchmark's own count, given at a mark, is the phase in force's
    (the one the mark's PHASE ends), added up; alone it starts no phase; before --stop it is the
    last phase's. A phase given none has none (null: unknown, not 0)."""
    from tests.helpers import Background

    def mark(*args: str) -> None:
        r = subprocess.run([IOATTR, "mark", "--recording", str(rec), *args], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr

    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.5", "--phase", "warm")
    try:
        bg.wait_recording()
        mark("run")
        out = server.sysbench("oltp_read_write", "run", table_size=ROWS, events=100, time=0).stdout
        events = _sysbench_counts(out)["events"]
        mark("idle", "--ops", str(events))
        mark("--ops", "2.5")  # alone: added to idle, no phase starts
        mark("--ops", "4", "--stop")
        assert bg.proc.wait(timeout=60) == 0, bg.stderr
    finally:
        code, err = bg.stop()
    assert code == 0, err
    meta = json.loads((rec / "meta.json").read_text())
    assert [(p["name"], p.get("ops")) for p in meta["phases"]] == [("warm", None), ("run", 100), ("idle", 6.5)], \
        meta["phases"]
    assert events == 100
    by_name = {s["phase"]: s for s in report_json(rec, "--by", "phase")["summary"]}
    assert by_name["warm"]["ops"] is None and by_name["warm"]["kb_written_per_op"] is None, by_name["warm"]
    run = by_name["run"]
    assert run["ops"] == 100, run
    assert_rate(run["ops_per_s"], 100, run["seconds"], run)
    from ioattr.model import storage

    assert run["reads_per_op"] == storage.sig(run["storage_reads"] / 100, 4), run

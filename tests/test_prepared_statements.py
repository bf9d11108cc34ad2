"""Server-side prepared statements (the MySQL binary protocol; bpf/mysql_wire.bpf.h): sysbench
with its defaults prepares each statement once per connection (COM_STMT_PREPARE) and runs it
by id (COM_STMT_EXECUTE). Each execution gets its statement's digest and normalised text:

- the executions over all digests add up to the server's Com_stmt_execute, exactly (the whole
  sysbench run, its prepares included, inside the recording: counters read before and after);
- each digest's reads are its table's reads in performance_schema.file_summary_by_instance
  (or a read or two more: helpers.assert_ps_lower_bound)
  (oltp_point_select over two tables from a cold buffer pool: each statement reads one table);
- with 64 connections, one thread each and on MariaDB's thread pool with 2 OS threads (many
  connections' statements on one thread: nothing carried over from another connection's);
- statements prepared before the recording started are counted under one label, no text.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import need_tool
from tests.helpers import IOATTR, Background, assert_ps_lower_bound, report_json

TABLES = 2
ROWS = 20000
THREADS = 64
EVENTS = 3000
PAGE = 16384  # every read of these tables is one InnoDB page


@pytest.fixture(scope="module")
def server() -> Iterator:
    from tests.fixtures_mariadb import private_server

    need_tool("sysbench")
    # 256 sysbench connections (+ ioattr's): above the default max_connections (151)
    with private_server(buffer_pool="16M", extra_options={"max_connections": "400"}) as db:
        db.sysbench("oltp_point_select", "prepare", tables=TABLES, table_size=ROWS, threads=TABLES)
        yield db


def _file_reads(db) -> dict[str, tuple[int, int]]:  # type: ignore[no-untyped-def]
    """table -> (reads, bytes read) of its .ibd file, as performance_schema counted them."""
    rows = db.query("SELECT FILE_NAME, COUNT_READ, SUM_NUMBER_OF_BYTES_READ "
                    "FROM performance_schema.file_summary_by_instance WHERE FILE_NAME LIKE '%/sbtest/sbtest%.ibd'")
    return {Path(f).stem: (int(n), int(b)) for f, n, b in rows}


def _statements(rec: Path) -> dict[str, int]:
    """The recording's statement counts by normalised text (or command name)."""
    import duckdb

    rows = duckdb.connect().execute(
        "SELECT coalesce(query, command), sum(count) FROM read_parquet(?, union_by_name = true) GROUP BY ALL",
        [str(rec / "statements" / "*.parquet")]).fetchall()
    return {q: int(n) for q, n in rows}


def _record_run(db, rec: Path, threads: int) -> tuple[dict[str, int], dict]:  # type: ignore[no-untyped-def]
    """A cold buffer pool, then a recording around a whole sysbench run (connect, prepare,
    execute, close): the server's counters' growth over it."""
    db.restart()
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.5")
    try:
        bg.wait_recording()
        execs, files = db.status("Com_stmt_execute"), _file_reads(db)
        db.sysbench("oltp_point_select", "run", tables=TABLES, table_size=ROWS, threads=threads, events=EVENTS)
        execs, files_after = db.status("Com_stmt_execute") - execs, _file_reads(db)
    finally:
        code, err = bg.stop()
    assert code == 0, err
    grew = {t: (files_after[t][0] - files.get(t, (0, 0))[0], files_after[t][1] - files.get(t, (0, 0))[1])
            for t in files_after}
    return {"Com_stmt_execute": execs}, grew


def _check(rec: Path, execs: int, grew: dict) -> None:
    counted = _statements(rec)
    mine = {q: n for q, n in counted.items() if q.startswith("SELECT c FROM sbtest")}
    # one digest per table, with its text; every execution there, none unlabelled
    assert sorted(mine) == [f"SELECT c FROM sbtest{t} WHERE id=?" for t in range(1, TABLES + 1)], counted
    assert sum(mine.values()) == execs == EVENTS, (mine, execs)
    assert "[prepared before the recording]" not in counted and "[prepared statement, id not kept]" not in counted
    assert "stmt_execute" not in counted, counted
    # report --by query gives each row its statement's executions, and IO per execution
    by_query = report_json(rec, "--by", "query", "--layer", "syscall")["rows"]
    reads = {r["query"]: r for r in by_query if r["op"] == "read" and r["query"] in mine}
    assert {q: r["executions"] for q, r in reads.items()} == mine, by_query
    for r in reads.values():
        assert r["bytes_per_execution"] == round(r["bytes"] / r["executions"], 1), r
    # each statement's reads are its table's, to the byte
    rows = report_json(rec, "--by", "query,file", "--layer", "syscall")["rows"]
    for t in range(1, TABLES + 1):
        got = [r for r in rows if r["op"] == "read" and (r["file"] or "").endswith(f"/sbtest{t}.ibd")]
        by_query = {r["query"]: (r["count"], r["bytes"]) for r in got}
        assert list(by_query) == [f"SELECT c FROM sbtest{t} WHERE id=?"], (t, by_query)
        (count, nbytes), = by_query.values()
        # 64 connections read one file at once: performance_schema may have lost an increment
        assert_ps_lower_bound(count, grew[f"sbtest{t}"][0], 1, (t, "reads", by_query, grew))
        assert_ps_lower_bound(nbytes, grew[f"sbtest{t}"][1], PAGE, (t, "bytes", by_query, grew))
        assert grew[f"sbtest{t}"][0] > 50, grew  # the cold pool made each statement read


def test_sysbench_defaults_each_execution_under_its_digest(server, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    counters, grew = _record_run(server, rec, THREADS)
    _check(rec, counters["Com_stmt_execute"], grew)
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["statement_sources"][str(server.pid)]["source"] == "wire", meta["statement_sources"]


def test_thread_pool_with_fewer_threads_than_connections(server, tmp_path: Path) -> None:
    """MariaDB's thread pool: 64 connections' statements on 2 OS threads, which read one
    connection's execute and another's next: each execution still gets its own statement."""
    # thread_pool_max_threads bounds the workers a group adds while the others wait for reads
    # (one every thread_pool_stall_limit: on a loaded host, 18 of them in 64 connections' run)
    server.extra_options.update({"thread_handling": "pool-of-threads", "thread_pool_size": "2",
                                 "thread_pool_max_threads": str(THREADS // 4)})
    server._write_config()
    try:
        rec = tmp_path / "rec"
        counters, grew = _record_run(server, rec, THREADS)
        assert server.query("SELECT @@thread_handling, @@thread_pool_size, @@thread_pool_max_threads") == [
            ("pool-of-threads", 2, THREADS // 4)]
    finally:
        for k in ("thread_handling", "thread_pool_size", "thread_pool_max_threads"):
            server.extra_options.pop(k)
        server._write_config()
    _check(rec, counters["Com_stmt_execute"], grew)
    # the statements ran on the pool's threads (2 groups; a group adds a worker while its
    # others wait for reads, up to thread_pool_max_threads), each serving many connections
    threads = {r["thread"] for r in report_json(rec, "--by", "query,thread")["rows"]
               if (r["query"] or "").startswith("SELECT c FROM sbtest")}
    # (a worker that retires is replaced by one with a new id: distinct ids may pass the bound a
    # little; half the connections' count still says each served several)
    assert 1 <= len(threads) <= THREADS // 2, threads


def test_prepared_before_the_recording_counted_under_one_label(server, tmp_path: Path) -> None:
    """A sysbench run that prepared its statements before the recording started: its
    executions are counted under one label, with no text, none under another statement's."""
    import time

    rec = tmp_path / "rec"
    run = subprocess.Popen(["sysbench", "oltp_point_select", "--db-driver=mysql", f"--mysql-socket={server.socket}",
                            "--mysql-user=root", "--mysql-db=sbtest", f"--tables={TABLES}", f"--table-size={ROWS}",
                            "--threads=4", "--time=60", "run"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # prepared: the first executions ran (every connection prepares before its first)
        deadline = time.monotonic() + 30
        while server.status("Com_stmt_execute") < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.5")
        try:
            bg.wait_recording()
            start = server.status("Com_stmt_execute")
            while server.status("Com_stmt_execute") < start + 200 and time.monotonic() < deadline + 30:
                time.sleep(0.05)
        finally:
            code, err = bg.stop()
        assert code == 0, err
    finally:
        run.terminate()
        run.wait(30)
    counted = _statements(rec)
    assert counted.get("[prepared before the recording]", 0) >= 200, counted
    assert not any(q.startswith("SELECT c FROM sbtest") for q in counted), counted
    assert "[prepared statement, id not kept]" not in counted, counted
    rows = report_json(rec, "--by", "query")["rows"]
    # the label's IO rows (there are none when every page it read was cached: the module's
    # server may be warm by now) carry its executions
    labelled = [r for r in rows if r["query"] == "[prepared before the recording]"]
    assert all(r["executions"] == counted["[prepared before the recording]"] for r in labelled), rows


def _table_fetches(db) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """table -> rows fetched, as performance_schema counted them (a point select fetches one)."""
    rows = db.query("SELECT OBJECT_NAME, COUNT_FETCH FROM performance_schema.table_io_waits_summary_by_table "
                    "WHERE OBJECT_SCHEMA = 'sbtest'")
    return {str(t): int(n) for t, n in rows}


def test_top_executions_per_digest_at_256_threads_on_the_thread_pool(server) -> None:
    """`ioattr top --batch --format json`, queries view, while sysbench with its defaults runs 256
    connections on MariaDB's thread pool (2 groups: each OS thread reads many connections'
    executes): each statement's executions (the count behind EXEC/s) are its table's point
    selects, they add up to Com_stmt_execute, and each statement's reads are its table's file's
    (nothing carried over to another connection's statement on the same thread)."""
    threads, events = 256, 2000
    server.extra_options.update({"thread_handling": "pool-of-threads", "thread_pool_size": "2"})
    server._write_config()
    top = None
    try:
        server.restart()  # and a cold buffer pool
        for t in range(1, TABLES + 1):  # the tables opened: their dictionary and statistics reads done
            server.query(f"SELECT COUNT(*) FROM sbtest.sbtest{t} WHERE id = 0")
        top = subprocess.Popen([IOATTR, "top", "--pid", str(server.pid), "--batch", "--format", "json", "--by",
                                "query", "--interval", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
        snaps = [json.loads(top.stdout.readline() or "null")]  # attached: the first interval is out
        assert snaps[0] is not None, top.stderr.read() if top.poll() is not None else "no snapshot"
        execs, files, fetches = server.status("Com_stmt_execute"), _file_reads(server), _table_fetches(server)
        server.sysbench("oltp_point_select", "run", tables=TABLES, table_size=ROWS, threads=threads, events=events)
        execs = server.status("Com_stmt_execute") - execs
        files = {t: n - files.get(t, (0, 0))[0] for t, (n, _) in _file_reads(server).items()}
        fetches = {t: n - fetches.get(t, 0) for t, n in _table_fetches(server).items()}
        ended = time.time()
        while snaps[-1]["start"] < ended:  # a snapshot that began after the run: every execution is in one
            line = top.stdout.readline()
            assert line, top.stderr.read()
            snaps.append(json.loads(line))
        assert server.query("SELECT @@thread_handling, @@thread_pool_size") == [("pool-of-threads", 2)]
    finally:
        if top is not None and top.poll() is None:
            top.terminate()
            top.wait(30)
        for k in ("thread_handling", "thread_pool_size"):
            server.extra_options.pop(k)
        server._write_config()
    got: dict[str, list[float]] = {}
    for snap in snaps:
        for row in snap["views"]["queries"]:
            n = got.setdefault(row["name"], [0, 0.0])
            n[0] += row["executions"] or 0
            n[1] += row["r"] * snap["seconds"]
    mine = {q: v for q, v in got.items() if q.startswith("SELECT c FROM sbtest")}
    assert sorted(mine) == [f"SELECT c FROM sbtest{t} WHERE id=?" for t in range(1, TABLES + 1)], got
    assert execs == events and sum(v[0] for v in mine.values()) == execs, (mine, execs)
    assert not any("prepared" in q for q in got), got  # no execution without its statement
    for t in range(1, TABLES + 1):
        execs_t, reads_t = mine[f"SELECT c FROM sbtest{t} WHERE id=?"]
        assert execs_t == fetches[f"sbtest{t}"], (t, mine, fetches)
        assert round(reads_t) == files[f"sbtest{t}"] > 20, (t, mine, files)

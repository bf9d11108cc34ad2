"""InnoDB awareness against the engine's own counters, on a cold buffer pool.

Ground truth: INFORMATION_SCHEMA.INNODB_METRICS buffer_page_read_* and
buffer_page_written_* (module_buffer_page enabled at start-up), which count
every page InnoDB reads or writes by type and B-tree level.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers import Background, assert_no_ioattr_programs, ioattr, report_json

ROWS = 120000
PAGE_METRICS = ("index_leaf", "index_non_leaf", "undo_log", "blob", "system_page")


@pytest.fixture(scope="module")
def server():
    """A private server with page monitors on and a table bigger than its buffer pool."""
    from tests.fixtures_mariadb import private_server

    with private_server("CREATE DATABASE bench",
                        "CREATE TABLE bench.t (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(200) NOT NULL, "
                        "KEY k (k)) ENGINE=InnoDB",
                        "INSERT INTO bench.t SELECT seq, (seq * 7919) % 100000, REPEAT('x', 200) "
                        f"FROM bench.seq_1_to_{ROWS}",
                        buffer_pool="8M", extra_options={"innodb_monitor_enable": "module_buffer_page",
                                                         "innodb_stats_persistent": "OFF"}) as db:
        yield db


def metrics(db, prefix: str) -> dict[str, int]:
    rows = db.query("SELECT NAME, COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS WHERE NAME LIKE %s",
                    (prefix + "%",))
    return {name[len(prefix):]: int(count) for name, count in rows}


def record_queries(db, tmp: Path, statements: list[str], *extra: str,
                   flush: bool = False) -> tuple[Path, dict, dict]:
    """Cold restart, record while running statements; return (rec, read deltas, write deltas)."""
    db.restart()
    # open the table (and sample its statistics) before measuring: that is not the scan's IO
    db.query("SELECT id FROM bench.t WHERE id = 1")
    rec = tmp / f"rec-{time.monotonic_ns()}"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3", *extra)
    bg.wait_recording()
    r0, w0 = metrics(db, "buffer_page_read_"), metrics(db, "buffer_page_written_")
    for sql in statements:
        db.query(sql)
    if flush:
        db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
        db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        deadline = time.monotonic() + 60
        while db.status("Innodb_buffer_pool_pages_dirty") > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
    time.sleep(0.5)
    code, err = bg.stop()
    assert code == 0, err
    # read the engine's counters after the recorder's final drain: the server is quiet by
    # now (nothing dirty), so both cover the same window
    r1, w1 = metrics(db, "buffer_page_read_"), metrics(db, "buffer_page_written_")
    return rec, {k: r1[k] - r0.get(k, 0) for k in r1}, {k: w1[k] - w0.get(k, 0) for k in w1}


def pages_by(rec: Path, *dims: str, op: str = "read") -> dict[tuple, int]:
    rep = report_json(rec, "--by", ",".join(dims))
    out: dict[tuple, int] = {}
    for row in rep["rows"]:
        if row["op"] == op and row["pages"]:  # rows of IO without pages (redo, fsync...) are not pages
            key = tuple(row[d] for d in dims)
            out[key] = out.get(key, 0) + row["pages"]  # InnoDB pages (count: IO operations)
    return out


def test_secondary_index_scan_reads_that_index(server, tmp_path: Path) -> None:
    rec, reads, _ = record_queries(server, tmp_path, ["SELECT COUNT(*) FROM bench.t FORCE INDEX (k)"])
    by_index = pages_by(rec, "index", "page_type")
    index_pages = {k: v for k, v in by_index.items() if k[1] == "index"}
    total = sum(index_pages.values())
    assert total > 100, by_index
    assert by_index.get(("bench.t.k", "index"), 0) >= 0.95 * total, by_index
    # leaf / non-leaf agree with the engine's counters
    by_level = pages_by(rec, "level")
    for level, metric in (("leaf", "index_leaf"), ("non_leaf", "index_non_leaf")):
        want = reads[metric]
        assert abs(by_level.get((level,), 0) - want) <= max(2, 0.02 * want), (level, by_level, reads)


def test_clustered_scan_reads_primary(server, tmp_path: Path) -> None:
    rec, reads, _ = record_queries(server, tmp_path,
                                   ["SELECT COUNT(*), SUM(LENGTH(c)) FROM bench.t FORCE INDEX (PRIMARY)"])
    by_index = pages_by(rec, "index", "page_type")
    total = sum(v for k, v in by_index.items() if k[1] == "index")
    assert total > 1000, by_index
    assert by_index.get(("bench.t.PRIMARY", "index"), 0) >= 0.95 * total, by_index
    by_level = pages_by(rec, "level")
    assert abs(by_level.get(("leaf",), 0) - reads["index_leaf"]) <= max(2, 0.02 * reads["index_leaf"])
    # a scan this size is mostly read-ahead, issued asynchronously: classified just as exactly
    by_api = pages_by(rec, "api", "index")
    assert by_api.get(("io_uring", "bench.t.PRIMARY"), 0) > 0.5 * by_index[("bench.t.PRIMARY", "index")], by_api


def test_non_covering_range_reads_primary_under_its_digest(server, tmp_path: Path) -> None:
    covering = "SELECT k FROM bench.t WHERE k BETWEEN 20000 AND 60000"
    non_covering = "SELECT c FROM bench.t WHERE k BETWEEN 20000 AND 60000"
    rec, _, _ = record_queries(server, tmp_path, [covering, non_covering], "--stages", "full")
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["stages"] == "full", meta
    # the 8 stage uprobes; statements start from the wire reader (no dispatch_command uprobe)
    assert meta["servers"][0]["stage_probes"].startswith("attached 8 uprobes"), meta["servers"]
    assert "statements from the wire" in meta["servers"][0]["stage_probes"], meta["servers"]
    got = pages_by(rec, "query", "stage", "index", "level")
    cov = {k: v for k, v in got.items() if k[0] and k[0].startswith("SELECT k FROM")}
    non = {k: v for k, v in got.items() if k[0] and k[0].startswith("SELECT c FROM")}
    assert cov and non, got
    assert not any(k[2] == "bench.t.PRIMARY" and k[3] == "leaf" for k in cov), cov
    primary_exec = sum(v for k, v in non.items()
                       if k[1] == "execute" and k[2] == "bench.t.PRIMARY" and k[3] == "leaf")
    assert primary_exec > 20, non
    # literals never reach the recording
    assert all("20000" not in (k[0] or "") for k in got), got


def test_default_stages_give_digests_with_stage_null(server, tmp_path: Path) -> None:
    """--stages statement (the default): 4 uprobes, none hit by a plain statement (two per index
    the optimizer estimates ranges in), statements from the wire reader; IO inside a statement has its digest and role, and
    its stage is null (not traced), never `parse`, except the optimizer's index dives
    (`estimate`, reads of the index whose range it estimates)."""
    non_covering = "SELECT c FROM bench.t WHERE k BETWEEN 30000 AND 70000"
    rec, _, _ = record_queries(server, tmp_path, [non_covering])
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["stages"] == "statement", meta
    assert meta["servers"][0]["stage_probes"].startswith("attached 4 uprobes"), meta["servers"]
    assert meta["statement_sources"] == {str(meta["servers"][0]["pid"]): {"source": "wire",
                                                                          "why": "--statements auto"}}, meta
    got = pages_by(rec, "query", "stage", "role", "index", "level")
    mine = {k: v for k, v in got.items() if k[0] and k[0].startswith("SELECT c FROM")}
    assert sum(v for k, v in mine.items() if k[3] == "bench.t.PRIMARY" and k[4] == "leaf") > 20, got
    assert {k[1] for k in mine} <= {None, "estimate"}, mine  # stage: not traced, so null
    assert {k[3] for k in mine if k[1] == "estimate"} <= {"bench.t.k"}, mine  # the range's dive
    assert {k[2] for k in mine} == {"connection"}, mine    # the role still comes from the statement start
    assert not any(k[1] in ("parse", "optimize", "execute", "commit") for k in got), got
    # the report says why the stage is null
    rep = report_json(rec, "--by", "query,stage")
    assert rep["stages"] == "statement"
    text = ioattr("report", str(rec), "--by", "query,stage").stdout
    assert "--stages full" in " ".join(text.split()), text


def test_page_writes_match_engine_and_roles(server, tmp_path: Path) -> None:
    rec, _, written = record_queries(server, tmp_path, [
        "UPDATE bench.t SET c = REPEAT('y', 200) WHERE id % 7 = 0",
    ], flush=True)
    ours = pages_by(rec, "level", "file_class", op="write")
    leaf = sum(v for k, v in ours.items() if k[0] == "leaf" and k[1] == "tablespace")
    want = written["index_leaf"]
    assert want > 50
    assert abs(leaf - want) <= max(3, 0.02 * want), (ours, written)
    writers = pages_by(rec, "role", "page_type", op="write")
    readers = pages_by(rec, "role", "page_type")
    # page writes come from background threads, the UPDATE's reads from the connection
    assert not any(k[0] == "connection" for k in writers), writers
    assert readers.get(("connection", "index"), 0) > 0, readers
    assert writers.get(("page_cleaner", "index"), 0) > 0, writers
    # doublewrite copies are seen and told apart
    assert any(k[1] == "doublewrite" for k in ours), ours


def test_roles_on_a_mixed_workload(server, tmp_path: Path) -> None:
    """Connections read, purge cleans up after the DELETE, the page cleaner writes.

    (Runs last in this module: it deletes rows.)"""
    def history(db) -> int:
        return int(db.query("SELECT COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS "
                            "WHERE NAME = 'trx_rseg_history_len'")[0][0])

    server.restart()
    server.query("SET GLOBAL innodb_monitor_enable = 'trx_rseg_history_len'")
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3")
    bg.wait_recording()
    server.query("DELETE FROM bench.t WHERE id % 3 = 0")
    deadline = time.monotonic() + 60
    while history(server) > 0 and time.monotonic() < deadline:
        time.sleep(0.3)
    server.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    while server.status("Innodb_buffer_pool_pages_dirty") > 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    code, err = bg.stop()
    assert code == 0, err
    reads = pages_by(rec, "role", "page_type")
    writes = pages_by(rec, "role", "page_type", op="write")
    assert reads.get(("connection", "index"), 0) > 100, reads
    purge = sum(v for k, v in reads.items() if k[0] == "purge")
    assert purge > 0, reads  # purge had to read secondary-index pages to remove delete-marked entries
    assert writes.get(("page_cleaner", "index"), 0) > 0, writes
    assert not any(k[0] == "connection" for k in writes), writes


def test_no_programs_left_after_innodb_runs() -> None:
    assert_no_ioattr_programs()

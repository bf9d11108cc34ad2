"""Bulk loads and index builds on InnoDB (issue 17), against the engine's own counters.

- Compressed tables (ROW_FORMAT=COMPRESSED, every KEY_BLOCK_SIZE) are classified like any other:
  a cold scan's pages per index and level equal INNODB_METRICS buffer_page_read_index_*, each of
  the table's physical page size. PAGE_COMPRESSED=1 pages (their index header is compressed) are
  charged to their table.
- Tables created while recording are classified from their first write (their page 0 is not on
  disk yet: the geometry comes from the server's dictionary), and objects created during a
  recording are named while they exist, so the names stay for their IO after a DROP.

Ground truth: INFORMATION_SCHEMA.INNODB_METRICS (module_buffer_page on at start-up) and the
recorder's own io rows (page bytes of a file equal its syscall bytes).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers import Background, assert_no_ioattr_programs, report_json, wait_phase, wait_until

ROWS = 6000
BLOCK_SIZES = (1, 2, 4, 8, 16)


@pytest.fixture(scope="module")
def server():
    """A private server with page monitors on, Archive loaded and a small sort buffer."""
    from tests.fixtures_mariadb import private_server

    setup = ["CREATE DATABASE bench"]
    for kbs in BLOCK_SIZES:
        setup += [f"CREATE TABLE bench.z{kbs} (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120) NOT NULL, "
                  f"KEY k (k)) ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE={kbs}",
                  f"INSERT INTO bench.z{kbs} SELECT seq, (seq * 7919) % 10007, CONCAT(REPEAT('c', 60), seq) "
                  f"FROM bench.seq_1_to_{ROWS}"]
    setup += ["CREATE TABLE bench.pc (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120) NOT NULL) "
              "ENGINE=InnoDB PAGE_COMPRESSED=1",
              f"INSERT INTO bench.pc SELECT seq, seq % 100, CONCAT(REPEAT('c', 60), seq) FROM bench.seq_1_to_{ROWS}"]
    with private_server(*setup, buffer_pool="32M",
                        extra_options={"innodb_monitor_enable": "module_buffer_page",
                                       "innodb_stats_persistent": "OFF",
                                       "plugin-load-add": "ha_archive.so",
                                       "innodb_sort_buffer_size": "65536"}) as db:
        yield db


def metrics(db, prefix: str) -> dict[str, int]:
    rows = db.query("SELECT NAME, COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS WHERE NAME LIKE %s",
                    (prefix + "%",))
    return {name[len(prefix):]: int(count) for name, count in rows}


def rows_of(rec: Path, *dims: str, layer: str = "syscall") -> list[dict]:
    return report_json(rec, "--by", ",".join(dims), "--layer", layer)["rows"]


def wait_clean(db, timeout: float = 60) -> None:
    """Make the page cleaner write every dirty page, then wait until none is left."""
    db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    wait_until(lambda: db.status("Innodb_buffer_pool_pages_dirty") == 0, timeout,
               "the buffer pool to have no dirty pages", interval=0.1)


def test_compressed_tables_cold_scan_pages_per_index_and_level(server, tmp_path: Path) -> None:
    """KEY_BLOCK_SIZE 1..16 and PAGE_COMPRESSED=1: a cold scan of each table (its own phase)
    reads exactly the index pages INNODB_METRICS counts, leaf and non-leaf, named by index, of
    the table's physical page size; PAGE_COMPRESSED pages are the table's."""
    tables = [f"z{k}" for k in BLOCK_SIZES] + ["pc"]
    server.restart()
    for t in tables:  # open each table (its root and first leaf): not the scans' IO
        server.query(f"SELECT id FROM bench.{t} WHERE id = 1")
    rec = tmp_path / "rec"
    truth: dict[str, tuple[dict, dict]] = {}
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3")
    try:
        bg.wait_recording()
        conn = server.connect()
        with conn.cursor() as cur:
            for t in tables:
                cur.execute(f"SELECT 'ioattr:phase={t}'")
                wait_phase(rec, t)
                before = metrics(server, "buffer_page_read_")
                cur.execute(f"SELECT COUNT(*), SUM(LENGTH(c)) FROM bench.{t} FORCE INDEX (PRIMARY)")
                if t != "pc":
                    cur.execute(f"SELECT COUNT(*) FROM bench.{t} FORCE INDEX (k)")
                truth[t] = (before, metrics(server, "buffer_page_read_"))
            cur.execute("SELECT 'ioattr:phase=end'")
            wait_phase(rec, "end")
        conn.close()
    finally:
        code, err = bg.stop()
    assert code == 0, err
    rows = [r for r in rows_of(rec, "phase", "file", "index", "level", "page_type")
            if r["op"] == "read" and r["pages"]]
    for kbs in BLOCK_SIZES:
        t = f"z{kbs}"
        before, after = truth[t]
        want = {lvl: after[m] - before[m] for lvl, m in (("leaf", "index_leaf"), ("non_leaf", "index_non_leaf"))}
        mine = [r for r in rows if r["phase"] == t and r["page_type"] == "index"]
        got = {lvl: sum(r["pages"] for r in mine if r["level"] == lvl) for lvl in want}
        assert got == want and want["leaf"] > 2, (t, got, want, mine)
        # every index page is one of the table's two indexes (k may fit in the pages its
        # statistics sampling read at the table's open), in its own file, of its page size
        assert f"bench.{t}.PRIMARY" in {r["index"] for r in mine}, mine
        assert {r["index"] for r in mine} <= {f"bench.{t}.PRIMARY", f"bench.{t}.k"}, mine
        assert all(r["file"].endswith(f"/bench/{t}.ibd") for r in mine), mine
        assert sum(r["bytes"] for r in mine) == sum(r["pages"] for r in mine) * kbs * 1024, mine
    # PAGE_COMPRESSED: the page header (index id, level) is inside the compressed payload; the
    # engine counts the same pages by their decompressed type
    before, after = truth["pc"]
    want_pc = sum(after[m] - before[m] for m in ("index_leaf", "index_non_leaf"))
    pc = [r for r in rows if r["phase"] == "pc" and r["file"] and r["file"].endswith("/bench/pc.ibd")]
    by_type = {}
    for r in pc:
        by_type[r["page_type"]] = by_type.get(r["page_type"], 0) + r["pages"]
    assert by_type.get("page_compressed", 0) == want_pc and want_pc > 2, (by_type, want_pc, pc)
    assert {r["index"] for r in pc if r["page_type"] == "page_compressed"} == {"bench.pc.(page_compressed)"}, pc
    assert all(r["level"] is None for r in pc), pc


def test_no_programs_left_after_bulk_runs() -> None:
    assert_no_ioattr_programs()

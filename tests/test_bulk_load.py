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
from pathlib import Path

import pytest

from tests.helpers import (Background, assert_no_ioattr_programs, innodb_metrics, ioattr, record_marked_phases,
                           report_json, wait_phase, wait_until)

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

    def scan(t: str):
        def work(cur) -> None:
            cur.execute(f"SELECT COUNT(*), SUM(LENGTH(c)) FROM bench.{t} FORCE INDEX (PRIMARY)")
            if t != "pc":
                cur.execute(f"SELECT COUNT(*) FROM bench.{t} FORCE INDEX (k)")
        return work
    truth = record_marked_phases(server, rec, [(t, scan(t)) for t in tables] + [("end", lambda cur: None)],
                                 "--interval", "0.3", measure=lambda: innodb_metrics(server, "buffer_page_read_"))
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


def meta_indexes(rec: Path) -> set[str]:
    """The index names the live recorder has written to meta.json so far."""
    try:
        return set((json.loads((rec / "meta.json").read_text()).get("indexes") or {}).values())
    except (OSError, ValueError):
        return set()  # not written yet, or being replaced


def test_objects_created_while_recording_are_named_and_classified(server, tmp_path: Path) -> None:
    """CREATE TABLE (compressed, and partitioned), ADD INDEX, fill, DROP, all in one recording:
    each object is named while it exists (the recorder's meta.json has it before any of its IO),
    every page written to the new files is classified from the first (their page 0 was not on
    disk when they were registered), and after the DROP the report still names them."""
    rec = tmp_path / "rec"
    files = ("n8.ibd", "np#P#p0.ibd", "np#P#p1.ibd")
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3",
                    "--chunk-seconds", "0.3")
    try:
        bg.wait_recording()
        server.query("CREATE TABLE bench.n8 (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120) NOT NULL) "
                     "ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8")
        server.query("CREATE TABLE bench.np (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120) NOT NULL) "
                     "ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 2")
        created = {"bench.n8.PRIMARY", "bench.np#p0.PRIMARY", "bench.np#p1.PRIMARY"}
        wait_until(lambda: created <= meta_indexes(rec), 30, lambda: f"new tables named: {meta_indexes(rec)}")
        for t in ("n8", "np"):
            server.query(f"INSERT INTO bench.{t} SELECT seq, (seq * 7919) % 10007, CONCAT(REPEAT('c', 60), seq) "
                         f"FROM bench.seq_1_to_{ROWS * 3}")
        server.query("ALTER TABLE bench.n8 ADD INDEX k (k), ALGORITHM=INPLACE")
        wait_until(lambda: "bench.n8.k" in meta_indexes(rec), 30, lambda: f"new index named: {meta_indexes(rec)}")
        wait_clean(server)
        server.query("DROP TABLE bench.n8, bench.np")
    finally:
        code, err = bg.stop()
        server.query("SET GLOBAL innodb_max_dirty_pages_pct = 90")
    assert code == 0, err
    io = {f: 0 for f in files}
    for r in rows_of(rec, "file"):
        name = (r["file"] or "").rsplit("/", 1)[-1]
        if name in io and r["op"] == "write":
            io[name] += r["bytes"]
    pages: dict[str, dict[tuple, int]] = {f: {} for f in files}
    for r in rows_of(rec, "file", "index", "page_type"):
        name = (r["file"] or "").rsplit("/", 1)[-1]
        if name in pages and r["op"] == "write":
            key = (r["index"], r["page_type"])
            pages[name][key] = pages[name].get(key, 0) + r["bytes"]
    for f in files:
        # every byte written to the new tablespaces is in a classified page
        assert io[f] > 0 and sum(pages[f].values()) == io[f], (f, io[f], pages[f])
        assert (None, None) not in pages[f], (f, pages[f])
    assert {i for i, t in pages["n8.ibd"] if t == "index"} == {"bench.n8.PRIMARY", "bench.n8.k"}, pages
    assert {i for i, t in pages["np#P#p0.ibd"] if t == "index"} == {"bench.np#p0.PRIMARY"}, pages
    # compressed pages of 8 KiB
    n8 = [r for r in rows_of(rec, "file", "page_type") if (r["file"] or "").endswith("/n8.ibd") and r["pages"]]
    assert all(r["bytes"] == r["pages"] * 8192 for r in n8), n8


def test_index_build_merge_files_are_tmp_charged_to_the_alter(server, tmp_path: Path) -> None:
    """ALTER TABLE ADD INDEX, ALGORITHM=INPLACE, with a 64 KiB innodb_sort_buffer_size: the merge
    sort spills to O_TMPFILE files in tmpdir (often on inodes the server's temporary tables just
    freed). Their IO is class tmp, under the ALTER's digest and phase: reads equal
    performance_schema's innodb_temp_file bytes read, writes its bytes written (all read back)
    plus at most the new .frm the ALTER writes as #sql-alter-*.frm (class tmp by name; its write
    may share a reused-inode label with either side); every read of the connection thread (the
    merge runs, and table pages not in the buffer pool) adds up to its /proc/PID/task/TID/io
    rchar and syscr."""
    server.query("CREATE TABLE bench.big (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(20) NOT NULL) ENGINE=InnoDB")
    server.query("INSERT INTO bench.big SELECT seq, (seq * 7919) % 100003, 'x' FROM bench.seq_1_to_150000")

    def temp_file_io() -> tuple[int, int]:
        (r, w), = server.query("SELECT SUM_NUMBER_OF_BYTES_READ, SUM_NUMBER_OF_BYTES_WRITE FROM "
                               "performance_schema.file_summary_by_event_name "
                               "WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_temp_file'")
        return int(r), int(w)

    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3")
    try:
        bg.wait_recording()
        conn = server.connect()
        with conn.cursor() as cur:
            cur.execute("SELECT THREAD_OS_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = CONNECTION_ID()")
            tid = int(cur.fetchone()[0])

            def thread_io() -> dict[str, int]:
                with open(f"/proc/{server.pid}/task/{tid}/io") as f:
                    return {k: int(v) for k, v in (line.split(":") for line in f)}
            cur.execute("SELECT 'ioattr:phase=alter'")
            wait_phase(rec, "alter")
            ps0, io0 = temp_file_io(), thread_io()
            cur.execute("ALTER TABLE bench.big ADD INDEX k (k), ALGORITHM=INPLACE")
            ps1, io1 = temp_file_io(), thread_io()
            cur.execute("SELECT 'ioattr:phase=after'")
            wait_phase(rec, "after")
        conn.close()
    except AssertionError as e:  # a phase that never came: what the recorder said
        raise AssertionError(f"{e}\nrecorder: {bg.stderr[-3000:]}") from None
    finally:
        code, err = bg.stop()
    assert code == 0, err
    ps_read, ps_written = ps1[0] - ps0[0], ps1[1] - ps0[1]
    rchar, syscr = io1["rchar"] - io0["rchar"], io1["syscr"] - io0["syscr"]
    assert ps_read == ps_written > 4 * 65536, (ps_read, ps_written)  # it spilled, and read all back
    rows = rows_of(rec, "phase", "thread", "query", "file", "file_class")
    tmp = [r for r in rows
           if r["file_class"] == "tmp" and (r["query"] or "").startswith("ALTER TABLE bench.big ADD INDEX")]
    assert tmp and {r["phase"] for r in tmp} == {"alter"}, tmp
    assert sum(r["bytes"] for r in tmp if r["op"] == "read") == ps_read, (tmp, ps_read)
    thread_reads = [r for r in rows if r["op"] == "read" and (r["thread"] or "").endswith(f"[{tid}]")
                    and r["phase"] == "alter"]
    assert sum(r["bytes"] for r in thread_reads) == rchar, (thread_reads, rchar)
    assert sum(r["count"] for r in thread_reads) == syscr, (thread_reads, syscr)
    # writes: the merge runs, and the new table definition (#sql-alter-*.frm, class tmp until it is
    # renamed; on an inode the merge files' label may share, or one reused by the renamed .frm)
    frm = (Path(server.datadir) / "bench" / "big.frm").stat().st_size
    written = sum(r["bytes"] for r in tmp if r["op"] == "write")
    assert ps_written <= written <= ps_written + frm, (tmp, ps_written, frm)


def test_bulk_load_phases_count_rows_exactly(server, tmp_path: Path) -> None:
    """LOAD DATA (into InnoDB and Archive), a multi-row INSERT and INSERT ... SELECT, one phase
    each: every phase's bulk terms have exactly the rows it inserted, by its statement kind, and
    the per-row terms are the phase's storage IO over those rows; report's text says so."""
    n_load, n_multi = 20000, 500
    csv = Path(server.tmpdir) / "bulk.csv"
    csv.write_text("".join(f"{i},{i % 977},{'r' * 40}\n" for i in range(1, n_load + 1)))
    for t, engine in (("l_inno", "InnoDB"), ("l_arch", "ARCHIVE")):
        server.query(f"CREATE TABLE bench.{t} (id INT NOT NULL, k INT NOT NULL, c VARCHAR(60) NOT NULL) "
                     f"ENGINE={engine}")
    values = ",".join(f"({i},{i},'m')" for i in range(1, n_multi + 1))
    load = "LOAD DATA INFILE '{}' INTO TABLE bench.{} FIELDS TERMINATED BY ','"
    phases = [
        ("load_innodb", lambda c: c.execute(load.format(csv, "l_inno"))),
        ("load_archive", lambda c: c.execute(load.format(csv, "l_arch"))),
        ("multi_insert", lambda c: c.execute(f"INSERT INTO bench.l_inno VALUES {values}")),
        ("insert_select", lambda c: c.execute("INSERT INTO bench.l_inno SELECT id, k, c FROM bench.l_arch")),
        ("end", lambda c: None),
    ]
    files = {"bench.l_inno": Path(server.datadir) / "bench" / "l_inno.ibd",
             "bench.l_arch": Path(server.datadir) / "bench" / "l_arch.ARZ"}

    def sizes() -> dict[str, int]:
        return {t: f.stat().st_size for t, f in files.items()}
    rec = tmp_path / "rec"
    truth = record_marked_phases(server, rec, phases, "--interval", "0.3", measure=sizes)
    summary = {s["phase"]: s for s in report_json(rec, "--by", "phase")["summary"]}
    want = {"load_innodb": (n_load, {"LOAD DATA": 1}), "load_archive": (n_load, {"LOAD DATA": 1}),
            "multi_insert": (n_multi, {"INSERT": 1}), "insert_select": (n_load, {"INSERT ... SELECT": 1})}
    for phase, (rows, kinds) in want.items():
        b = summary[phase]["bulk"]
        assert b is not None and b["rows"] == rows and b["statements"] == kinds, (phase, b)
        assert b["rows_per_statement"] == rows, (phase, b)
        s = summary[phase]
        assert b["rows_per_s"] == pytest.approx(s["ips"], abs=0.1), (b, s)  # rows over the phase's seconds
        assert b["writes_per_row"] == pytest.approx(s["storage_writes"] / rows, rel=1e-3), (b, s)
        assert b["reads_per_row"] == pytest.approx(s["storage_reads"] / rows, rel=1e-3, abs=1e-9), (b, s)
    assert summary["end"]["bulk"] is None, summary["end"]
    # each table's size on disk at the end of the phase that grew it, from its files
    for phase, table in (("load_innodb", "bench.l_inno"), ("load_archive", "bench.l_arch")):
        before, after = truth[phase]
        got = summary[phase]["table_sizes"].get(table)
        assert got is not None and got["bytes"] == after[table], (phase, got, after)
        assert got["bytes_change"] == after[table] - before[table] > 0, (phase, got, before, after)
        assert got["allocated"] > 0, got
    text = ioattr("report", str(rec), "--by", "phase", check=True).stdout
    flat = " ".join(text.split())
    assert f"load_innodb: bulk: {n_load:,} rows" in flat and "(LOAD DATA 1)" in flat, text
    assert "load_archive: on disk at its end: bench.l_arch" in flat, text
    html = tmp_path / "r.html"
    ioattr("report", str(rec), "--format", "html", "-o", str(html), check=True)
    assert f"load_innodb: bulk: {n_load:,} rows" in html.read_text(), "the HTML has no bulk line"
    # the Archive table's data file is storage IO of its own class
    arch = [r for r in rows_of(rec, "phase", "file", "file_class")
            if (r["file"] or "").endswith("/l_arch.ARZ") and r["op"] == "write"]
    assert arch and {r["file_class"] for r in arch} == {"archive"}, arch
    assert summary["load_archive"]["storage_writes"] >= sum(r["count"] for r in arch if r["phase"] == "load_archive")


def test_no_programs_left_after_bulk_runs() -> None:
    assert_no_ioattr_programs()

"""Adding a dimension only splits rows: `--by B` summed over B's extra dimensions is `--by A`.

One recording per module, on a private MariaDB with a small buffer pool (io_uring when
InnoDB uses it): DDL, a table dropped and recreated, a table rebuilt by ALTER, on-disk
temporary tables and sort files, a ROW_FORMAT=COMPRESSED table, cold reads and page-cleaner
(doublewrite) writes, under SQL phase markers. Then, for pairs of dimension lists A within
B -- every single dimension against none, every pair against each of its singles, and all
dimensions against all but one -- the rows of B summed over B's extra dimensions must equal
A's rows exactly, count and bytes, per layer and op. The reports are built in-process
(build_report), which is what `ioattr report` prints.
"""
from __future__ import annotations

import re

import itertools
import time
from collections import Counter
from pathlib import Path

import pytest

from ioattr.analysis.report import ReportRequest, build_report
from ioattr.format.reader import Recording
from ioattr.model.dimensions import DIMENSIONS
from tests.helpers import Background, assert_no_ioattr_programs, assert_rate

ALL_DIMS = [d for d in DIMENSIONS if d not in ("layer", "op")]
ROWS = 40000


def _flush(db) -> None:
    """Make the page cleaner write every dirty page (doublewrite batches included)."""
    db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    deadline = time.monotonic() + 60
    while db.status("Innodb_buffer_pool_pages_dirty") > 0 and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    from ioattr.host.sandbox import PrivateMariaDB
    from tests import fixtures_mariadb

    fixtures_mariadb._need_mariadb()
    db = PrivateMariaDB(buffer_pool="8M", extra_options={"innodb_stats_persistent": "OFF",
                                                         "tmp_table_size": "64K", "max_heap_table_size": "64K",
                                                         "sort_buffer_size": "32K"})
    db.start()
    fixtures_mariadb._SESSION_SERVERS.append(db)
    rec = tmp_path_factory.mktemp("dims") / "rec"
    try:
        db.query("CREATE DATABASE d")
        bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3",
                        "--phase", "setup")
        bg.wait_recording()
        ddl = "(id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(200) NOT NULL, KEY k (k))"
        fill = f"SELECT seq, (seq * 7919) % 10007, REPEAT(CHAR(65 + seq % 26), 150) FROM d.seq_1_to_{ROWS}"
        steps = [
            "SELECT 'ioattr:phase=ddl'",
            f"CREATE TABLE d.t_inno {ddl} ENGINE=InnoDB",
            f"CREATE TABLE d.t_comp {ddl} ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
            f"INSERT INTO d.t_inno {fill}",
            f"INSERT INTO d.t_comp {fill}",
            "SELECT 'ioattr:phase=recreate'",
            "DROP TABLE d.t_inno",
            f"CREATE TABLE d.t_inno {ddl} ENGINE=InnoDB",
            f"INSERT INTO d.t_inno {fill}",
            "ALTER TABLE d.t_comp ADD INDEX kc (c(20)), ALGORITHM=INPLACE",
            "ALTER TABLE d.t_inno FORCE",
            "SELECT 'ioattr:phase=temp'",
            "SELECT c, count(*) FROM d.t_inno GROUP BY c ORDER BY 2 DESC LIMIT 3",
            "SELECT id FROM d.t_comp ORDER BY c DESC, id LIMIT 3",
            "SELECT 'ioattr:phase=reads'",
            "SELECT count(*) FROM d.t_inno FORCE INDEX (k)",
            "SELECT count(*), sum(length(c)) FROM d.t_comp FORCE INDEX (PRIMARY)",
            "UPDATE d.t_comp SET k = k + 1 WHERE id % 5 = 0",
        ]
        for sql in steps:
            db.query(sql)
        _flush(db)
        code, err = bg.stop()
        assert code == 0, err
        yield rec
    finally:
        db.stop()
        fixtures_mariadb.forget_server(db)


def _sums(rows: list[dict], dims: list[str]) -> dict[tuple, tuple[int, int]]:
    acc: dict[tuple, list[int]] = {}
    for r in rows:
        k = tuple(r[d] for d in dims) + (r["layer"], r["op"])
        a = acc.setdefault(k, [0, 0])
        a[0] += r["count"]
        a[1] += r["bytes"]
    return {k: (c, b) for k, (c, b) in acc.items() if c or b}


def _pairs() -> list[tuple[list[str], list[str]]]:
    """(A, B) with A within B: singles vs none, pairs vs singles, all vs all-but-one."""
    out: list[tuple[list[str], list[str]]] = [([], [d]) for d in ALL_DIMS]
    for a, b in itertools.combinations(ALL_DIMS, 2):
        out += [([a], [a, b]), ([b], [a, b])]
    out += [([d for d in ALL_DIMS if d != x], ALL_DIMS) for x in ALL_DIMS]
    out.append(([], ALL_DIMS))
    return out


def test_adding_a_dimension_only_splits_rows(recording: Path) -> None:
    rec = Recording(recording)
    cache: dict[tuple, list[dict]] = {}

    def rows(dims: list[str]) -> list[dict]:
        key = tuple(dims)
        if key not in cache:
            cache[key] = build_report(rec, ReportRequest(by=list(dims) or ["layer"]))["rows"]
        return cache[key]

    total = _sums(rows([]), [])
    assert any(k[0] == "block" for k in total) and any(k[0] == "syscall" for k in total), total
    bad = []
    for a, b in _pairs():
        want, got = _sums(rows(a), a), _sums(rows(b), a)
        if want != got:
            diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
            bad.append((a, b, len(diff), sorted(diff.items(), key=str)[:3]))
    assert not bad, bad[:5]


def test_filters_select_rows(recording: Path) -> None:
    """--phase P and --layer L give exactly the rows of P and L of the unfiltered report."""
    rec = Recording(recording)
    for by in (["file", "index"], ["role", "file_class", "level"], ["thread", "page_type"]):
        full = build_report(rec, ReportRequest(by=["phase"] + by))["rows"]
        for phase in rec.phase_names():
            got = _sums(build_report(rec, ReportRequest(by=by, phase=phase))["rows"], by)
            want = _sums([r for r in full if r["phase"] == phase], by)
            assert got == want, (by, phase)
        for layer in ("syscall", "block"):
            got = _sums(build_report(rec, ReportRequest(by=by, layer=layer))["rows"], by)
            want = {k: v for k, v in _sums(full, by).items() if k[-2] == layer}
            assert got == want, (by, layer)


def test_phase_terms_in_the_benchmarks_units(recording: Path) -> None:
    """ips counts rows (the two INSERT ... SELECTs of the ddl phase wrote 2 x ROWS rows), the
    statements separately; reads per query are ours and the engine's."""
    rep = build_report(Recording(recording), ReportRequest(by=["phase"]))
    ddl = next(s for s in rep["summary"] if s["phase"] == "ddl")
    assert ddl["rows_inserted"] == 2 * ROWS and ddl["ips_source"] == "Handler_write", ddl
    assert ddl["insert_statements"] == 2, ddl
    # seconds is printed to the millisecond: ips x seconds can be off by ips x 0.0005 (+ ips' own rounding)
    assert abs(ddl["ips"] * ddl["seconds"] - 2 * ROWS) <= ddl["ips"] * 0.0005 + 1, ddl
    assert_rate(ddl["insert_stmts_ps"], 2, ddl["seconds"], ddl)
    reads = next(s for s in rep["summary"] if s["phase"] == "reads")
    assert reads["engine_reads_per_query"] is not None and reads["reads_per_query"] is not None, reads
    assert reads["reads_per_query"] == pytest.approx(reads["engine_reads_per_query"], rel=0.05), reads
    assert not any(s["open"] for s in rep["summary"]), rep["summary"]


def test_pages_keep_their_file(recording: Path) -> None:
    """Page rows are named after the file their IO went to (doublewrite copies: the system
    tablespace), never another table's file, never null when the io row has a file."""
    rep = build_report(Recording(recording), ReportRequest(by=["file", "file_class", "index"], layer="syscall"))
    rows = [r for r in rep["rows"] if r["index"] is not None]
    assert rows
    for r in rows:
        table = r["index"].split(".")[1]
        assert r["file"] is not None, r
        # (ALTER TABLE builds the new table in #sql-alter-*.ibd, renamed to TABLE.ibd at the end)
        base = r["file"].rsplit("/", 1)[-1]
        # (DDL that drops and creates files within one interval can hand one inode to several
        # files: such rows honestly say "[N files reusing one inode]", never one of their names;
        # "[N .ibd files reusing one inode]" when they share the extension, "[N temporary files
        # reusing one inode]" when all were temporary: the rebuild's #sql-alter-*.ibd, whose
        # inode the index build's merge files and dropped temporary tables take in turn)
        assert base in (f"{table}.ibd", "ibdata1") or base.startswith("#sql") \
            or re.fullmatch(r"\[\d+ (\.ibd |temporary )?files reusing one inode\]", base), r
        assert (r["file_class"] in ("system_tablespace", "doublewrite")) == r["file"].endswith("/ibdata1"), r
    pages = Counter()
    for r in rows:
        pages[(r["index"].split(".")[1], r["op"], r["file"].endswith("ibdata1"))] += r["pages"]
    # both tables' pages were read and written in their own files, and doublewrite copies
    # of their pages went to the system tablespace
    for t in ("t_inno", "t_comp"):
        assert pages[(t, "read", False)] > 0, pages
    # (t_inno's last index ids, made by ALTER TABLE FORCE near the end, may be named only if
    # the names were read again before the recording ended; t_comp's were there all along)
    assert pages[("t_comp", "write", False)] > 0, pages
    assert pages[("t_comp", "write", True)] + pages[("t_inno", "write", True)] > 0, pages
    # and those copies are file_class doublewrite, in any report that has file_class
    dw = build_report(Recording(recording), ReportRequest(by=["file_class"], layer="syscall"))["rows"]
    assert any(r["file_class"] == "doublewrite" and r["op"] == "write" and r["bytes"] > 0 for r in dw), dw


def test_page_split_rows_count_pages_exactly(recording: Path) -> None:
    """The split rows' pages add up to the pages table's pages of the IO they joined."""
    rec = Recording(recording)
    rep = build_report(rec, ReportRequest(by=["index"], layer="syscall"))
    got = sum(r["pages"] for r in rep["rows"])
    table = rec.query("SELECT coalesce(sum(pages), 0) FROM pages")[0][0]
    assert got + rep.get("pages_without_io", 0) == table, (got, rep.get("pages_without_io"), table)
    assert rep.get("pages_without_io", 0) <= 0.01 * table, (rep.get("pages_without_io"), table)


def test_no_programs_left() -> None:
    assert_no_ioattr_programs()


def test_killed_recording_says_so_everywhere(mariadb, tmp_path: Path) -> None:
    """A recorder killed with -9 before its first chunk: every report says the recording
    crashed (table, JSON, CSV on stderr, HTML banner), and explain too."""
    import json
    import signal

    from tests.helpers import ioattr

    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(mariadb.pid), "--interval", "0.3",
                    "--chunk-seconds", "3600")
    bg.wait_recording()
    bg.stop(sig=signal.SIGKILL)
    table = ioattr("report", str(rec), "--by", "phase")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].startswith("WARNING: crashed or killed recording"), table.stdout
    assert "no data at all" in table.stdout, table.stdout
    js = json.loads(ioattr("report", str(rec), "--format", "json", check=True).stdout)
    assert js["recording_state"]["status"] == "crashed" and js["rows"] == [], js
    csv = ioattr("report", str(rec), "--format", "csv")
    assert csv.returncode == 0 and "crashed or killed recording" in csv.stderr, csv
    html = ioattr("report", str(rec), "--format", "html", check=True).stdout
    assert 'class="state-banner"' in html and html.index("state-banner") < html.index("<main>"), html[:2000]
    ex = ioattr("explain", str(rec), "--format", "json")
    assert "crashed or killed recording" in ex.stderr, ex


def test_open_phase_rated_by_elapsed_time(mariadb, tmp_path: Path) -> None:
    """A recording still being written: its open phase lasts till its last data (not zero
    seconds), and every report says the recording is still being written."""
    import json

    from tests.helpers import ioattr, wait_until

    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(mariadb.pid), "--interval", "0.2",
                    "--chunk-seconds", "0.2")
    try:
        bg.wait_recording()
        for _ in range(50):
            mariadb.query("SELECT 1")

        def summary() -> dict | None:
            rep = json.loads(ioattr("report", str(rec), "--by", "phase", "--format", "json", check=True).stdout)
            s = rep["summary"][-1]
            return rep if s["qps"] and s["seconds"] > 0.1 else None

        rep = wait_until(summary, 60, "a chunk with the SELECTs")
        s = rep["summary"][-1]
        assert s["open"] is True and rep["recording_state"]["status"] == "recording", rep
        # 50+ SELECTs over at least the time it took to record them: a rate, not 20 million/s
        assert 0 < s["qps"] < 10000, s
    finally:
        code, err = bg.stop()
    assert code == 0, err

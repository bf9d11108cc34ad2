"""`ioattr compare`'s arithmetic on synthetic recordings, exact values (no root, no kernel).

Two hand-written recordings (RecordingWriter, as the recorder writes them) with known IO rows
and counter snapshots: every column of a run x phase row is checked against the numbers put in,
and against `report --by phase`'s terms for the same phase (one definition of each)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ioattr.analysis.compare import compare, labels_for, write_unit
from ioattr.analysis.phase_stats import all_phase_summaries
from ioattr.errors import UsageError
from ioattr.format.reader import Recording
from ioattr.format.schema import HIST_COLUMNS, IO_SCHEMA
from ioattr.output.compare_html import render_compare_html
from ioattr.output.compare_view import render_table, to_csv
from tests.helpers import finish_synthetic, synthetic_writer

SERVER, CLIENT = 4242, 999
T0 = 1_700_000_000.0
PAGE = 16384


def _io_row(phase: str, t: float, layer: str, op: str, file_class: str | None, count: int, nbytes: int,
            role: str = "connection", pid: int = SERVER) -> dict[str, Any]:
    row: dict[str, Any] = {f.name: None for f in IO_SCHEMA}
    row.update(ts_start=t, ts_end=t + 1, phase=phase, layer=layer, op=op, api="sync", kind=None, pid=pid,
               tid=pid, process="mariadbd", thread="mariadbd", role=role, file_class=file_class, dev="8:0",
               device="sda", ino=7 if file_class == "tablespace" else 8, count=count, bytes=nbytes, lat_sum_ns=0,
               file="/data/t.ibd" if file_class == "tablespace" else "/data/other")
    for c in HIST_COLUMNS:
        row[c] = 0
    return row


def _write(path: Path, phases: list[tuple[str, float, list[dict], dict[str, float]]],
           settings: dict[str, Any] | None = None, **meta: Any) -> Path:
    """A recording: phases of (name, seconds, io rows, counter values at the phase's end
    (cumulative, "source:name", proc counters as "proc:NAME@PID")); a zero snapshot at the start."""
    w = synthetic_writer(path, phases[0][0], T0, [f"pid {SERVER}"], ["syscalls", "block", "pagecache"])
    w.meta.update(servers=[{"pid": SERVER, "connected": True, "version": "10.11.19-MariaDB", "flavor": "mariadb"}],
                  **meta)
    if settings is not None:
        w.meta["settings"] = {str(SERVER): settings}
    t = T0
    counters: list[tuple] = []
    keys = sorted({k for _, _, _, c in phases for k in c})
    for k in keys:
        counters.append(_counter(t, phases[0][0], k, 0.0))
    for i, (name, secs, rows, values) in enumerate(phases):
        if i:
            w.start_phase(name, at=t)
        for r in rows:
            r.update(ts_start=t, ts_end=t + secs)
        if rows:
            w.add_columns({f.name: [r[f.name] for r in rows] for f in IO_SCHEMA})
        t += secs
        for k, v in values.items():
            counters.append(_counter(t, name, k, v))
    return finish_synthetic(w, path, counters, t)


def _counter(ts: float, phase: str, key: str, value: float) -> tuple:
    source, name = key.split(":", 1)
    pid: int | None = SERVER
    if "@" in name:
        name, p = name.rsplit("@", 1)
        pid = int(p)
    return (ts, phase, pid, source, name, value, None)


BASE = {"status:Com_select": 0.0, "status:Com_commit": 0.0, "status:Innodb_buffer_pool_reads": 0.0}


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    # run a: phase "load" (rows, no queries, no transactions), phase "read" 10 s
    a = _write(tmp_path / "a", [
        ("load", 4.0, [_io_row("load", 0, "syscall", "write", "tablespace", 200, 200 * PAGE),
                       _io_row("load", 0, "block", "write", "tablespace", 100, 300 * PAGE)],
         {**BASE, "status:Com_select": 2.0, "status:Handler_write": 8000.0}),
        ("read", 10.0, [_io_row("read", 0, "syscall", "read", "tablespace", 500, 500 * PAGE),
                        _io_row("read", 0, "syscall", "read", "other", 70, 7000),           # not storage
                        _io_row("read", 0, "syscall", "write", "tablespace", 100, 100 * PAGE, role="page_cleaner"),
                        _io_row("read", 0, "block", "read", "tablespace", 400, 6_553_600),
                        _io_row("read", 0, "block", "write", "tablespace", 80, 80 * PAGE),
                        _io_row("read", 0, "pagecache", "read", "other", 20, 20 * 4096)],
         {"status:Com_select": 1002.0, "status:ioattr:Com_select": 0.0, "status:Com_commit": 50.0,
          "status:Innodb_buffer_pool_reads": 480.0, "status:Handler_write": 8000.0,
          f"proc:cpu:user@{SERVER}": 2.0, f"proc:cpu:sys@{SERVER}": 0.5, f"proc:cpu:user@{CLIENT}": 10.0}),
    ], settings={"innodb_buffer_pool_size": 16 << 20, "innodb_flush_method": "O_DIRECT", "innodb_page_size": PAGE,
                 "version": "10.11.19-MariaDB"},
        tablespace_sizes={str(SERVER): {"b.t": 64 << 20, "mysql.x": 65536}})
    # run b: a bigger pool; the same "read" phase, and a phase a lacks
    b = _write(tmp_path / "b", [
        ("read", 5.0, [_io_row("read", 0, "syscall", "read", "tablespace", 100, 100 * PAGE)],
         {"status:Com_select": 1000.0, "status:Innodb_buffer_pool_reads": 100.0}),
        ("extra", 1.0, [], {"status:Com_select": 1000.0, "status:Innodb_buffer_pool_reads": 100.0}),
    ], settings={"innodb_buffer_pool_size": 64 << 20, "innodb_flush_method": "fsync", "innodb_page_size": PAGE})
    return a, b


def _row(result: dict, run: str, phase: str) -> dict:
    (row,) = [r for r in result["rows"] if r["run"] == run and r["phase"] == phase]
    return row


def test_every_column_exact(runs) -> None:
    a, b = runs
    res = compare([Recording(a), Recording(b)])
    r = _row(res, "a", "read")
    assert r["seconds"] == 10.0
    assert r["queries"] == 1000 and r["qps"] == 100.0          # Com_select 1002 - 2 at the phase start
    assert r["transactions"] == 50 and r["tps"] == 5.0
    assert r["storage_reads"] == 500 and r["reads_per_query"] == 0.5          # "other" is not storage
    assert r["kb_read_per_query"] == 8.0                                      # 500 x 16 KiB / 1000
    assert r["write_unit"] == "txn" and r["writes_per_unit"] == 2.0 and r["kb_written_per_unit"] == 32.0
    assert r["block_reads_per_query"] == 0.4 and r["block_kb_read_per_query"] == 6.4
    assert r["block_kb_written_per_unit"] == 80 * 16 / 50
    assert r["pagecache_pages_per_query"] == 0.02
    assert r["engine_cache_misses"] == 480 and r["engine_cache_misses_per_query"] == 0.48
    assert r["server_cpu_us_per_query"] == 2500.0                             # the client's 10 s left out
    load = _row(res, "a", "load")
    assert load["rows_inserted"] == 8000 and load["rows_per_s"] == 2000.0 and load["rows_source"] == "Handler_write"
    assert load["write_unit"] == "row" and load["writes_per_unit"] == 0.025   # 200 writes / 8000 rows, not / 2 SELECTs
    assert load["kb_written_per_unit"] == 0.4 and load["block_kb_written_per_unit"] == 0.6
    assert load["reads_per_query"] == 0.0 and load["tps"] == 0.0
    rb = _row(res, "b", "read")
    assert rb["reads_per_query"] == 0.1 and rb["engine_cache_misses_per_query"] == 0.1
    assert rb["tps"] is None and rb["transactions"] is None                   # no Com_commit recorded: unknown
    assert rb["server_cpu_us_per_query"] is None and rb["write_unit"] == "query" and rb["writes_per_unit"] == 0.0


def test_same_definitions_as_report_by_phase(runs) -> None:
    a, _ = runs
    rec = Recording(a)
    res = compare([rec])
    for s in all_phase_summaries(rec):
        r = _row(res, "a", s["phase"])
        assert (r["reads_per_query"], r["kb_read_per_query"], r["storage_reads"], r["storage_writes"]) == \
            (s["reads_per_query"], s["kb_read_per_query"], s["storage_reads"], s["storage_writes"])


def test_runs_aligned_by_phase_and_settings(runs) -> None:
    a, b = runs
    res = compare([Recording(a), Recording(b)], ["small", "big"])
    assert res["phases"] == ["load", "read", "extra"]
    assert [(r["phase"], r["run"]) for r in res["rows"]] == [("load", "small"), ("read", "small"), ("read", "big"),
                                                             ("extra", "big")]
    small, big = res["runs"]
    assert small["engines"] == ["innodb"] and small["settings"]["innodb_buffer_pool_size"] == 16 << 20
    assert small["data_bytes"] == (64 << 20) + 65536 and big["data_bytes"] is None   # not recorded: null
    assert small["settings"]["rocksdb_block_cache_size"] is None and small["version"] == "10.11.19-MariaDB"
    assert small["engine_settings"] == {"innodb": {"cache": 16 << 20, "io": "O_DIRECT", "page": PAGE}}
    assert small["seconds"] == 14.0
    assert "small has no phase extra" in res["notes"] and "big has no phase load" in res["notes"]
    only = compare([Recording(a), Recording(b)], phases=["read"])
    assert [(r["phase"], r["run"]) for r in only["rows"]] == [("read", "a"), ("read", "b")] and not only["notes"]
    with pytest.raises(UsageError, match="unknown phase 'nosuch'"):
        compare([Recording(a)], phases=["nosuch"])


def test_by_role_adds_up_to_the_phase(runs) -> None:
    a, b = runs
    res = compare([Recording(a), Recording(b)], by="role", top=5, phases=["read"])
    parts = {(p["run"], p["role"]): p for p in res["breakdown"]}
    conn, cleaner = parts[("a", "connection")], parts[("a", "page_cleaner")]
    assert (conn["storage_reads"], conn["reads_per_query"], conn["storage_writes"]) == (500, 0.5, 0)
    assert (cleaner["storage_writes"], cleaner["writes_per_unit"], cleaner["write_unit"]) == (100, 2.0, "txn")
    row = _row(res, "a", "read")
    assert sum(p["storage_reads"] for p in res["breakdown"] if p["run"] == "a") == row["storage_reads"]
    assert sum(p["storage_writes"] for p in res["breakdown"] if p["run"] == "a") == row["storage_writes"]
    top1 = compare([Recording(a)], by="role", top=1, phases=["read"])["breakdown"]
    assert [p["role"] for p in top1] == ["connection"]                        # most reads first


def test_write_unit_and_labels() -> None:
    assert write_unit(1000.0, 50.0, 3.0) == ("txn", 50.0)
    assert write_unit(2.0, 0.0, 8000.0) == ("row", 8000.0)
    assert write_unit(1000.0, None, 10.0) == ("query", 1000.0)
    assert write_unit(None, None, None) == (None, None)
    assert write_unit(0.0, 0.0, 0.0) == ("phase", 1.0)      # counted, none of them: an ALTER's totals
    assert labels_for(["/x/run1", "/y/run2/"], None) == ["run1", "run2"]
    assert labels_for(["/x/a/rec", "/x/b/rec"], None) == ["a/rec", "b/rec"]
    assert labels_for(["/x/rec", "/x/rec"], None) == ["x/rec#1", "x/rec#2"]
    with pytest.raises(UsageError, match="once per recording|one per recording"):
        labels_for(["a", "b"], ["only-one"])


def test_outputs(runs, tmp_path: Path) -> None:
    a, b = runs
    res = compare([Recording(a), Recording(b)], ["<script>x</script>", "big"], by="role")
    text = render_table(res, width=220)
    assert "per run and phase" in text and "0.500" in text and "0.0250/row" in text
    assert "[syscall layer, storage files]" in text                          # the legend names each layer
    lines = to_csv(res).splitlines()
    assert lines[0].startswith("run,phase,role,write_unit,reads_per_query")
    assert "innodb_buffer_pool_size" in lines[0]
    page = render_compare_html(res)
    assert "<script>" not in page and "&lt;script&gt;" in page and "<svg" in page
    assert 'data-points="2"' in page                                          # a bar per run in phase read
    one = compare([Recording(a)])                                             # one run is allowed
    assert len(one["rows"]) == 2 and render_table(one)


def test_postgres_setting_values() -> None:
    """pg_settings values as meta.json keeps them: sizes in bytes, numbers as numbers, text as text."""
    from ioattr.engines.postgres.server import setting_value

    assert setting_value("2048", "8kB") == 16 << 20           # shared_buffers = 2048 blocks
    assert setting_value("8192", None) == 8192                # block_size
    assert setting_value("300", "s") == 300                   # checkpoint_timeout keeps its unit's number
    assert setting_value("fdatasync", None) == "fdatasync"
    assert setting_value("1.5", None) == 1.5


def test_an_incomplete_run_says_so_first(runs) -> None:
    """A recording that is not complete (here: crashed, its last phase open) is said first, per
    run, and its open phase is rated up to the last data recorded in it."""
    a, b = runs
    meta = json.loads((b / "meta.json").read_text())
    meta["status"] = "recording"            # no live recorder: crashed
    meta["phases"][-1]["end"] = None
    (b / "meta.json").write_text(json.dumps(meta))
    res = compare([Recording(a), Recording(b)])
    assert "recording_state" not in res["runs"][0] and res["runs"][1]["recording_state"]["status"] == "crashed"
    text = render_table(res, width=220)
    assert text.startswith("WARNING: b: crashed or killed recording")
    assert _row(res, "b", "extra")["open"] is True
    assert "state-banner" in render_compare_html(res)


def test_engine_cache_misses_of_each_engine() -> None:
    """Each engine's status_counters "cache_misses", where the recording keeps it: SHOW GLOBAL
    STATUS names for InnoDB and MyRocks (summed on one server), pg_stat_database's cluster-wide
    blks_read for PostgreSQL (its own server: no SHOW GLOBAL STATUS)."""
    from ioattr.analysis.compare import engine_cache_misses

    assert engine_cache_misses({"status:Innodb_buffer_pool_reads": 7.0}) == 7.0
    assert engine_cache_misses({"status:Innodb_buffer_pool_reads": 7.0, "status:Rocksdb_block_cache_miss": 5.0}) == 12.0
    assert engine_cache_misses({"pg_stat_database:blks_read": 40.0, "pg_stat_database:postgres:blks_read": 40.0}) == 40.0
    assert engine_cache_misses({"status:Com_select": 1.0}) is None

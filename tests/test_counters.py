"""Engine and host counters: the SHOW ENGINE INNODB STATUS parser, /proc readers,
and the counters table of real recordings checked against the server itself.

Fixtures in tests/fixtures/innodb_status_*.txt: the MariaDB 10.11 ones are real
output of private servers (idle; under sysbench oltp_read_write with change
buffering and the adaptive hash index on; right after a deadlock whose statement
imitates monitor lines); the MySQL 8.0 one is written by hand in that server's
format (one section per title, several buffer pool instances, a foreign key
error and a deadlock whose statements imitate monitor lines).
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pytest

from ioattr.collectors.counters import SETTINGS, CounterCollector
from ioattr.collectors.counters_host import HostCounters, ProcCounters
from ioattr.collectors.engine import EngineConnection, EngineOptions
from ioattr.engines.innodb.status import as_dict, parse_innodb_status
from ioattr.engines.registry import engines_for
from tests.helpers import Background, ioattr, wait_phase, wait_until

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / f"innodb_status_{name}.txt").read_text()


# -- the SHOW ENGINE INNODB STATUS parser -----------------------------------------------

def test_parse_mariadb_under_load() -> None:
    d = as_dict(parse_innodb_status(fixture("mariadb_10.11_load")))
    assert d["history_list_length"] == 1902
    assert d["trx_id_counter"] == 3872 and d["purge_trx_no"] == 68 and d["purge_state"] == "running"
    assert (d["ibuf_size_pages"], d["ibuf_free_list_pages"], d["ibuf_seg_size_pages"], d["ibuf_merges"]) == \
        (10, 9, 20, 12)
    assert (d["ibuf_merged_insert"], d["ibuf_merged_delete_mark"], d["ibuf_merged_delete"]) == (132, 121, 0)
    assert (d["ibuf_discarded_insert"], d["ibuf_discarded_delete_mark"], d["ibuf_discarded_delete"]) == (0, 0, 0)
    assert d["log_sequence_number"] == 10252126 and d["log_last_checkpoint"] == 10152342
    assert d["log_flushed_up_to"] == 10252016 and d["log_pages_flushed_up_to"] == 10191102
    assert d["checkpoint_age"] == 10252126 - 10152342
    assert (d["buffer_pool_pages"], d["buffer_pool_pages_free"], d["buffer_pool_pages_data"],
            d["buffer_pool_pages_dirty"]) == (507, 346, 158, 148)
    assert (d["buffer_pool_pending_reads"], d["buffer_pool_pending_writes_lru"],
            d["buffer_pool_pending_writes_flush_list"]) == (0, 0, 24)
    assert "buffer_pool_pending_writes_single_page" not in d  # MariaDB does not print it
    assert (d["buffer_pool_pages_read"], d["buffer_pool_pages_created"], d["buffer_pool_pages_written"]) == \
        (6838, 790, 5976)
    assert d["buffer_pool_reads_per_s"] == 1308.54 and d["buffer_pool_hit_rate_per_1000"] == 970
    assert (d["buffer_pool_pages_made_young"], d["buffer_pool_pages_not_young"]) == (0, 0)
    assert d["file_os_reads"] == 6849 and d["file_pending_fsyncs"] == 0 and d["file_reads_per_s"] == 1308.54
    assert "file_pending_aio_reads" not in d  # MariaDB 10.11 has no pending-aio line: omitted, not 0
    assert d["ahi_hash_table_size"] == 8 * 2267 and d["ahi_node_heap_buffers"] == 3
    assert d["ahi_hash_searches_per_s"] == 4815.04
    assert d["row_read_views"] == 5 and d["main_thread_state"] == "sleeping"
    assert d["averages_seconds"] == 5
    # no statement text, no user names
    texts = [t for _, _, t in parse_innodb_status(fixture("mariadb_10.11_load")) if t is not None]
    assert texts == ["running", "sleeping"]


def test_parse_mariadb_idle_has_no_change_buffer_section() -> None:
    d = as_dict(parse_innodb_status(fixture("mariadb_10.11_idle")))
    assert d["history_list_length"] == 0 and d["checkpoint_age"] == 44926 - 44570
    assert not any(k.startswith("ibuf_") for k in d)  # the section is absent: so are its rows


def test_parse_ignores_statement_text_that_imitates_the_monitor() -> None:
    d = as_dict(parse_innodb_status(fixture("mariadb_10.11_deadlock")))
    # the deadlock's statement holds "History list length 424242" and "Log sequence number 1"
    assert d["history_list_length"] == 0
    assert d["log_sequence_number"] == 48765 and d["log_last_checkpoint"] == 44404
    assert d["checkpoint_age"] == 48765 - 44404


def test_parse_mysql80() -> None:
    d = as_dict(parse_innodb_status(fixture("mysql_8.0")))
    # fakes in a foreign key error, a deadlock and the transaction list are not taken
    assert d["history_list_length"] == 37 and d["trx_id_counter"] == 4983472
    assert d["purge_state"] == "running but idle"
    assert d["log_sequence_number"] == 9216640815 and d["log_last_checkpoint"] == 9043911239
    assert d["checkpoint_age"] == 9216640815 - 9043911239
    assert d["log_written_up_to"] == 9216640815 and d["log_flushed_up_to"] == 9216640399
    assert d["log_ios"] == 1483220 and d["log_ios_per_s"] == 289.33
    assert d["file_pending_fsyncs_log"] == 0 and d["file_pending_fsyncs_buffer_pool"] == 1
    assert d["file_pending_aio_reads"] == 3 and d["file_pending_aio_writes"] == 2
    assert "file_pending_ibuf_aio_reads" not in d  # "ibuf aio reads:" without a number
    assert d["file_os_reads"] == 1843021 and d["file_avg_bytes_per_read"] == 16384
    assert (d["ibuf_size_pages"], d["ibuf_free_list_pages"], d["ibuf_seg_size_pages"], d["ibuf_merges"]) == \
        (1, 5731, 5733, 40212)
    assert d["ibuf_merged_insert"] == 161077 and d["ibuf_merged_delete_mark"] == 23
    assert d["ahi_node_heap_buffers"] == 1063 + 19 + 2 + 840 + 7 + 4 + 11 + 1519
    # the pool's totals, not one of the individual instances
    assert d["buffer_pool_pages"] == 131056 and d["buffer_pool_pages_dirty"] == 41872
    assert d["buffer_pool_pending_writes_flush_list"] == 3 and d["buffer_pool_pending_writes_single_page"] == 0
    assert (d["buffer_pool_pages_made_young"], d["buffer_pool_pages_not_young"]) == (284731, 9982713)
    assert d["buffer_pool_evicted_without_access_per_s"] == 3.11
    assert d["buffer_pool_io_sum"] == 90372
    assert (d["rows_inserted"], d["rows_read"]) == (68318232, 1422671)  # not the "system rows" line
    assert d["rows_inserted_per_s"] == 1289.66
    assert d["sem_reservation_count"] == 9874 and d["main_thread_state"] == "sleeping"
    assert d["row_queries_inside"] == 0 and d["row_read_views"] == 1


def test_parse_missing_and_truncated_sections() -> None:
    assert parse_innodb_status("") == []
    assert parse_innodb_status("garbage\nno sections here\n") == []
    text = fixture("mariadb_10.11_load")
    cut = text[: text.index("Pages made young")]  # a monitor output cut inside BUFFER POOL AND MEMORY
    d = as_dict(parse_innodb_status(cut))
    assert d["buffer_pool_pages_dirty"] == 148 and "buffer_pool_pages_read" not in d
    assert "row_read_views" not in d and d["history_list_length"] == 1902
    no_log = re.sub(r"---\nLOG\n---\n(.*\n)*?(?=-{5,}\nBUFFER POOL)", "", text)
    d = as_dict(parse_innodb_status(no_log))
    assert "log_sequence_number" not in d and "checkpoint_age" not in d  # never derived from nothing
    assert d["buffer_pool_pages_read"] == 6838


# -- /proc ---------------------------------------------------------------------------------

def test_host_counters_from_a_proc_tree(tmp_path: Path) -> None:
    (tmp_path / "diskstats").write_text(
        "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        " 254       0 vda 10 1 80 5 20 2 160 9 1 12 14 0 0 0 0 3 4\n"
        "   8       0 sda 7 0 56 3 0 0 0 0 0 3 3\n")  # an older kernel: 11 fields
    (tmp_path / "stat").write_text(
        f"cpu  {100 * os.sysconf('SC_CLK_TCK')} 0 50 400 7 0 1 0 0 0\ncpu0 1 0 1 1 1 0 0 0 0 0\n"
        "cpu1 1 0 1 1 1 0 0 0 0 0\nintr 1 2 3\nctxt 12345\nbtime 1\nprocesses 99\n"
        "procs_running 2\nprocs_blocked 1\n")
    h = HostCounters(str(tmp_path))
    d = {n: v for n, v, _ in h.rows()}
    assert not any(k.startswith("diskstats:loop0") for k in d)  # never active: left out
    assert d["diskstats:vda:reads"] == 10 and d["diskstats:vda:sectors_written"] == 160
    assert d["diskstats:vda:in_flight"] == 1 and d["diskstats:vda:flush_ms"] == 4
    assert d["diskstats:sda:io_ms"] == 3 and "diskstats:sda:discards" not in d
    assert d["cpu:user"] == 100 and d["cpu:count"] == 2
    assert d["ctxt"] == 12345 and d["processes"] == 99 and d["procs_blocked"] == 1


def test_proc_counters_never_go_down_when_threads_exit() -> None:
    p = ProcCounters()
    before = {n: v for n, v, _ in p.rows(os.getpid())}

    done = threading.Semaphore(0)
    go = threading.Event()

    def busy() -> None:
        for _ in range(100):
            time.sleep(0.0005)  # each sleep is a voluntary switch of this thread
        done.release()
        go.wait()

    threads = [threading.Thread(target=busy) for _ in range(3)]
    for t in threads:
        t.start()
    for _ in threads:
        done.acquire()
    during = {n: v for n, v, _ in p.rows(os.getpid())}
    go.set()
    for t in threads:
        t.join()
    after = {n: v for n, v, _ in p.rows(os.getpid())}
    assert during["ctxt"] - before["ctxt"] >= 3 * 100
    assert after["ctxt"] >= during["ctxt"]  # the exited threads' switches are kept
    assert after["threads"] < during["threads"]
    assert after["io:rchar"] >= before["io:rchar"] and after["cpu:user"] >= before["cpu:user"]
    assert before["comm"] is None and p.rows(2 ** 22 + 12345) == []


# -- real recordings ---------------------------------------------------------------------

def _status(db, *names: str) -> dict[str, int]:
    rows = db.query("SHOW GLOBAL STATUS WHERE Variable_name IN (" + ", ".join(["%s"] * len(names)) + ")", names)
    return {n: int(v) for n, v in rows}


def _mark(rec: Path, name: str) -> None:
    """Start phase `name` and wait until the recorder has: it takes the phase-change counters
    snapshot (tagged with the phase that ends) before it lists the new phase in meta.json."""
    r = ioattr("mark", name, "--recording", str(rec))
    assert r.returncode == 0, r.stderr
    wait_phase(rec, name)


def _proc_truth(pid: int) -> dict[str, float]:
    """A process's counters straight from /proc: CPU seconds (utime, stime), bytes read
    from storage, context switches summed over its live threads."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2:].split()
    tick = os.sysconf("SC_CLK_TCK")
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    ctxt = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            text = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:
            continue  # exited meanwhile
        ctxt += sum(int(ln.split()[1]) for ln in text.splitlines()
                    if ln.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")))
    return {"cpu:user": int(fields[11]) / tick, "cpu:sys": int(fields[12]) / tick,
            "io:read_bytes": float(io["read_bytes"]), "ctxt": float(ctxt)}


def _host_busy() -> float:
    """CPU seconds spent in user and system mode by the whole host (/proc/stat)."""
    f = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return (int(f[1]) + int(f[2]) + int(f[3])) / os.sysconf("SC_CLK_TCK")  # user, nice, system


def _disk_of(path: Path) -> str:
    """The /proc/diskstats name of the block device (the whole disk) holding path."""
    st = os.stat(path)
    dev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve()
    if (dev / "partition").exists():
        dev = dev.parent
    return dev.name


def _server_truth(db) -> dict[str, float]:
    """The server's own counters, read directly (not through ioattr): the ground truth for
    the counters table. performance_schema rows exist once the file/table had IO (else 0)."""
    out: dict[str, float] = dict(_status(db, "Innodb_buffer_pool_reads", "Com_select", "Innodb_pages_read"))
    out["leaf"] = float(db.query("SELECT COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS "
                                 "WHERE NAME = 'buffer_page_read_index_leaf'")[0][0])
    rows = db.query("SELECT COUNT_READ FROM performance_schema.file_summary_by_instance "
                    "WHERE FILE_NAME LIKE '%/sbtest/sbtest1.ibd'")
    out["ps_file_reads"] = float(rows[0][0]) if rows else 0.0
    rows = db.query("SELECT COUNT_FETCH FROM performance_schema.table_io_waits_summary_by_table "
                    "WHERE OBJECT_SCHEMA = 'sbtest' AND OBJECT_NAME = 'sbtest1'")
    out["ps_table_fetch"] = float(rows[0][0]) if rows else 0.0
    out.update({f"proc:{k}": v for k, v in _proc_truth(db.pid).items()})
    out["host_busy"] = _host_busy()
    out["t"] = time.time()  # when host_busy was read: the counters' ts is unix time too
    return out


def _close(recorded: float, direct: float, abs_: float, rel: float) -> bool:
    return abs(recorded - direct) <= max(abs_, rel * abs(direct))


class Counters:
    """The counters table of a recording, with per-phase deltas as the docstring defines them."""

    def __init__(self, rec: Path) -> None:
        self.rec = rec
        self.meta = json.loads((rec / "meta.json").read_text())
        self.con = duckdb.connect()
        self.con.execute(f"CREATE VIEW counters AS SELECT * FROM read_parquet('{rec}/counters/*.parquet')")

    def q(self, sql: str, *params: object) -> list[tuple]:
        return self.con.execute(sql, list(params)).fetchall()

    def series(self, source: str, name: str, pid: int | None) -> list[tuple[str, float, float]]:
        pid_cond = "pid IS NULL" if pid is None else f"pid = {int(pid)}"
        return self.q(f"SELECT phase, ts, value FROM counters WHERE source = ? AND name = ? AND {pid_cond} "
                      "ORDER BY ts", source, name)

    def delta(self, source: str, name: str, pid: int | None, phase: str) -> float:
        """Last value in the phase minus the last value before it.

        performance_schema rows appear once a file or table has IO: no earlier row means 0."""
        s = self.series(source, name, pid)
        assert s, f"no {source}:{name} rows"
        order = [p["name"] for p in self.meta["phases"]]
        idx = order.index(phase)
        before = [v for p, _, v in s if order.index(p) < idx] or ([0.0] if source.startswith("ps_") else [])
        inside = [v for p, _, v in s if p == phase]
        assert before and inside, (source, name, phase)
        return inside[-1] - before[-1]


def _sysbench_reads(out: str) -> int:
    m = re.search(r"^\s*read:\s+(\d+)", out, re.M)
    assert m, out
    return int(m.group(1))


def _leaf_enabled(db) -> bool:
    return bool(int(db.query("SELECT ENABLED FROM INFORMATION_SCHEMA.INNODB_METRICS "
                             "WHERE NAME = 'buffer_page_read_index_leaf'")[0][0]))


def _make_user(db, name: str, secret: str) -> None:
    db.query(f"CREATE USER '{name}'@'localhost' IDENTIFIED BY '{secret}'")
    db.query(f"GRANT ALL PRIVILEGES ON *.* TO '{name}'@'localhost'")


def _assert_no_secret(rec: Path, secret: str, *more: str) -> None:
    for f in rec.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f"password found in {f}"
    for text in more:
        assert secret not in text


def test_recording_counters_agree_with_the_server(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="8M")
    db.sysbench("oltp_read_only", "prepare", table_size=40000)
    secret = "Counters-pw-7781"
    _make_user(db, "rec", secret)
    opt = tmp_path / "client.cnf"
    opt.write_text(f"[client]\nuser=rec\npassword={secret}\nsocket={db.socket}\n")
    opt.chmod(0o600)
    db.restart()  # cold buffer pool: the benchmark has to read
    leaf_was_on = _leaf_enabled(db)  # off after a restart, unless another ioattr session got there first
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.5",
                    "--mysql-defaults-file", str(opt))
    try:
        bg.wait_recording()  # said after the baseline snapshot, in phase "main"
        before = _server_truth(db)
        _mark(rec, "bench")
        out = db.sysbench("oltp_read_only", "run", time=3, table_size=40000).stdout
        after = _server_truth(db)
        _mark(rec, "after")
    finally:  # stopping takes a last snapshot: nothing to wait for
        code, err = bg.stop()
    assert code == 0, err
    assert "Traceback" not in err
    assert _leaf_enabled(db)  # switched on, and left on (other sessions may rely on it)

    c = Counters(rec)
    pid = db.pid
    assert [p["name"] for p in c.meta["phases"]] == ["main", "bench", "after"]
    # one row per (snapshot, name)
    assert c.q("SELECT pid, source, name, ts FROM counters GROUP BY ALL HAVING count(*) > 1") == []
    assert {r[0] for r in c.q("SELECT DISTINCT source FROM counters")} == \
        {"status", "innodb_metrics", "innodb_status", "ps_file", "ps_table", "host", "proc", "table_files"}

    # per-phase deltas equal what the server says directly
    reads = c.delta("status", "Innodb_buffer_pool_reads", pid, "bench")
    direct_reads = after["Innodb_buffer_pool_reads"] - before["Innodb_buffer_pool_reads"]
    assert direct_reads > 200, direct_reads  # the cold pool made the benchmark read
    assert abs(reads - direct_reads) <= max(3, 0.02 * direct_reads), (reads, direct_reads)
    selects = c.delta("status", "Com_select", pid, "bench")
    direct_selects = after["Com_select"] - before["Com_select"]
    assert direct_selects > 1000
    # the windows differ by the recorder's own few SELECTs between the direct reads and the marks
    assert abs(selects - direct_selects) <= max(10, 0.01 * direct_selects), (selects, direct_selects)
    # without ioattr's own SELECTs: the benchmark's (other ioattr sessions on this host may add a few)
    own = c.delta("status", "ioattr:Com_select", pid, "bench")
    assert 0 < own < 0.05 * selects
    sysbench_reads = _sysbench_reads(out)
    assert sysbench_reads <= selects - own <= sysbench_reads * 1.01 + 20, (selects, own, sysbench_reads)

    # Each recorded delta below is compared with the same counter read directly before and after
    # the benchmark. The windows differ only by the recorder's own statements and the `ioattr mark`
    # runs between a direct read and the phase-change snapshot, hence the small slack.
    direct = {k: after[k] - before[k] for k in before}

    # INNODB_METRICS page counters were switched on and count the benchmark's leaf reads
    leaf = c.delta("innodb_metrics", "buffer_page_read_index_leaf", pid, "bench")
    assert direct["leaf"] > 100, direct  # the cold pool made the benchmark read leaves
    assert _close(leaf, direct["leaf"], 3, 0.02), (leaf, direct["leaf"])
    print(f"\nbench phase: Innodb_buffer_pool_reads recorded {reads:.0f} / direct {direct_reads}; "
          f"Com_select recorded {selects:.0f} / direct {direct_selects} (ioattr's own {own:.0f}, "
          f"sysbench reads {sysbench_reads}); buffer_page_read_index_leaf +{leaf:.0f} / direct "
          f"{direct['leaf']:.0f}")
    # SHOW ENGINE INNODB STATUS rows in every snapshot of the server
    snaps = c.q("SELECT count(DISTINCT ts) FROM counters WHERE source = 'status' AND name = 'Com_select'")[0][0]
    assert snaps >= 4  # at least: the baseline, the two phase changes, the last one at stop
    for name in ("history_list_length", "checkpoint_age", "buffer_pool_pages_dirty", "log_sequence_number"):
        n = c.q("SELECT count(*) FROM counters WHERE source = 'innodb_status' AND name = ? AND value IS NOT NULL",
                name)[0][0]
        assert n == snaps, (name, n, snaps)
    pages_read = c.delta("status", "Innodb_pages_read", pid, "bench")
    assert _close(pages_read, direct["Innodb_pages_read"], 3, 0.02), (pages_read, direct)
    assert c.delta("innodb_status", "buffer_pool_pages_read", pid, "bench") == pytest.approx(pages_read, abs=2)

    # host counters exist and never go down
    for name in ("cpu:user", "cpu:nice", "cpu:sys", "cpu:idle", "cpu:iowait", "ctxt"):
        s = [v for _, _, v in c.series("host", name, None)]
        assert len(s) >= snaps and s == sorted(s), name
    # the host's busy CPU time covers at least the server's own (other processes only add to it),
    # and is what /proc/stat says give or take what ran in the gaps between the two windows
    proc_cpu = direct["proc:cpu:user"] + direct["proc:cpu:sys"]
    # busy is user + nice + system, as _host_busy reads /proc/stat (niced jobs on a CI host are busy)
    busy = sum(c.delta("host", n, None, "bench") for n in ("cpu:user", "cpu:nice", "cpu:sys"))
    assert busy >= proc_cpu - 0.2, (busy, proc_cpu)
    # The two windows differ by how far the recorded snapshots lie from the test's own reads; in
    # those seconds the host can have run at most one CPU-second per CPU per second (a loaded CI
    # host does: other jobs busy on both cores).
    s = c.series("host", "cpu:user", None)
    order = [p["name"] for p in c.meta["phases"]]
    ts_before = [t for p, t, _ in s if order.index(p) < order.index("bench")][-1]
    ts_inside = [t for p, t, _ in s if p == "bench"][-1]
    skew = abs(ts_before - before["t"]) + abs(ts_inside - after["t"])
    slack = (os.cpu_count() or 1) * skew + 0.2   # + a tick of each of the four readings
    direct_busy = after["host_busy"] - before["host_busy"]
    assert abs(busy - direct_busy) <= slack, (busy, direct_busy, skew)
    # the disk under the datadir read at least the bytes the server read from storage (O_DIRECT:
    # no page cache in between; other processes on the disk only add to it)
    disk = _disk_of(db.datadir)
    sectors = c.delta("host", f"diskstats:{disk}:sectors_read", None, "bench")
    assert direct["proc:io:read_bytes"] >= direct_reads * 16384, direct
    assert sectors * 512 >= 0.98 * direct["proc:io:read_bytes"], (disk, sectors, direct)
    # the server process's own counters equal /proc/PID
    for name, slack in (("io:read_bytes", 3 * 16384), ("cpu:user", 0.1), ("cpu:sys", 0.1), ("ctxt", 200)):
        got = c.delta("proc", name, pid, "bench")
        assert _close(got, direct[f"proc:{name}"], slack, 0.05), (name, got, direct[f"proc:{name}"])
    # performance_schema per file and per table
    ibd = c.q("SELECT name FROM counters WHERE source = 'ps_file' AND name LIKE '%/sbtest/sbtest1.ibd:COUNT_READ' "
              "LIMIT 1")
    assert ibd, "no ps_file row for sbtest1.ibd"
    ps_reads = c.delta("ps_file", ibd[0][0], pid, "bench")
    assert direct["ps_file_reads"] >= 0.5 * direct_reads, direct
    assert _close(ps_reads, direct["ps_file_reads"], 3, 0.02), (ps_reads, direct["ps_file_reads"])
    fetch = c.delta("ps_table", "sbtest.sbtest1:COUNT_FETCH", pid, "bench")
    assert direct["ps_table_fetch"] >= sysbench_reads, direct  # every point select fetched a row at least
    assert _close(fetch, direct["ps_table_fetch"], 3, 0.01), (fetch, direct["ps_table_fetch"])

    # the settings snapshot
    settings = c.meta["settings"][str(pid)]
    assert set(SETTINGS) | set(engines_for(None)[0].settings) <= set(settings)
    assert settings["innodb_buffer_pool_size"] == 8 * 1024 * 1024
    assert settings["innodb_flush_method"] == "O_DIRECT" and settings["innodb_page_size"] == 16384
    assert settings["performance_schema"] == "ON" and "MariaDB" in settings["version"]
    if not leaf_was_on:
        assert any("INNODB_METRICS buffer_page" in n["text"] and "innodb_monitor_disable = 'module_buffer_page'" in n["text"]
                   for n in c.meta["notes"]), c.meta["notes"]
    # the recording's reader exposes the table
    from ioattr.format.reader import Recording
    assert Recording(rec).query("SELECT count(*) FROM counters")[0][0] > 1000
    _assert_no_secret(rec, secret, err)


def _snapshots_so_far(rec: Path) -> int:
    """Server counter snapshots in the chunks a running recorder has written so far (0 while a
    chunk is being merged away under us: the caller just looks again)."""
    try:
        con = duckdb.connect()
        return con.execute(f"SELECT count(DISTINCT ts) FROM read_parquet('{rec}/counters/*.parquet') "
                           "WHERE source = 'status' AND name = 'Com_select'").fetchall()[0][0]
    except duckdb.Error:
        return 0


def test_server_without_performance_schema(mariadb_factory, tmp_path: Path, monkeypatch) -> None:
    db = mariadb_factory(buffer_pool="8M", performance_schema=False)
    secret = "NoPs-pw-5521"
    _make_user(db, "rec2", secret)
    monkeypatch.setenv("MYSQL_PWD", secret)  # the recorder inherits it; never on its command line
    rec = tmp_path / "rec"
    # one chunk per interval, so the snapshots can be watched while it records
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3", "--chunk-seconds", "0.3",
                    "--mysql-user", "rec2", "--mysql-socket", str(db.socket))
    try:
        bg.wait_recording()
        for _ in range(20):
            db.query("SELECT COUNT(*) FROM mysql.user")
        # an interval's own snapshot, not only the forced ones at start and stop
        wait_until(lambda: _snapshots_so_far(rec) >= 2, 60, "two counters snapshots in the recording")
    finally:
        code, err = bg.stop()
    assert code == 0, err
    c = Counters(rec)
    sources = {r[0] for r in c.q("SELECT DISTINCT source FROM counters")}
    assert {"status", "innodb_metrics", "innodb_status", "host", "proc"} <= sources
    assert not sources & {"ps_file", "ps_table"}
    assert c.q("SELECT count(*) FROM counters WHERE source = 'status' AND name = 'Com_select'")[0][0] >= 3
    notes = " ".join(n["text"] for n in c.meta["notes"])
    assert "performance_schema is off" in notes and "ps_file" in notes
    assert c.meta["settings"][str(db.pid)]["performance_schema"] == "OFF"
    _assert_no_secret(rec, secret, err, " ".join(bg.proc.args))


def test_collector_degrades_per_source_and_follows_a_restart(mariadb_factory) -> None:
    """Directly, without probes: a user lacking PROCESS and SUPER, a killed connection, a restart."""
    db = mariadb_factory(buffer_pool="8M")
    db.query("CREATE USER 'weak'@'localhost' IDENTIFIED BY 'weak-pw'")
    db.query("GRANT SELECT ON *.* TO 'weak'@'localhost'")

    def ctx_for(user: str | None, password: str | None = None) -> SimpleNamespace:
        if password:
            os.environ["MYSQL_PWD"] = password
        try:
            eng = EngineConnection(EngineOptions(socket=str(db.socket), user=user), target_pid=db.pid)
            eng.connect()
        finally:
            os.environ.pop("MYSQL_PWD", None)
        return SimpleNamespace(engine=eng, engine_error=None, engines=engines_for(eng))

    notes: list[str] = []
    c = CounterCollector(note=lambda text, detail: notes.append(text))
    weak = ctx_for("weak", "weak-pw")
    try:
        for _ in range(2):
            cols = c.collect({db.pid: weak}, [db.pid], "p", force=True)
        sources = set(cols["source"])
        assert {"status", "ps_file", "host", "proc"} <= sources
        assert not sources & {"innodb_status", "innodb_metrics"}  # both need PROCESS
        for source in ("innodb_status", "innodb_metrics"):
            assert sum(f"'{source}'" in n for n in notes) == 1, notes  # said once, not every interval
        assert any("INNODB_METRICS unreadable" in n for n in notes), notes
        assert not any("weak-pw" in n for n in notes)
    finally:
        weak.engine.close()
    # PROCESS but not SUPER: everything is read, only the monitors cannot be switched on
    db.query("GRANT PROCESS ON *.* TO 'weak'@'localhost'")
    c2 = CounterCollector(note=lambda text, detail: notes.append(text))
    weak = ctx_for("weak", "weak-pw")
    try:
        leaf_was_on = _leaf_enabled(db)  # another ioattr session on this host may have switched it on
        cols = c2.collect({db.pid: weak}, [db.pid], "p")
        assert {"status", "innodb_metrics", "innodb_status"} <= set(cols["source"])
        if not leaf_was_on:
            assert any("cannot enable INNODB_METRICS module_buffer_page" in n for n in notes), notes
            assert "buffer_page_read_index_leaf" not in cols["name"]  # off, so not reported as 0
    finally:
        weak.engine.close()

    root = ctx_for(None)
    cols = c.collect({db.pid: root}, [db.pid], "p", force=True)
    old_pid = db.pid
    # the connection is killed under us: a snapshot is lost, the next one reconnects
    conn_id = root.engine.query("SELECT CONNECTION_ID()")[0][0]
    db.query(f"KILL CONNECTION {int(conn_id)}")
    c.collect({db.pid: root}, [db.pid], "p")
    wait_until(lambda: "status" in c.collect({db.pid: root}, [db.pid], "p")["source"], 30,
               lambda: f"the collector to reconnect after KILL CONNECTION (notes: {notes})")
    root.engine.close()

    db.restart()
    assert db.pid != old_pid
    new = ctx_for(None)
    try:
        cols = c.collect({db.pid: new}, [db.pid], "p")  # the old pid is gone from both maps
        assert set(cols["pid"]) - {None} == {db.pid}
        assert {"status", "innodb_status", "innodb_metrics"} <= set(cols["source"])
        assert set(c.settings) == {str(old_pid), str(db.pid)}
        assert "buffer_page_read_index_leaf" in cols["name"]  # switched on again in the new process
    finally:
        new.engine.close()


def test_snapshot_cost(mariadb_factory, capsys) -> None:
    """What one snapshot costs, printed (with -s) for the record; how fast it is belongs in
    benchmarks/, so the assertions are about what the snapshots hold, not their timing."""
    db = mariadb_factory(buffer_pool="8M")
    db.sysbench("oltp_read_only", "prepare", table_size=10000)
    eng = EngineConnection(EngineOptions(socket=str(db.socket)), target_pid=db.pid)
    eng.connect()
    ctx = SimpleNamespace(engine=eng, engine_error=None, engines=engines_for(eng))
    c = CounterCollector(ps_every=10 ** 6)  # performance_schema only when forced
    try:
        c.collect({db.pid: ctx}, [db.pid], "p", force=True)
        walls, cpus, rows = {True: [], False: []}, {True: [], False: []}, {}
        for i in range(20):
            force = i % 2 == 0
            w0, c0 = time.perf_counter(), time.process_time()
            cols = c.collect({db.pid: ctx}, [db.pid], "p", force=force)
            walls[force].append((time.perf_counter() - w0) * 1e3)
            cpus[force].append((time.process_time() - c0) * 1e3)
            rows[force] = len(cols["ts"])
    finally:
        eng.close()
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    with capsys.disabled():
        for force in (False, True):
            print(f"\ncounters snapshot{' with P_S' if force else ''}: {rows[force]} rows, "
                  f"wall {med(walls[force]):.1f} ms, ioattr CPU {med(cpus[force]):.1f} ms (medians)")
    # performance_schema rows only in the forced snapshots, everything else in both
    assert rows[False] > 0 and rows[True] > rows[False], rows

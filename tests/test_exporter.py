"""`ioattr exporter`: counters that stay monotonic under a bounded label set, exact histogram
buckets, an exposition promtool accepts, and (live) the same numbers as `ioattr record` over
the same window, with both attached to the same server at once."""
from __future__ import annotations

import random
import socket
import subprocess
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ioattr.format.schema import HIST_COLUMNS
from tests.conftest import need_root, need_tool
from tests.helpers import PS_LOST_OPS, Background, assert_ps_lower_bound, exporter_port, report_json, wait_until
from tests.test_top import Workload, assert_no_leftover_programs, live_db, synthetic_io, synthetic_pages  # noqa: F401


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def samples(text: str, name: str) -> list[tuple[dict, float]]:
    out = []
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name:
                out.append((dict(s.labels), s.value))
    return out


def exposition(state, stats=None) -> str:
    """What /metrics serves (without process_*), checked against prometheus_client's own writer."""
    import threading

    from ioattr.prometheus.exporter import IoattrCollector, SelfStats

    collector = IoattrCollector(state, stats or SelfStats(), threading.Lock())
    text = collector.text()
    # collect() gives the same families to any registry; generate_latest() then writes the same samples
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    theirs = generate_latest(reg).decode()

    def sample_set(t: str) -> set:
        return {(s.name, tuple(sorted(s.labels.items())), s.value)
                for fam in text_string_to_metric_families(t) for s in fam.samples}

    assert sample_set(text) == sample_set(theirs)
    assert [ln for ln in text.splitlines() if ln.startswith("# TYPE")] == \
        [ln for ln in theirs.splitlines() if ln.startswith("# TYPE")]
    return text


# -- the bounded, monotonic counters ----------------------------------------------------------------
def test_top_n_counters_stay_monotonic_and_add_up() -> None:
    """Files come and go from the top N; every series only grows, sums stay exact, series stay few."""
    from ioattr.prometheus.metrics_state import OTHER, ExporterState

    st = ExporterState(top_n=3, half_life=5.0, min_dwell=3.0, hysteresis=1.5, retention=20.0, min_frozen=5.0)
    rng = random.Random(1)
    prev: dict[tuple, int] = {}
    last_seen: dict[tuple, int] = {}
    total = 0
    most = 0
    for step in range(300):
        now = float(step)
        # a few hot files that change every ~40 intervals, and a long tail
        hot = [f"/d/hot{(step // 40) * 2 + j}.ibd" for j in range(2)]
        rows = [{"file": f, "count": 100, "bytes": 100 * 16384} for f in hot]
        rows += [{"file": f"/d/tail{rng.randrange(40)}.ibd", "count": 1, "bytes": 16384} for _ in range(5)]
        io = synthetic_io(rows)
        total += int(np.sum(io["bytes"]))
        st.ingest(io, None, now)
        cur = {k: int(v[1]) for k, v in st.io.series.items()}
        grown = 0
        for k, v in cur.items():
            assert v >= prev.get(k, 0), (step, k)
            grown += v - prev.get(k, 0)
        for k in prev.keys() - cur.keys():  # a dropped series had stopped growing a while before
            assert last_seen[k] <= step - 5, (step, k)
        assert grown == int(np.sum(io["bytes"])), step  # every byte of the interval is in some series
        for k, v in cur.items():
            if v != prev.get(k):
                last_seen[k] = step
        prev = cur
        files = {k[2] for k in cur}
        most = max(most, len(files - {OTHER}))
        assert len(files - {OTHER}) <= 3 * 3, files  # top N, N frozen, and those frozen < min_frozen ago
    assert st.io.topn.evictions > 0 and most > 3
    # the current hot files have series of their own; the tail is "other"
    assert {"/d/hot14.ibd", "/d/hot15.ibd"} <= {k[2] for k in st.io.series}
    assert any(k[2] == OTHER for k in st.io.series)


def test_latency_histogram_buckets_are_exact_slot_sums() -> None:
    from ioattr.model.hist import BOUNDS
    from ioattr.prometheus.exporter import SelfStats
    from ioattr.prometheus.metrics_state import ExporterState

    h = np.zeros(len(HIST_COLUMNS), dtype=np.int64)
    h[4] = 5    # [768, 1024) ns        -> le 1.024e-06
    h[5] = 7    # [1024, 1536) ns       -> le 2.048e-06
    h[24] = 3   # [2^19, 1.5*2^19) ns   -> le 2^20 ns
    h[60] = 2   # above the last edge   -> +Inf only
    assert BOUNDS[4][1] == 1024 and BOUNDS[6][1] == 2048
    st = ExporterState()
    st.ingest(synthetic_io([{"count": 17, "hist": h, "lat_sum_ns": 123456789}]), None, 0.0)
    text = exposition(st, SelfStats())
    buckets = {s[0]["le"]: s[1] for s in samples(text, "ioattr_io_latency_seconds_bucket")}
    assert buckets["1.024e-06"] == 5 and buckets["2.048e-06"] == 12
    assert buckets["0.000524288"] == 12 and buckets["0.001048576"] == 15
    assert buckets["17.179869184"] == 15 and buckets["+Inf"] == 17
    assert samples(text, "ioattr_io_latency_seconds_count")[0][1] == 17
    assert samples(text, "ioattr_io_latency_seconds_sum")[0][1] == pytest.approx(0.123456789)


def test_storage_label_follows_the_file_class_table() -> None:
    """Every family with file_class carries storage="yes"/"no" from the file-class table (a
    function of file_class: no more series), so dashboards select storage IO without listing
    classes; pages are ioattr_pages_total (every engine's), the InnoDB-named metric is gone."""
    from ioattr.model.storage import STORAGE_FILE_CLASSES
    from ioattr.prometheus.metrics_state import ExporterState

    st = ExporterState()
    rows = [{"file": "/d/t.ibd", "file_class": "tablespace", "count": 3},
            {"file": "/d/ib_logfile0", "file_class": "redo_log", "op": "write", "count": 2},
            {"file": "/d/000012.sst", "file_class": "sst", "count": 5},
            {"file": "/d/LOG", "file_class": "info_log", "op": "write", "count": 7},
            {"file": "/var/log/mysql/error.log", "file_class": "other", "op": "write", "count": 11}]
    st.ingest(synthetic_io(rows), synthetic_pages([{"index": "db.t.PRIMARY", "level": 0}]), 0.0)
    text = exposition(st)
    for name in ("ioattr_ops_total", "ioattr_read_bytes_total", "ioattr_write_bytes_total",
                 "ioattr_io_time_seconds_total", "ioattr_io_latency_seconds_count", "ioattr_pages_total"):
        got = samples(text, name)
        assert got, name
        for labels, _ in got:
            assert labels["storage"] == ("yes" if labels["file_class"] in STORAGE_FILE_CLASSES else "no"), (name, labels)
    ops = {(l["file_class"], l["storage"]): v for l, v in samples(text, "ioattr_ops_total")}
    assert ops == {("tablespace", "yes"): 3, ("redo_log", "yes"): 2, ("sst", "yes"): 5, ("info_log", "no"): 7,
                   ("other", "no"): 11}, ops
    assert sum(v for l, v in samples(text, "ioattr_ops_total") if l["storage"] == "yes") == 10
    assert "ioattr_innodb_pages_total" not in text


def test_exposition_of_ten_thousand_series_passes_promtool(tmp_path: Path) -> None:
    from ioattr.prometheus.metrics_state import ExporterState

    promtool = need_tool("promtool")
    st = ExporterState(top_n=5000)
    rows = [{"file": f"/d/db{i % 50}/t{i}.ibd", "role": ("connection", "page_cleaner")[i % 2],
             "op": ("read", "write", "fsync")[i % 3], "layer": ("syscall", "block")[i % 2], "count": i + 1}
            for i in range(3500)]
    pages = [{"index": f"db{i % 50}.t{i}.PRIMARY", "level": i % 2, "op": ("read", "write")[i % 2]}
             for i in range(1500)]
    st.ingest(synthetic_io(rows), synthetic_pages(pages), 0.0)
    text = exposition(st)
    n = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    assert n >= 10000, n
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert samples(text, "ioattr_series")


def test_listen_addresses() -> None:
    from ioattr.errors import UsageError
    from ioattr.prometheus.exporter import parse_listen

    assert parse_listen("127.0.0.1:9474") == ("127.0.0.1", 9474)
    assert parse_listen("9999") == ("127.0.0.1", 9999)
    assert parse_listen(":9474") == ("0.0.0.0", 9474)
    assert parse_listen("[::1]:9474") == ("::1", 9474)
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)  # any free port; the bound one is printed
    for bad in ("localhost:x", "1.2.3.4:-1", "[::1]9474", "1.2.3.4:70000"):
        with pytest.raises(UsageError):
            parse_listen(bad)


def test_bad_usage_and_busy_port(capsys) -> None:
    from ioattr.cli.main import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        cases = [(["exporter", "--listen", "nowhere:port"], "port must be a number"),
                 (["exporter", "--top-n", "0"], "--top-n"),
                 (["exporter", "--interval", "-1"], "--interval"),
                 (["exporter", "--pid", "1", "--listen", f"127.0.0.1:{port}"], "cannot listen on 127.0.0.1:")]
        for argv, text in cases:
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert text in err and len(err.strip().splitlines()) == 1, (argv, err)


# -- live ------------------------------------------------------------------------------------------
def _flush_dirty(db, timeout: float = 120) -> None:
    """Make the server write every dirty page now, and wait until it has."""
    db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    wait_until(lambda: db.status("Innodb_buffer_pool_pages_dirty") == 0, timeout, "the dirty pages to be written")


def _ps_files(db) -> dict[tuple[str, str], int]:
    """performance_schema's own byte and operation counts per (file, what) for the workload's
    files (live/hot.ibd, live/cold.ibd): the server's ground truth for their IO."""
    out: dict[tuple[str, str], int] = {}
    for name, n_read, n_write, b_read, b_write in db.query(
            "SELECT FILE_NAME, COUNT_READ, COUNT_WRITE, SUM_NUMBER_OF_BYTES_READ, SUM_NUMBER_OF_BYTES_WRITE "
            "FROM performance_schema.file_summary_by_instance WHERE FILE_NAME LIKE '%/live/%.ibd'"):
        f = name.rsplit("/", 1)[-1]
        for what, v in (("reads", n_read), ("writes", n_write), ("read", b_read), ("write", b_write)):
            out[(f, what)] = out.get((f, what), 0) + int(v)
    return out


def _drains(port: int) -> float:
    return samples(scrape(port), "ioattr_drain_duration_seconds_count")[0][1]


def _scrape_after_next_drain(port: int) -> str:
    """/metrics as of a drain that began after this call (the one in progress may have begun
    before: wait for the one after it)."""
    n = _drains(port)
    wait_until(lambda: _drains(port) >= n + 2, 60, "two more drains of the exporter")
    return scrape(port)


def _by_file(pairs: list[tuple[dict, float]], layer: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, v in pairs:
        if labels["layer"] == layer:
            f = labels["file"].rsplit("/", 1)[-1]
            out[f] = out.get(f, 0.0) + v
    return out


PAGE = 16384


def _ps_truth(ps: dict[tuple[str, str], int], f: str, op: str) -> int:
    """The bytes performance_schema says file `f` moved for `op` over the workload.

    Reads: the larger of its read count times the page size (every read of these files is
    one page; see the test) and its byte sum. The workload's two connections read the same
    file at once, and each number can have lost an increment, independently of the other
    (helpers.assert_ps_lower_bound): each is a lower bound, the larger is the better one.
    Writes: the byte sum. They come from one page cleaner thread, and are exact."""
    if op == "read":
        return max(PAGE * ps[(f, "reads")], ps[(f, "read")])
    return ps[(f, op)]


def test_exporter_matches_the_recorder(live_db, tmp_path: Path) -> None:
    """Both attached at once to one server: per file, the bytes each saw equal each other's, the
    syscall and device layers' equal each other's (O_DIRECT), and all equal what the server's
    performance_schema counted (writes exactly; reads: its count of page reads, which can be a
    page or two short under concurrent readers, see _ps_truth); per index likewise; the
    server's own counters match.

    The comparison windows are made equal by quiet: the server has no dirty page and nothing
    runs when the exporter and the recorder take their baselines, and the workload's files see
    no IO again until both have their last numbers. So no file is left out of the comparison."""
    need_root()
    promtool = need_tool("promtool")
    rec = tmp_path / "rec"
    _flush_dirty(live_db)  # the fixture's bulk load: written before anything is measured
    exp = Background("exporter", "--pid", str(live_db.pid), "--listen", "127.0.0.1:0", "--interval", "0.3",
                     "--top-n", "500")
    recorder = None
    try:
        port = exporter_port(exp)
        recorder = Background("record", "-o", str(rec), "--pid", str(live_db.pid), "--interval", "0.3")
        recorder.wait_recording()
        # the recorder's own start-up (its server connection reading the dictionary) happens
        # before its baseline: take the exporter's baseline after it
        base = _scrape_after_next_drain(port)
        ps_before = _ps_files(live_db)
        questions_before = live_db.status("Questions")
        Workload(live_db, updates=True, limit=6000).start().finish()
        _flush_dirty(live_db)
        ps_after = _ps_files(live_db)
        questions = live_db.status("Questions") - questions_before
        text = _scrape_after_next_drain(port)
        code, err = recorder.stop()
        recorder = None
        assert code == 0, err
        assert _ps_files(live_db) == ps_after, "the workload's files had IO after the workload"
    finally:
        if recorder is not None:
            recorder.stop()
        code, err = exp.stop()
    assert code == 0, err
    assert "stopping: SIGINT" in err

    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr

    ps = {k: ps_after.get(k, 0) - ps_before.get(k, 0) for k in ps_after}
    # what the workload did, per the server: read the busy table; read and wrote the small one
    assert ps[("hot.ibd", "read")] > 1000 * 16384 and ps[("cold.ibd", "write")] > 0, ps
    seen: dict[tuple[str, str], set[int]] = {}
    for layer in ("syscall", "block"):
        rep = report_json(rec, "--by", "file", "--layer", layer)
        for op, metric in (("read", "ioattr_read_bytes_total"), ("write", "ioattr_write_bytes_total")):
            before = _by_file(samples(base, metric), layer)
            exported = {f: v - before.get(f, 0) for f, v in _by_file(samples(text, metric), layer).items()}
            recorded: dict[str, int] = {}
            for row in rep["rows"]:
                if row["op"] == op and row["file"] and not row["file"].startswith("["):
                    f = row["file"].rsplit("/", 1)[-1]
                    recorded[f] = recorded.get(f, 0) + row["bytes"]
            for f in ("hot.ibd", "cold.ibd"):
                truth = _ps_truth(ps, f, op)
                print(f"{layer} {op} {f}: performance_schema {truth} (byte sum {ps[(f, op)]}), "
                      f"exporter {exported.get(f, 0):.0f}, recorder {recorded.get(f, 0)}")
                # the exporter and the recorder agree exactly; O_DIRECT: the block layer moves the
                # same bytes as the syscalls asked for, exactly
                assert exported.get(f, 0) == recorded.get(f, 0), (layer, op, f, exported.get(f), recorded.get(f))
                seen.setdefault((op, f), set()).add(recorded.get(f, 0))
                # reads: performance_schema's numbers are lower bounds by a page or two (_ps_truth)
                if op == "read":
                    assert_ps_lower_bound(recorded.get(f, 0), truth, PAGE, (layer, op, f))
                else:
                    assert recorded.get(f, 0) == truth, (layer, op, f, recorded.get(f), truth)
    assert all(len(v) == 1 for v in seen.values()), seen  # syscall == block, file by file

    # InnoDB pages by index: the two agree, and equal the server's count of page-sized IOs on the
    # table's file (each read or write of a page is one 16 KiB operation in performance_schema);
    # a page written goes to the doublewrite buffer first when that is on, and both copies count
    doublewrite = int(live_db.query("SELECT @@innodb_doublewrite")[0][0]) != 0
    rep = report_json(rec, "--by", "index")
    recorded_pages: dict[tuple, int] = {}
    for row in rep["rows"]:
        if row["index"]:
            key = (row["index"], row["op"])
            recorded_pages[key] = recorded_pages.get(key, 0) + row["pages"]
    exported_pages: dict[tuple, float] = {}
    for scraped, sign in ((text, 1), (base, -1)):
        for labels, v in samples(scraped, "ioattr_pages_total"):
            key = (labels["index"], labels["op"])
            exported_pages[key] = exported_pages.get(key, 0.0) + sign * v
    truth_pages = {("live.hot.PRIMARY", "read"): _ps_truth(ps, "hot.ibd", "read") // PAGE,
                   ("live.cold.PRIMARY", "read"): _ps_truth(ps, "cold.ibd", "read") // PAGE,
                   ("live.cold.PRIMARY", "write"): ps[("cold.ibd", "writes")] * (2 if doublewrite else 1)}
    # one page per read: the count and the byte sum agree but for increments either may have
    # lost (_ps_truth)
    for f in ("hot.ibd", "cold.ibd"):
        assert abs(PAGE * ps[(f, "reads")] - ps[(f, "read")]) <= PS_LOST_OPS * PAGE, ps
    assert ps[("cold.ibd", "write")] == PAGE * ps[("cold.ibd", "writes")], ps
    for key, truth in truth_pages.items():
        assert exported_pages.get(key) == recorded_pages.get(key), (key, exported_pages, recorded_pages)
        if key[1] == "read":  # _ps_truth
            assert_ps_lower_bound(recorded_pages.get(key, 0), truth, 1, (key, recorded_pages))
        else:
            assert recorded_pages.get(key, 0) == truth, (key, truth, recorded_pages)
    # no page of the busy table is read under another of its indexes (lookups by primary key)
    assert {k for k in recorded_pages if k[0].startswith("live.hot.")} == {("live.hot.PRIMARY", "read")}, \
        recorded_pages

    # the server's own counters: Questions over the exporter's window hold the workload's 6000
    # statements as the server counted them directly over the (inner) workload window, plus the
    # two tools' and this test's few statements around it
    exported_q = (samples(text, "ioattr_server_questions_total")[0][1]
                  - samples(base, "ioattr_server_questions_total")[0][1])
    print(f"Questions: direct {questions}, exporter {exported_q:.0f}")
    assert questions >= 6000, questions
    assert questions <= exported_q <= questions + 200, (exported_q, questions)
    # the exporter's health: probe run-time statistics are on (root, kernel.bpf_stats_enabled
    # through BPF_ENABLE_STATS); the syscall exit program of whichever hook is attached
    # (per-syscall tracepoints or raw) ran at least once per statement (its recv)
    assert samples(text, "ioattr_probe_stats_enabled")[0][1] == 1
    runs = {l["program"]: v for l, v in samples(text, "ioattr_probe_runs_total")}
    exit_prog = "ioattr_tp_exit" if "ioattr_tp_exit" in runs else "ioattr_sys_exit"
    assert runs[exit_prog] > 6000, runs
    run_s = {l["program"]: v for l, v in samples(text, "ioattr_probe_run_seconds_total")}
    assert run_s[exit_prog] > 0
    assert samples(text, "ioattr_drain_duration_seconds_count")[0][1] >= 4  # waited for 2 + 2 of them
    fill = {l["map"]: v for l, v in samples(text, "ioattr_map_entries")}
    assert fill["io_stats"] > 0
    assert {l["reason"] for l, _ in samples(text, "ioattr_drops_total")} >= {"stats_full", "events_full"}
    assert samples(text, "ioattr_targets")[0][1] == 1
    assert samples(text, "process_cpu_seconds_total")
    assert_no_leftover_programs()


def test_scrapers_hanging_up_leave_no_traceback() -> None:
    """A scraper that hangs up (Prometheus stopped mid-scrape, a scrape timeout) is the exporter's
    everyday life: no traceback on stderr, and the next scrape is served. Hang-ups are made with
    a TCP reset (SO_LINGER 0), mid-request and after the first bytes of the response."""
    import struct
    import time

    need_root()
    sleeper = subprocess.Popen(["sleep", "300"])
    exp = Background("exporter", "--pid", str(sleeper.pid), "--listen", "127.0.0.1:0", "--interval", "0.3",
                     "--no-probe-stats")
    try:
        port = exporter_port(exp)
        for request, read in ((b"GET /metrics HTTP/1.1\r\nHost: x\r\n", 0),
                              (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 16)) * 5:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(request)
            if read:
                assert s.recv(read)  # the response has begun
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # RST
        time.sleep(0.5)  # the handler threads meet the resets
        assert "ioattr_targets 1" in scrape(port)
    finally:
        code, err = exp.stop()
        sleeper.kill()
        sleeper.wait()
    assert code == 0, err
    assert "Traceback" not in err and "Error" not in err and "error" not in err, err

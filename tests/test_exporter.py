"""`ioattr exporter`: counters that stay monotonic under a bounded label set, exact histogram
buckets, an exposition promtool accepts, and (live) the same numbers as `ioattr record` over
the same window, with both attached to the same server at once."""
from __future__ import annotations

import random
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ioattr.recording import HIST_COLUMNS
from tests.conftest import need_root, need_tool
from tests.helpers import Background, report_json
from tests.test_top import Workload, assert_no_leftover_programs, live_db, synthetic_io, synthetic_pages  # noqa: F401


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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

    from ioattr.exporter import IoattrCollector, SelfStats

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
    from ioattr.metrics_state import OTHER, ExporterState

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
    from ioattr.exporter import SelfStats
    from ioattr.hist import BOUNDS
    from ioattr.metrics_state import ExporterState

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


def test_exposition_of_ten_thousand_series_passes_promtool(tmp_path: Path) -> None:
    from ioattr.metrics_state import ExporterState

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
    from ioattr.exporter import parse_listen

    assert parse_listen("127.0.0.1:9474") == ("127.0.0.1", 9474)
    assert parse_listen("9999") == ("127.0.0.1", 9999)
    assert parse_listen(":9474") == ("0.0.0.0", 9474)
    assert parse_listen("[::1]:9474") == ("::1", 9474)
    for bad in ("localhost:x", "1.2.3.4:0", "[::1]9474", "1.2.3.4:70000"):
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
def _flush_dirty(db, timeout: float = 60) -> None:
    db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    deadline = time.monotonic() + timeout
    while db.status("Innodb_buffer_pool_pages_dirty") > 0 and time.monotonic() < deadline:
        time.sleep(0.2)


def _by_file(pairs: list[tuple[dict, float]], layer: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, v in pairs:
        if labels["layer"] == layer:
            out[labels["file"]] = out.get(labels["file"], 0.0) + v
    return out


def test_exporter_matches_the_recorder(live_db, tmp_path: Path) -> None:
    """Both attached at once to one server: per file and per index, the same counts within 1%."""
    need_root()
    promtool = need_tool("promtool")
    port = free_port()
    rec = tmp_path / "rec"
    exp = Background("exporter", "--pid", str(live_db.pid), "--listen", f"127.0.0.1:{port}", "--interval", "0.3",
                     "--top-n", "500")
    recorder = None
    try:
        exp.wait_for("exporting ")
        recorder = Background("record", "-o", str(rec), "--pid", str(live_db.pid), "--interval", "0.3")
        recorder.wait_recording()
        # the recorder's own start-up (its server connection reading the dictionary) happens
        # before its baseline: take the exporter's baseline after it, once both have drained
        time.sleep(1.0)
        base = scrape(port)
        Workload(live_db, updates=True, limit=6000).start().finish()
        _flush_dirty(live_db)
        time.sleep(1.0)  # a few drains of both
        text = scrape(port)
        code, err = recorder.stop()
        recorder = None
        assert code == 0, err
        time.sleep(0.7)
        after = scrape(port)
    finally:
        if recorder is not None:
            recorder.stop()
        code, err = exp.stop()
    assert code == 0, err
    assert "stopping: SIGINT" in err

    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr

    compared: list[tuple[str, str, str]] = []
    for layer in ("syscall", "block"):
        rep = report_json(rec, "--by", "file", "--layer", layer)
        for op, metric in (("read", "ioattr_read_bytes_total"), ("write", "ioattr_write_bytes_total")):
            before = _by_file(samples(base, metric), layer)
            exported = {f: v - before.get(f, 0) for f, v in _by_file(samples(text, metric), layer).items()}
            later = {f: v - before.get(f, 0) for f, v in _by_file(samples(after, metric), layer).items()}
            recorded: dict[str, int] = {}
            for row in rep["rows"]:
                if row["op"] == op and row["file"] and not row["file"].startswith("["):
                    recorded[row["file"]] = recorded.get(row["file"], 0) + row["bytes"]
            for f, b in recorded.items():
                if b < 256 * 1024:
                    continue  # background trickle: not the workload's
                if later.get(f) != exported.get(f):
                    continue  # this file's IO went on past the window both saw (server background work)
                assert exported.get(f, 0) == pytest.approx(b, rel=0.01), (layer, op, f, exported.get(f), b)
                compared.append((layer, op, f.rsplit("/", 1)[-1]))
    # the workload's files: its busy table read, the small one read and written, at both layers
    assert {("syscall", "read", "hot.ibd"), ("block", "read", "hot.ibd"), ("syscall", "read", "cold.ibd"),
            ("syscall", "write", "cold.ibd")} <= set(compared), compared

    # InnoDB pages by index
    rep = report_json(rec, "--by", "index")
    recorded_pages: dict[tuple, int] = {}
    for row in rep["rows"]:
        if row["index"]:
            recorded_pages[(row["index"], row["op"])] = recorded_pages.get((row["index"], row["op"]), 0) + row["count"]
    exported_pages: dict[tuple, float] = {}
    for labels, v in samples(text, "ioattr_innodb_pages_total"):
        key = (labels["index"], labels["op"])
        exported_pages[key] = exported_pages.get(key, 0.0) + v
    assert recorded_pages[("live.hot.PRIMARY", "read")] > 1000
    assert exported_pages[("live.hot.PRIMARY", "read")] == pytest.approx(recorded_pages[("live.hot.PRIMARY", "read")],
                                                                         rel=0.01)

    # the server's own counters and the exporter's health
    assert samples(text, "ioattr_server_questions_total")[0][1] > 6000
    runs = {l["program"]: v for l, v in samples(text, "ioattr_probe_runs_total")}
    if samples(text, "ioattr_probe_stats_enabled")[0][1] == 1:
        # the syscall exit program of whichever hook is attached (per-syscall tracepoints or raw)
        exit_prog = "ioattr_tp_exit" if "ioattr_tp_exit" in runs else "ioattr_sys_exit"
        assert runs[exit_prog] > 6000
        run_s = {l["program"]: v for l, v in samples(text, "ioattr_probe_run_seconds_total")}
        assert run_s[exit_prog] > 0
    assert samples(text, "ioattr_drain_duration_seconds_count")[0][1] >= 3
    fill = {l["map"]: v for l, v in samples(text, "ioattr_map_entries")}
    assert fill["io_stats"] > 0
    assert {l["reason"] for l, _ in samples(text, "ioattr_drops_total")} >= {"stats_full", "events_full"}
    assert samples(text, "ioattr_targets")[0][1] == 1
    assert samples(text, "process_cpu_seconds_total")
    assert_no_leftover_programs()

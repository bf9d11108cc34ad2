"""`ioattr top`: the numbers and the screen (no root), then the real thing on a private MariaDB
under a workload: batch snapshots, and the interactive screen driven in tmux (80x24, keys).

The live server and workload here are shared with test_exporter.py and test_dashboards.py:
a table bigger than the buffer pool (live.hot, the busy file and index: point selects by
primary key) and a small one (live.cold, a trickle of reads and, when asked, updates).
"""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

from ioattr.format.schema import HIST_COLUMNS
from ioattr.model.hist import percentile_ns
from tests.conftest import need_root, need_tool
from tests.helpers import IOATTR, _prog_ids_held_by_processes, ioattr, loaded_ioattr_programs, wait_until

HOT_ROWS = 120000
COLD_ROWS = 20000
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


# -- BPF programs left behind -------------------------------------------------------------------
def _prog_ids_held_by_others() -> set[int]:
    """Ids of BPF programs held open (program or link fds) by processes other than this one."""
    return _prog_ids_held_by_processes(skip_pid=os.getpid(), bpf_fds_only=True)


def assert_no_leftover_programs(timeout: float = 5.0) -> None:
    """No ioattr program outlives the ioattr processes this test ran.

    Where nothing else uses ioattr this is tests.helpers.assert_no_ioattr_programs. On a
    shared machine other people's ioattr runs hold programs of their own: those are told
    apart by who holds them (a leaked program is held by nobody, or by this process)."""
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True)
        progs = {p["id"]: p.get("name", "") for p in json.loads(out.stdout or "[]")
                 if p.get("name", "").startswith(("ioattr_", "doctor_"))}
        leaked = {i: n for i, n in progs.items() if i not in _prog_ids_held_by_others()}
        mine = set(_prog_ids_held_by_me()) & set(progs)
        if (not leaked and not mine) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not leaked and not mine, f"BPF programs left loaded: {sorted(set(leaked.values()))}"
    if not progs:
        assert loaded_ioattr_programs() == []


def _prog_ids_held_by_me() -> list[int]:
    ids = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:bpf-prog":
                with open(f"/proc/self/fdinfo/{fd}") as f:
                    ids += [int(x.split()[1]) for x in f if x.startswith("prog_id:")]
        except (OSError, ValueError):
            continue
    return ids


# -- a private server with a workload (shared with the exporter and dashboard tests) -------------
def start_live_server():
    """A started private MariaDB (8M buffer pool) holding live.hot (~30 MB) and live.cold (~4 MB)."""
    from ioattr.host.sandbox import PrivateMariaDB
    from tests import fixtures_mariadb

    fixtures_mariadb._need_mariadb()
    db = PrivateMariaDB(buffer_pool="8M", extra_options={"innodb_stats_persistent": "OFF"})
    db.start()
    fixtures_mariadb._SESSION_SERVERS.append(db)
    try:
        db.query("CREATE DATABASE live")
        db.query("CREATE TABLE live.hot (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(200) NOT NULL, KEY k (k)) "
                 "ENGINE=InnoDB")
        db.query("INSERT INTO live.hot SELECT seq, (seq * 7919) % 100000, REPEAT('x', 200) "
                 f"FROM live.seq_1_to_{HOT_ROWS}")
        db.query("CREATE TABLE live.cold (id INT PRIMARY KEY, c CHAR(200) NOT NULL) ENGINE=InnoDB")
        db.query(f"INSERT INTO live.cold SELECT seq, REPEAT('y', 200) FROM live.seq_1_to_{COLD_ROWS}")
    except BaseException:
        stop_live_server(db)
        raise
    return db


def stop_live_server(db) -> None:
    from tests import fixtures_mariadb

    try:
        db.stop()
    finally:
        if db in fixtures_mariadb._SESSION_SERVERS:
            fixtures_mariadb.forget_server(db)


@pytest.fixture(scope="module")
def live_db():
    db = start_live_server()
    try:
        yield db
    finally:
        stop_live_server(db)


class Workload:
    """Threads of point selects on live.hot; every `cold_every`-th statement reads live.cold
    (and updates it with `updates`). `limit` stops after that many statements in all."""

    def __init__(self, db, *, threads: int = 2, cold_every: int = 25, updates: bool = False,
                 limit: int | None = None) -> None:
        self.db = db
        self.cold_every = cold_every
        self.updates = updates
        self.limit = limit
        self.done = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]

    def _take(self) -> bool:
        with self._lock:
            if self.limit is not None and self.done >= self.limit:
                return False
            self.done += 1
            return True

    def _run(self, seed: int) -> None:
        rnd = random.Random(seed)
        try:
            conn = self.db.connect()
            with conn.cursor() as cur:
                n = 0
                while not self._stop.is_set() and self._take():
                    n += 1
                    if n % self.cold_every == 0:
                        cid = rnd.randint(1, COLD_ROWS)
                        if self.updates:
                            cur.execute("UPDATE live.cold SET c = REPEAT(%s, 200) WHERE id = %s",
                                        (rnd.choice("abc"), cid))
                        else:
                            cur.execute("SELECT c FROM live.cold WHERE id = %s", (cid,))
                            cur.fetchall()
                    else:
                        cur.execute("SELECT c FROM live.hot WHERE id = %s", (rnd.randint(1, HOT_ROWS),))
                        cur.fetchall()
            conn.close()
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.errors.append(e)

    def start(self) -> "Workload":
        for t in self._threads:
            t.start()
        return self

    def wait(self, timeout: float = 120) -> None:
        for t in self._threads:
            t.join(timeout)

    def finish(self, timeout: float = 120) -> None:
        """Wait for a `limit`ed workload to run all its statements."""
        self.wait(timeout)
        assert not self.errors, self.errors
        assert not any(t.is_alive() for t in self._threads), "workload did not finish"

    def stop(self) -> None:
        self._stop.set()
        self.wait(30)
        assert not self.errors, self.errors

    def __enter__(self) -> "Workload":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- synthetic intervals (no root) ---------------------------------------------------------------
def synthetic_io(rows: list[dict]) -> dict[str, object]:
    """io columns (ioattr.format.schema.IO_SCHEMA names) from a few keyword rows."""
    defaults = {"layer": "syscall", "op": "read", "api": "sync", "kind": "file", "pid": 100, "tid": 101,
                "process": "mariadbd", "thread": "mariadbd", "role": "connection", "stage": "execute",
                "digest": None, "query": None, "file_class": "tablespace", "dev": "253:0", "device": "vda",
                "ino": 1, "file": "/data/db/t.ibd", "count": 1, "bytes": 16384, "lat_sum_ns": 100000,
                "hist": None}
    cols: dict[str, list] = {k: [] for k in defaults if k != "hist"}
    hists = []
    for r in rows:
        full = {**defaults, **r}
        for k in cols:
            cols[k].append(full[k])
        h = full["hist"]
        if h is None:
            h = np.zeros(len(HIST_COLUMNS), dtype=np.int64)
            h[20] = full["count"] if full["op"] != "fsync" else 0
        hists.append(np.asarray(h, dtype=np.int64))
    out: dict[str, object] = dict(cols)
    out["count"] = np.asarray(cols["count"], dtype=np.int64)
    out["bytes"] = np.asarray(cols["bytes"], dtype=np.int64)
    out["lat_sum_ns"] = np.asarray(cols["lat_sum_ns"], dtype=np.int64)
    H = np.vstack(hists) if hists else np.zeros((0, len(HIST_COLUMNS)), dtype=np.int64)
    for i, c in enumerate(HIST_COLUMNS):
        out[c] = H[:, i]
    return out


def synthetic_pages(rows: list[dict]) -> dict[str, object]:
    defaults = {"op": "read", "api": "sync", "pid": 100, "tid": 101, "process": "mariadbd", "thread": "mariadbd",
                "role": "connection", "stage": "execute", "digest": None, "query": None, "space_id": 5,
                "file": "/data/db/t.ibd", "file_class": "tablespace", "index_id": 40, "index": "db.t.PRIMARY",
                "level": 0, "page_type": "index", "flags": None, "pages": 1, "bytes": 16384}
    cols: dict[str, list] = {k: [] for k in defaults}
    for r in rows:
        full = {**defaults, **r}
        for k in cols:
            cols[k].append(full[k])
    out: dict[str, object] = dict(cols)
    out["pages"] = np.asarray(cols["pages"], dtype=np.int64)
    out["bytes"] = np.asarray(cols["bytes"], dtype=np.int64)
    return out


def test_percentiles_match_the_report_implementation() -> None:
    from ioattr.topview.top import percentiles_ns

    rng = np.random.default_rng(7)
    H = rng.integers(0, 50, size=(40, len(HIST_COLUMNS))) * (rng.random((40, len(HIST_COLUMNS))) < 0.2)
    H[0] = 0
    for q in (0.5, 0.99):
        got = percentiles_ns(H, q)
        for i in range(len(H)):
            want = percentile_ns(list(H[i]), q)
            if want is None:
                assert np.isnan(got[i])
            else:
                assert got[i] == pytest.approx(want, rel=1e-9)


def _snapshot(n_files: int = 3, seconds: float = 2.0):
    from ioattr.topview.top import Snapshot

    io_rows = [
        {"file": "/data/db/hot.ibd", "count": 400, "bytes": 400 * 16384, "tid": 11},
        {"file": "/data/db/hot.ibd", "count": 200, "bytes": 200 * 16384, "tid": 12, "digest": 777,
         "query": "SELECT c FROM t WHERE id = ?"},
        {"file": "/data/ib_logfile0", "file_class": "redo_log", "op": "write", "count": 50, "bytes": 50 * 4096,
         "role": "log_writer", "tid": 13},
        {"file": "/data/ib_logfile0", "file_class": "redo_log", "op": "fsync", "count": 50, "bytes": 0,
         "role": "log_writer", "tid": 13},
        {"file": "/data/db/hot.ibd", "layer": "block", "api": "direct", "count": 600, "bytes": 600 * 16384},
    ]
    for i in range(n_files):
        io_rows.append({"file": f"/data/db/very/long/directory/name/for/table_number_{i:03d}.ibd",
                        "count": 1 + i % 7, "bytes": (1 + i % 7) * 16384, "tid": 20 + i})
    pages = [
        {"index": "db.hot.PRIMARY", "pages": 590, "bytes": 590 * 16384, "tid": 11, "file": "/data/db/hot.ibd"},
        {"index": "db.hot.PRIMARY", "pages": 10, "level": 1, "bytes": 10 * 16384, "tid": 11,
         "file": "/data/db/hot.ibd"},
        {"index": None, "index_id": None, "level": None, "page_type": "undo_log", "pages": 5, "bytes": 5 * 16384},
        {"index": "db.cold.PRIMARY", "op": "write", "pages": 30, "bytes": 30 * 16384, "role": "page_cleaner"},
    ]
    return Snapshot(100.0, 100.0 + seconds, synthetic_io(io_rows), synthetic_pages(pages),
                    status_delta={"questions": 1200, "selects": 1000, "cache_misses": 600},
                    datadirs=["/data/"])


def test_views_aggregate_and_sort() -> None:
    from ioattr.topview.top import VIEWS, find_column, sort_rows

    snap = _snapshot()
    files = sort_rows(snap.rows(VIEWS["files"], "syscall"), find_column(VIEWS["files"], "IO/s"))
    top = files[0]
    assert top.name == "db/hot.ibd" and top.full == "/data/db/hot.ibd"  # relative to the datadir
    assert top.values["r"] == pytest.approx(300.0)       # 600 reads in 2 s
    assert top.values["rmb"] == pytest.approx(600 * 16384 / 2 / 1e6)
    assert top.extra == "table"
    redo = next(r for r in files if r.name == "ib_logfile0")
    # IO/s = R/s + W/s: the redo log's 50 fsyncs are in the header's fsync/s, not its IO/s
    assert redo.values["w"] == pytest.approx(25.0) and redo.values["iops"] == pytest.approx(25.0)
    for row in files:
        assert row.values["iops"] == pytest.approx(row.values["r"] + row.values["w"]), row
    assert snap.totals("syscall").fsyncs == pytest.approx(25.0)
    assert redo.extra == "redo"
    # the block layer is its own view of the same files
    block = snap.rows(VIEWS["files"], "block")
    assert [r.name for r in block] == ["db/hot.ibd"] and block[0].values["r"] == pytest.approx(300.0)
    # any column sorts; names A-Z, numbers biggest first, reverse flips
    by_w = sort_rows(files, find_column(VIEWS["files"], "w/s"))
    assert by_w[0].name == "ib_logfile0"
    by_name = sort_rows(files, find_column(VIEWS["files"], "name"))
    assert [r.name for r in by_name] == sorted((r.name for r in files), key=str.lower)
    assert sort_rows(files, find_column(VIEWS["files"], "iops"), reverse=True)[-1].name == "db/hot.ibd"
    # indexes: pages per second, leaf share, latency from the IOs that carried them
    idx = sort_rows(snap.rows(VIEWS["indexes"]), find_column(VIEWS["indexes"], "PG/s"))
    assert idx[0].name == "db.hot.PRIMARY"
    assert idx[0].values["rpg"] == pytest.approx(300.0) and idx[0].values["leaf"] == pytest.approx(590 / 6)
    assert idx[0].values["p50"] is not None
    assert {r.name for r in idx} == {"db.hot.PRIMARY", "db.cold.PRIMARY", "[undo_log]"}
    # threads, roles, queries, devices
    roles = {r.name: r for r in snap.rows(VIEWS["roles"], "syscall")}
    assert roles["log_writer"].extra == "1" and roles["connection"].values["r"] > 0
    queries = {r.name: r for r in snap.rows(VIEWS["queries"], "syscall")}
    assert queries["SELECT c FROM t WHERE id = ?"].values["r"] == pytest.approx(100.0)
    assert "[no statement]" in queries
    assert [r.name for r in snap.rows(VIEWS["devices"], "syscall")] == ["vda"]
    # the header: rates and reads per query
    t = snap.totals("syscall")
    assert t.reads == pytest.approx((600 + sum(1 + i % 7 for i in range(3))) / 2)
    assert t.fsyncs == pytest.approx(25.0)
    pq = snap.per_query()
    # ioattr/model/per.py: qps counts SELECTs, statements every Question; per query is per SELECT
    assert pq["qps"] == pytest.approx(500.0) and pq["statements_ps"] == pytest.approx(600.0)
    assert pq["page_reads_per_query"] == pytest.approx(605 / 1000)
    assert pq["cache_misses_per_query"] == pytest.approx(600 / 1000)  # the engine's own (Innodb_buffer_pool_reads)


def test_batch_json_snapshot() -> None:
    """top --batch --format json: one object a snapshot, each view's rows with every column's value
    and, for statements, the executions behind EXEC/s (a statement without IO included)."""
    from ioattr.collectors.targets import TargetSpec
    from ioattr.errors import UsageError
    from ioattr.topview.top_live import TopApp, TopOptions

    app = TopApp(TopOptions(targets=TargetSpec(pids=[1]), batch=True, format="json", by="query,file"))
    snap = _snapshot()
    snap.statements = {"digest": [777, 888, 777], "count": [30, 6, 10],
                       "query": ["SELECT c FROM t WHERE id = ?", "COMMIT", None]}
    app.snapshot = snap
    out = json.loads(json.dumps(app.snapshot_json()))
    assert (out["start"], out["end"], out["seconds"]) == (100.0, 102.0, 2.0)
    assert out["per_query"]["qps"] == pytest.approx(500.0)
    queries = {r["name"]: r for r in out["views"]["queries"]}
    select = queries["SELECT c FROM t WHERE id = ?"]
    assert (select["executions"], select["exec"], select["r"], select["rpe"]) == (40, 20.0, 100.0, 5.0), select
    commit = queries["COMMIT"]  # no IO, still its executions
    assert (commit["executions"], commit["exec"], commit["r"]) == (6, 3.0, 0.0), commit
    assert queries["[no statement]"]["executions"] is None
    files = out["views"]["files"]
    assert files[0]["name"] == "/data/db/hot.ibd" and files[0]["class"] == "table", files[0]  # full path
    with pytest.raises(UsageError):
        TopApp(TopOptions(targets=TargetSpec(pids=[1]), format="json"))  # the screen is text


def test_sort_names_and_bad_sort() -> None:
    from ioattr.collectors.targets import TargetSpec
    from ioattr.errors import UsageError
    from ioattr.topview.top import VIEWS, find_column
    from ioattr.topview.top_live import TopApp, TopOptions

    for spec, key in (("p99", "p99"), ("RMB/s", "rmb"), ("reads", "r"), ("IO", "iops"), ("file", "name")):
        assert find_column(VIEWS["files"], spec).key == key
    assert find_column(VIEWS["indexes"], "leaf%").key == "leaf"
    with pytest.raises(UsageError):
        TopApp(TopOptions(targets=TargetSpec(pids=[1]), sort="nope", batch=True))
    with pytest.raises(UsageError):
        TopApp(TopOptions(targets=TargetSpec(pids=[1]), by="indexes", batch=True))


def test_keys_switch_views_sort_and_layer() -> None:
    from ioattr.collectors.targets import TargetSpec
    from ioattr.topview.top_live import TopApp, TopOptions
    from ioattr.topview.top_term import parse_keys

    app = TopApp(TopOptions(targets=TargetSpec(pids=[1])))
    assert app.view.name == "files" and app.view_state().sort.key == "iops"
    for key, view in (("i", "indexes"), ("t", "threads"), ("t", "roles"), ("t", "threads"), ("s", "queries"),
                      ("d", "devices"), ("f", "files")):
        assert app.on_key(key) == "redraw"
        assert app.view.name == view
    app.on_key(">")
    assert app.view_state().sort.key == "r"
    app.on_key("right")
    assert app.view_state().sort.key == "w"
    app.on_key("<")
    app.on_key("<")
    app.on_key("<")
    assert app.view_state().sort.key == "class"
    app.on_key("r")
    assert app.view_state().reverse
    app.on_key("i")  # each view keeps its own sort
    assert app.view_state().sort.key == "pgs"
    app.on_key("f")
    assert app.view_state().sort.key == "class" and app.view_state().reverse
    assert app.layer == "syscall"
    app.on_key("l")
    assert app.layer == "block"
    assert app.on_key(" ") == "refresh"
    # ? shows the keys; any key (q too, as in top(1)) returns to the view
    assert app.on_key("?") == "redraw" and app.show_help
    help_text = app.screen(80, 24, color=False)
    assert "ioattr top - keys" in help_text and "  s " in help_text and "IO/s = R/s + W/s" in help_text
    assert all(len(line) <= 80 for line in help_text.splitlines())
    assert app.on_key("q") == "redraw" and not app.show_help and app.view.name == "files"
    # q quits, as in top(1); so do Q, Esc and Ctrl-C
    assert all(app.on_key(k) == "quit" for k in ("q", "Q", "esc", "\x03"))
    assert app.on_key("z") is None
    assert parse_keys("i\x1b[C\x1b[Dq\x1b\x1b[5~x") == ["i", "right", "left", "q", "esc", "x"]


def _visible(line: str) -> str:
    return ANSI.sub("", line)


@pytest.mark.parametrize("view", ["files", "indexes", "threads", "roles", "queries", "devices"])
def test_screen_fits_80x24(view: str) -> None:
    from ioattr.collectors.targets import TargetSpec
    from ioattr.topview.top import VIEWS, Header
    from ioattr.topview.top_live import TopApp, TopOptions
    from ioattr.topview.top_render import render_screen

    app = TopApp(TopOptions(targets=TargetSpec(pids=[1])))
    app.view = VIEWS[view]
    snap = _snapshot(n_files=60)
    hdr = Header(host="db-host-with-a-rather-long-name.example.com", targets=[f"mariadbd[{p}]" for p in range(9)],
                 phase="load", degraded=["uring"], dropped=3)
    for color in (True, False):
        screen = render_screen(snap, hdr, app.view_state(), width=80, height=24, color=color, ellipsis="~")
        lines = screen.split("\n")
        assert len(lines) == 24, screen
        assert all(len(_visible(x)) <= 80 for x in lines), [x for x in lines if len(_visible(x)) > 80]
        assert _visible(lines[-1]).startswith("f:files i:indexes t:threads s:queries d:devices")
        assert _visible(lines[-1]).endswith("?:help q:quit")
        text = _visible(screen)
        assert re.search(r"statements 600/s  SELECT 500/s  reads/SELECT 0\.\d\d  pages/SELECT 0\.60", text), text
        if view == "files":
            # long paths keep their informative end
            assert re.search(r"~.*table_number_\d{3}\.ibd", text), text
            assert "(top 16 of 62)" in text
    # batch: plain text, no escape codes, every row
    text = render_screen(snap, hdr, app.view_state(), width=160, height=None, color=False, footer=False)
    assert "\x1b" not in text


def test_top_needs_a_terminal_or_batch(capsys, monkeypatch) -> None:
    from ioattr.cli.main import main

    monkeypatch.setattr("sys.stdin", open(os.devnull))  # not a terminal
    cases = [(["top", "--pid", "1"], "use --batch"),
             (["top", "--batch", "--sort", "bogus", "--pid", "1"], "not a column"),
             (["top", "--batch", "--by", "file,index", "--sort", "IO/s", "--pid", "1"], "not a column of the indexes"),
             (["top", "--by", "file,index", "--pid", "1"], "for --batch"),
             (["top", "--batch", "--by", "table", "--pid", "1"], "unknown --by"),
             (["top", "--batch", "--interval", "0", "--pid", "1"], "--interval")]
    for argv, text in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert text in err and len(err.strip().splitlines()) == 1, (argv, err)


# -- live ------------------------------------------------------------------------------------------
def _tables(text: str, title: str) -> list[list[str]]:
    """Each snapshot's table rows (cells split on blanks) under a column header starting with title."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith(title + " "):
            cur = []
            out.append(cur)
        elif cur is not None:
            if not line.strip():
                cur = None
            else:
                cur.append(line.split())
    return out


def test_batch_snapshots_show_the_busy_file_and_index(live_db) -> None:
    need_root()
    with Workload(live_db) as wl:
        # the workload is under way (its statements keep both snapshots busy), not just started
        wait_until(lambda: wl.done >= 100 or wl.errors, 60, "the workload's first 100 statements")
        assert not wl.errors, wl.errors
        r = ioattr("top", "--pid", str(live_db.pid), "--batch", "-n", "2", "--interval", "0.7", "--width", "120",
                   "--by", "file,index", "--rows", "4", timeout=60)
    assert r.returncode == 0, r.stderr
    snaps = r.stdout.split("ioattr top - ")
    assert len(snaps) == 3 and snaps[0] == ""  # two snapshots, nothing before the first
    # top's own cost on its status line (BPF run-time statistics held on while it runs)
    assert all(re.search(r"cost: BPF \d+\.\d% rec \d+\.\d%", snap.splitlines()[0]) for snap in snaps[1:]), r.stdout
    files, indexes = _tables(r.stdout, "FILE"), _tables(r.stdout, "INDEX")
    assert len(files) == len(indexes) == 2, r.stdout
    for rows in files:
        assert rows[0][0] == "live/hot.ibd", r.stdout  # relative to the datadir
        assert rows[0][1] == "table" and _number(rows[0][3]) > 0  # R/s
        assert len(rows) <= 4
    for rows in indexes:
        assert rows[0][0] == "live.hot.PRIMARY", r.stdout
        assert _number(rows[0][2]) > 0  # RPG/s
    assert re.search(r"statements \S+/s  SELECT \S+/s  reads/SELECT \d+\.\d\d", r.stdout), r.stdout
    assert "files  layer syscall  sorted by IO/s desc" in r.stdout
    assert "indexes  pages  sorted by PG/s desc" in r.stdout
    assert all(len(x) <= 120 for x in r.stdout.splitlines())
    assert_no_leftover_programs()


class Tmux:
    """A private tmux server (own socket) with one 80x24 window (resize: another size)."""

    def __init__(self, tmp: Path, command: str) -> None:
        self.tmux = need_tool("tmux")
        self.sock = str(tmp / "tmux.sock")
        self.height = 24
        self._run("-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", command)

    def resize(self, width: int, height: int) -> None:
        """The terminal window resized, as a user drags it (the program gets SIGWINCH)."""
        self._run("resize-window", "-x", str(width), "-y", str(height))
        self.height = height

    def _run(self, *args: str) -> str:
        r = subprocess.run([self.tmux, "-S", self.sock, *args], capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def keys(self, *keys: str) -> None:
        for k in keys:
            self._run("send-keys", "-l", k)

    def screen(self) -> list[str]:
        return self._run("capture-pane", "-p").split("\n")[:self.height]

    def wait(self, predicate: Callable[[list[str]], bool], timeout: float = 20) -> list[str]:
        deadline = time.monotonic() + timeout
        lines = self.screen()
        while not predicate(lines):
            if time.monotonic() > deadline:
                raise AssertionError("screen never matched:\n" + "\n".join(lines))
            time.sleep(0.1)
            lines = self.screen()
        return lines

    def kill(self) -> None:
        subprocess.run([self.tmux, "-S", self.sock, "kill-server"], capture_output=True, timeout=10)


def _number(cell: str) -> float:
    """A cell as top prints it (1234, 12.3k, 1.2M, -) as a number (- is 0)."""
    if cell == "-":
        return 0.0
    scale = {"k": 1e3, "M": 1e6}.get(cell[-1], 1.0)
    return float(cell.rstrip("kM")) * scale


def _rows(lines: list[str], title: str) -> list[list[str]]:
    """The table rows under the column header line starting with title."""
    out: list[list[str]] = []
    for i, line in enumerate(lines):
        if line.startswith(title + " "):
            for row in lines[i + 1:]:
                if not row.strip() or row.startswith("f:files"):
                    break
                out.append(row.split())
            break
    return out


def _first_row(lines: list[str], title: str) -> list[str] | None:
    for i, line in enumerate(lines):
        if line.startswith(title + " ") and i + 1 < len(lines) and lines[i + 1].strip():
            return lines[i + 1].split()
    return None


@pytest.fixture
def tmux_top(live_db, tmp_path: Path) -> Iterator[Tmux]:
    need_root()
    t = Tmux(tmp_path, f"{IOATTR} top --pid {live_db.pid} --interval 0.5; echo EXITED $?; sleep 60")
    try:
        yield t
    finally:
        t.kill()


def test_interactive_in_tmux(live_db, tmux_top: Tmux) -> None:
    t = tmux_top
    with Workload(live_db):
        lines = t.wait(lambda s: (_first_row(s, "FILE") or [""])[0] == "live/hot.ibd", timeout=30)
        assert len(lines) == 24 and all(len(x) <= 80 for x in lines)
        assert lines[0].startswith("ioattr top - ") and "targets: mariadbd[" in lines[1]
        assert lines[-1] == "f:files i:indexes t:threads s:queries d:devices c:cgroups <>:sort ?:help q:quit"

        t.keys("i")
        lines = t.wait(lambda s: (_first_row(s, "INDEX") or [""])[0] == "live.hot.PRIMARY")
        assert any(x.startswith("indexes  pages  sorted by PG/s desc") for x in lines), lines
        t.keys(">")
        t.wait(lambda s: any("sorted by RPG/s desc" in x for x in s))
        t.keys("r")
        lines = t.wait(lambda s: any("sorted by RPG/s asc" in x for x in s))
        rpg = [_number(r[2]) for r in _rows(lines, "INDEX")]
        assert len(rpg) >= 2 and rpg == sorted(rpg), lines  # the quietest first now

        t.keys("t")
        lines = t.wait(lambda s: any(x.startswith("THREAD ") for x in s))
        assert "connection" in (_first_row(lines, "THREAD") or []), lines  # the selecting threads lead
        t.keys("t")
        lines = t.wait(lambda s: (_first_row(s, "ROLE") or [""])[0] == "connection")
        t.keys("s")
        lines = t.wait(lambda s: " ".join(_first_row(s, "QUERY") or []).startswith("SELECT c FROM live.hot"))
        t.keys("?")  # the keys; q there returns to the view, as in top(1)
        lines = t.wait(lambda s: s[0] == "ioattr top - keys")
        assert any(x.split()[:2] == ["q", "Q"] and x.endswith("quit") for x in lines), lines
        t.keys("q")
        t.wait(lambda s: _first_row(s, "QUERY") is not None)
        t.keys("d")
        lines = t.wait(lambda s: _first_row(s, "DEVICE") is not None)
        t.keys("f", "l")
        t.wait(lambda s: any("files  layer block" in x for x in s))
        assert all(len(x) <= 80 for x in t.screen())
        # a 200-column terminal: the screen redrawn to its width and height, nothing past them
        t.keys("l", "l", "s")  # the layers cycle: block, pagecache, syscall again
        t.resize(200, 50)
        lines = t.wait(lambda s: s[-1].startswith("f:files ") and _first_row(s, "QUERY") is not None)
        assert len(lines) == 50 and all(len(x) <= 200 for x in lines), lines
        assert " ".join(_first_row(lines, "QUERY") or []).startswith("SELECT c FROM live.hot"), lines
        assert "~" not in "\n".join(lines), lines  # nothing cut: the width is there
        t.keys("q")  # quits, as in top(1)
        lines = t.wait(lambda s: any("EXITED 0" in x for x in s))
    assert_no_leftover_programs()


def test_the_terminal_going_away(live_db, tmp_path: Path) -> None:
    """The terminal top runs in closes (tmux killed: SIGHUP, the tty gone): top stops, no
    traceback (its stderr kept in a file for the look), nothing left loaded."""
    need_root()
    err, pidfile = tmp_path / "top.err", tmp_path / "top.pid"
    t = Tmux(tmp_path, f"bash -c 'echo $$ > {pidfile}; exec {IOATTR} top --pid {live_db.pid} --interval 0.5 2>{err}'")
    try:
        t.wait(lambda s: _first_row(s, "FILE") is not None or any(x.startswith("FILE ") for x in s), timeout=30)
    finally:
        t.kill()
    pid = int(pidfile.read_text())

    def gone() -> bool:
        try:
            return "zombie" in Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True

    wait_until(gone, 30, "top to stop when its terminal went away")
    assert "Traceback" not in err.read_text() and "Error" not in err.read_text(), err.read_text()
    assert_no_leftover_programs()

"""Block-layer attribution against ground truth: large direct IO, and only the targets' IO.

1. O_DIRECT reads and writes of 4 KiB to 8 MiB -- appending, into preallocated
   space, overwriting written blocks; pread/pwrite, libaio, io_uring -- reach the
   device as requests the block layer splits (over max_sectors_kb, or more
   scattered user pages than the queue's segments) and merges (neighbouring
   bios of one batch). Every byte must still land on its file, exactly.
2. A recording of some targets counts their IO and the writeback of their
   files, nothing else: not a second, untraced MariaDB server, not an
   unrelated O_DIRECT reader, not the journal. An idle target does no IO.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.conftest import need, need_root
from tests.helpers import IOGEN, ROOT, Background, assert_no_ioattr_programs, ioattr, proc_read_bytes, report_json

MiB = 1024 * 1024
DIRECT_SCENARIOS = "odirect,libaio,uring"


def _need_iogen() -> None:
    need_root()
    if not IOGEN.exists():
        subprocess.run(["make", "-s", "-C", str(ROOT / "tests" / "workloads")], check=False)
    need(IOGEN.exists(), "tests/workloads/iogen is not built (make -C tests/workloads; needs liburing-dev)")


def _block_by_file(rec: Path) -> dict[tuple[str, str], dict[str, int]]:
    """(file, op) -> {"count", "bytes"} at the block layer."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for row in report_json(rec, "--by", "file,op", "--layer", "block")["rows"]:
        slot = out.setdefault((row["file"], row["op"]), {"count": 0, "bytes": 0})
        slot["count"] += row["count"]
        slot["bytes"] += row["bytes"]
    return out


# (IO size, --size, --prealloc): 4 KiB to 8 MiB; 1 MiB of scattered pages is
# more than the queue's 254 segments (split), 8 MiB is over max_sectors_kb (split)
CASES = [
    ("4K", "2M", "none"),
    ("128K", "8M", "written"),
    ("1M", "16M", "none"),
    ("2M", "16M", "fallocate"),
    ("8M", "32M", "written"),
]


@pytest.fixture(scope="module")
def direct_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], dict]:
    """One recording of iogen's direct-IO scenarios per case."""
    _need_iogen()
    runs = {}
    for block, size, prealloc in CASES:
        base = Path(tmp_path_factory.mktemp(f"dio{block}", numbered=True))  # on /tmp: ext4 on vda here
        truth_path = base / "truth.json"
        r = ioattr("record", "-o", str(base / "rec"), "--interval", "0.5", "--only-command", "--",
                   str(IOGEN), "--dir", str(base / "data"), "--scenario", DIRECT_SCENARIOS, "--size", size,
                   "--block", block, "--prealloc", prealloc, "--json", str(truth_path))
        assert r.returncode == 0, r.stderr
        runs[(block, size, prealloc)] = {"rec": base / "rec", "truth": json.loads(truth_path.read_text()),
                                         "blocks": _block_by_file(base / "rec")}
    return runs


@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_direct_io_block_bytes_are_exact_per_file(direct_runs: dict, case: tuple[str, str, str]) -> None:
    run = direct_runs[case]
    got = run["blocks"]
    for path, t in run["truth"]["files"].items():
        for op, want in (("write", t["write_bytes"]), ("read", t["read_bytes"])):
            assert want > 0
            have = got.get((path, op), {}).get("bytes", 0)
            assert have == want, (case, t["scenario"], op, have, want)
    # nothing of it was left unnamed
    for (f, op), v in got.items():
        assert f not in ("[unknown]", "[untracked files]") or not v["bytes"], (case, f, op, v)


def test_split_and_merged_requests_were_exercised(direct_runs: dict) -> None:
    """The exact bytes above came through requests the block layer split and merged."""
    big = direct_runs[("8M", "32M", "written")]
    for path, t in big["truth"]["files"].items():
        # 8 MiB IOs on a queue of max_sectors_kb 4096 or less: at least two requests each
        assert big["blocks"][(path, "read")]["count"] >= 2 * t["reads"], (t["scenario"], big["blocks"][(path, "read")])
    small = direct_runs[("4K", "2M", "none")]
    merged = [t["scenario"] for path, t in small["truth"]["files"].items()
              if small["blocks"][(path, "read")]["count"] < t["reads"]]
    # batches of 8 (libaio) and 16 (io_uring) neighbouring 4 KiB reads become fewer requests
    assert merged, small["blocks"]


def test_block_totals_of_direct_io_match_proc_pid_io(direct_runs: dict) -> None:
    """Everything the kernel charged to the process at the block layer, ioattr charged to it too."""
    for case, run in direct_runs.items():
        truth = run["truth"]
        rep = report_json(run["rec"], "--by", "process,op", "--layer", "block")
        pid = truth["pid"]
        mine = [r for r in rep["rows"] if r["process"] and r["process"].endswith(f"[{pid}]")]
        read = sum(r["bytes"] for r in mine if r["op"] == "read")
        data_read = sum(t["read_bytes"] for t in truth["files"].values())
        # /proc/PID/io read_bytes also holds the loader's reads of cached libraries (0 here) and
        # metadata reads; the direct data reads are all of it but a few KiB
        assert data_read <= read <= truth["proc_io"]["read_bytes"] + 64 * 1024, (case, read, truth["proc_io"])


# ---------------------------------------------------------------- only the targets' IO


def _bytes_by_layer(rec: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in report_json(rec, "--by", "process")["rows"]:
        out[row["layer"]] = out.get(row["layer"], 0) + row["bytes"]
    return out


class _Repeat:
    """Run `make_cmd()` again and again in a thread until stopped: IO that is going on all along."""

    def __init__(self, make_cmd: Callable[[], list[str]]) -> None:
        self.make_cmd = make_cmd
        self.runs = 0
        self.stop_evt = threading.Event()
        self.proc: subprocess.Popen | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.errors: list[str] = []

    def _run(self) -> None:
        while not self.stop_evt.is_set():
            self.proc = subprocess.Popen(self.make_cmd(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         text=True)
            _, err = self.proc.communicate()
            if self.proc.returncode != 0:
                self.errors.append(err)
                return
            self.runs += 1

    def __enter__(self) -> "_Repeat":
        self.thread.start()
        return self

    def wait_runs(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.runs < n and not self.errors and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not self.errors, self.errors
        assert self.runs >= n, f"only {self.runs} runs"

    def __exit__(self, *exc: object) -> None:
        self.stop_evt.set()
        self.thread.join(120)


@pytest.fixture
def foreign_file(tmp_path: Path) -> Path:
    """A 32 MiB file on the disk, for an unrelated O_DIRECT reader."""
    path = tmp_path / "foreign.bin"
    with open(path, "wb") as f:
        f.write(os.urandom(32 * MiB))
        f.flush()
        os.fsync(f.fileno())
    return path


def _dd_direct(path: Path) -> Callable[[], list[str]]:
    return lambda: ["dd", f"if={path}", "of=/dev/null", "bs=1M", "iflag=direct", "status=none"]


def _load_untraced_server(db) -> None:  # type: ignore[no-untyped-def]
    """Real storage IO on a server nobody traces: a table bigger than its buffer pool,
    written, flushed and scanned cold."""
    db.query("CREATE DATABASE IF NOT EXISTS other")
    db.query("CREATE TABLE other.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
    db.query("INSERT INTO other.t SELECT seq, REPEAT('x', 200) FROM other.seq_1_to_60000")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    _flushed(db)
    before = db.status("Innodb_buffer_pool_reads")
    db.query("SELECT COUNT(*) FROM other.t WHERE pad <> ''")
    assert db.status("Innodb_buffer_pool_reads") > before  # it did read from storage


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen(["sleep", "600"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_recording_holds_only_the_targets_io(tmp_path: Path, mariadb_factory, foreign_file: Path,
                                             sleeper: subprocess.Popen) -> None:
    """Targets: an idle `sleep` and an iogen with known IO. Meanwhile an untraced MariaDB
    server loads, flushes and scans a table and an untraced `dd iflag=direct` reads a file:
    none of their bytes may be in the recording."""
    _need_iogen()
    other = mariadb_factory(buffer_pool="8M")
    data = tmp_path / "target"
    truth_path = tmp_path / "truth.json"
    rfd, wfd = os.pipe()
    target = subprocess.Popen([str(IOGEN), "--dir", str(data), "--scenario", "odirect,buffered_fsync,uring",
                               "--size", "8M", "--block", "1M", "--json", str(truth_path), "--wait-fd", str(rfd)],
                              pass_fds=(rfd,))
    os.close(rfd)
    rec = tmp_path / "rec"
    recorder = Background("record", "-o", str(rec), "--pid", str(sleeper.pid), "--pid", str(target.pid),
                          "--interval", "0.3")
    try:
        recorder.wait_recording()
        with _Repeat(_dd_direct(foreign_file)) as dd:
            os.write(wfd, b"g")  # the target's IO runs alongside the others'
            os.close(wfd)
            wfd = -1
            _load_untraced_server(other)
            assert target.wait(timeout=120) == 0
            dd.wait_runs(2)
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        if wfd >= 0:
            os.close(wfd)
        if target.poll() is None:
            target.kill()
            target.wait()
        recorder.stop()
    assert_no_ioattr_programs()
    truth = json.loads(truth_path.read_text())

    rep = report_json(rec, "--by", "process,file,op", "--layer", "block")
    pids = {int(m.group(1)) for r in rep["rows"] if r["process"] and (m := re.search(r"\[(\d+)\]$", r["process"]))}
    assert pids <= {target.pid}, rep["rows"]  # the idle sleep did no IO; nobody else is in
    assert all(r["process"] for r in rep["rows"]), [r for r in rep["rows"] if not r["process"]]
    files = {r["file"] for r in rep["rows"]}
    assert str(foreign_file) not in files
    assert not [f for f in files if f and str(other.datadir) in f], files
    assert "[untracked files]" not in files and "[journal]" not in files, files

    # the target's own files: exact
    got = _block_by_file(rec)
    data_bytes = 0
    for path, t in truth["files"].items():
        assert got[(path, "write")]["bytes"] == t["write_bytes"], (path, got.get((path, "write")))
        want_read = t["read_bytes"] if t["direct"] else 0
        assert got.get((path, "read"), {}).get("bytes", 0) == want_read, path
        data_bytes += t["write_bytes"] + want_read
    # the totals: the target's data plus a little metadata of its own (inode tables, its JSON);
    # the untraced server and dd moved tens of MiB meanwhile
    total = _bytes_by_layer(rec)["block"]
    assert data_bytes <= total <= data_bytes + 512 * 1024, (total, data_bytes)


def test_a_second_untraced_server_stays_out(tmp_path: Path, mariadb_factory) -> None:
    """`record --pid` of one server while another, untraced, scans a table of its own cold
    at the same time: the recording has the recorded server's block IO only, and its block
    reads are exactly what the kernel charged to it (/proc/PID/io read_bytes).

    (Not the syscall layer's bytes: InnoDB's read-ahead also reads pages of extents it
    allocated with fallocate but never wrote, which the filesystem answers with zeros
    without any device IO.)"""
    need_root()
    # no background statistics recalculation: the recorded server reads only for the scans
    target = mariadb_factory(buffer_pool="8M", extra_options={"innodb_stats_auto_recalc": "OFF"})
    other = mariadb_factory(buffer_pool="8M")
    for db, name in ((target, "mine"), (other, "theirs")):
        db.query(f"CREATE DATABASE {name}")
        db.query(f"CREATE TABLE {name}.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
        db.query(f"INSERT INTO {name}.t SELECT seq, REPEAT('x', 200) FROM {name}.seq_1_to_60000")
        db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        _flushed(db)
    rec = tmp_path / "rec"
    recorder = Background("record", "-o", str(rec), "--pid", str(target.pid), "--interval", "0.3")
    errors: list[BaseException] = []

    def scan_theirs() -> None:
        try:
            for _ in range(3):
                other.query("SELECT COUNT(*) FROM theirs.t WHERE pad <> ''")
        except BaseException as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    try:
        recorder.wait_recording()
        theirs = threading.Thread(target=scan_theirs)
        before = other.status("Innodb_buffer_pool_reads")
        io_before = proc_read_bytes(target.pid)
        theirs.start()
        for _ in range(3):
            target.query("SELECT COUNT(*) FROM mine.t WHERE pad <> ''")
        kernel_read = proc_read_bytes(target.pid) - io_before
        theirs.join(120)
        assert not errors, errors
        assert other.status("Innodb_buffer_pool_reads") > before  # it did read from storage
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        recorder.stop()
    rep = report_json(rec, "--by", "process,file,op", "--layer", "block")
    assert rep["rows"]
    for row in rep["rows"]:
        assert row["process"] and row["process"].endswith(f"[{target.pid}]"), row
        assert not (row["file"] or "").startswith(str(other.datadir)), row
        assert row["file"] != "[untracked files]", row
    block = _block_by_file(rec)
    table = str(target.datadir / "mine" / "t.ibd")
    assert block[(table, "read")]["bytes"] > 4 * MiB
    read = sum(v["bytes"] for (f, op), v in block.items() if op == "read")
    # /proc/PID/io is sampled around the scans, the recording spans a little more (a page or
    # two of background reads may fall in between); the other server read ~40 MiB meanwhile
    assert abs(read - kernel_read) <= 0.01 * kernel_read, (read, kernel_read, block)


WRITER = """
import sys
path = sys.argv[1]
sys.stdin.readline()
with open(path, "wb") as f:
    for _ in range(8):
        f.write(b"w" * (1024 * 1024))
print("written", flush=True)
sys.stdin.readline()
"""


def test_writeback_by_someone_else_is_charged_to_the_target(tmp_path: Path) -> None:
    """A target writes 8 MiB through the page cache and never syncs; this (untraced) test
    process's sync() writes them back. The writeback is the target's: on its file, its
    process, every byte."""
    need_root()
    from tests.helpers import Prompted, recording
    path = tmp_path / "dirty.bin"
    rec = tmp_path / "rec"
    with Prompted("-c", WRITER, str(path), ready=None) as writer, recording(writer.pid, rec):
        writer.step("go", answer="written")
        os.sync()  # returns when the writeback is done
    rows = [r for r in report_json(rec, "--by", "process,file,op", "--layer", "block")["rows"]
            if r["file"] == str(path)]
    assert rows and all(r["process"] and r["process"].endswith(f"[{writer.pid}]") for r in rows), rows
    assert sum(r["bytes"] for r in rows if r["op"] == "write") == 8 * MiB, rows


READER = """
import os, sys
path = sys.argv[1]
sys.stdin.readline()
with open(path, "wb") as f:        # the target touches the file while it is traced
    f.write(b"r" * (4 * 1024 * 1024))
    f.flush()
    os.fsync(f.fileno())
print("written", flush=True)
sys.stdin.readline()               # meanwhile someone else reads the file cold
os.posix_fadvise(os.open(path, os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED)
with open(path, "rb") as f:        # then the target reads it cold itself
    while f.read(1024 * 1024):
        pass
print("read", flush=True)
sys.stdin.readline()
"""


def test_page_cache_misses_of_others_stay_out(tmp_path: Path) -> None:
    """A target's file read cold by an untraced process (this test) adds pages to the page
    cache: those misses are not the target's. The target's own cold read of the same 4 MiB
    afterwards is, exactly."""
    need_root()
    from tests.helpers import Prompted, recording
    path = tmp_path / "shared.bin"
    rec = tmp_path / "rec"
    with Prompted("-c", READER, str(path), ready=None) as proc, recording(proc.pid, rec):
        proc.step("go", answer="written")
        fd = os.open(path, os.O_RDONLY)  # evict, then read it cold from here (untraced)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1024 * 1024):
            pass
        os.close(fd)
        proc.step("go", answer="read")
    rows = [r for r in report_json(rec, "--by", "process,file", "--layer", "pagecache")["rows"]
            if r["file"] == str(path)]
    assert all(r["process"] and r["process"].endswith(f"[{proc.pid}]") for r in rows), rows
    assert sum(r["bytes"] for r in rows) == 4 * MiB, rows  # its own cold read only, not ours too


def _disk_line(out: str) -> list[float]:
    """The MB/s figures of every `disk` header line of `top --batch` output."""
    vals = []
    for line in out.splitlines():
        if line.startswith("disk"):
            vals += [float(x) for x in re.findall(r"([\d.]+) MB/s", line)]
    return vals


def test_top_and_exporter_of_an_idle_target_show_no_disk_io(tmp_path: Path, foreign_file: Path,
                                                            sleeper: subprocess.Popen) -> None:
    """`dd iflag=direct` on an unrelated file at full speed: an idle target's disk columns stay 0."""
    need_root()
    from tests.helpers import exporter_port
    from tests.test_exporter import samples, scrape

    exp = Background("exporter", "--pid", str(sleeper.pid), "--listen", "127.0.0.1:0", "--interval", "0.3")
    try:
        port = exporter_port(exp)  # the kernel picked a free one: no race for it
        with _Repeat(_dd_direct(foreign_file)) as dd:
            dd.wait_runs(1)  # it is reading
            top = ioattr("top", "--pid", str(sleeper.pid), "--batch", "-n", "3", "--interval", "0.5",
                         "--layer", "block", timeout=60)
            dd.wait_runs(dd.runs + 1)  # still reading after top's last snapshot
            done = time.time()
        # a drain after the reading: its counters cover the whole time
        deadline = time.monotonic() + 30
        while True:
            text = scrape(port)
            drained = [v for _, v in samples(text, "ioattr_last_drain_timestamp_seconds")]
            if (drained and drained[0] > done) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        code, err = exp.stop()
    assert code == 0, err
    assert top.returncode == 0, top.stderr
    disk = _disk_line(top.stdout)
    assert len(disk) >= 6 and not any(disk), top.stdout
    block = [v for labels, v in samples(text, "ioattr_read_bytes_total") + samples(text, "ioattr_write_bytes_total")
             if labels.get("layer") == "block"]
    assert not any(block), block
    assert_no_ioattr_programs()


# ---------------------------------------------------------------- MariaDB's doublewrite


def _flushed(db) -> None:  # type: ignore[no-untyped-def]
    """Wait until the server has had no dirty page (innodb_max_dirty_pages_pct = 0); background
    work may dirty a few again right after, which does not matter here."""
    deadline = time.monotonic() + 60
    while db.status("Innodb_buffer_pool_pages_dirty") > 0:
        assert time.monotonic() < deadline, "dirty pages not flushed within 60 s"
        time.sleep(0.1)


def test_doublewrite_batches_land_on_the_system_tablespace(tmp_path: Path, mariadb_factory) -> None:
    """Doublewrite batches (up to 64 pages of 16 KiB in one O_DIRECT write to ibdata1)
    reach the device as large, split requests: all on ibdata1, none unnamed."""
    need_root()
    db = mariadb_factory(buffer_pool="16M", extra_options={"innodb_doublewrite": "1"})
    db.query("CREATE DATABASE IF NOT EXISTS w")
    db.query("CREATE TABLE w.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
    db.query("INSERT INTO w.t SELECT seq, REPEAT('x', 200) FROM w.seq_1_to_60000")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    _flushed(db)
    rec = tmp_path / "rec"
    recorder = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3")
    try:
        recorder.wait_recording()
        before = db.status("Innodb_dblwr_pages_written")
        # pages written before are rewritten (new pages skip the doublewrite buffer)
        db.query("UPDATE w.t SET pad = REPEAT('y', 200)")
        _flushed(db)
        dblwr_pages = db.status("Innodb_dblwr_pages_written") - before
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        recorder.stop()
    assert dblwr_pages > 64
    ibdata = str(db.datadir / "ibdata1")
    syscall = {(r["file"], r["op"]): r["bytes"] for r in report_json(rec, "--by", "file,op", "--layer",
                                                                      "syscall")["rows"]}
    block = _block_by_file(rec)
    assert syscall[(ibdata, "write")] >= dblwr_pages * 16384 * 0.99
    assert block[(ibdata, "write")]["bytes"] >= 0.99 * syscall[(ibdata, "write")], (block[(ibdata, "write")],
                                                                                    syscall[(ibdata, "write")])
    assert not block.get(("[unknown]", "write"), {}).get("bytes"), block.get(("[unknown]", "write"))
    # the page classifier puts those writes in the doublewrite area of the system tablespace
    pages = report_json(rec, "--by", "file,file_class,page_type")["rows"]
    dblwr = [r for r in pages if r.get("file_class") == "doublewrite" and r["op"] == "write"]
    assert dblwr and all(r["file"] == ibdata for r in dblwr), dblwr


# ---------------------------------------------------------------- requests open at the stop


def test_requests_open_at_the_stop_are_counted_once() -> None:
    """A request issued whose completion was not seen -- still in flight when recording stops,
    or finished without block_rq_complete reaching us -- is counted by the stop-time sweep
    (block.bpf.c ioattr_rq_sweep, run by the recorder before its last drain), with its bytes,
    once: a second sweep, or its completion coming after, finds it taken. The request is
    planted in rq_inflight by hand, so the test needs no race with a real device."""
    need_root()
    import ctypes
    import struct

    from ioattr.collectors import abi, libbpf
    from ioattr.collectors.drain import io_stats_drainer
    from ioattr.collectors.probes import ProbeSession

    with ProbeSession(("block",)) as ps:
        block = ps.loaded_set("block")
        assert block is not None
        inflight = block.obj.map("rq_inflight")
        drain = io_stats_drainer(ps.map_fd("io_stats"), ps.max_stats)
        drain.drain()  # whatever the host's own IO put there since the load

        def key(ino: int) -> bytes:
            k = abi.IoKey(tgid=0x7ffffff0, tid=0x7ffffff1, ino=ino, dev=0xffff, layer=abi.Layer.BLOCK,
                          op=abi.Op.READ, api=abi.Api.DIRECT, kind=abi.Kind.FILE, phase=1)
            return bytes(k)

        # struct rq_pending: ts, requeued, first_bio, sector, len, nparts, part[4] {io_key, bytes}
        value = struct.pack("<QQQQII", 123, 0, 0, 8, 12288, 2)
        value += key(900001) + struct.pack("<Q", 8192) + key(900002) + struct.pack("<Q", 4096)
        value += b"\0" * (inflight.value_size - len(value))
        rq = ctypes.c_uint64(0x10)  # no struct request lives at 0x10: nobody else issues or completes it
        libbpf.map_update(inflight.fd, rq, (ctypes.c_uint8 * len(value)).from_buffer_copy(value))
        try:
            # the drain-time sweep takes only requests the block layer has finished; this one's
            # struct can't be read, so it is left for its completion or the stop
            swept = [ps.sweep_block(min_age=0.0, finished_only=True)]
            swept += [ps.sweep_block(), ps.sweep_block()]  # the stop's: it, then nothing more
            d = drain.drain()
        finally:
            libbpf.map_delete(inflight.fd, rq)
        mine = {int(k["ino"]): (int(c), int(b)) for k, c, b in zip(d.keys, d.count, d.bytes)
                if int(k["tgid"]) == 0x7ffffff0}
        assert mine == {900001: (1, 8192), 900002: (1, 4096)}, mine
        assert swept == [0, 1, 0], swept
    assert_no_ioattr_programs()


# ---------------------------------------------------------------- one direct read or write at a time

DIRECT = """
import mmap, os, sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:        # the blocks exist before the direct IO: overwrites, no allocation
    f.write(b"d" * (n * 4096))
    f.flush()
    os.fsync(f.fileno())
fd = os.open(path, os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)          # page-aligned, as O_DIRECT needs
buf.write(b"x" * 4096)
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "write":
        for i in range(n):
            os.pwritev(fd, [buf], i * 4096)
    elif line.strip() == "read":
        for i in range(n):
            os.preadv(fd, [buf], i * 4096)
    print("done", flush=True)
"""


def test_one_bio_direct_requests_are_counted_once_each(tmp_path: Path) -> None:
    """64 4 KiB O_DIRECT pwrites, then 64 preads, one at a time: 64 device requests of one bio
    each way, every one counted once, with its bytes, on the file and the thread that asked
    for it. Counts, not only bytes: a request counted twice (at a reissue) or not at all shows
    here. test_busy_host.py runs the same with the device saturated by others."""
    one_bio_requests_are_counted_once_each(tmp_path)


def one_bio_requests_are_counted_once_each(tmp_path: Path, n: int = 64) -> None:
    """The check behind test_one_bio_direct_requests_are_counted_once_each: the drain after a
    sweep of the finished requests (as LiveSession.tick does before each drain) holds every
    request, once. The kernel finishes some requests without any BPF program seeing their
    block_rq_complete (docs/block.md); the sweep counts those, untimed, which is why the
    check is on counts and bytes, and a latency is asked only of the thread's sum."""
    need_root()
    from ioattr.collectors import abi
    from ioattr.collectors.drain import io_stats_drainer
    from ioattr.collectors.probes import ProbeSession
    from ioattr.collectors.targets import TargetMap
    from tests.helpers import Prompted

    path = tmp_path / "direct.bin"  # /tmp: ext4 on vda here
    with Prompted("-c", DIRECT, str(path), str(n)) as proc, ProbeSession(("block",)) as ps:
        TargetMap(ps.map_fd("targets"), ps.map_fd("target_slots")).add(proc.pid)
        drain = io_stats_drainer(ps.map_fd("io_stats"), ps.max_stats)
        proc.step("write")
        proc.step("read")
        ps.sweep_block(finished_only=True)  # every request is finished: the process waited for each
        d = drain.drain()
        got: dict[tuple[int, int], tuple[int, int, int]] = {}
        for k, c, b, lat in zip(d.keys, d.count, d.bytes, d.lat_sum_ns):
            if int(k["tgid"]) == proc.pid and int(k["layer"]) == abi.Layer.BLOCK:
                assert int(k["api"]) == abi.Api.DIRECT and int(k["ino"]) == path.stat().st_ino, k
                c0, b0, l0 = got.get((int(k["op"]), int(k["tid"])), (0, 0, 0))
                got[(int(k["op"]), int(k["tid"]))] = (c0 + int(c), b0 + int(b), l0 + int(lat))
        assert {op for op, _ in got} == {abi.Op.READ, abi.Op.WRITE}, got
        for op in (abi.Op.READ, abi.Op.WRITE):
            count = sum(v[0] for (o, _), v in got.items() if o == op)
            nbytes = sum(v[1] for (o, _), v in got.items() if o == op)
            assert (count, nbytes) == (n, n * 4096), (op, got)
            assert all(v[2] > 0 for (o, _), v in got.items() if o == op), got  # timed from the issue
        assert {tid for _, tid in got} == {proc.pid}  # the submitting thread (the main one)
    assert_no_ioattr_programs()


def test_short_phases_hold_their_own_device_io(tmp_path: Path) -> None:
    """Four phases of a fraction of a second each, switched by --phase-pattern, each doing
    64 KiB of 4 KiB O_DIRECT writes, then reads: the device layer's rows of each phase are
    exactly that phase's IO (each request carries the phase in force at its issue), as the
    syscall layer's are."""
    _need_iogen()
    from tests.helpers import phased_iogen_command

    phases, size = ("main", "load", "read", "again"), 64 * 1024
    rec, data = tmp_path / "rec", tmp_path / "data"
    for phase in phases:
        (data / phase).mkdir(parents=True)
        (data / phase / "odirect").touch()  # see test_exit_codes: no inode shared with meta.json
    r = ioattr("record", "-o", str(rec), "--only-command", "--interval", "0.2", "--phase-pattern", r"PHASE=(\w+)",
               "--", *phased_iogen_command(rec, data, phases, size))
    assert r.returncode == 0, (r.stdout, r.stderr)
    for layer in ("syscall", "block"):
        rows = report_json(rec, "--by", "phase,file,op", "--layer", layer)["rows"]
        for phase in phases:
            (path, t), = json.loads((data / f"{phase}.json").read_text())["files"].items()
            for op, count in (("read", t["reads"]), ("write", t["writes"])):
                got = [(x["phase"], x["count"], x["bytes"]) for x in rows if x["file"] == path and x["op"] == op]
                assert got == [(phase, count, size)], (layer, path, op, got)


# A tracer of someone else's: a slow program on a syscall that two busy processes call, so a
# BPF program runs on each CPU much of the time, and a probe on block completions of its own.
# A disk interrupt that lands inside such a program skips every perf-type tracepoint program it
# would run (the kernel's per-CPU bpf_prog_active guard): that tracer loses completions.
OTHER_TRACER = r"""
tracepoint:syscalls:sys_enter_getppid { $i = 0; unroll(60) { @spin[$i % 7] = count(); $i++; } }
tracepoint:block:block_rq_complete { @completions = count(); }
"""
SPINNER = "import os, time\nwhile True:\n    for _ in range(30): os.getppid()\n    time.sleep(0.0003)\n"


@contextlib.contextmanager
def other_tracer_running() -> Iterator[list[int]]:
    """bpftrace running OTHER_TRACER, and two processes that keep its slow program busy, all
    killed (by process group) at the end. Yields their pids, bpftrace's first, once its probes
    are attached."""
    from tests.test_bpftrace_scripts import attached_tracepoints

    need_root()
    procs = [subprocess.Popen([shutil.which("bpftrace") or "bpftrace", "-e", OTHER_TRACER],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)]
    try:
        procs += [subprocess.Popen([sys.executable, "-c", SPINNER], start_new_session=True) for _ in range(2)]
        deadline = time.monotonic() + 60
        while attached_tracepoints(procs[0].pid) != {"sys_enter_getppid", "block_rq_complete"}:
            assert procs[0].poll() is None and time.monotonic() < deadline, \
                f"the other tracer did not attach: {procs[0].stderr.read() if procs[0].stderr else ''}"
            time.sleep(0.05)
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)  # the session each was started in
            p.wait()


@pytest.fixture
def other_tracer() -> Iterator[int]:
    """Another BPF tool on the host for one test (other_tracer_running): bpftrace's pid."""
    with other_tracer_running() as pids:
        yield pids[0]


def test_another_tracer_on_the_host_takes_nothing_away(tmp_path: Path, other_tracer: int) -> None:
    """Someone else's bpftrace runs a slow program on every CPU while ioattr records 4 KiB
    direct reads and writes (sync, libaio, io_uring), each completed in a disk interrupt.
    ioattr's interrupt-time probes are raw tracepoints, whose guard only skips a run nested
    in the same program: every byte is still on its file at both layers, and the kernel
    skipped no run of ours (meta.json "dropped" prog_skipped, from recursion_misses). When
    this test was written, the other tracer's block_rq_complete program was skipped 128 times
    in one run of it, ioattr's programs none."""
    _need_iogen()
    base = tmp_path
    r = ioattr("record", "-o", str(base / "rec"), "--interval", "0.5", "--only-command", "--",
               str(IOGEN), "--dir", str(base / "data"), "--scenario", DIRECT_SCENARIOS, "--size", "2M",
               "--block", "4K", "--prealloc", "none", "--json", str(base / "truth.json"))
    assert r.returncode == 0, r.stderr
    truth = json.loads((base / "truth.json").read_text())
    meta = json.loads((base / "rec" / "meta.json").read_text())
    assert meta["dropped"].get("prog_skipped") == 0, meta["dropped"]
    assert sum(meta["dropped"].values()) == 0, meta["dropped"]
    assert_iogen_bytes_on_their_files(base / "rec", truth)


def assert_iogen_bytes_on_their_files(rec: Path, truth: dict, *context: object) -> None:
    """Every file of iogen's `truth` has its write and its read bytes, exactly, in `rec` at
    the syscall and at the block layer (nonzero both); `context` goes into the message."""
    for layer in ("syscall", "block"):
        got: dict[tuple[str, str], int] = {}
        for row in report_json(rec, "--by", "file,op", "--layer", layer)["rows"]:
            got[(row["file"], row["op"])] = got.get((row["file"], row["op"]), 0) + row["bytes"]
        for path, t in truth["files"].items():
            for op, want in (("write", t["write_bytes"]), ("read", t["read_bytes"])):
                assert want > 0 and got.get((path, op), 0) == want, (layer, *context, t["scenario"], op,
                                                                      got.get((path, op)), want)

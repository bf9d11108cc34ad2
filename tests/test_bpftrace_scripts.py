"""The ad-hoc bpftrace scripts in bpf/*.bt, run for real.

Each script is started as root with a short DURATION so it exits by itself,
a small workload (a Python child doing buffered and O_DIRECT pread/pwrite,
read/write, preadv/pwritev, fsync/fdatasync and io_uring READV/WRITEV/FSYNC
on a temp file) runs while it is attached, and the script's printed maps are
checked against what the workload is known to have done -- exact numbers
where the script filters on the workload, lower bounds where it is
system-wide.  One test also attaches mysqld_file_io.bt to a real private
MariaDB.  No bpftrace or workload process outlives its test.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import need, need_root, need_tool

BPF_DIR = Path(__file__).resolve().parent.parent / "bpf"
PAGE = 4096
DURATION = 3        # seconds each script runs (its own DURATION argument)
START_TIMEOUT = 40  # bpftrace compiles and attaches before BEGIN prints

# Scripts exercised below; test_every_script_is_tested keeps this honest.
TESTED = {
    "mysqld_file_io.bt",
    "io_latency.bt",
    "uring_io.bt",
    "block_by_dev.bt",
    "dio_by_inode.bt",
    "pagecache_by_inode.bt",
}

# ---------------------------------------------------------------- workload
# Runs as its own process so it has its own pid/comm.  Prints one JSON line
# with its pid and the file's inode/device, waits for "go" on stdin, does a
# fixed amount of IO, prints {"done": true} and exits.
WORKLOAD = r'''
import ctypes, json, mmap, os, struct, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
NR_IO_URING_SETUP, NR_IO_URING_ENTER = 425, 426   # x86_64 and arm64 alike
PAGE = 4096
OP_READV, OP_WRITEV, OP_FSYNC = 1, 2, 3
IOSQE_ASYNC = 1 << 4


def enter(fd, to_submit, min_complete):
    r = libc.syscall(L(NR_IO_URING_ENTER), L(fd), L(to_submit), L(min_complete), L(1), None, L(0))
    if r < 0:
        raise OSError(ctypes.get_errno(), "io_uring_enter")
    return r


class Ring:
    """A minimal io_uring on raw syscalls (no liburing needed)."""

    def __init__(self, entries=8):
        params = bytearray(120)
        pbuf = (ctypes.c_char * 120).from_buffer(params)
        fd = libc.syscall(L(NR_IO_URING_SETUP), L(entries), ctypes.c_void_p(ctypes.addressof(pbuf)))
        if fd < 0:
            raise OSError(ctypes.get_errno(), "io_uring_setup")
        self.fd = fd
        sq_entries, cq_entries = struct.unpack_from("II", params, 0)
        self.sq_head, self.sq_tail, self.sq_mask, _, _, _, self.sq_array = struct.unpack_from("7I", params, 40)
        self.cq_head, self.cq_tail, self.cq_mask, _, _, self.cqes = struct.unpack_from("6I", params, 80)
        size = max(self.sq_array + sq_entries * 4, self.cqes + cq_entries * 16)
        self.ring = mmap.mmap(fd, size, offset=0)                      # IORING_FEAT_SINGLE_MMAP
        self.sqes = mmap.mmap(fd, sq_entries * 64, offset=0x10000000)  # IORING_OFF_SQES

    def u32(self, off):
        return struct.unpack_from("I", self.ring, off)[0]

    def run(self, sqes):
        """sqes: [(opcode, flags, fd, offset, addr, len)]; submit all, wait for all."""
        tail = self.u32(self.sq_tail)
        mask = self.u32(self.sq_mask)
        for i, (op, flags, fd, off, addr, ln) in enumerate(sqes):
            idx = (tail + i) & mask
            self.sqes[idx * 64:(idx + 1) * 64] = bytes(64)
            struct.pack_into("BBHiQQIIQ", self.sqes, idx * 64, op, flags, 0, fd, off, addr, ln, 0, i)
            struct.pack_into("I", self.ring, self.sq_array + idx * 4, idx)
        struct.pack_into("I", self.ring, self.sq_tail, tail + len(sqes))
        enter(self.fd, len(sqes), len(sqes))
        res = []
        head = self.u32(self.cq_head)
        while len(res) < len(sqes):
            if head == self.u32(self.cq_tail):
                enter(self.fd, 0, 1)
                continue
            off = self.cqes + (head & self.u32(self.cq_mask)) * 16
            res.append(struct.unpack_from("Qi", self.ring, off)[1])
            head += 1
            struct.pack_into("I", self.ring, self.cq_head, head)
        return res


path, name = sys.argv[1], sys.argv[2]
libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME on the main thread (= group leader)
with open(path, "wb") as f:
    f.write(os.urandom(256 * PAGE))
    f.flush()
    os.fsync(f.fileno())
st = os.stat(path)
bfd = os.open(path, os.O_RDWR)
dfd = os.open(path, os.O_RDWR | os.O_DIRECT)
abuf = mmap.mmap(-1, 16 * PAGE)  # page aligned: usable for O_DIRECT
ring = Ring(8)
print(json.dumps({"pid": os.getpid(), "ino": st.st_ino,
                  "major": os.major(st.st_dev), "minor": os.minor(st.st_dev)}), flush=True)
sys.stdin.readline()  # "go": the script under test is attached

os.posix_fadvise(bfd, 0, 0, os.POSIX_FADV_DONTNEED)  # cold page cache for the buffered reads
for i in range(50):
    assert len(os.pread(bfd, PAGE, i * PAGE)) == PAGE                     # pread64 4 KiB
for i in range(30):
    assert os.pwrite(bfd, b"x" * PAGE, i * PAGE) == PAGE                  # pwrite64 4 KiB
os.lseek(bfd, 0, os.SEEK_SET)
for i in range(20):
    assert len(os.read(bfd, 2 * PAGE)) == 2 * PAGE                        # read 8 KiB
for i in range(10):
    assert os.write(bfd, b"y" * 2 * PAGE) == 2 * PAGE                     # write 8 KiB
for i in range(5):
    os.fsync(bfd)
    os.fdatasync(bfd)
view = memoryview(abuf)
for i in range(40):
    assert os.preadv(dfd, [view[:PAGE]], (100 + i) * PAGE) == PAGE          # O_DIRECT preadv 4 KiB
for i in range(20):
    assert os.pwritev(dfd, [view[:4 * PAGE]], (200 + (i % 8) * 4) * PAGE) == 4 * PAGE  # O_DIRECT pwritev 16 KiB
addr = ctypes.addressof(ctypes.c_char.from_buffer(abuf))
iov = (ctypes.c_uint64 * 2)(addr, PAGE)
for i in range(8):   # 32 O_DIRECT READV: half inline, half forced to an iou-wrk-* worker
    res = ring.run([(OP_READV, IOSQE_ASYNC if j % 2 else 0, dfd, (40 + 4 * i + j) * PAGE,
                     ctypes.addressof(iov), 1) for j in range(4)])
    assert res == [PAGE] * 4, res
for i in range(4):   # 4 O_DIRECT WRITEV via io-wq
    assert ring.run([(OP_WRITEV, IOSQE_ASYNC, dfd, (240 + i) * PAGE, ctypes.addressof(iov), 1)]) == [PAGE]
assert ring.run([(OP_FSYNC, 0, dfd, 0, 0, 0)]) == [0]
print(json.dumps({"done": True}), flush=True)
'''

# What the workload does after "go" (the exact numbers the tests expect).
BUF_READ_CALLS, BUF_READ_BYTES = 50 + 20, 50 * PAGE + 20 * 2 * PAGE      # pread64 + read
BUF_WRITE_CALLS, BUF_WRITE_BYTES = 30 + 10, 30 * PAGE + 10 * 2 * PAGE    # pwrite64 + write
DIO_READ_CALLS, DIO_READ_BYTES = 40, 40 * PAGE                           # preadv
DIO_WRITE_CALLS, DIO_WRITE_BYTES = 20, 20 * 4 * PAGE                     # pwritev
URING_READS, URING_ASYNC_READS, URING_WRITES = 32, 16, 4                 # READV, of which IOSQE_ASYNC; WRITEV


class Workload:
    """The workload child: start() -> attach the script -> go() -> finish()."""

    def __init__(self, tmp_path: Path, comm: str) -> None:
        self.comm = comm
        self.path = tmp_path / "data.bin"
        script = tmp_path / "workload.py"
        script.write_text(WORKLOAD)
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(self.path), comm],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.kill()
            pytest.fail(f"workload did not start: {self.proc.stderr.read() if self.proc.stderr else ''}")
        info = json.loads(line)
        self.pid: int = info["pid"]
        self.ino: int = info["ino"]
        self.major: int = info["major"]
        self.minor: int = info["minor"]

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 30) -> None:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("workload did not finish")
        assert self.proc.returncode == 0 and '"done"' in out, f"workload failed: {err}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # our own child, by pid
        self.proc.wait()


def unique_comm() -> str:
    return "btwl-" + uuid.uuid4().hex[:8]  # < 16 characters: fits in comm


# ---------------------------------------------------------------- running bpftrace
def script_tracepoints(script: str) -> set[str]:
    """The tracepoint names a shipped script attaches (its probe lines, comments left out)."""
    text = re.sub(r"/\*.*?\*/", "", (BPF_DIR / script).read_text(), flags=re.S)
    return set(re.findall(r"\btracepoint:[a-z0-9_]+:([a-z0-9_]+)", text))


def attached_tracepoints(pid: int) -> set[str]:
    """The tracepoints process `pid` has a BPF program attached to now (bpftool perf list)."""
    out = subprocess.run([need_tool("bpftool"), "-j", "perf", "list"], capture_output=True, text=True)
    if out.returncode != 0:
        return set()
    return {e.get("tracepoint") for e in json.loads(out.stdout or "[]")
            if e.get("pid") == pid and e.get("fd_type") == "tracepoint"}


def recursion_misses(pid: int) -> dict[str, int]:
    """{tracepoint: runs the kernel skipped} for the programs process `pid` has attached.

    A tracepoint program that fires in an interrupt while any tracing program
    (a script's own, or anyone's) runs on the same CPU is not run at all: the
    kernel's per-CPU bpf_prog_active guard skips it and only counts it, as the
    program's recursion_misses.  A direct read completed in an interrupt can
    be lost that way, so a test that counts completions reads this number.
    """
    bpftool = need_tool("bpftool")
    out = subprocess.run([bpftool, "-j", "perf", "list"], capture_output=True, text=True)
    progs = {e["prog_id"]: e.get("tracepoint") for e in json.loads(out.stdout or "[]")
             if e.get("pid") == pid and e.get("fd_type") == "tracepoint"}
    found: dict[str, int] = {}
    for prog_id, tracepoint in progs.items():
        show = subprocess.run([bpftool, "-j", "prog", "show", "id", str(prog_id)], capture_output=True, text=True)
        if show.returncode == 0:  # bpftool prints the field only when it is not 0
            found[tracepoint] = found.get(tracepoint, 0) + json.loads(show.stdout).get("recursion_misses", 0)
    return found


def run_bpftrace(script: str, args: list[str], during=None, duration: float = DURATION,
                 misses: dict[str, int] | None = None) -> str:
    """Run bpf/SCRIPT ARGS; once BEGIN has printed call during(); return stdout.

    The script must stop by itself (its DURATION argument); if it does not,
    it is killed and the test fails.  bpftrace is killed in any case before
    this returns, so no tracer outlives the test.  If `misses` is given, it is
    filled after during() with recursion_misses() of the script's programs.
    """
    require_tracing()
    bpftrace = need_tool("bpftrace")
    proc = subprocess.Popen(
        [bpftrace, "-B", "line", str(BPF_DIR / script), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    lines: list[str] = []
    err: list[str] = []
    started = threading.Event()

    def read_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "Ctrl-C to end." in line:
                started.set()

    def read_err() -> None:
        assert proc.stderr is not None
        err.extend(proc.stderr)

    readers = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
    for t in readers:
        t.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not started.is_set():
            if proc.poll() is not None or time.monotonic() > deadline:
                for t in readers:
                    t.join(2)
                pytest.fail(f"{script} did not start (rc={proc.poll()}):\n{''.join(err)}{''.join(lines)}")
            started.wait(0.05)
        # bpftrace runs BEGIN before it attaches the other probes: the workload starts only
        # once every tracepoint of the script is attached (a run on a loaded machine missed
        # the first 4 of 72 direct reads by starting at BEGIN's line)
        want = script_tracepoints(script)
        while not want <= attached_tracepoints(proc.pid):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{script}: tracepoints {sorted(want - attached_tracepoints(proc.pid))} not "
                            f"attached (rc={proc.poll()}):\n{''.join(err)}{''.join(lines)}")
            time.sleep(0.05)
        if during is not None:
            during()
        if misses is not None:
            misses.update(recursion_misses(proc.pid))
        try:
            rc = proc.wait(timeout=duration + 20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{script} did not exit by itself after {duration} s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the group we created for this bpftrace
            proc.wait()
        for t in readers:
            t.join(5)
    out = "".join(lines)
    assert rc == 0, f"{script} exited {rc}:\n{''.join(err)}\n{out}"
    assert "=== " in out, f"{script} printed no summary:\n{out}"
    return out


def run_with_workload(tmp_path: Path, script: str, args, duration: float = DURATION,
                      misses: dict[str, int] | None = None) -> tuple[str, Workload]:
    """Start the workload, then the script (args may use the workload), run the IO, return output."""
    wl = Workload(tmp_path, unique_comm())
    try:
        argv = args(wl) if callable(args) else args
        out = run_bpftrace(script, [str(a) for a in argv], during=lambda: (wl.go(), wl.finish()),
                           duration=duration, misses=misses)
    finally:
        wl.kill()
    return out, wl


# ---------------------------------------------------------------- parsing bpftrace's map output
_KEYED = re.compile(r"^@(\w+)(?:\[(.*)\])?: (.*)$")
_STATS = re.compile(r"count (-?\d+), average (-?\d+), total (-?\d+)")
_BUCKET = re.compile(r"^\[[^\]]*[\])]\s+(\d+) \|")


def _key(raw: str | None) -> tuple[str, ...]:
    return tuple(k.strip() for k in raw.split(",")) if raw else ()


def stats_maps(out: str, name: str) -> dict[tuple[str, ...], list[int]]:
    """@name[k...]: count C, average A, total T  ->  {keys: [C, T]} summed over intervals."""
    found: dict[tuple[str, ...], list[int]] = defaultdict(lambda: [0, 0])
    for line in out.splitlines():
        m = _KEYED.match(line)
        if m and m.group(1) == name:
            s = _STATS.match(m.group(3))
            assert s, f"not a stats() line: {line}"
            found[_key(m.group(2))][0] += int(s.group(1))
            found[_key(m.group(2))][1] += int(s.group(3))
    return dict(found)


def count_maps(out: str, name: str) -> dict[tuple[str, ...], int]:
    """@name[k...]: N  ->  {keys: N} summed over intervals."""
    found: dict[tuple[str, ...], int] = defaultdict(int)
    for line in out.splitlines():
        m = _KEYED.match(line)
        if m and m.group(1) == name and m.group(3).strip().lstrip("-").isdigit():
            found[_key(m.group(2))] += int(m.group(3))
    return dict(found)


def hist_maps(out: str, name: str) -> dict[tuple[str, ...], int]:
    """@name[k...]: followed by '[lo, hi)  N |@@@|' rows -> {keys: sum of N} over intervals."""
    found: dict[tuple[str, ...], int] = defaultdict(int)
    current = None
    for line in out.splitlines():
        m = _KEYED.match(line.rstrip() + (" " if line.rstrip().endswith(":") else ""))
        if m:
            current = _key(m.group(2)) if m.group(1) == name and not m.group(3).strip() else None
            if current is not None:
                found[current] += 0
            continue
        b = _BUCKET.match(line)
        if b and current is not None:
            found[current] += int(b.group(1))
        elif not b:
            current = None
    return dict(found)


# ---------------------------------------------------------------- prerequisites
def require_tracing() -> None:
    """Root, bpftrace, tracefs (mounted here if it is not) and kernel BTF."""
    need_root()
    need_tool("bpftrace")
    events = Path("/sys/kernel/tracing/events")
    if not events.is_dir():
        # tracefs is not mounted on some hosts; we are root, so mount it.
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], capture_output=True)
    need(events.is_dir(), "tracefs is not mounted at /sys/kernel/tracing and could not be mounted")
    need(Path("/sys/kernel/btf/vmlinux").exists(), "no kernel BTF (/sys/kernel/btf/vmlinux)")


def need_events(*names: str) -> None:
    require_tracing()
    for name in names:
        need(Path("/sys/kernel/tracing/events", name).is_dir(), f"kernel has no tracepoint {name}")


def need_io_uring() -> None:
    p = Path("/proc/sys/kernel/io_uring_disabled")
    need(not p.exists() or p.read_text().strip() == "0", "io_uring is disabled (kernel.io_uring_disabled)")


def need_iomap_fs(path: Path) -> None:
    """Direct IO tracepoints come from iomap: the temp dir must be on ext4/xfs/btrfs."""
    best, fstype = "", ""
    real = os.path.realpath(path)
    with open("/proc/mounts") as f:
        for line in f:
            mnt, typ = line.split()[1], line.split()[2]
            if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, fstype = mnt, typ
    need(fstype in ("ext4", "xfs", "btrfs"), f"{path} is on {fstype or '?'}, not an iomap direct-IO filesystem")


# ---------------------------------------------------------------- static checks
def test_every_script_is_tested() -> None:
    scripts = {p.name for p in BPF_DIR.glob("*.bt")}
    assert scripts, "no bpftrace scripts in bpf/"
    assert scripts <= TESTED, f"scripts without a run test here: {sorted(scripts - TESTED)}"
    assert TESTED <= scripts, f"tested scripts missing from bpf/: {sorted(TESTED - scripts)}"


@pytest.mark.parametrize("script", sorted(TESTED))
def test_script_header_and_tracepoints_only(script: str) -> None:
    text = (BPF_DIR / script).read_text()
    header = text[: text.index("*/")]
    for word in ("ANSWERS", "RUN", "PRINTS", "COST", "PROBES", "Tracepoints only"):
        assert word in header, f"{script}: header lacks {word}"
    probes = re.findall(r"^([a-z_]+):", text, flags=re.M)
    assert probes, script
    assert set(probes) <= {"tracepoint", "interval"}, f"{script} uses {set(probes)}"


# ---------------------------------------------------------------- the scripts, run
def test_mysqld_file_io_per_file_and_thread(tmp_path: Path) -> None:
    need_events("syscalls/sys_enter_pread64", "syscalls/sys_exit_pwritev2")
    out, wl = run_with_workload(tmp_path, "mysqld_file_io.bt", lambda wl: [wl.pid, "", 0, DURATION])
    dev = (str(wl.major), str(wl.minor), str(wl.ino))
    files = stats_maps(out, "file_io")
    expect = {
        ("read", "buffered"): (BUF_READ_CALLS, BUF_READ_BYTES),
        ("write", "buffered"): (BUF_WRITE_CALLS, BUF_WRITE_BYTES),
        ("read", "direct"): (DIO_READ_CALLS, DIO_READ_BYTES),
        ("write", "direct"): (DIO_WRITE_CALLS, DIO_WRITE_BYTES),
    }
    for (op, mode), (calls, nbytes) in expect.items():
        key = (op, mode, *dev, tmp_path.name, "data.bin")
        assert files.get(key) == [calls, nbytes], f"{key}: {files.get(key)}\n{out}"
        tkey = (op, mode, str(wl.pid), wl.comm, *dev)
        assert stats_maps(out, "thread_io").get(tkey) == [calls, nbytes], f"{tkey}\n{out}"
    # Only the traced process: nothing but its own files (its stdout is a pipe: skipped).
    assert all(k[-1] == "data.bin" for k in files), files
    assert "key: [op, mode, major, minor, inode, dir, file]" in out


def test_mysqld_file_io_on_real_mariadb(mariadb) -> None:  # noqa: ANN001 - fixture
    need_events("syscalls/sys_enter_pwrite64")
    pid = mariadb.pid
    assert pid

    def sql() -> None:
        conn = mariadb.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("CREATE DATABASE IF NOT EXISTS bt_scripts")
                cur.execute("CREATE TABLE IF NOT EXISTS bt_scripts.t (id INT PRIMARY KEY, v VARCHAR(200))"
                            " ENGINE=InnoDB")
                cur.execute("DELETE FROM bt_scripts.t")
                for i in range(20):  # 20 autocommit transactions: redo written at each commit
                    cur.execute("INSERT INTO bt_scripts.t VALUES (%s, REPEAT('x', 200))", (i,))
        finally:
            conn.close()

    out = run_bpftrace("mysqld_file_io.bt", [str(pid), "", "0", str(DURATION)], during=sql)
    files = stats_maps(out, "file_io")
    redo = {k: v for k, v in files.items() if k[0] == "write" and k[-1] == "ib_logfile0"}
    assert redo, f"no redo log writes seen:\n{out}"
    assert sum(v[0] for v in redo.values()) >= 1 and sum(v[1] for v in redo.values()) >= 512, redo
    threads = stats_maps(out, "thread_io")
    assert threads and all(k[3] == "mariadbd" for k in threads), threads


def test_io_latency_histograms(tmp_path: Path) -> None:
    need_events("syscalls/sys_enter_fdatasync")
    out, wl = run_with_workload(tmp_path, "io_latency.bt", lambda wl: [0, wl.comm, 0, DURATION])
    hists = {name: hist_maps(out, name) for name in ("pread64_us", "pwrite64_us", "fsync_us", "fdatasync_us")}
    assert hists["pread64_us"] == {(): 50}, out
    assert hists["pwrite64_us"] == {(): 30}, out
    assert hists["fsync_us"] == {(): 5}, out
    assert hists["fdatasync_us"] == {(): 5}, out
    assert stats_maps(out, "pread64_bytes") == {(): [50, 50 * PAGE]}, out
    assert stats_maps(out, "pwrite64_bytes") == {(): [30, 30 * PAGE]}, out
    for name, calls in (("pread64", 50), ("pwrite64", 30), ("fsync", 5), ("fdatasync", 5)):
        st = stats_maps(out, f"{name}_stats_us")[()]
        assert st[0] == calls, out
    # an fsync that writes back dirty pages cannot take zero microseconds in total
    assert stats_maps(out, "fsync_stats_us")[()][1] > 0, out


def test_uring_io_by_opcode_and_file(tmp_path: Path) -> None:
    need_events("io_uring/io_uring_submit_req", "io_uring/io_uring_complete")
    need_io_uring()
    # INTERVAL 1: also exercises the per-interval printing (counts summed over intervals).
    out, wl = run_with_workload(tmp_path, "uring_io.bt", lambda wl: [wl.pid, "", 1, DURATION])
    assert "(last interval)" in out, out
    submitted = count_maps(out, "submitted")
    assert submitted == {(wl.comm, "READV"): URING_READS, (wl.comm, "WRITEV"): URING_WRITES,
                         (wl.comm, "FSYNC"): 1}, out
    punted = count_maps(out, "punted_to_iowq")
    assert punted.get(("READV",), 0) >= URING_ASYNC_READS, out
    assert punted.get(("WRITEV",), 0) == URING_WRITES, out
    lat = hist_maps(out, "latency_us")
    assert lat.get(("READV",)) == URING_READS and lat.get(("WRITEV",)) == URING_WRITES, out
    assert lat.get(("FSYNC",)) == 1, out
    result = stats_maps(out, "result")
    assert result[("READV",)] == [URING_READS, URING_READS * PAGE], out
    assert result[("WRITEV",)] == [URING_WRITES, URING_WRITES * PAGE], out
    per_file = stats_maps(out, "file_result")
    fkey = (str(wl.major), str(wl.minor), str(wl.ino), "data.bin")
    assert per_file[("READV", *fkey)] == [URING_READS, URING_READS * PAGE], out
    assert per_file[("WRITEV", *fkey)] == [URING_WRITES, URING_WRITES * PAGE], out
    assert count_maps(out, "errors") == {}, out


def test_block_by_dev_sizes_and_latency(tmp_path: Path) -> None:
    need_events("block/block_rq_issue", "block/block_rq_complete")
    need_io_uring()
    probe = os.stat(tmp_path)
    need(os.major(probe.st_dev) != 0, f"{tmp_path} is not on a block device")
    # System-wide, but limited to the temp file's device; INTERVAL 1 to test interval output.
    misses: dict[str, int] = {}
    out, wl = run_with_workload(
        tmp_path, "block_by_dev.bt",
        [1, DURATION, os.major(probe.st_dev), os.minor(probe.st_dev)], misses=misses,
    )
    # runs the kernel skipped because an interrupt nested in a tracing program (see recursion_misses)
    unseen, untimed = misses.get("block_rq_issue", 0), misses.get("block_rq_complete", 0)
    out = f"kernel skipped {unseen} issues, {untimed} completions\n{out}"
    dev = (str(os.major(probe.st_dev)), str(os.minor(probe.st_dev)))
    assert "(last interval)" in out, out
    req = stats_maps(out, "requests")
    assert all(k[:2] == dev for k in req), req  # the device filter works
    dio_reads = DIO_READ_CALLS + URING_READS
    dio_writes = DIO_WRITE_CALLS + URING_WRITES
    # Every O_DIRECT IO became at least one request on this device (others may add more).
    assert req[(*dev, "read")][0] >= dio_reads - unseen, out
    assert req[(*dev, "read")][1] >= DIO_READ_BYTES + URING_READS * PAGE - unseen * 4 * PAGE, out
    assert req[(*dev, "write")][0] >= dio_writes - unseen, out
    assert req[(*dev, "write")][1] >= DIO_WRITE_BYTES + URING_WRITES * PAGE - unseen * 4 * PAGE, out
    assert req.get((*dev, "flush"), [0])[0] >= 1, out  # 5 fsync + 5 fdatasync + io_uring FSYNC
    sizes = hist_maps(out, "size_kib")
    assert sizes[(*dev, "read")] >= dio_reads - unseen and sizes[(*dev, "write")] >= dio_writes - unseen, out
    lat = hist_maps(out, "latency_us")
    # Requests still in flight at the end are not timed; allow a few.
    slack = 4 + unseen + untimed
    assert lat[(*dev, "read")] >= dio_reads - slack and lat[(*dev, "write")] >= dio_writes - slack, out
    assert count_maps(out, "issuer_hint").get((wl.comm, "read"), 0) >= DIO_READ_CALLS, out


def test_dio_by_inode_including_iou_workers(tmp_path: Path) -> None:
    need_events("iomap/iomap_dio_rw_begin", "iomap/iomap_dio_complete", "iomap/iomap_iter")
    need_io_uring()
    need_iomap_fs(tmp_path)
    misses: dict[str, int] = {}
    out, wl = run_with_workload(tmp_path, "dio_by_inode.bt", lambda wl: [0, wl.comm, 0, DURATION],
                                misses=misses)
    # An io_uring read completes in the disk's interrupt; if that interrupt lands while a
    # tracing program runs on its CPU, the kernel skips the completion program (CI lost 4 of
    # 72 reads so).  Those are the only uncounted IOs allowed, and only reads: the preadv/
    # pwritev completions run in the calling thread, io_uring writes in a workqueue.
    lost = misses.get("iomap_dio_complete", 0)
    out = f"{lost} completions skipped by the kernel (recursion_misses)\n{out}"
    dio = stats_maps(out, "dio")
    tail = (str(wl.major), str(wl.minor), str(wl.ino))
    worker = f"iou-wrk-{wl.pid}"
    assert {k[0] for k in dio} <= {wl.comm, worker}, dio
    assert {k[2:] for k in dio} == {tail}, dio

    def total(op: str, comm: str | None = None) -> list[int]:
        rows = [v for k, v in dio.items() if k[1] == op and (comm is None or k[0] == comm)]
        return [sum(r[0] for r in rows), sum(r[1] for r in rows)]

    # All direct reads/writes of the file, whoever ran them: preadv/pwritev + io_uring.
    reads = DIO_READ_CALLS + URING_READS
    seen = total("read")[0]
    assert reads - lost <= seen <= reads, out
    assert total("read") == [seen, seen * PAGE], out  # every read is one page
    assert total("write") == [DIO_WRITE_CALLS + URING_WRITES, DIO_WRITE_BYTES + URING_WRITES * PAGE], out
    # The synchronous syscalls ran in the workload thread ...
    assert total("read", wl.comm)[0] >= DIO_READ_CALLS and total("write", wl.comm)[0] >= DIO_WRITE_CALLS, out
    # ... and the IOSQE_ASYNC requests in its io_uring worker.
    assert total("read", worker)[0] >= URING_ASYNC_READS - lost, out
    assert total("write", worker) == [URING_WRITES, URING_WRITES * PAGE], out
    lat = hist_maps(out, "dio_latency_us")
    assert lat[("read",)] == seen and lat[("write",)] == DIO_WRITE_CALLS + URING_WRITES, out


def test_pagecache_by_inode_insertions(tmp_path: Path) -> None:
    need_events("filemap/mm_filemap_add_to_page_cache", "filemap/mm_filemap_delete_from_page_cache")
    need_io_uring()
    out, wl = run_with_workload(tmp_path, "pagecache_by_inode.bt", lambda wl: [wl.pid, "", 0, DURATION])
    added = count_maps(out, "added_kib")
    key = (wl.comm, str(wl.major), str(wl.minor), str(wl.ino))
    # The cache was dropped first, so the 50 buffered 4 KiB preads (at least) were misses.
    assert added.get(key, 0) >= 50 * 4, out
    assert added.get(key, 0) <= 256 * 4 + 64, out  # the file is 1 MiB (+ a little slack)
    assert all(k[0] == wl.comm for k in added), added


PREADER = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print("ready", flush=True)
for line in sys.stdin:
    for _ in range(int(line)):
        os.pread(fd, 4096, 0)
    print("done", flush=True)
"""


def test_ioattr_script_as_typed_filters_rlimit_noise_and_forwards_sigint(tmp_path: Path) -> None:
    """`ioattr script io_latency PID`, as a user types it: bpftrace's harmless RLIMIT_MEMLOCK line
    (printed here, where CAP_SYS_RESOURCE is missing) is not shown, a SIGINT sent to ioattr reaches
    bpftrace, which prints its maps: exactly the 7 pread64 calls the target made."""
    from tests.helpers import IOATTR, Prompted

    need_root()
    need_tool("bpftrace")
    data = tmp_path / "data"
    data.write_bytes(b"x" * 4096)
    with Prompted("-c", PREADER, str(data)) as target:
        proc = subprocess.Popen([IOATTR, "script", "io_latency", str(target.pid)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert proc.stdout is not None
            seen = ""
            deadline = time.monotonic() + START_TIMEOUT
            while "Tracing " not in seen and time.monotonic() < deadline:
                seen += proc.stdout.readline()
            assert "Tracing " in seen, seen
            target.step("7")
            proc.send_signal(signal.SIGINT)  # to ioattr only, not its process group
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                # its whole session, by the group id it was given: ioattr and the bpftrace under it
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert proc.returncode == 0, err
    assert "RLIMIT_MEMLOCK" not in err and "Traceback" not in err, err
    assert stats_maps(out, "pread64_bytes") == {(): [7, 7 * PAGE]}, out

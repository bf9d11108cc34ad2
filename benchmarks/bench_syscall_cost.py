#!/usr/bin/env python3
"""What ioattr's probes add to one traced pread, pwrite and io_uring read,
against the bare operation, the floor and a bpftrace one-liner.

Configurations, measured interleaved (every round runs each once, in a
rotated order, so drift on a noisy VM hits them all alike):

  pread, nothing attached ................................. bare
  pread, the floor attached (benchmarks/floor.bpf.c) ....... floor
  pread, the floor, loop NOT its target .................... floor_untraced
  pread, tp_btf floor (benchmarks/rawtp_floor.bpf.c) ....... rawtp_floor (+ _untraced)
  pread, ioattr (all probe sets), loop is a target ......... ioattr_all
  pread, ioattr (syscalls set only), loop is a target ...... ioattr_syscalls
  pread, ioattr (all sets), loop NOT a target .............. ioattr_untraced
  pread, ioattr with IOATTR_SYSCALL_HOOK=raw ............... ioattr_raw (+ _untraced)
  pread, bpftrace per-(tid,fd) byte sum, loop pid .......... bpftrace
  pwrite (4 KiB into cached pages, no fsync) ............... pwrite_{bare,floor,rawtp_floor,
                                                             ioattr_all,ioattr_raw,bpftrace}
  io_uring 4 KiB buffered read, one SQE + one CQE per op ... uring_{bare,floor,rawtp_floor,
                                                             ioattr_all,ioattr_raw,bpftrace}
  getppid, nothing / floor / tp_btf floor / ioattr untraced (default and raw hook) / traced

The floor is what the issue measures against: for pread and pwrite the
per-syscall tracepoints (syscalls:sys_{enter,exit}_p{read,write}64), for
io_uring the io_uring:io_uring_submit_req/io_uring_complete tracepoints
(benchmarks/uring_floor.bpf.c), each with a pid filter and one counter. The
tp_btf floors (same filter, same "nothing else": raw sys_enter/sys_exit
for the syscalls, the io_uring tracepoints through tp_btf) show how much of
a cost is the attach method and how much is the programs' work.

Each measurement is a fresh `pread_loop` process (benchmarks/pread_loop.c)
that waits on stdin until the probes are attached and its pid is in the
target map, runs a warm-up, then N timed calls in 10 batches; the median
batch is the sample. Added cost = median over rounds of (config - the bare
run of the same operation in the same round). Every traced run is checked:
the probes must have counted exactly the loop's calls (floors: both
counters; ioattr: io_stats count and bytes at the syscall layer, for the
operation and api; bpftrace: its sums), or the run is an error.

Then, outside the timed rounds: attach time (ProbeSession.open, warm and
cold, `ioattr record` until it says it is recording), and with kernel BPF
run-time stats on, what each BPF program costs per run and per pread.

Needs root. Other processes' tracing programs would contaminate the
baseline: before every measurement we wait until no foreign tracing
program is loaded, and redo a measurement during which one appeared.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import faulthandler
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))  # harmless when ioattr is installed (editable)
sys.path.insert(0, str(HERE))  # the benchmarks' shared modules (verdict)

from ioattr.collectors import abi, libbpf  # noqa: E402
from ioattr.collectors.probes import ProbeSession  # noqa: E402
from ioattr.collectors.targets import TargetMap  # noqa: E402
from verdict import bench_parser, write_json  # noqa: E402

TRACING_TYPES = {"tracing", "tracepoint", "raw_tracepoint", "raw_tracepoint_writable", "kprobe"}
# Classic-tracepoint programs whose names say they fire on events a cached
# pread or getppid never hits (direct IO, block layer, io_uring, page-cache
# misses, fork/exit): other people's tools using only these can't disturb us.
IRRELEVANT_TRACEPOINT = re.compile(r"iomap|block|blk|bio|rq_|uring|filemap|pagecache|sched_proc|fork|exit_proc",
                                   re.I)
# ... except that io_uring programs do disturb the io_uring loop
IRRELEVANT_TRACEPOINT_URING = re.compile(r"iomap|block|blk|bio|rq_|filemap|pagecache|sched_proc|fork|exit_proc",
                                         re.I)
IO_MODES = ("pread", "pwrite", "uring")  # the loop's IO modes; getppid is the non-IO one
NO_SUCH_PID = 0x7FFFFFFF  # above pid_max: keeps the targets map non-empty without matching
SPAN = 1 << 20            # pread_loop cycles over the first MiB of its file
# (kind, op) -> floor source and its build parameters
FLOOR_BUILDS = {
    ("floor", "pread"): ("floor.bpf.c", []),
    ("floor", "pwrite"): ("floor.bpf.c", ["-DFLOOR_SYSCALL=pwrite64"]),
    ("floor", "uring"): ("uring_floor.bpf.c", []),
    ("rawtp_floor", "pread"): ("rawtp_floor.bpf.c", []),
    ("rawtp_floor", "pwrite"): ("rawtp_floor.bpf.c", ["-DFLOOR_NR=18"]),  # __NR_pwrite64, x86_64
    ("rawtp_floor", "uring"): ("uring_floor.bpf.c", ["-DFLOOR_TP_BTF"]),
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- build
def build(work: Path) -> tuple[Path, dict[tuple[str, str], Path]]:
    exe = work / "pread_loop"
    subprocess.run(["cc", "-O2", "-Wall", "-o", str(exe), str(HERE / "pread_loop.c"), "-luring"], check=True)
    objs = {}
    for (kind, op), (src, defines) in FLOOR_BUILDS.items():
        obj = work / f"{kind}_{op}.bpf.o"
        # the same flags as bpf/Makefile
        subprocess.run(["clang", "-g", "-O2", "-target", "bpf", "-D__TARGET_ARCH_x86", "-Wall", *defines,
                        f"-I{REPO / 'bpf'}", "-c", str(HERE / src), "-o", str(obj)],
                       check=True)
        objs[(kind, op)] = obj
    return exe, objs


def make_data_file(work: Path, name: str = "pread_loop.dat") -> Path:
    """A 1 MiB file on a real filesystem (not tmpfs), read once so it is cached."""
    path = work / name
    with open(path, "wb") as f:
        f.write(os.urandom(SPAN))
        f.flush()
        os.fsync(f.fileno())
    with open(path, "rb") as f:
        while f.read(1 << 16):
            pass
    return path


# --------------------------------------------------------------------------- BPF programs on the host
def loaded_tracing_progs(mode: str = "pread") -> dict[int, str]:
    """Tracing programs loaded on the host that could fire on the loop's calls in this mode."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True)
    try:
        progs = json.loads(out.stdout or "[]")
    except json.JSONDecodeError:
        return {}
    irrelevant = IRRELEVANT_TRACEPOINT_URING if mode == "uring" else IRRELEVANT_TRACEPOINT
    return {p["id"]: p.get("name", "?") for p in progs
            if p.get("type") in TRACING_TYPES
            and not (p.get("type") == "tracepoint" and irrelevant.search(p.get("name", "")))}


_get_next_id = None


def all_prog_ids() -> set[int]:
    """Ids of every BPF program loaded on the host (one cheap syscall per id)."""
    global _get_next_id
    if _get_next_id is None:
        # our own function pointer, prototyped once, not libbpf.lib()'s shared one
        fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32),
                              use_errno=True)(("bpf_prog_get_next_id", libbpf.lib()))
        _get_next_id = fn
    fn = _get_next_id
    ids, cur, nxt = set(), 0, ctypes.c_uint32(0)
    while fn(cur, ctypes.byref(nxt)) == 0:
        cur = nxt.value
        ids.add(cur)
    return ids


class ProgWatcher:
    """Notes programs that get loaded while a measurement runs, even briefly.

    Polls the program id list every 50 ms on a thread (one syscall per
    loaded program, so nothing the measured loop would notice); ids only
    grow, so a program that came and went between polls is missed only if
    it lived under 50 ms.
    """

    def __init__(self, allowed: set[int]) -> None:
        self.allowed = allowed
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.seen |= all_prog_ids() - self.allowed

    def __enter__(self) -> "ProgWatcher":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.seen |= all_prog_ids() - self.allowed


def loaded_prog_names() -> dict[int, str]:
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True)
    try:
        return {p["id"]: p.get("name", "?") for p in json.loads(out.stdout or "[]")}
    except json.JSONDecodeError:
        return {}


def fdinfo(fd: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/self/fdinfo/{fd}") as f:
        for line in f:
            k, _, v = line.partition(":")
            v = v.strip()
            if v.isdigit():
                out[k.strip()] = int(v)
    return out


# --------------------------------------------------------------------------- the loop process
class Loop:
    """One pread_loop process, started and waiting for its go byte."""

    def __init__(self, exe: Path, mode: str, data: Path, calls: int, cpu: int | None) -> None:
        self.mode = mode
        self.calls = calls
        self.warmup = max(calls // 10, 1000)
        cmd = [str(exe), mode, str(data) if mode in IO_MODES else "-", str(calls), str(self.warmup), "10"]
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        m = re.match(r"ready (\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"pread_loop did not start: {line!r}")
        self.pid = int(m.group(1))

    def run(self) -> dict[str, object]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("g")
        self.proc.stdin.close()
        out = self.proc.stdout.read()
        if self.proc.wait() != 0:
            raise RuntimeError(f"pread_loop failed: {out}")
        mean = float(re.search(r"ns_per_call ([\d.]+)", out).group(1))  # type: ignore[union-attr]
        batches = [float(x) for x in re.search(r"batch_ns ([\d. ]+)", out).group(1).split()]  # type: ignore[union-attr]
        return {"ns": statistics.median(batches), "mean_ns": mean, "batches": batches}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    @property
    def expected_calls(self) -> int:
        return self.calls + self.warmup


# --------------------------------------------------------------------------- attachments
@dataclass
class Attached:
    """What a configuration attached: program fds (for stats), own prog ids, a check."""

    prog_fds: dict[str, int]
    own_ids: set[int]
    verify: "callable[[Loop], str | None]"  # returns an error message or None
    info: dict[str, object] = field(default_factory=dict)  # recorded with the sample


@contextlib.contextmanager
def attach_nothing(loop: Loop) -> Iterator[Attached]:
    yield Attached({}, set(), lambda _l: None)


@contextlib.contextmanager
def attach_floor(obj_path: Path, op: str, target: bool, loop: Loop) -> Iterator[Attached]:
    """Load a floor object (counting the loop's `op` calls) with the loop (or nobody) as target."""
    obj = libbpf.Object(str(obj_path))
    try:
        rodata = next(m for m in obj.maps() if m.name.endswith(".rodata"))
        addr, size = rodata.initial_value()
        tgid = ctypes.c_uint32(loop.pid if target else NO_SUCH_PID)
        assert size >= ctypes.sizeof(tgid)
        ctypes.memmove(addr, ctypes.byref(tgid), ctypes.sizeof(tgid))
        obj.load()
        for prog in obj.programs():
            obj.links.append(prog.attach())
        fds = {p.name: p.fd for p in obj.programs()}
        bss = next(m for m in obj.maps() if m.name.endswith(".bss"))

        def verify(lp: Loop) -> str | None:
            hits = (ctypes.c_uint64 * 2)()
            if not libbpf.map_lookup(bss.fd, ctypes.c_uint32(0), hits):
                return "cannot read the floor's counters"
            want = lp.expected_calls if (target and lp.mode == op) else 0
            if not (hits[0] == hits[1] == want):
                return f"{obj_path.name} saw {hits[0]}/{hits[1]} {op} enter/exit, expected {want}"
            return None

        yield Attached(fds, {fdinfo(fd)["prog_id"] for fd in fds.values()}, verify)
    finally:
        obj.close()


def ioattr_counted(session: ProbeSession, pid: int, mode: str) -> tuple[int, int]:
    """(ops, bytes) io_stats holds for pid at the syscall layer for the loop's mode.

    pread/pwrite are (SYSCALL, READ/WRITE, api SYNC) rows; io_uring reads are
    (SYSCALL, READ, api IO_URING) rows, keyed by the submitting thread (see
    bpf/uring.bpf.c). getppid is checked against the READ/SYNC rows (must be 0).
    """
    op = abi.Op.WRITE if mode == "pwrite" else abi.Op.READ
    api = abi.Api.IO_URING if mode == "uring" else abi.Api.SYNC
    fd = session.map_fd("io_stats")
    count = nbytes = 0
    for key in libbpf.map_keys(fd, abi.IoKey):
        if key.tgid != pid or key.layer != abi.Layer.SYSCALL or key.op != op or key.api != api:
            continue
        val = abi.IoVal()
        if libbpf.map_lookup(fd, key, val):
            count += val.count
            nbytes += val.bytes
    return count, nbytes


@contextlib.contextmanager
def environ(**values: str | None) -> Iterator[None]:
    """Set (or, for None, leave alone) environment variables for the block, then restore them."""
    saved = {k: os.environ.get(k) for k, v in values.items() if v is not None}
    for k in saved:
        os.environ[k] = values[k]  # type: ignore[assignment]
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def attach_ioattr(sets: tuple[str, ...] | None, target: bool, loop: Loop,
                  bpf_dir: str | None = None, hook: str | None = None) -> Iterator[Attached]:
    # bpf_dir: an experimental build of bpf/ (--variant); hook: IOATTR_SYSCALL_HOOK
    # (raw|tracepoints), read when the session is built and opened
    with environ(IOATTR_BPF_DIR=bpf_dir, IOATTR_SYSCALL_HOOK=hook):
        session = ProbeSession(sets)
        session.open()
    try:
        tgid = loop.pid if target else NO_SUCH_PID
        # the hash and its front cache together (a --variant build may have no target_slots)
        TargetMap(session.map_fd("targets"), session.shared_fds.get("target_slots")).add(tgid)
        # programs of the object that were not loaded (the other syscall hook's) have no fd
        fds = {n: fd for n, fd in session.program_fds().items() if fd >= 0}

        def verify(lp: Loop) -> str | None:
            count, nbytes = ioattr_counted(session, lp.pid, lp.mode)
            want = lp.expected_calls if (target and lp.mode in IO_MODES) else 0
            if count != want or nbytes != want * 4096:
                return f"ioattr counted {count} {lp.mode} ops / {nbytes} bytes, expected {want}"
            return None

        # which attach method the syscalls set ended up on (None: ioattr without the choice)
        info = {"syscall_hook": getattr(session, "syscall_hook", None)}
        yield Attached(fds, {fdinfo(fd)["prog_id"] for fd in fds.values()}, verify, info)
    finally:
        session.close()


def bpftrace_program(pid: int | str, mode: str = "pread") -> str:
    if mode in ("pread", "pwrite"):
        # The same job as ioattr's syscall layer, minus fd->inode and latency:
        # per (thread, fd) bytes read/written, enter/exit with a pid filter.
        sc = f"{mode}64"
        return (
            f"tracepoint:syscalls:sys_enter_{sc} /pid == {pid}/ {{ @fd[tid] = args->fd; }} "
            f"tracepoint:syscalls:sys_exit_{sc} /pid == {pid}/ {{ "
            f"if (args->ret > 0) {{ @bytes[tid, @fd[tid]] = sum(args->ret); }} delete(@fd[tid]); }}"
        )
    if mode == "uring":
        # ioattr's uring set minus the inode and latency: remember the submitting
        # thread and opcode per request, count and sum bytes per (tid, opcode) at
        # completion (tgid filter on both: a completion may run in another thread)
        return (
            f"tracepoint:io_uring:io_uring_submit_req /pid == {pid}/ {{ "
            f"@req[args->req] = (tid << 8) | args->opcode; }} "
            f"tracepoint:io_uring:io_uring_complete /pid == {pid}/ {{ $v = @req[args->req]; "
            f"if (args->res >= 0) {{ @count[$v >> 8, $v & 0xff] = count(); "
            f"@bytes[$v >> 8, $v & 0xff] = sum(args->res); }} delete(@req[args->req]); }}"
        )
    raise ValueError(mode)


@contextlib.contextmanager
def attach_bpftrace(work: Path, loop: Loop, settle: float = 1.0) -> Iterator[Attached]:
    before = set(loaded_tracing_progs(loop.mode))
    out_path = work / f"bpftrace.{loop.pid}.out"
    out = open(out_path, "w")
    t0 = time.monotonic()
    proc = subprocess.Popen(["bpftrace", "-e", bpftrace_program(loop.pid, loop.mode)], stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while "Attaching" not in out_path.read_text():
            if proc.poll() is not None:
                raise RuntimeError(f"bpftrace exited: {out_path.read_text()}")
            if time.monotonic() - t0 > 60:
                raise RuntimeError("bpftrace did not print 'Attaching' within 60 s")
            time.sleep(0.02)
        # "Attaching N probes..." comes before the attach itself; the byte
        # check after the run proves the probes were live for every call.
        time.sleep(settle)
        own = set(loaded_tracing_progs(loop.mode)) - before
        result: dict[str, int] = {}

        def verify(lp: Loop) -> str | None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
            text = out_path.read_text()
            total = sum(int(v) for v in re.findall(r"^@bytes\[\d+, \d+\]: (\d+)", text, re.M))
            result["bytes"] = total
            if lp.mode in IO_MODES and total != lp.expected_calls * 4096:
                return f"bpftrace summed {total} bytes, expected {lp.expected_calls * 4096}"
            if lp.mode == "uring":
                ops = sum(int(v) for v in re.findall(r"^@count\[\d+, \d+\]: (\d+)", text, re.M))
                if ops != lp.expected_calls:
                    return f"bpftrace counted {ops} io_uring ops, expected {lp.expected_calls}"
            return None

        yield Attached({}, own, verify)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        out.close()


# --------------------------------------------------------------------------- configurations
@dataclass(frozen=True)
class Config:
    name: str
    mode: str            # pread | pwrite | uring | getppid
    kind: str            # none | floor | rawtp_floor | ioattr | bpftrace
    sets: tuple[str, ...] | None = None
    target: bool = True
    baseline: str = "bare"
    label: str = ""
    bpf_dir: str | None = None  # --variant: ioattr objects built from a modified bpf/
    hook: str | None = None     # IOATTR_SYSCALL_HOOK for ioattr (None: ioattr's default)

    @property
    def floor_op(self) -> str:
        """The operation a floor config counts: the loop's, or pread for getppid runs."""
        return self.mode if self.mode in IO_MODES else "pread"


# Per operation: its baseline, floor and bpftrace configs (the comparisons of
# the table), by name. pread keeps the historic unprefixed names.
OPS = {
    "pread": {"baseline": "bare", "floor": "floor", "tp_btf_floor": "rawtp_floor", "bpftrace": "bpftrace"},
    "pwrite": {"baseline": "pwrite_bare", "floor": "pwrite_floor", "tp_btf_floor": "pwrite_rawtp_floor",
               "bpftrace": "pwrite_bpftrace"},
    "uring": {"baseline": "uring_bare", "floor": "uring_floor", "tp_btf_floor": "uring_rawtp_floor",
              "bpftrace": "uring_bpftrace"},
    "getppid": {"baseline": "getppid_bare", "floor": None, "tp_btf_floor": None, "bpftrace": None},
}


def op_configs(op: str) -> tuple[Config, ...]:
    """bare, floor, tp_btf floor, ioattr (all sets, default and raw hook), bpftrace for pwrite/uring."""
    n = OPS[op]
    what = {"pwrite": "pwrite", "uring": "uring read"}[op]
    floor = {"pwrite": "floor (bare sys_enter/exit_pwrite64 tp + pid)",
             "uring": "floor (bare io_uring submit/complete tp + pid)"}[op]
    rawtp = {"pwrite": "tp_btf floor (raw sys_enter/exit + pid)",
             "uring": "tp_btf floor (io_uring tps via tp_btf + pid)"}[op]
    bt = {"pwrite": "bpftrace per-(tid,fd) byte sum",
          "uring": "bpftrace per-(tid,opcode) count+bytes"}[op]
    b = n["baseline"]
    return (
        Config(b, op, "none", baseline=b, label=f"{what}, nothing attached"),
        Config(n["floor"], op, "floor", baseline=b, label=f"{what}, {floor}"),  # type: ignore[arg-type]
        Config(n["tp_btf_floor"], op, "rawtp_floor", baseline=b, label=f"{what}, {rawtp}"),  # type: ignore[arg-type]
        Config(f"{op}_ioattr_all", op, "ioattr", None, True, baseline=b, label=f"{what}, ioattr all sets, traced"),
        Config(f"{op}_ioattr_raw", op, "ioattr", None, True, baseline=b, hook="raw",
               label=f"{what}, ioattr all sets, hook=raw, traced"),
        Config(n["bpftrace"], op, "bpftrace", baseline=b, label=f"{what}, {bt}"),  # type: ignore[arg-type]
    )


CONFIGS = (
    Config("bare", "pread", "none", label="pread, nothing attached"),
    Config("floor", "pread", "floor", label="pread, floor (bare enter/exit tp + pid filter)"),
    Config("floor_untraced", "pread", "floor", target=False, label="pread, floor, NOT its target"),
    Config("rawtp_floor", "pread", "rawtp_floor", label="pread, tp_btf floor (raw sys_enter/exit + pid)"),
    Config("rawtp_floor_untraced", "pread", "rawtp_floor", target=False,
           label="pread, tp_btf floor, NOT its target"),
    Config("ioattr_all", "pread", "ioattr", None, True, label="pread, ioattr all sets, traced"),
    Config("ioattr_syscalls", "pread", "ioattr", ("syscalls",), True,
           label="pread, ioattr syscalls set only, traced"),
    Config("ioattr_untraced", "pread", "ioattr", None, False, label="pread, ioattr all sets, NOT a target"),
    Config("ioattr_raw", "pread", "ioattr", None, True, hook="raw",
           label="pread, ioattr all sets, hook=raw, traced"),
    Config("ioattr_raw_untraced", "pread", "ioattr", None, False, hook="raw",
           label="pread, ioattr all sets, hook=raw, NOT a target"),
    Config("bpftrace", "pread", "bpftrace", label="pread, bpftrace per-(tid,fd) byte sum"),
    *op_configs("pwrite"),
    *op_configs("uring"),
    Config("getppid_bare", "getppid", "none", baseline="getppid_bare", label="getppid, nothing attached"),
    Config("getppid_floor", "getppid", "floor", baseline="getppid_bare", label="getppid, floor attached"),
    Config("getppid_rawtp_floor", "getppid", "rawtp_floor", target=False, baseline="getppid_bare",
           label="getppid, tp_btf floor, NOT its target"),
    Config("getppid_ioattr_untraced", "getppid", "ioattr", None, False, baseline="getppid_bare",
           label="getppid, ioattr all sets, NOT a target"),
    Config("getppid_ioattr_raw_untraced", "getppid", "ioattr", None, False, baseline="getppid_bare", hook="raw",
           label="getppid, ioattr all sets, hook=raw, NOT a target"),
    Config("getppid_ioattr_traced", "getppid", "ioattr", None, True, baseline="getppid_bare",
           label="getppid, ioattr all sets, traced"),
)


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.exe, self.objs = build(work)
        self.data = make_data_file(work)
        self.wdata = make_data_file(work, "pwrite_loop.dat")  # pwrite overwrites its own file
        self.redone = 0
        self.contaminated = 0
        self.waited_s = 0.0

    def attach(self, cfg: Config, loop: Loop) -> contextlib.AbstractContextManager[Attached]:
        if cfg.kind == "none":
            return attach_nothing(loop)
        if cfg.kind in ("floor", "rawtp_floor"):
            return attach_floor(self.objs[(cfg.kind, cfg.floor_op)], cfg.floor_op, cfg.target, loop)
        if cfg.kind == "ioattr":
            return attach_ioattr(cfg.sets, cfg.target, loop, cfg.bpf_dir, cfg.hook)
        if cfg.kind == "bpftrace":
            return attach_bpftrace(self.work, loop)
        raise ValueError(cfg.kind)

    def wait_quiet(self, mode: str) -> bool:
        """Wait (bounded) until no other tracing program is loaded on the host."""
        t0 = time.monotonic()
        quiet = True
        while loaded_tracing_progs(mode):
            if time.monotonic() - t0 > self.args.quiet_timeout:
                log(f"  warning: foreign tracing programs still loaded after {self.args.quiet_timeout:.0f}s: "
                    f"{sorted(set(loaded_tracing_progs(mode).values()))}; measuring anyway")
                quiet = False
                break
            time.sleep(1.0)
        self.waited_s += time.monotonic() - t0
        return quiet

    def calls_for(self, cfg: Config) -> int:
        return self.args.calls * (5 if cfg.mode == "getppid" else 1)

    def measure(self, cfg: Config, stats: bool = False) -> dict[str, object]:
        attempts = self.args.attempts
        for attempt in range(attempts):
            if not self.wait_quiet(cfg.mode):
                attempt = attempts - 1  # waited long enough: keep this one, flagged
            data = self.wdata if cfg.mode == "pwrite" else self.data
            loop = Loop(self.exe, cfg.mode, data, self.calls_for(cfg), self.args.cpu)
            try:
                with self.attach(cfg, loop) as att:
                    foreign = {i: n for i, n in loaded_tracing_progs(cfg.mode).items() if i not in att.own_ids}
                    before = {n: fdinfo(fd) for n, fd in att.prog_fds.items()} if stats else {}
                    with ProgWatcher(all_prog_ids()) as watch:
                        res = loop.run()
                    after = {n: fdinfo(fd) for n, fd in att.prog_fds.items()} if stats else {}
                    foreign.update({i: n for i, n in loaded_tracing_progs(cfg.mode).items()
                                    if i not in att.own_ids})
                    # programs seen by the watcher but gone by now: we can't tell what they were
                    gone = watch.seen - set(loaded_prog_names())
                    foreign.update({i: "?" for i in gone if i not in foreign})
                    err = att.verify(loop)
            finally:
                loop.kill()
            if err:
                raise RuntimeError(f"{cfg.name}: {err}")
            res.update(att.info)
            if foreign and attempt < attempts - 1:
                self.redone += 1
                log(f"  {cfg.name}: other BPF programs were loaded meanwhile "
                    f"({sorted(set(foreign.values()))}); redoing")
                continue
            if foreign:
                self.contaminated += 1
                res["contaminated"] = sorted(set(foreign.values()))
                log(f"  {cfg.name}: other BPF programs kept appearing; keeping a contaminated sample")
            if stats:
                res["progs"] = {
                    n: {
                        "prog_id": after[n]["prog_id"],
                        "run_cnt": after[n]["run_cnt"] - before[n]["run_cnt"],
                        "run_time_ns": after[n]["run_time_ns"] - before[n]["run_time_ns"],
                    }
                    for n in att.prog_fds
                }
                res["loop_calls"] = loop.expected_calls
            return res
        raise AssertionError("unreachable")

    # ----------------------------------------------------------------- phases
    def rounds(self, configs: list[Config]) -> dict[str, list[dict[str, object]]]:
        samples: dict[str, list[dict[str, object]]] = {c.name: [] for c in configs}
        for r in range(self.args.rounds):
            order = configs[r % len(configs):] + configs[: r % len(configs)]
            for cfg in order:
                res = self.measure(cfg)
                samples[cfg.name].append(res)
                hook = f"  (syscall hook {res['syscall_hook']})" if res.get("syscall_hook") else ""
                log(f"  round {r + 1}/{self.args.rounds} {cfg.name:<28} {res['ns']:8.1f} ns/call{hook}")
        return samples

    def attach_times(self) -> dict[str, object]:
        reps = self.args.attach_reps
        out: dict[str, object] = {}
        for label, sets in (("all", None), ("syscalls", ("syscalls",))):
            opens, closes = [], []
            for _ in range(reps + 1):  # the first one warms libbpf and the page cache up
                s = ProbeSession(sets)
                t0 = time.perf_counter()
                s.open()
                t1 = time.perf_counter()
                s.close()
                t2 = time.perf_counter()
                opens.append(t1 - t0)
                closes.append(t2 - t1)
            out[f"probe_session_open_{label}_s"] = {"median": statistics.median(opens[1:]),
                                                    "max": max(opens[1:]), "first": opens[0]}
            out[f"probe_session_close_{label}_s"] = {"median": statistics.median(closes[1:])}
        # cold: a fresh interpreter, imports included
        code = ("import time; t=time.perf_counter(); from ioattr.collectors.probes import ProbeSession; "
                "s=ProbeSession(); s.open(); print(time.perf_counter()-t); s.close()")
        cold = []
        for _ in range(reps):
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            cold.append(float(r.stdout.strip().splitlines()[-1]))
        out["probe_session_open_cold_s"] = {"median": statistics.median(cold), "max": max(cold)}
        # the user's view: `ioattr record` from exec until it says it is recording
        ioattr = shutil.which("ioattr") or str(Path(sys.executable).with_name("ioattr"))
        target = subprocess.Popen(["sleep", "600"])
        rec_times = []
        try:
            for i in range(max(3, reps // 2)):
                outdir = self.work / f"rec{i}"
                t0 = time.monotonic()
                p = subprocess.Popen([ioattr, "record", "--pid", str(target.pid), "-o", str(outdir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                line = ""
                assert p.stderr is not None
                for line in p.stderr:
                    if "recording" in line:
                        break
                t1 = time.monotonic()
                p.send_signal(signal.SIGINT)
                rest = p.stderr.read()
                rc = p.wait(timeout=60)
                if "recording" not in line or rc != 0:
                    raise RuntimeError(f"ioattr record failed (exit {rc}): {line}{rest}")
                rec_times.append(t1 - t0)
        finally:
            target.kill()
            target.wait()
        out["ioattr_record_until_recording_s"] = {"median": statistics.median(rec_times), "max": max(rec_times)}
        # the floor, for scale
        ft = []
        for _ in range(reps):
            obj = libbpf.Object(str(self.objs[("floor", "pread")]))
            t0 = time.perf_counter()
            obj.load()
            for prog in obj.programs():
                obj.links.append(prog.attach())
            ft.append(time.perf_counter() - t0)
            obj.close()
        out["floor_load_attach_s"] = {"median": statistics.median(ft)}
        return out

    def prog_stats(self, configs: list[Config]) -> dict[str, object]:
        """Per-program run time with kernel BPF stats on (own timed runs: stats cost time)."""
        fd = libbpf.enable_run_time_stats()
        restore_sysctl = None
        if fd is None:  # old kernel: fall back to the sysctl, restored afterwards
            path = Path("/proc/sys/kernel/bpf_stats_enabled")
            restore_sysctl = path.read_text().strip()
            path.write_text("1")
        try:
            wanted = ["floor", "rawtp_floor", "ioattr_all", "ioattr_syscalls", "ioattr_untraced", "ioattr_raw",
                      "pwrite_floor", "pwrite_ioattr_all", "pwrite_ioattr_raw",
                      "uring_floor", "uring_rawtp_floor", "uring_ioattr_all", "uring_ioattr_raw",
                      "getppid_ioattr_untraced", "getppid_ioattr_raw_untraced", "getppid_rawtp_floor"]
            chosen = {c.name for c in configs}
            # rawtp_floor_untraced (a program that only compares the pid) always runs: the clock overhead
            cfgs = ([c for c in CONFIGS if c.name == "rawtp_floor_untraced"]
                    + [c for c in CONFIGS if c.name in wanted and c.name in chosen]
                    + [c for c in configs if c.bpf_dir])
            out: dict[str, object] = {}
            for cfg in cfgs:
                runs = [self.measure(cfg, stats=True) for _ in range(self.args.stats_reps)]
                progs: dict[str, dict[str, float]] = {}
                for name in runs[0]["progs"]:  # type: ignore[union-attr]
                    cnt = [r["progs"][name]["run_cnt"] for r in runs]  # type: ignore[index]
                    tim = [r["progs"][name]["run_time_ns"] for r in runs]  # type: ignore[index]
                    calls = runs[0]["loop_calls"]
                    progs[name] = {
                        "run_cnt": statistics.median(cnt),
                        "run_time_ns": statistics.median(tim),
                        "ns_per_run": statistics.median(t / c if c else 0.0 for t, c in zip(tim, cnt)),
                        "ns_per_loop_call": statistics.median(t / calls for t in tim),  # type: ignore[operator]
                    }
                out[cfg.name] = {"loop_calls": runs[0]["loop_calls"],
                                 "ns_per_call_with_stats": statistics.median(r["ns"] for r in runs),  # type: ignore[misc]
                                 "progs": progs}
                log(f"  stats {cfg.name}: " + ", ".join(
                    f"{n} {p['ns_per_run']:.0f} ns/run, {p['ns_per_loop_call']:.0f} ns/call"
                    for n, p in progs.items() if p["run_cnt"]))
            # run_time_ns includes reading the clock twice per run; a program that
            # only compares the pid shows what that costs here
            empty = [p["ns_per_run"] for p in out["rawtp_floor_untraced"]["progs"].values()  # type: ignore[index]
                     if p["run_cnt"]]
            base = statistics.median(empty) if empty else 0.0
            for d in out.values():
                for p in d["progs"].values():  # type: ignore[index]
                    p["net_ns_per_run"] = max(p["ns_per_run"] - base, 0.0) if p["run_cnt"] else 0.0
            return {"configs": out, "empty_program_ns_per_run": base,
                    "note": "ns_per_run includes the stats clock reads; net_ns_per_run subtracts "
                            "empty_program_ns_per_run (a tp_btf program that only compares the pid)"}
        finally:
            if fd is not None:
                os.close(fd)
            if restore_sysctl is not None:
                Path("/proc/sys/kernel/bpf_stats_enabled").write_text(restore_sysctl)


# --------------------------------------------------------------------------- summary
def summarize(samples: dict[str, list[dict[str, object]]], configs: list[Config]) -> dict[str, object]:
    by = {c.name: c for c in configs}
    out: dict[str, object] = {}
    for c in configs:
        ns = [float(s["ns"]) for s in samples[c.name]]  # type: ignore[arg-type]
        row: dict[str, object] = {"label": c.label, "op": c.mode, "median_ns": statistics.median(ns),
                                  "samples_ns": ns}
        hooks = sorted({str(s["syscall_hook"]) for s in samples[c.name] if "syscall_hook" in s})
        if hooks:
            row["syscall_hook"] = hooks[0] if len(hooks) == 1 else hooks
        if c.name != c.baseline and c.baseline in samples:
            base = [float(s["ns"]) for s in samples[c.baseline]]  # type: ignore[arg-type]
            diffs = [a - b for a, b in zip(ns, base)]
            row["added_ns"] = statistics.median(diffs)
            row["added_ns_per_round"] = diffs
            row["ratio_to_bare"] = statistics.median(a / b for a, b in zip(ns, base))
            # cross-check: the least-disturbed batch of each run (noise only ever adds time)
            mn = [min(s["batches"]) for s in samples[c.name]]  # type: ignore[type-var]
            mb = [min(s["batches"]) for s in samples[c.baseline]]  # type: ignore[type-var]
            row["added_ns_min_batches"] = statistics.median(a - b for a, b in zip(mn, mb))
        out[c.name] = row
    # ratios to the added cost of the same operation's floor and bpftrace one-liner
    for name, c in by.items():
        row = out[name]
        if c.kind == "none" or "added_ns" not in row:  # type: ignore[operator]
            continue
        for ref, key in (("floor", "added_vs_floor"), ("bpftrace", "added_vs_bpftrace")):
            ref_name = OPS[c.mode][ref]
            ref_add = out.get(ref_name, {}).get("added_ns") if ref_name else None  # type: ignore[union-attr]
            if ref_add and ref_add > 0:
                row[key] = row["added_ns"] / ref_add  # type: ignore[index,operator]
    return out


def per_op(summary: dict[str, object], configs: list[Config], calls: int) -> dict[str, object]:
    """The summary rows grouped by the loop's operation, with what each op is compared to."""
    out: dict[str, object] = {}
    for op, refs in OPS.items():
        rows = {c.name: summary[c.name] for c in configs if c.mode == op}
        if rows:
            out[op] = {**{k: v for k, v in refs.items() if v in rows},
                       "calls_per_run": calls * (5 if op == "getppid" else 1), "configs": rows}
    return out


def verdicts(summary: dict[str, object], attach: dict[str, object] | None) -> dict[str, object]:
    s = summary
    v: dict[str, object] = {}
    for op, cfg in (("pread", "ioattr_all"), ("pwrite", "pwrite_ioattr_all"), ("uring", "uring_ioattr_all")):
        floor = OPS[op]["floor"]
        if cfg in s and floor in s:
            a = s[cfg]["added_ns"]  # type: ignore[index]
            f = s[floor]["added_ns"]  # type: ignore[index]
            v[f"traced_{op}_le_2x_floor"] = {"added_ns": a, "floor_ns": f, "ratio": a / f if f else None,
                                             "met": a <= 2 * f}
    if "ioattr_untraced" in s:
        a = s["ioattr_untraced"]["added_ns"]  # type: ignore[index]
        v["untraced_pread_le_50ns"] = {"added_ns": a, "met": a <= 50}
    if "getppid_ioattr_untraced" in s:
        a = s["getppid_ioattr_untraced"]["added_ns"]  # type: ignore[index]
        v["untraced_getppid_le_50ns"] = {"added_ns": a, "met": a <= 50}
    if attach:
        t = attach["probe_session_open_all_s"]["median"]  # type: ignore[index]
        c = attach["probe_session_open_cold_s"]["median"]  # type: ignore[index]
        r = attach["ioattr_record_until_recording_s"]["median"]  # type: ignore[index]
        v["attach_le_1s"] = {"probe_session_open_s": t, "cold_open_s": c, "ioattr_record_s": r,
                             "met": max(t, c) <= 1.0}
    return v


def ioattr_objects(d: Path) -> dict[str, str]:
    """sha256 (12 hex) of each BPF object in d: identifies the code measured."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:12] for p in sorted(d.glob("*.bpf.o"))}


def freeze_objects(work: Path) -> tuple[Path, Path]:
    """Copy ioattr's BPF objects aside and load only the copy from now on.

    Other people rebuild bpf/ while a long benchmark runs; a copy keeps
    every round (and `ioattr record` in the attach timing, through the
    environment) on one build.
    """
    from ioattr.collectors.probes import bpf_object_dir

    src = bpf_object_dir()
    dst = work / "ioattr-bpf"
    dst.mkdir()
    for obj in src.glob("*.bpf.o"):
        shutil.copy2(obj, dst / obj.name)
    os.environ["IOATTR_BPF_DIR"] = str(dst)
    return src, dst


def git_state() -> dict[str, object]:
    def git(*a: str) -> str:
        r = subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True)
        return r.stdout.strip()

    return {"head": git("rev-parse", "--short", "HEAD"),
            "bpf_sources_modified": bool(git("status", "--porcelain", "--", "bpf"))}


def host_info() -> dict[str, object]:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "cpu_model": cpu,
            "libbpf": ".".join(map(str, libbpf.version())), "loadavg_start": os.getloadavg()}


def print_table(summary: dict[str, object], attach: dict[str, object] | None,
                stats: dict[str, object] | None, verd: dict[str, object]) -> None:
    print()
    print(f"{'configuration':<58} {'median ns':>10} {'added ns':>9} {'x bare':>7} {'x floor':>8} "
          f"{'x bpftr':>8} {'(min)':>7}")
    last_op = None
    for row in summary.values():
        r = row  # type: ignore[assignment]
        if r["op"] != last_op:
            last_op = r["op"]
            floor = OPS[last_op]["floor"]
            print(f"-- {last_op}" + (f" (x floor: vs {floor}; x bpftr: vs {OPS[last_op]['bpftrace']})"
                                     if floor else ""))
        add = f"{r['added_ns']:9.1f}" if "added_ns" in r else f"{'-':>9}"
        xb = f"{r['ratio_to_bare']:7.2f}" if "ratio_to_bare" in r else f"{'-':>7}"
        xf = f"{r['added_vs_floor']:8.2f}" if "added_vs_floor" in r else f"{'-':>8}"
        xt = f"{r['added_vs_bpftrace']:8.2f}" if "added_vs_bpftrace" in r else f"{'-':>8}"
        mn = f"{r['added_ns_min_batches']:7.1f}" if "added_ns_min_batches" in r else f"{'-':>7}"
        print(f"{r['label']:<58} {r['median_ns']:10.1f} {add} {xb} {xf} {xt} {mn}")
    if attach:
        print()
        for k, v in attach.items():
            print(f"{k:<40} median {v['median']:.3f} s" + (f"  (max {v['max']:.3f})" if "max" in v else ""))
    if stats:
        print()
        print(f"BPF run-time stats (empty program: {stats['empty_program_ns_per_run']:.1f} ns/run of "
              "clock overhead, subtracted in 'net')")
        print(f"{'config':<28} {'program':<24} {'runs/call':>9} {'ns/run':>8} {'net':>8} {'ns/call':>8}")
        for cfg, d in stats["configs"].items():  # type: ignore[union-attr]
            for prog, p in d["progs"].items():  # type: ignore[index]
                if not p["run_cnt"]:
                    continue
                print(f"{cfg:<28} {prog:<24} {p['run_cnt'] / d['loop_calls']:9.2f} "  # type: ignore[index]
                      f"{p['ns_per_run']:8.1f} {p['net_ns_per_run']:8.1f} {p['ns_per_loop_call']:8.1f}")
    print()
    for k, v in verd.items():
        print(f"{k:<30} {'MET' if v['met'] else 'NOT MET'}  {json.dumps({a: round(b, 3) if isinstance(b, float) else b for a, b in v.items() if a != 'met'})}")  # type: ignore[union-attr]


def main() -> int:
    ap = bench_parser(__doc__, raw=True, rounds=5, rounds_help='interleaved rounds (default 5)', results='syscall_cost.json')
    ap.add_argument("--calls", type=int, default=200_000,
                    help="preads (pwrites, io_uring reads) per run (getppid runs do 5x)")
    ap.add_argument("--attach-reps", type=int, default=5, help="repetitions of each attach timing")
    ap.add_argument("--stats-reps", type=int, default=3, help="runs per config with BPF stats on")
    ap.add_argument("--no-bpftrace", action="store_true", help="skip the bpftrace comparison")
    ap.add_argument("--no-attach", action="store_true", help="skip attach timings")
    ap.add_argument("--no-stats", action="store_true", help="skip the per-program run-time breakdown")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=DIR",
                    help="also measure ioattr built from DIR (a modified copy of bpf/ after make; "
                         "all probe sets, traced pread/pwrite/uring, untraced pread/getppid) "
                         "-- to try a BPF change")
    ap.add_argument("--only", help="comma-separated config names to run (default all)")
    ap.add_argument("--cpu", type=int, help="pin the loop to this CPU (taskset)")
    ap.add_argument("--quiet-timeout", type=float, default=300,
                    help="max seconds to wait for other tracing programs to go away (default 300)")
    ap.add_argument("--attempts", type=int, default=6,
                    help="redo a measurement during which other BPF programs were loaded, up to "
                         "this many tries; then keep it, flagged (default 6)")
    ap.add_argument("--quick", action="store_true", help="3 rounds x 100k calls, fewer repetitions")
    args = ap.parse_args()
    # SIGTERM unwinds like an exception, so servers, probes and temp dirs are
    # cleaned up (a background job started by a shell may have SIGINT ignored)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    faulthandler.enable()
    if args.quick:
        args.rounds, args.calls, args.attach_reps, args.stats_reps = 3, 100_000, 3, 1
    if os.geteuid() != 0:
        print("bench_syscall_cost: needs root", file=sys.stderr)
        return 2
    configs = list(CONFIGS)
    if args.no_bpftrace or not shutil.which("bpftrace"):
        configs = [c for c in configs if c.kind != "bpftrace"]
    for spec in args.variant:
        name, _, vdir = spec.partition("=")
        if not name or not vdir or not (Path(vdir) / "syscalls.bpf.o").exists():
            ap.error(f"--variant {spec}: want NAME=DIR with DIR/syscalls.bpf.o built")
        vdir = str(Path(vdir).resolve())
        configs += [
            Config(f"{name}", "pread", "ioattr", None, True, label=f"pread, variant {name}, traced", bpf_dir=vdir),
            Config(f"pwrite_{name}", "pwrite", "ioattr", None, True, baseline="pwrite_bare",
                   label=f"pwrite, variant {name}, traced", bpf_dir=vdir),
            Config(f"uring_{name}", "uring", "ioattr", None, True, baseline="uring_bare",
                   label=f"uring read, variant {name}, traced", bpf_dir=vdir),
            Config(f"{name}_untraced", "pread", "ioattr", None, False,
                   label=f"pread, variant {name}, NOT a target", bpf_dir=vdir),
            Config(f"getppid_{name}_untraced", "getppid", "ioattr", None, False, baseline="getppid_bare",
                   label=f"getppid, variant {name}, NOT a target", bpf_dir=vdir),
        ]
    if args.only:
        keep = set(args.only.split(","))
        unknown = keep - {c.name for c in configs}
        if unknown:
            ap.error(f"--only: unknown configs {sorted(unknown)}; known: {[c.name for c in configs]}")
        # a config's baseline is always measured too
        keep |= {c.baseline for c in configs if c.name in keep}
        configs = [c for c in configs if c.name in keep]
    # variants after the built-in configs of their operation, so the table groups by operation
    order = list(OPS)
    configs.sort(key=lambda c: order.index(c.mode))

    work = Path(tempfile.mkdtemp(prefix="ioattr-bench-", dir="/var/tmp"))
    try:
        bench = Bench(args, work)
        started = datetime.datetime.now(datetime.timezone.utc)
        obj_src, obj_dir = freeze_objects(work)
        objects = ioattr_objects(obj_dir)
        log(f"syscall cost: {args.rounds} rounds x {len(configs)} configs, {args.calls} IO ops per run "
            f"({args.calls * 5} getppid)")
        samples = bench.rounds(configs)
        summary = summarize(samples, configs)
        attach = None if args.no_attach else bench.attach_times()
        stats = None if args.no_stats else bench.prog_stats(configs)
        verd = verdicts(summary, attach)
        rebuilt = ioattr_objects(obj_src) != objects
        if rebuilt:
            log(f"note: {obj_src} was rebuilt while this ran; the figures are for the build copied at the start")
        print_table(summary, attach, stats, verd)
        result = {
            "benchmark": "syscall_cost",
            "date": started.isoformat(timespec="seconds"),
            "command": "sudo " + " ".join([".venv/bin/python"] + [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
            "host": {**host_info(), "loadavg_end": os.getloadavg()},
            "ioattr": {"git": git_state(), "bpf_objects_from": str(obj_src), "bpf_objects_sha256": objects,
                       "rebuilt_during_run": rebuilt},
            "params": {"rounds": args.rounds, "pread_calls": args.calls, "pwrite_calls": args.calls,
                       "uring_calls": args.calls, "getppid_calls": args.calls * 5,
                       "io_size": 4096, "pread_size": 4096, "file_span_bytes": SPAN, "batches": 10,
                       "cpu_pin": args.cpu,
                       "uring": "IORING_OP_READ, buffered, one SQE + io_uring_submit_and_wait(1) per op",
                       "pwrite": "pwrite64 overwriting the cached 1 MiB span, no fsync",
                       "bpftrace": shutil.which("bpftrace") and subprocess.run(
                           ["bpftrace", "--version"], capture_output=True, text=True).stdout.strip(),
                       "bpftrace_program": bpftrace_program("PID"),
                       "bpftrace_programs": {m: bpftrace_program("PID", m) for m in IO_MODES},
                       "ioattr_raw_env": {"IOATTR_SYSCALL_HOOK": "raw"}},
            "method": "median over 10 batches per run; added_ns = median over rounds of (config - baseline "
                      "of the same round); rounds interleave configs in rotated order",
            "summary": summary,
            "per_op": per_op(summary, configs, args.calls),
            "attach": attach,
            "prog_stats": stats,
            "verdicts": verd,
            "redone_measurements": bench.redone,
            "contaminated_samples": bench.contaminated,
            "waited_for_quiet_s": round(bench.waited_s, 1),
        }
        log(f"wrote {write_json(args.json, result)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

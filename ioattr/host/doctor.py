"""`ioattr doctor`: what works on this host, what is missing, and why.

Every check tries the feature for real where it can: it loads a tiny BPF
program from bpf/doctor_probes.bpf.c (one program per feature, autoloaded
alone so one rejected section never hides the others), attaches it,
makes it fire from this process, reads the hit back, and closes it. Only
where there is nothing to try (privileges, BTF, kallsyms) does a check look.
Nothing stays loaded: every object is closed before `run_checks` returns.

`run_checks()` returns::

    {"usable": bool, "verdict": "one line",
     "host": {"kernel": ..., "arch": ..., "libbpf": ..., ...},
     "checks": [{"name", "ok", "required", "detail"}, ...]}

`usable` is true when the required checks pass: the Python packages (checked by
cli/doctor.py before this module is imported: it imports them), privileges, BTF, tracefs
and the syscalls probe set (the one layer every recording needs).
"""
from __future__ import annotations

import ctypes
import errno as errno_mod
import gzip
import io
import os
import platform
import re
import shutil
import struct
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ioattr import __version__
from ioattr.collectors import filesystems, libbpf, thd_stages
from ioattr.collectors import features
from ioattr.collectors.elf import symbol_offset
from ioattr.collectors.features import ensure_tracefs
from ioattr.collectors.libbpf import LibbpfError
from ioattr.collectors.probes import PROBE_SETS, ProbeSession, bpf_object_dir, kallsyms_addresses
from ioattr.collectors.stage_probes import StageProbes
from ioattr.errors import IoattrError
from ioattr.host import pydeps

BTF_PATH = "/sys/kernel/btf/vmlinux"
TRACEFS = "/sys/kernel/tracing"
DIO_END_IO = "iomap_dio_bio_end_io"

# the tracepoints ioattr's probe sets (and its design) rely on
TRACEPOINTS: tuple[tuple[str, str, str], ...] = (
    ("raw_syscalls", "sys_enter", "syscall entry (syscalls probe set)"),
    ("raw_syscalls", "sys_exit", "syscall exit (syscalls probe set)"),
    ("syscalls", "sys_enter_pread64", "per-syscall entry (syscalls probe set, tracepoints hook)"),
    ("syscalls", "sys_exit_pread64", "per-syscall exit (syscalls probe set, tracepoints hook)"),
    ("io_uring", "io_uring_submit_req", "io_uring submissions (uring probe set)"),
    ("io_uring", "io_uring_complete", "io_uring completions (uring probe set)"),
    ("block", "block_rq_issue", "block request issue (block probe set)"),
    ("block", "block_rq_complete", "block request completion (block probe set)"),
    ("block", "block_bio_queue", "bio submission (block probe set)"),
    ("block", "block_split", "bio splits: large direct IO keeps its file (block probe set)"),
    ("block", "block_rq_requeue", "requeued block requests counted once (block probe set)"),
    ("filemap", "mm_filemap_add_to_page_cache", "page-cache fills (pagecache probe set)"),
    ("iomap", "iomap_dio_rw_begin", "direct IO with its inode"),
    ("sched", "sched_process_fork", "fork following (targets probe set)"),
)

# hit slots of doctor_hits; mirror the enum in bpf/doctor_probes.bpf.c
HIT_TP, HIT_RAW_TP, HIT_TP_BTF, HIT_UPROBE, HIT_URETPROBE = 0, 1, 2, 3, 4
HIT_KPROBE, HIT_FENTRY, HIT_FEXIT, HIT_RINGBUF, HIT_TASK_STORAGE = 5, 6, 7, 8, 9

CAP_SYS_ADMIN, CAP_SYSLOG, CAP_PERFMON, CAP_BPF = 21, 34, 38, 39


# --------------------------------------------------------------------------
# results


class Checks:
    """Collects check results in order."""

    def __init__(self) -> None:
        self.items: list[dict] = []
        self.privileged = True

    def add(self, name: str, ok: bool, detail: str, required: bool = False) -> bool:
        detail = " ".join(str(detail).split())  # always one line
        if not ok and not self.privileged and ("EPERM" in detail or "not permitted" in detail):
            detail += " (this process is not privileged: see the privileges check)"
        self.items.append({"name": name, "ok": bool(ok), "required": required, "detail": detail})
        return bool(ok)

    def run(self, name: str, fn: Callable[[], tuple[bool, str]], required: bool = False) -> bool:
        """Run one check; an unexpected exception is a failed check, never a crash."""
        try:
            ok, detail = fn()
        except (LibbpfError, OSError, ValueError) as e:  # the feature failed: say how
            ok, detail = False, _describe(e)
        except Exception as e:  # a bug in the check: still a report, never a crash
            ok, detail = False, f"check itself failed: {_describe(e)}"
        return self.add(name, ok, detail, required)


def _errname(err: int) -> str:
    return f"{errno_mod.errorcode.get(err, f'errno {err}')} ({os.strerror(err)})"


def _describe(e: BaseException) -> str:
    if isinstance(e, LibbpfError):
        what = str(e).rsplit(":", 1)[0]
        return f"{what} failed: {_errname(e.errno)}"
    if isinstance(e, OSError) and e.errno:
        return f"{e.strerror or ''} ({errno_mod.errorcode.get(e.errno, e.errno)})" + (
            f": {e.filename}" if e.filename else "")
    return f"{type(e).__name__}: {e}"


# --------------------------------------------------------------------------
# small host facts


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _effective_caps() -> int:
    return features.effective_capabilities()


def _kernel_config(option: str) -> str | None:
    """CONFIG_X's value from /proc/config.gz or /boot/config-<release>:
    'y'/'m'/..., 'n' when '# CONFIG_X is not set', None when unknown."""
    text = None
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            text = f.read()
    except OSError:
        text = _read(f"/boot/config-{platform.release()}")
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith(option + "="):
            return line.split("=", 1)[1]
        if line == f"# {option} is not set":
            return "n"
    return "n"


def _tracefs_mounts() -> list[str]:
    out = []
    for line in (_read("/proc/self/mounts") or "").splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "tracefs":
            out.append(parts[1])
    return out


def host_info() -> dict:
    try:
        lv = "%d.%d" % libbpf.version()
    except Exception as e:
        lv = f"unavailable ({_describe(e)})"
    u = os.uname()
    return {
        "kernel": u.release,
        "kernel_version": u.version,
        "arch": u.machine,
        "libbpf": lv,
        "ioattr": __version__,
        "python": platform.python_version(),
        "euid": os.geteuid(),
        "kptr_restrict": _read("/proc/sys/kernel/kptr_restrict"),
        "perf_event_paranoid": _read("/proc/sys/kernel/perf_event_paranoid"),
        "unprivileged_bpf_disabled": _read("/proc/sys/kernel/unprivileged_bpf_disabled"),
    }


# --------------------------------------------------------------------------
# finding a function's file offset in libc (no pyelftools: ELF64 by hand)


def libc_path() -> str | None:
    """The libc this process has mapped, from /proc/self/maps."""
    for line in (_read("/proc/self/maps") or "").splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            path = parts[5].strip()
            if re.match(r"libc(\.so|-[0-9.]+\.so)", os.path.basename(path)):
                return path
    return None


def elf_symbol_offset(path: str, symbol: str) -> int:
    """File offset of a function (see ioattr.collectors.elf)."""
    return symbol_offset(path, symbol)


# --------------------------------------------------------------------------
# the doctor's own BPF object


def _doctor_object_path() -> str:
    return str(bpf_object_dir() / "doctor_probes.bpf.o")


class DoctorObject:
    """bpf/doctor_probes.bpf.o opened with only `programs` autoloaded and
    only `maps` (plus the doctor_hits counters and .rodata) created."""

    def __init__(self, programs: tuple[str, ...], maps: tuple[str, ...] = ()) -> None:
        path = _doctor_object_path()
        if not os.path.exists(path):
            raise FileNotFoundError(errno_mod.ENOENT, "BPF object missing (reinstall ioattr)", path)
        self.obj = libbpf.Object(path)
        self.links: list = []
        self.progs = {}
        try:
            for p in self.obj.programs():
                p.set_autoload(p.name in programs)
                self.progs[p.name] = p
            for m in self.obj.maps():
                if m.name.endswith(".rodata"):  # holds only `doctor_tgid`
                    addr, size = m.initial_value()
                    if size >= 4:
                        ctypes.memmove(addr, ctypes.byref(ctypes.c_uint32(os.getpid())), 4)
                elif m.name.startswith("doctor_"):
                    m.set_autocreate(m.name == "doctor_hits" or m.name in maps)
            self.obj.load()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "DoctorObject":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def attach(self, name: str):
        link = self.progs[name].attach()
        self.links.append(link)
        return link

    def attach_tracepoint(self, name: str, category: str, event: str):
        link = self.progs[name].attach_tracepoint(category, event)
        self.links.append(link)
        return link

    def attach_uprobe(self, name: str, binary: str, offset: int, retprobe: bool = False):
        link = self.progs[name].attach_uprobe(os.getpid(), binary, offset, retprobe=retprobe)
        self.links.append(link)
        return link

    def map_fd(self, name: str) -> int:
        return self.obj.map(name).fd

    def hits(self, slot: int) -> int:
        val = ctypes.c_uint64(0)
        libbpf.map_lookup(self.map_fd("doctor_hits"), ctypes.c_uint32(slot), val)
        return int(val.value)

    def close(self) -> None:
        for link in self.links:
            link.destroy()
        self.links.clear()
        self.obj.close()


def _syscalls(n: int = 3) -> None:
    """Make a few syscalls from this process (getpid is never cached by glibc)."""
    for _ in range(n):
        os.getpid()


def _vfs_reads(n: int = 3) -> None:
    r, w = os.pipe()
    try:
        for _ in range(n):
            os.write(w, b"x")
            os.read(r, 1)
    finally:
        os.close(r)
        os.close(w)


def _fired(obj: DoctorObject, slot: int, trigger: Callable[[], None], what: str) -> tuple[bool, str]:
    trigger()
    n = obj.hits(slot)
    if n:
        return True, f"{what}; it ran ({n} hits from this process)"
    return False, f"{what}, but it never ran when triggered"


# --------------------------------------------------------------------------
# the checks


def check_privileges() -> tuple[bool, str]:
    caps = _effective_caps()
    have = [n for n, bit in (("CAP_BPF", CAP_BPF), ("CAP_PERFMON", CAP_PERFMON),
                             ("CAP_SYS_ADMIN", CAP_SYS_ADMIN)) if caps >> bit & 1]
    uid = os.geteuid()
    who = "root (uid 0)" if uid == 0 else f"uid {uid}"
    ok = ("CAP_BPF" in have and "CAP_PERFMON" in have) or "CAP_SYS_ADMIN" in have
    if ok:
        return True, f"{who} with {', '.join(have)}"
    # the same line record, top and the exporter say (collectors/features.py)
    return False, features.privileges_problem(uid, caps) or f"{who} lacks CAP_BPF+CAP_PERFMON (or CAP_SYS_ADMIN)"


def check_btf() -> tuple[bool, str]:
    try:
        with open(BTF_PATH, "rb") as f:
            head = f.read(24)
        size = os.path.getsize(BTF_PATH)
    except FileNotFoundError:
        return False, f"{BTF_PATH} missing: kernel built without CONFIG_DEBUG_INFO_BTF; CO-RE probes cannot load"
    except OSError as e:
        return False, f"cannot read {BTF_PATH}: {_describe(e)}"
    if len(head) < 4 or struct.unpack("<H", head[:2])[0] != 0xEB9F:
        return False, f"{BTF_PATH} is not BTF (bad magic)"
    return True, f"{BTF_PATH} present ({size // 1024} KiB)"


def check_tracefs() -> tuple[bool, str]:
    mounts = _tracefs_mounts()
    if TRACEFS in mounts:
        if os.path.isdir(os.path.join(TRACEFS, "events")):
            return True, f"mounted at {TRACEFS}"
        return False, f"mounted at {TRACEFS} but not readable as uid {os.geteuid()} (needs root)"
    ok, why = ensure_tracefs()
    return ok, why if ok else f"tracefs {why}"


def check_tracepoints(out: Checks) -> None:
    """Attach a generic tracepoint program to each tracepoint ioattr uses."""
    names = [f"tracepoint {c}:{e}" for c, e, _ in TRACEPOINTS]
    try:
        obj = DoctorObject(("doctor_tp_named",))
    except Exception as e:
        for name in names:
            out.add(name, False, f"could not try: {_describe(e)}")
        return
    results: list[tuple[str, bool, str]] = []
    with obj:
        for name, (cat, event, purpose) in zip(names, TRACEPOINTS):
            if not os.path.isdir(os.path.join(TRACEFS, "events", cat, event)):
                results.append((name, False, f"not in this kernel (no {TRACEFS}/events/{cat}/{event}): "
                                             f"no {purpose}"))
                continue
            try:
                obj.attach_tracepoint("doctor_tp_named", cat, event)
            except Exception as e:
                results.append((name, False, f"{_describe(e)}: no {purpose}"))
            else:
                results.append((name, True, f"a BPF program attached and detached: {purpose}"))
        # each tracepoint detach waits for an RCU grace period: do them side by side
        links, obj.links = obj.links, []
        if links:
            with ThreadPoolExecutor(len(links)) as pool:
                list(pool.map(lambda link: link.destroy(), links))
    for name, ok, detail in results:
        out.add(name, ok, detail)


def _attach_fire(program: str, slot: int, what: str, maps: tuple[str, ...] = (),
                 trigger: Callable[[], None] = _syscalls) -> Callable[[], tuple[bool, str]]:
    def check() -> tuple[bool, str]:
        with DoctorObject((program,), maps) as obj:
            obj.attach(program)
            return _fired(obj, slot, trigger, what)
    return check


def check_uprobe(retprobe: bool) -> tuple[bool, str]:
    libc = libc_path()
    if libc is None:
        return False, "no libc mapped in this process (static Python?): nothing to probe"
    off = elf_symbol_offset(libc, "getpid")
    prog = "doctor_uretprobe" if retprobe else "doctor_uprobe"
    with DoctorObject((prog,)) as obj:
        obj.attach_uprobe(prog, libc, off, retprobe=retprobe)
        kind = "uretprobe" if retprobe else "uprobe"
        return _fired(obj, HIT_URETPROBE if retprobe else HIT_UPROBE, _syscalls,
                      f"{kind} attached to {os.path.basename(libc)} getpid (file offset {off:#x})")


def check_kprobe() -> tuple[bool, str]:
    try:
        with DoctorObject(("doctor_kprobe",)) as obj:
            obj.attach("doctor_kprobe")
            return _fired(obj, HIT_KPROBE, _vfs_reads, "kprobe attached to vfs_read")
    except LibbpfError as e:
        failed = f"kprobe on vfs_read: {_describe(e).split(': ', 1)[-1]}"
    evidence = []
    if not os.path.exists(os.path.join(TRACEFS, "kprobe_events")):
        evidence.append(f"no {TRACEFS}/kprobe_events")
    if not os.path.exists("/sys/bus/event_source/devices/kprobe"):
        evidence.append("no kprobe PMU")
    if _kernel_config("CONFIG_KPROBES") == "n":
        evidence.append("CONFIG_KPROBES is not set")
    if evidence:
        return False, f"{failed}; {', '.join(evidence)}: this kernel has no kprobes"
    return False, failed


def _trampoline(kind: str, slot: int) -> Callable[[], tuple[bool, str]]:
    prog = f"doctor_{kind}"

    def check() -> tuple[bool, str]:
        try:
            obj = DoctorObject((prog,))
        except LibbpfError as e:
            why = ""
            if e.errno == errno_mod.EPERM and check_privileges()[0]:
                why = (" although this process is privileged and other program types load: the kernel "
                       "refuses BPF trampolines here")
            return False, f"{kind} program (vfs_read) failed to load: {_errname(e.errno)}{why}"
        with obj:
            obj.attach(prog)
            return _fired(obj, slot, _vfs_reads, f"{kind} attached to vfs_read")
    return check


def check_ringbuf() -> tuple[bool, str]:
    with DoctorObject(("doctor_ringbuf",), ("doctor_rb",)) as obj:
        got: list[bytes] = []
        rb = libbpf.RingBuffer(obj.map_fd("doctor_rb"), got.append)
        try:
            obj.attach("doctor_ringbuf")
            _syscalls()
            rb.consume()
        finally:
            rb.free()
        mine = [r for r in got if len(r) == 4 and struct.unpack("<I", r)[0] == os.getpid()]
        if mine:
            return True, f"created, written by a program, {len(mine)} records consumed from userspace"
        return False, f"created and attached, but no records came back (got {len(got)})"


def check_batch_ops() -> tuple[bool, str]:
    with DoctorObject((), ("doctor_hash",)) as obj:
        fd = obj.map_fd("doctor_hash")
        want = {k: k * 1000 + 7 for k in range(1, 21)}
        for k, v in want.items():
            libbpf.map_update(fd, ctypes.c_uint32(k), ctypes.c_uint64(v))
        keys, vals, n = libbpf.lookup_batch(fd, 4, 8, 64, chunk=8)
        got = dict(zip(struct.unpack(f"<{n}I", keys), struct.unpack(f"<{n}Q", vals)))
        if got == want:
            return True, f"BPF_MAP_LOOKUP_BATCH read back all {n} entries of a hash map"
        return False, f"BPF_MAP_LOOKUP_BATCH returned {n} entries, {len(want)} expected or wrong values"


def check_task_storage() -> tuple[bool, str]:
    with DoctorObject(("doctor_task_st",), ("doctor_task",)) as obj:
        obj.attach("doctor_task_st")
        _syscalls(4)
        n = obj.hits(HIT_TASK_STORAGE)
        if n >= 2:
            return True, f"task-local storage created and found again (count {n} for this task)"
        return False, f"task storage program attached but the per-task count is {n}, expected >= 2"


def check_kallsyms() -> tuple[bool, str]:
    found, addr = False, 0
    try:
        with open("/proc/kallsyms") as f:
            for line in f:
                if line.endswith(f" {DIO_END_IO}\n"):
                    found, addr = True, int(line.split(None, 1)[0], 16)
                    break
    except OSError as e:
        return False, f"cannot read /proc/kallsyms: {_describe(e)}"
    consequence = "direct-IO block requests cannot be charged to files"
    if not found:
        return False, f"{DIO_END_IO} not in /proc/kallsyms (no iomap direct IO?): {consequence}"
    if addr == 0:
        return False, (f"{DIO_END_IO} address hidden (kptr_restrict="
                       f"{_read('/proc/sys/kernel/kptr_restrict')}, perf_event_paranoid="
                       f"{_read('/proc/sys/kernel/perf_event_paranoid')}; needs CAP_SYSLOG): {consequence}")
    return True, f"{DIO_END_IO} at {addr:#x}: direct-IO block requests are charged to files"


def check_btrfs() -> tuple[bool, str]:
    """Whether block IO of files on btrfs is charged to them (collectors/filesystems.py)."""
    if "btrfs" not in filesystems.kernel_filesystems():
        return True, "btrfs: not in this kernel (nothing to attribute)"
    return filesystems.btrfs_support(kallsyms_addresses(*filesystems.BTRFS_END_IO))


def check_server_stages() -> tuple[bool, str]:
    """Whether the installed mariadbd's stage can be read from its THD at IO time (--stages auto,
    the default: collectors/thd_stages.py); a server started from another binary is checked
    again when ioattr attaches to it."""
    path = shutil.which("mariadbd") or shutil.which("mysqld")
    if path is None:
        return True, "no mariadbd on PATH: each server's binary is checked when ioattr attaches to it"
    got = thd_stages.read_binary(path)
    if isinstance(got, str):
        return False, (f"{path}: {got}: IO inside statements has a null stage by default "
                       "(--stages full attaches 4 stage uprobes instead, ~4 traps a point select)")
    return True, (f"{path}: the stage of IO inside statements is read from the THD at IO time (THR_THD at "
                  f"thread pointer {got.tls_off:+d}, proc_info at THD+{got.stage_off:#x}, "
                  f"{len(got.names)} stage names): no stage uprobes")


def check_probe_sets(out: Checks) -> None:
    """Load and attach the real probe sets the way `record` does: all of
    them in one session, sharing maps. When the required syscalls set fails
    the session refuses; then the optional sets are tried without it."""
    results: dict[str, tuple[bool, str]] = {}
    hook: tuple[bool, str] = (False, "not tried: the syscalls probe set did not load")
    statements: tuple[bool, str] = (False, "not tried: the stage probe set did not load")

    def session(names: tuple[str, ...]) -> None:
        nonlocal hook, statements
        with ProbeSession(names) as s:
            for ls in s.loaded:
                detail = "loaded and attached: " + ", ".join(ls.programs)
                if ls.spec.name == "syscalls":
                    detail += f" ({s.syscall_hook} hook, {len(ls.obj.links)} tracepoints)"
                    hook = _syscall_hook_check(s.syscall_hook, s.syscall_hook_why, ls)
                if ls.spec.name == "stage":
                    statements = _statement_source_check(s)
                results[ls.spec.name] = (True, detail)
            for name, why in s.degraded.items():
                results[name] = (False, why)

    all_names = tuple(p.name for p in PROBE_SETS)
    try:
        session(all_names)
    except Exception as e:
        required = [p.name for p in PROBE_SETS if p.required]
        for name in required:
            results[name] = (False, _describe_probe_error(e))
        rest = tuple(n for n in all_names if n not in required)
        try:
            session(rest)
        except Exception as e2:
            for name in rest:
                results.setdefault(name, (False, _describe_probe_error(e2)))
    for p in PROBE_SETS:
        ok, detail = results.get(p.name, (False, "not tried"))
        out.add(f"probe set {p.name}", ok, f"{p.purpose}: {detail}" if ok else detail, p.required)
    out.add("syscall hook", *hook)
    out.add("statement source", *statements)


def _statement_source_check(s) -> tuple[bool, str]:
    """Where a server's statements would start (collectors/stage_probes.py, --statements auto):
    the wire reader, attached here for real, or the dispatch_command uprobe (a trap per
    statement) when it cannot run on this host."""
    stage = StageProbes(s)
    why = stage._attach_wire()
    if why:
        return False, f"the dispatch_command uprobe for every statement (a trap each): {why}"
    where = ("the socket layer's raw tracepoint" if stage.wire_hook.startswith("tp_btf:")
             else "the syscall tracepoint (this kernel has no sock:sock_recv_length, or "
                  "IOATTR_WIRE_HOOK=syscall)")
    prepared = ("prepared statements' executions get their statement's text (the server's answers "
                "read at the send side)" if not stage.prepared_why else
                f"prepared statements' executions are counted without their text: {stage.prepared_why}")
    return True, (f"the wire: {stage.wire_hook} ({where}) reads each command packet (no trap per "
                  "statement); a server whose clients use TLS or compression gets the dispatch_command "
                  f"uprobe too; {prepared}")


def _syscall_hook_check(hook: str | None, why: str, ls) -> tuple[bool, str]:
    """Which attach method the syscalls set uses here (see collectors/probes.py).
    ok unless it fell back to the raw tracepoints, which tax every syscall."""
    if hook == "tracepoints":
        n = len(ls.obj.links)
        return True, (f"{why}: syscalls:sys_enter_/sys_exit_<name> of the IO syscalls ({n} tracepoints); "
                      "other syscalls pay only the syscall tracing slow path")
    if "as requested" in why:
        return True, f"{why}: every syscall of every process pays the raw tracepoints (~150 ns here)"
    return False, why


def _describe_probe_error(e: Exception) -> str:
    if isinstance(e, IoattrError):
        return str(e)
    return _describe(e)


# --------------------------------------------------------------------------


def run_checks() -> dict:
    t0 = time.monotonic()
    out = Checks()
    host = host_info()
    out.add("python packages", True, pydeps.versions(), required=True)  # cli/doctor.py checked them
    out.privileged = out.run("privileges", check_privileges, required=True)
    out.run("btf", check_btf, required=True)
    out.run("tracefs", check_tracefs, required=True)
    check_tracepoints(out)
    out.run("tracepoint attach", _attach_fire("doctor_tp", HIT_TP,
                                              "classic tracepoint raw_syscalls:sys_enter attached"))
    out.run("raw tracepoint attach", _attach_fire("doctor_raw_tp", HIT_RAW_TP,
                                                  "raw tracepoint sys_enter attached"))
    out.run("tp_btf attach", _attach_fire("doctor_tp_btf", HIT_TP_BTF, "tp_btf sys_enter attached"))
    out.run("uprobe", lambda: check_uprobe(False))
    out.run("uretprobe", lambda: check_uprobe(True))
    out.run("kprobe", check_kprobe)
    out.run("fentry", _trampoline("fentry", HIT_FENTRY))
    out.run("fexit", _trampoline("fexit", HIT_FEXIT))
    out.run("ring buffer", check_ringbuf)
    out.run("batch map ops", check_batch_ops)
    out.run("task storage", check_task_storage)
    out.run(f"kallsyms {DIO_END_IO}", check_kallsyms)
    out.run("btrfs block attribution", check_btrfs)
    check_probe_sets(out)
    out.run("server stages", check_server_stages)
    host["doctor_seconds"] = round(time.monotonic() - t0, 3)
    usable = all(c["ok"] for c in out.items if c["required"])
    result = {"usable": usable, "host": host, "checks": out.items}
    result["verdict"] = verdict(result)
    return result


def verdict(checks: dict) -> str:
    items = checks.get("checks", [])
    failed_required = [c for c in items if c["required"] and not c["ok"]]
    missing = [c["name"] for c in items if not c["required"] and not c["ok"]]
    if failed_required:
        first = failed_required[0]
        more = f" (and {len(failed_required) - 1} more required checks)" if len(failed_required) > 1 else ""
        return f"NOT usable: {first['name']}: {first['detail']}{more}"
    if missing:
        return f"usable: ioattr can trace on this host; optional features missing: {', '.join(missing)}"
    return "usable: ioattr can trace on this host; every feature works"


def render_checks(checks: dict) -> str:
    """A table, one line per check, then a one-line verdict."""
    host = checks.get("host", {})
    items = checks.get("checks", [])
    title = (f"ioattr doctor: Linux {host.get('kernel', '?')} {host.get('arch', '?')}, "
             f"libbpf {host.get('libbpf', '?')}")
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("check", "status", "need", "detail"):
        table.add_column(col, no_wrap=True, overflow="fold")
    for c in items:
        if c["ok"]:
            status = Text("ok", style="green")
        else:
            status = Text("FAIL" if c["required"] else "missing", style="bold red" if c["required"] else "yellow")
        table.add_row(Text(c["name"]), status, Text("required" if c["required"] else "optional"),
                      Text(c["detail"]))
    # wide enough that no cell wraps: one line per check, however long the detail
    widest = (max([len(c["name"]) for c in items] + [5]) + max([len(c["detail"]) for c in items] + [6])
              + len("missing") + len("optional") + 12)
    buf = io.StringIO()
    console = Console(file=buf, width=max(widest, len(title), 80), force_terminal=sys.stdout.isatty(),
                      highlight=False, soft_wrap=False)
    console.print(Text(title, style="bold"))
    console.print(table)
    usable = checks.get("usable", False)
    console.print(Text(checks.get("verdict") or verdict(checks), style="bold green" if usable else "bold red"))
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"

"""Load ioattr's probe sets into the kernel and keep them attached.

A probe set is one BPF object (bpf/<name>.bpf.c), one concern each. All
sets share the maps declared in bpf/maps.bpf.h: the first set loaded
creates them and the rest reuse the same fds, so every layer aggregates
into one `io_stats` table that one drain reads.

Required sets failing to load is a usage/host problem (exit 2 upstream);
optional sets that fail (a tracepoint this kernel lacks, say) are left out
and reported in `degraded`, never silently.

The syscalls set has two attach methods ("syscall hooks"), chosen at open:

- ``tracepoints``: the same enter and exit bodies attached to
  ``syscalls:sys_enter_<name>``/``sys_exit_<name>`` of each IO syscall
  ioattr handles (~40 perf events). Other syscalls pay at most the syscall
  tracing slow path (≤ ~50 ns on the project VM) and run no program. The
  default where tracefs has the ``syscalls`` events (CONFIG_FTRACE_SYSCALLS).
- ``raw``: one pair on the raw ``sys_enter``/``sys_exit`` tracepoints
  (tp_btf). Works without CONFIG_FTRACE_SYSCALLS, but any program there adds
  ~150 ns to every syscall of every process.

``IOATTR_SYSCALL_HOOK=tracepoints|raw`` (or ``ProbeSession(syscall_hook=)``)
forces one; the fallback is said in `notes`, and doctor shows the hook in use.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import ioattr.bpf as bpf_pkg
from ioattr.collectors import abi, abi_check
from ioattr.collectors import features
from ioattr.collectors import filesystems
from ioattr.collectors import libbpf
from ioattr.collectors.drain import percpu_sum
from ioattr import environment
from ioattr.errors import HostError

SHARED_MAPS = ("targets", "target_slots", "io_stats", "tracked_inodes", "drops", "zero_val", "events", "task_state",
               "named_tids", "page_files", "page_stats", "hdr_scratch", "stmt_stats", "stmt_slots", "phase_seq",
               "thd_layouts", "thd_stage_names", "thd_stage_misses", "thd_stage_unknown")


@dataclass(frozen=True)
class HookChoice:
    """Programs of one set that do one job at different hooks, the preferred first. Only one is
    loaded: the first whose tracepoint this kernel has, unless $env names another's hook (for
    comparisons and the fallback's tests). Each loaded copy would cost its verification time."""
    env: str
    programs: tuple[tuple[str, str, str], ...]  # (program, hook name for env, category:event)
    # program -> the programs loaded with it (the same job's other side at the same layer)
    companions: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def pick(self, present: set[str]) -> str | None:
        """The program to load among those the object has (`present`); None: none can be."""
        forced = environment.get(self.env).strip().lower()
        hooks = [h for _, h, _ in self.programs]
        if forced and forced != "auto" and forced not in hooks:
            raise HostError(f"unknown hook {forced!r} in {self.env}: use {', '.join(hooks)} or auto")
        for name, hook, tp in self.programs:
            if name in present and (not forced or forced in ("auto", hook)) \
                    and features.tracepoint_exists(*tp.split(":", 1)):
                return name
        return None


@dataclass(frozen=True)
class ProbeSet:
    name: str
    purpose: str
    required: bool
    tracepoints: tuple[str, ...]  # category:name, checked in tracefs before loading
    manual: bool = False          # programs are attached per target (uprobes), not at load
    choice: HookChoice | None = None  # programs of which only one is loaded


# The stage set's statement reader (bpf/stage.bpf.c wire_recv) at the socket layer's raw
# tracepoint, else at recvfrom's syscall tracepoint (kernels without sock_recv_length)
WIRE_CHOICE = HookChoice("IOATTR_WIRE_HOOK", (("ioattr_wire_recv", "sock", "sock:sock_recv_length"),
                                               ("ioattr_wire_sys", "syscall", "syscalls:sys_exit_recvfrom")),
                         # the server's answers to COM_STMT_PREPARE (bpf/mysql_wire.bpf.h): a
                         # kernel with sock_recv_length has sock_send_length (both came in 6.3)
                         {"ioattr_wire_recv": ("ioattr_wire_send",),
                          "ioattr_wire_sys": ("ioattr_wire_send_sys",)})


# The block set's dirty-page program (bpf/block.bpf.c note_dirtier: writeback is charged to
# whoever dirtied the pages): folios, else pages on kernels before folios. Without either,
# writeback is charged to the file's owner (cfg.dirtiers 0).
DIRTY_CHOICE = HookChoice("IOATTR_DIRTY_HOOK", (("ioattr_dirty_folio", "folio", "writeback:writeback_dirty_folio"),
                                                 ("ioattr_dirty_page", "page", "writeback:writeback_dirty_page")))


# The syscalls set's attach methods. ``tracepoints`` needs the per-syscall
# tracepoints of IO_SYSCALLS (checked one by one at open); ``raw`` needs
# RAW_SYSCALL_TRACEPOINTS (ProbeSet.tracepoints of the syscalls set).
SYSCALL_HOOKS = ("tracepoints", "raw")
SYSCALL_HOOK_ENV = "IOATTR_SYSCALL_HOOK"
# what bpf/syscalls.bpf.c classify() handles; keep the two lists in step
IO_SYSCALLS = ("read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
               "preadv2", "pwritev2", "fsync", "fdatasync", "sync_file_range", "io_submit",
               "io_getevents", "io_pgetevents", "open", "creat", "openat", "openat2")
NO_EXIT_PROBE = ("io_submit",)  # all of its work happens at enter
# syscalls the tracepoints hook cannot do without (the rest are skipped if absent)
CORE_IO_SYSCALLS = ("read", "write", "pread64", "pwrite64", "fsync", "openat")
# The kernel refuses a program that reads past the end of a tracepoint's
# record, which holds only that syscall's arguments: the enter body comes as
# programs reading 4, 3 or 1 arguments (bpf/syscalls.bpf.c), one per syscall
# by its argument count on x86_64. Syscalls not listed have 4 or more.
ENTER_PROGRAM = {"fsync": "ioattr_tp_ent1", "fdatasync": "ioattr_tp_ent1", "creat": "ioattr_tp_ent1",
                 "read": "ioattr_tp_ent3", "write": "ioattr_tp_ent3", "readv": "ioattr_tp_ent3",
                 "writev": "ioattr_tp_ent3", "io_submit": "ioattr_tp_ent3", "open": "ioattr_tp_ent3"}
SYSCALL_PROGRAMS = {"tracepoints": ("ioattr_tp_ent4", "ioattr_tp_ent3", "ioattr_tp_ent1", "ioattr_tp_exit"),
                    "raw": ("ioattr_sys_enter", "ioattr_sys_exit")}


def syscall_program(event: str) -> str:
    """The program the tracepoints hook attaches to syscalls:<event>."""
    if event.startswith("sys_exit_"):
        return "ioattr_tp_exit"
    return ENTER_PROGRAM.get(event[len("sys_enter_"):], "ioattr_tp_ent4")


RAW_SYSCALL_TRACEPOINTS = ("raw_syscalls:sys_enter", "raw_syscalls:sys_exit")

PROBE_SETS: tuple[ProbeSet, ...] = (
    ProbeSet("syscalls", "read/write/fsync families, libaio, opens (per-syscall tracepoints, "
             "or tp_btf sys_enter/sys_exit)", True, RAW_SYSCALL_TRACEPOINTS),
    ProbeSet("targets", "follow forks and execs of traced commands (tp_btf sched_process_fork/exec)",
             False, ("sched:sched_process_fork", "sched:sched_process_exec")),
    ProbeSet("uring", "io_uring submissions and completions (io_uring tracepoints)", False,
             ("io_uring:io_uring_submit_req", "io_uring:io_uring_complete")),
    ProbeSet("block", "block requests charged to files (tp_btf block_rq_issue/complete)", False,
             ("block:block_bio_queue", "block:block_split", "block:block_rq_issue", "block:block_rq_requeue",
              "block:block_rq_complete"), choice=DIRTY_CHOICE),
    ProbeSet("pagecache", "page-cache misses per inode (filemap tracepoint)", False,
             ("filemap:mm_filemap_add_to_page_cache",)),
    ProbeSet("stage", "statement digests and query stages (the wire, uprobes on mysqld's SQL layer)", False,
             (), manual=True, choice=WIRE_CHOICE),
)


def missing_tracepoints(spec: ProbeSet) -> list[str]:
    return [tp for tp in spec.tracepoints if not features.tracepoint_exists(*tp.split(":", 1))]


def syscall_tracepoints() -> tuple[list[tuple[str, str]], list[str]]:
    """The per-syscall tracepoints the ``tracepoints`` hook attaches to on
    this kernel, as (category, event), and the IO syscalls it has none for."""
    have, missing = [], []
    for name in IO_SYSCALLS:
        events = [f"sys_enter_{name}"] + ([] if name in NO_EXIT_PROBE else [f"sys_exit_{name}"])
        if all(features.tracepoint_exists("syscalls", ev) for ev in events):
            have += [("syscalls", ev) for ev in events]
        else:
            missing.append(name)
    return have, missing


def requested_syscall_hook(requested: str | None = None) -> str:
    """"tracepoints", "raw" or "auto": `requested`, else $IOATTR_SYSCALL_HOOK, else auto."""
    req = (requested or environment.get(SYSCALL_HOOK_ENV)).strip().lower()
    if req not in SYSCALL_HOOKS + ("auto",):
        raise HostError(f"unknown syscall hook {req!r} ({SYSCALL_HOOK_ENV} or syscall_hook=): "
                        f"use {', '.join(SYSCALL_HOOKS)} or auto")
    return req


RAW_COST = "the raw sys_enter/sys_exit tracepoints, which add ~150 ns to every syscall of every process"


def choose_syscall_hook(req: str = "auto") -> tuple[str, str]:
    """(hook, why): the syscalls set's attach method for request `req`
    (see requested_syscall_hook) on this host. Raises HostError when the
    forced "tracepoints" hook is unavailable."""
    if req == "raw":
        return "raw", "raw sys_enter/sys_exit tracepoints, as requested"
    _, missing = syscall_tracepoints()
    lacking = [n for n in missing if n in CORE_IO_SYSCALLS]
    if not lacking:
        how = "as requested" if req == "tracepoints" else "the default"
        return "tracepoints", (f"per-syscall tracepoints ({how})"
                               + (f"; this kernel has none for {', '.join(missing)}" if missing else ""))
    if not features.tracepoint_exists("syscalls", "sys_enter_pread64"):
        why = (f"no per-syscall tracepoints ({features.TRACEFS}/events/syscalls is missing: "
               "CONFIG_FTRACE_SYSCALLS off?)")
    else:
        why = f"no per-syscall tracepoint for {', '.join(lacking)}"
    if req == "tracepoints":
        raise HostError(f"cannot use the per-syscall tracepoints ({SYSCALL_HOOK_ENV}=tracepoints): {why}")
    return "raw", why


def bpf_object_dir() -> Path:
    """Where the compiled *.bpf.o files are: $IOATTR_BPF_DIR, else the package."""
    env = environment.get("IOATTR_BPF_DIR")
    if env:
        return Path(env)
    return Path(bpf_pkg.__file__).resolve().parent


def kallsyms_addresses(*symbols: str) -> dict[str, int]:
    """Kernel symbols' addresses from /proc/kallsyms, in one pass over it (it is ~200k
    lines: a pass costs ~0.2 s); 0 for a symbol hidden or absent."""
    out = dict.fromkeys(symbols, 0)
    try:
        with open("/proc/kallsyms") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] in out and not out[parts[2]]:
                    out[parts[2]] = int(parts[0], 16)
                    if all(out.values()):
                        break
    except OSError:
        pass
    return out



@dataclass
class LoadedSet:
    spec: ProbeSet
    obj: libbpf.Object
    programs: list[str] = field(default_factory=list)
    perf_fds: list[int] = field(default_factory=list)  # our dups of the links' perf events

    def release(self) -> None:
        """Detach and close, without waiting for the perf events' teardown
        (libbpf.close_fds_in_child): disable them, drop the links, close."""
        for fd in self.perf_fds:
            libbpf.disable_perf_event(fd)
        libbpf.destroy_links(self.obj.links)
        self.obj.close()
        fds, self.perf_fds = self.perf_fds, []
        libbpf.close_fds_in_child(fds)


# io_stats capacity (--max-entries of record, top and exporter): the default and the range
# accepted (a map of 2^24 keys of 40 + 536 bytes is ~10 GiB of kernel memory at most)
MAX_STATS_DEFAULT = 65536
MAX_STATS_RANGE = (16, 1 << 24)


#: how much the loading thread's nice value is lowered while the kernel verifies the programs
LOAD_PRIORITY_BOOST = 20


@contextlib.contextmanager
def verifier_priority(boost: int = LOAD_PRIORITY_BOOST) -> Iterator[bool]:
    """Run the block with this thread's nice value lowered by `boost` (at most to -20), then put
    it back; yields whether it was lowered.

    Why: the kernel verifies every program in the thread that loads it, ~3.6 s of CPU for the
    default probe sets here. On a host whose benchmark keeps every core busy, at the default
    priority attaching took 21-23 s (8 pgbench clients on 2 cores; 6.1-6.4 s at nice -20) and
    a run attached to was mostly over before the recording began. The verifier's CPU is the
    same either way; this only pays it sooner. Lowering a nice value needs CAP_SYS_NICE, which a loader of BPF programs has; without
    it nothing changes."""
    try:
        before = os.getpriority(os.PRIO_PROCESS, 0)  # Linux: this thread's
        os.setpriority(os.PRIO_PROCESS, 0, max(before - boost, -20))
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, before)


class ProbeSession:
    """The probe sets of one ioattr process, loaded and attached.

    Use as a context manager; close() detaches everything. Even without
    close() the kernel detaches all of it when this process exits, since
    nothing is pinned.
    """

    def __init__(self, sets: tuple[str, ...] | None = None, *, follow_forks: bool = False,
                 trace_all: bool = False, max_stats: int = MAX_STATS_DEFAULT, pages: bool = False,
                 fine_stages: bool = False, syscall_hook: str | None = None, pg_wire: bool = True) -> None:
        self.wanted = sets or tuple(p.name for p in PROBE_SETS)
        self.follow_forks = follow_forks
        self.trace_all = trace_all
        self.max_stats = max_stats
        self.pages = pages
        self.fine_stages = fine_stages  # --stages full: statements start in parse (bpf/stage.bpf.c)
        # the wire reader's PostgreSQL branch loaded (cfg.pg_wire): off when no PostgreSQL server
        # can be a target, which spares the verifier ~1.2 s per load
        self.pg_wire = pg_wire
        self.loaded: list[LoadedSet] = []
        self.degraded: dict[str, str] = {}
        # things worth one line that are not a missing feature (a costlier fallback)
        self.notes: dict[str, str] = {}
        self.requested_syscall_hook = syscall_hook
        self.syscall_hook: str | None = None  # "tracepoints" or "raw" once the syscalls set is loaded
        self.syscall_hook_why = ""
        self.shared_fds: dict[str, int] = {}
        # writeback charged to whoever dirtied the pages (the block set's DIRTY_CHOICE loaded)
        self.dirtiers = False
        ends = kallsyms_addresses("iomap_dio_bio_end_io", "bio_chain_endio", *filesystems.BTRFS_END_IO)
        self.dio_end_io_addr = ends["iomap_dio_bio_end_io"]  # a direct-IO bio's end_io
        self.chain_end_io_addr = ends["bio_chain_endio"]     # a split bio's (block.bpf.c)
        self.btrfs_end_io = {name: ends[name] for name in filesystems.BTRFS_END_IO}  # btrfs's bios (block.bpf.c)

    def __enter__(self) -> "ProbeSession":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _config(self) -> abi.Config:
        cfg = abi.Config()
        cfg.dio_end_io_addr = self.dio_end_io_addr
        cfg.chain_end_io_addr = self.chain_end_io_addr
        # all four or none: block.bpf.c tells a btrfs bio by the first three, its direct IO by the last
        if all(self.btrfs_end_io.values()):
            cfg.btrfs_simple_end_io_addr = self.btrfs_end_io["btrfs_simple_end_io"]
            cfg.btrfs_orig_write_end_io_addr = self.btrfs_end_io["btrfs_orig_write_end_io"]
            cfg.btrfs_clone_write_end_io_addr = self.btrfs_end_io["btrfs_clone_write_end_io"]
            cfg.btrfs_dio_end_io_addr = self.btrfs_end_io["btrfs_dio_end_io"]
        cfg.self_tgid = os.getpid()
        cfg.follow_forks = int(self.follow_forks)
        cfg.trace_all = int(self.trace_all)
        cfg.innodb_pages = int(self.pages)  # the BPF config keeps its name (bpf/ioattr.h)
        cfg.fine_stages = int(self.fine_stages)
        cfg.pg_wire = int(self.pg_wire)
        cfg.dirtiers = int(self.dirtiers)
        return cfg

    def _write_config(self, obj: libbpf.Object) -> None:
        cfg = self._config()
        for m in obj.maps():
            if m.name.endswith(".rodata"):
                addr, size = m.initial_value()
                if size < ctypes.sizeof(cfg):
                    raise HostError(f"{obj.path}: .rodata is {size} bytes, expected the config struct")
                ctypes.memmove(addr, ctypes.byref(cfg), ctypes.sizeof(cfg))

    def _load_one(self, spec: ProbeSet, hook: str | None = None) -> LoadedSet:
        """Load one set's object and attach its programs. `hook` (syscalls set
        only) picks the attach method: only its programs are loaded."""
        path = bpf_object_dir() / f"{spec.name}.bpf.o"
        if not path.exists():
            raise HostError(f"BPF object {path} is missing: build it (make -C bpf) or reinstall ioattr")
        obj = libbpf.Object(str(path))
        loaded = LoadedSet(spec, obj)
        try:
            try:
                abi_check.require(obj)  # its structs as collectors/abi.py decodes them, or no load
            except abi_check.AbiMismatch as e:
                raise HostError(str(e)) from None
            tp_attach: list[tuple[str, str]] = []
            if hook is not None:
                progs = {p.name: p for p in obj.programs()}
                if not all(n in progs for n in SYSCALL_PROGRAMS[hook]):
                    raise HostError(f"{path} has no {hook} programs ({', '.join(SYSCALL_PROGRAMS[hook])}): "
                                    "rebuild it (make -C bpf)")
                for name, prog in progs.items():
                    prog.set_autoload(name in SYSCALL_PROGRAMS[hook])
                if hook == "tracepoints":
                    tp_attach, _ = syscall_tracepoints()
            if spec.choice is not None:
                progs = {p.name: p for p in obj.programs()}
                chosen = spec.choice.pick(set(progs))
                for name, _, _ in spec.choice.programs:
                    if name in progs:
                        progs[name].set_autoload(name == chosen)
                    for other in spec.choice.companions.get(name, ()):
                        if other in progs:
                            progs[other].set_autoload(name == chosen)
                if spec.choice is DIRTY_CHOICE:
                    self.dirtiers = chosen is not None
                    if not self.dirtiers:
                        self.notes["block"] = ("writeback is charged to the file's owner, not to whoever "
                                               "dirtied the pages (no writeback_dirty_folio/page tracepoint)")
            self._write_config(obj)
            for m in obj.maps():
                if m.name in self.shared_fds:
                    m.reuse_fd(self.shared_fds[m.name])
                elif m.name == "io_stats":
                    m.set_max_entries(self.max_stats)
            obj.load()
            for m in obj.maps():
                if m.name in SHARED_MAPS and m.name not in self.shared_fds:
                    self.shared_fds[m.name] = os.dup(m.fd)
            for prog in obj.programs():
                if not prog.autoload:
                    continue
                if tp_attach:
                    for cat, event in tp_attach:
                        if syscall_program(event) == prog.name:
                            self._attach_tracepoint(loaded, prog, cat, event)
                elif not spec.manual and prog.section != "syscall":
                    # SEC("syscall") programs are run on demand (BPF_PROG_TEST_RUN), never attached
                    obj.links.append(prog.attach())
                loaded.programs.append(prog.name)
            return loaded
        except Exception:
            loaded.release()
            raise

    @staticmethod
    def _attach_tracepoint(loaded: LoadedSet, prog: libbpf.Program, category: str, event: str) -> None:
        """What libbpf's attach_tracepoint does, keeping a dup of the perf event
        fd so close() need not wait for its teardown."""
        pfd = libbpf.open_tracepoint_event(category, event, features.TRACEFS)
        try:
            dup = os.dup(pfd)
        except OSError:
            os.close(pfd)
            raise
        try:
            link = prog.attach_perf_event(pfd)
        except Exception:
            os.close(pfd)
            os.close(dup)
            raise
        loaded.obj.links.append(link)
        if link.fd == pfd:
            # attached by ioctl (kernel without BPF perf links): the program leaves
            # the event only when the event dies, so no dup may outlive close()
            os.close(dup)
        else:
            loaded.perf_fds.append(dup)

    def open(self) -> None:
        with verifier_priority():
            self._open_sets()

    def _open_sets(self) -> None:
        for spec in PROBE_SETS:
            if spec.name not in self.wanted:
                continue
            if spec.name == "syscalls":
                self._open_syscalls(spec)
                continue
            missing = missing_tracepoints(spec)
            if missing:
                why = f"tracepoint {missing[0]} is missing on this kernel"
                if spec.required:
                    self.close()
                    raise HostError(f"cannot trace {spec.purpose}: {why}")
                self.degraded[spec.name] = f"{spec.purpose}: not available ({why})"
                continue
            try:
                self.loaded.append(self._load_one(spec))
            except HostError:  # the object missing or mismatched, a bad setting: not a degradation
                self.close()
                raise
            except libbpf.LibbpfError as e:
                if spec.required:
                    self.close()
                    raise HostError(f"cannot load the {spec.name} probes: {e}", detail=e.log) from e
                self.degraded[spec.name] = f"{spec.purpose}: not available ({e})"
        if any(s.spec.name == "block" for s in self.loaded):
            # a mounted filesystem whose block IO can't be charged to files: one line, not
            # silent [unknown] rows
            line = filesystems.btrfs_line(self.btrfs_end_io)
            if line:
                self.degraded["btrfs"] = line

    def _open_syscalls(self, spec: ProbeSet) -> None:
        """The required syscalls set, on the hook chosen for this host. When
        the per-syscall tracepoints were the default choice but are missing or
        fail to attach, fall back to the raw ones and say so in `notes`."""
        try:
            req = requested_syscall_hook(self.requested_syscall_hook)
            hook, why = choose_syscall_hook(req)
        except HostError:
            self.close()
            raise
        fallback = ""  # why raw is used where the tracepoints would have been
        if hook == "tracepoints":
            try:
                self.loaded.append(self._load_one(spec, "tracepoints"))
            except (libbpf.LibbpfError, HostError) as e:
                if req == "tracepoints":
                    self.close()
                    raise HostError(f"cannot load the syscalls probes on per-syscall tracepoints: {e}",
                                    detail=getattr(e, "log", "") or getattr(e, "detail", "")) from e
                fallback = f"the per-syscall tracepoints failed ({e})"
            else:
                self.syscall_hook, self.syscall_hook_why = hook, why
                return
        elif req == "auto":
            fallback = why
        missing = missing_tracepoints(spec)
        if missing:
            self.close()
            raise HostError(f"cannot trace {spec.purpose}: tracepoint {missing[0]} is missing on this kernel"
                            + (f", and {fallback}" if fallback else ""))
        try:
            self.loaded.append(self._load_one(spec, "raw"))
        except libbpf.LibbpfError as e:
            self.close()
            raise HostError(f"cannot load the {spec.name} probes: {e}", detail=e.log) from e
        except HostError:
            self.close()
            raise
        self.syscall_hook = "raw"
        if fallback:
            self.syscall_hook_why = f"{fallback}; using {RAW_COST}"
            self.notes["syscalls"] = f"syscall hook: {self.syscall_hook_why}"
        else:
            self.syscall_hook_why = why

    def close(self) -> None:
        # detaching waits for grace periods: all links at once, then the objects
        libbpf.destroy_links([link for ls in self.loaded for link in ls.obj.links])
        for ls in reversed(self.loaded):
            ls.release()
        self.loaded.clear()
        for fd in self.shared_fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.shared_fds.clear()

    def sweep_block(self, min_age: float = 0.0, finished_only: bool = False) -> int:
        """Count the block requests issued whose completion was not seen, without a latency
        (block.bpf.c's ioattr_rq_sweep); how many it counted. `finished_only`: only those the
        block layer has finished, issued at least `min_age` seconds ago -- the completions no
        BPF program ran for (docs/block.md); else every open request (at the stop)."""
        ls = self.loaded_set("block")
        fd = next((p.fd for p in ls.obj.programs() if p.name == "ioattr_rq_sweep"), None) if ls else None
        if fd is None:
            return 0
        args = abi.RqSweepArgs(min_age_ns=int(min_age * 1e9), finished_only=int(finished_only))
        libbpf.prog_test_run(fd, args)
        return int(args.swept)

    def block_untimed(self) -> int | None:
        """Block requests counted without a latency so far (rq_untimed): their completion was
        never delivered to block_rq_complete. None without the block set."""
        ls = self.loaded_set("block")
        fd = next((m.fd for m in ls.obj.maps() if m.name == "rq_untimed"), None) if ls else None
        return None if fd is None else percpu_sum(fd, 0)

    def loaded_set(self, name: str) -> LoadedSet | None:
        for ls in self.loaded:
            if ls.spec.name == name:
                return ls
        return None

    def map_fd(self, name: str) -> int:
        return self.shared_fds[name]

    @property
    def active_sets(self) -> list[str]:
        return [ls.spec.name for ls in self.loaded]

    def program_fds(self) -> dict[str, int]:
        out = {}
        for ls in self.loaded:
            for prog in ls.obj.programs():
                out[prog.name] = prog.fd
        return out

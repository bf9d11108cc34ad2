"""Load ioattr's probe sets into the kernel and keep them attached.

A probe set is one BPF object (bpf/<name>.bpf.c), one concern each. All
sets share the maps declared in bpf/maps.bpf.h: the first set loaded
creates them and the rest reuse the same fds, so every layer aggregates
into one `io_stats` table that one drain reads.

Required sets failing to load is a usage/host problem (exit 2 upstream);
optional sets that fail (a tracepoint this kernel lacks, say) are left out
and reported in `degraded`, never silently.
"""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from pathlib import Path

from ioattr.collectors import abi
from ioattr.collectors import libbpf
from ioattr.errors import HostError

SHARED_MAPS = ("targets", "io_stats", "tracked_inodes", "drops", "zero_val", "events", "task_state",
               "named_tids", "innodb_files", "page_stats", "hdr_scratch", "stmt_stats")
DEFAULT_SETS = ("syscalls", "targets", "uring", "block", "pagecache", "stage")


@dataclass(frozen=True)
class ProbeSet:
    name: str
    purpose: str
    required: bool
    tracepoints: tuple[str, ...]  # category:name, checked in tracefs before loading
    manual: bool = False          # programs are attached per target (uprobes), not at load


PROBE_SETS: tuple[ProbeSet, ...] = (
    ProbeSet("syscalls", "read/write/fsync families, libaio, opens (tp_btf sys_enter/sys_exit)", True,
             ("raw_syscalls:sys_enter", "raw_syscalls:sys_exit")),
    ProbeSet("targets", "follow forks and execs of traced commands (tp_btf sched_process_fork/exec)",
             False, ("sched:sched_process_fork", "sched:sched_process_exec")),
    ProbeSet("uring", "io_uring submissions and completions (io_uring tracepoints)", False,
             ("io_uring:io_uring_submit_req", "io_uring:io_uring_complete")),
    ProbeSet("block", "block requests charged to files (tp_btf block_rq_issue/complete)", False,
             ("block:block_bio_queue", "block:block_rq_issue", "block:block_rq_complete")),
    ProbeSet("pagecache", "page-cache misses per inode (filemap tracepoint)", False,
             ("filemap:mm_filemap_add_to_page_cache",)),
    ProbeSet("stage", "statement digests and query stages (uprobes on mysqld's SQL layer)", False,
             (), manual=True),
)


def missing_tracepoints(spec: ProbeSet) -> list[str]:
    from ioattr.collectors.features import tracepoint_exists

    return [tp for tp in spec.tracepoints if not tracepoint_exists(*tp.split(":", 1))]


def bpf_object_dir() -> Path:
    """Where the compiled *.bpf.o files are: $IOATTR_BPF_DIR, else the package."""
    env = os.environ.get("IOATTR_BPF_DIR")
    if env:
        return Path(env)
    import ioattr.bpf as bpf_pkg

    return Path(bpf_pkg.__file__).resolve().parent


def kallsyms_address(symbol: str) -> int:
    """A kernel symbol's address from /proc/kallsyms, 0 if hidden or absent."""
    try:
        with open("/proc/kallsyms") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == symbol:
                    return int(parts[0], 16)
    except OSError:
        return 0
    return 0


@dataclass
class LoadedSet:
    spec: ProbeSet
    obj: libbpf.Object
    programs: list[str] = field(default_factory=list)


class ProbeSession:
    """The probe sets of one ioattr process, loaded and attached.

    Use as a context manager; close() detaches everything. Even without
    close() the kernel detaches all of it when this process exits, since
    nothing is pinned.
    """

    def __init__(self, sets: tuple[str, ...] | None = None, *, follow_forks: bool = False,
                 trace_all: bool = False, max_stats: int = 65536, innodb_pages: bool = False) -> None:
        self.wanted = sets or tuple(p.name for p in PROBE_SETS)
        self.follow_forks = follow_forks
        self.trace_all = trace_all
        self.max_stats = max_stats
        self.innodb_pages = innodb_pages
        self.loaded: list[LoadedSet] = []
        self.degraded: dict[str, str] = {}
        self.shared_fds: dict[str, int] = {}
        self.dio_end_io_addr = kallsyms_address("iomap_dio_bio_end_io")

    def __enter__(self) -> "ProbeSession":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _config(self) -> abi.Config:
        cfg = abi.Config()
        cfg.dio_end_io_addr = self.dio_end_io_addr
        cfg.self_tgid = os.getpid()
        cfg.follow_forks = int(self.follow_forks)
        cfg.trace_all = int(self.trace_all)
        cfg.innodb_pages = int(self.innodb_pages)
        return cfg

    def _write_config(self, obj: libbpf.Object) -> None:
        cfg = self._config()
        for m in obj.maps():
            if m.name.endswith(".rodata"):
                addr, size = m.initial_value()
                if size < ctypes.sizeof(cfg):
                    raise HostError(f"{obj.path}: .rodata is {size} bytes, expected the config struct")
                ctypes.memmove(addr, ctypes.byref(cfg), ctypes.sizeof(cfg))

    def _load_one(self, spec: ProbeSet) -> LoadedSet:
        path = bpf_object_dir() / f"{spec.name}.bpf.o"
        if not path.exists():
            raise HostError(f"BPF object {path} is missing: reinstall ioattr (make install)")
        obj = libbpf.Object(str(path))
        try:
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
            loaded = LoadedSet(spec, obj)
            for prog in obj.programs():
                if not spec.manual:
                    obj.links.append(prog.attach())
                loaded.programs.append(prog.name)
            return loaded
        except Exception:
            obj.close()
            raise

    def open(self) -> None:
        for spec in PROBE_SETS:
            if spec.name not in self.wanted:
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
            except libbpf.LibbpfError as e:
                if spec.required:
                    self.close()
                    raise HostError(f"cannot load the {spec.name} probes: {e}", detail=e.log) from e
                self.degraded[spec.name] = f"{spec.purpose}: not available ({e})"

    def close(self) -> None:
        for ls in reversed(self.loaded):
            ls.obj.close()
        self.loaded.clear()
        for fd in self.shared_fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.shared_fds.clear()

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

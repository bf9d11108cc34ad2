"""Which processes are traced, kept in sync with the BPF `targets` map.

Targets come from --pid (those processes), --comm (every process with that
name, rescanned each interval so a restarted server is picked up), and
`-- CMD` (the command's process tree: the kernel adds forked children
itself, see bpf/targets.bpf.c). Threads need nothing: the map is keyed by
process id, which every thread shares, io_uring and aio workers included.
"""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field

from ioattr.collectors import libbpf
from ioattr.errors import UsageError

DEFAULT_COMMS = ("mysqld", "mariadbd")
FLAG_EXPLICIT = 1
FLAG_FOLLOWED = 2


def process_comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def pids_with_comm(names: tuple[str, ...] | list[str]) -> list[int]:
    """Processes whose comm is one of names (comm is cut to 15 characters)."""
    wanted = {n[:15] for n in names}
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        comm = process_comm(int(entry.name))
        if comm in wanted:
            out.append(int(entry.name))
    return sorted(out)


def pid_alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


@dataclass
class TargetSpec:
    pids: list[int] = field(default_factory=list)
    comms: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)

    def validate(self) -> None:
        """Reject targets that can't be traced, with one clear line."""
        for pid in self.pids:
            if pid <= 0 or not pid_alive(pid):
                raise UsageError(f"no such process: {pid}")
        if self.comms and not self.command and not self.pids:
            if not pids_with_comm(self.comms):
                raise UsageError(f"no running process named {', '.join(self.comms)} "
                                 "(give --pid, --comm NAME, or -- CMD to run one)")

    def describe(self) -> list[str]:
        out = [f"pid {p}" for p in self.pids] + [f"comm {c}" for c in self.comms]
        if self.command:
            out.append("command " + " ".join(self.command))
        return out


class TargetTracker:
    """Keeps the targets map equal to the spec; reports arrivals and exits."""

    def __init__(self, spec: TargetSpec, map_fd: int) -> None:
        self.spec = spec
        self.fd = map_fd
        self.current: dict[int, int] = {}
        self.ever: set[int] = set()

    def add(self, pid: int, flag: int = FLAG_EXPLICIT) -> None:
        libbpf.map_update(self.fd, ctypes.c_uint32(pid), ctypes.c_uint32(flag))
        self.current[pid] = flag
        self.ever.add(pid)

    def remove(self, pid: int) -> None:
        libbpf.map_delete(self.fd, ctypes.c_uint32(pid))
        self.current.pop(pid, None)

    def in_kernel(self) -> dict[int, int]:
        out = {}
        for key in libbpf.map_keys(self.fd, ctypes.c_uint32):
            val = ctypes.c_uint32()
            if libbpf.map_lookup(self.fd, key, val):
                out[int(key.value)] = int(val.value)
        return out

    def refresh(self) -> tuple[list[int], list[int]]:
        """Sync with the host: returns (new pids, exited pids)."""
        want: set[int] = {p for p in self.spec.pids if pid_alive(p)}
        if self.spec.comms:
            want.update(pids_with_comm(self.spec.comms))
        # children the kernel added when following a command's tree
        kernel = self.in_kernel()
        for pid, flag in kernel.items():
            if flag & FLAG_FOLLOWED and pid_alive(pid):
                want.add(pid)
                self.current.setdefault(pid, flag)
                self.ever.add(pid)
        for pid in self.current:
            if self.current[pid] & FLAG_FOLLOWED and pid_alive(pid):
                want.add(pid)
        new = sorted(want - set(self.current))
        gone = sorted(p for p in self.current if p not in want)
        for pid in new:
            self.add(pid)
        for pid in gone:
            self.remove(pid)
        return new, gone

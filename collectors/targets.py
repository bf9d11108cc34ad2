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
import subprocess
from dataclasses import dataclass, field

from ioattr.collectors import abi, libbpf
from ioattr.errors import UsageError

DEFAULT_COMMS = ("mysqld", "mariadbd")
FLAG_EXPLICIT = 1
FLAG_FOLLOWED = 2


def open_fds(pid: int) -> list[tuple[str, int, int]]:
    """(link target, kernel dev, inode) of every fd pid has open, sockets and pipes included
    (their targets say so: "socket:[N]"): the one /proc/PID/fd scan that file naming
    (collectors/names.py) and engines' file registries (InnoDB's page files) share. An fd
    closed during the scan, or a process gone, is skipped."""
    out: list[tuple[str, int, int]] = []
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return out
    for fd in fds:
        link = f"{fd_dir}/{fd}"
        try:
            st = os.stat(link)
            target = os.readlink(link)
        except OSError:
            continue
        out.append((target, abi.kernel_dev_of_stat(st.st_dev), st.st_ino))
    return out


def open_inodes(pids, limit: int) -> set[tuple[int, int]] | None:
    """(kernel dev, inode) of every file these processes have open now (stat of each
    /proc/PID/fd entry; sockets and pipes included, harmless), or None past `limit` fds in
    all: the scan costs ~10 us an fd, and a caller that must know all of them or none
    (collectors/names.py note_open_files) then knows none. A process gone is skipped."""
    out: set[tuple[int, int]] = set()
    seen = 0
    for pid in pids:
        try:
            dfd = os.open(f"/proc/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            fds = os.listdir(dfd)
            seen += len(fds)
            if seen > limit:
                return None
            for fd in fds:
                try:
                    st = os.stat(fd, dir_fd=dfd)
                except OSError:
                    continue  # closed during the scan
                out.add((abi.kernel_dev_of_stat(st.st_dev), st.st_ino))
        finally:
            os.close(dfd)
    return out


def read_proc_text(path: str) -> str | None:
    """A small /proc file's text, stripped; None if it can't be read (the task is gone).
    os.open/os.read, not open(): --comm scans every process each interval and names are read
    for every traced thread, and a text file object costs more than the read itself."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096).decode(errors="replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def process_comm(pid: int) -> str | None:
    return read_proc_text(f"/proc/{pid}/comm")


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


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets pid has open (from /proc/PID/fd)."""
    out = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                t = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if t.startswith("socket:["):
                out.add(int(t[8:-1]))
    except OSError:
        pass
    return out


def servers_talked_to(clients: set[int]) -> set[int]:
    """mysqld/mariadbd processes with a connection (unix or TCP) to one of clients.

    Unix sockets: `ss -x` gives each end's inode and its peer's; TCP: the
    client's (local, remote) pairs matched against the server's sockets."""
    servers = pids_with_comm(DEFAULT_COMMS)
    if not servers or not clients:
        return set()
    client_inodes: set[int] = set()
    for c in clients:
        client_inodes |= socket_inodes(c)
    server_inodes = {s: socket_inodes(s) for s in servers}
    found: set[int] = set()
    try:
        out = subprocess.run(["ss", "-Hxan"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        parts = line.split()
        # Netid State Recv-Q Send-Q Local-Address Local-Port Peer-Address Peer-Port
        if len(parts) < 8:
            continue
        try:
            local, peer = int(parts[5]), int(parts[7])
        except ValueError:
            continue
        if local in client_inodes:
            for s, inodes in server_inodes.items():
                if peer in inodes:
                    found.add(s)
    try:
        tcp = subprocess.run(["ss", "-Htanp"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        tcp = ""
    ends: dict[tuple[str, str], set[int]] = {}
    for line in tcp.splitlines():
        parts = line.split()
        if len(parts) < 6 or "pid=" not in line:
            continue
        pids = {int(x.split(",")[0]) for x in line.split("pid=")[1:]}
        ends.setdefault((parts[3], parts[4]), set()).update(pids)
    for (local, remote), pids in ends.items():
        if pids & clients:
            for s in servers:
                if s in ends.get((remote, local), set()):
                    found.add(s)
    return found


def pid_alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


@dataclass
class TargetSpec:
    pids: list[int] = field(default_factory=list)
    comms: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    # `-- CMD` without --pid/--comm: also trace the mysqld/mariadbd the command's tree talks to
    talked_to_servers: bool = False

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
        if self.talked_to_servers:
            out.append("any mysqld/mariadbd the command talks to")
        return out


# The front cache of the targets hash (bpf/maps.bpf.h `target_slots`): slot
# pid & (TARGET_SLOTS - 1) holds that pid if it is the only target there,
# SLOT_SHARED if more (the BPF side then asks the hash), 0 if none.
TARGET_SLOTS = 4096
SLOT_SHARED = 0xFFFFFFFF
_SLOT_TRIES = 8


def slot_of(pid: int) -> int:
    return pid & (TARGET_SLOTS - 1)


def slot_value(members: set[int] | frozenset[int]) -> int:
    if not members:
        return 0
    if len(members) == 1:
        (pid,) = members
        return pid if pid else SLOT_SHARED  # 0 marks an empty slot
    return SLOT_SHARED


class TargetMap:
    """The BPF `targets` hash (tgid -> flag, the source of truth) and its
    `target_slots` front cache, written together. Every change to the hash
    from userspace goes through here (or the per-event check misses it).

    The kernel adds followed children itself (bpf/targets.bpf.c): hash first,
    then the slot, by compare-and-swap 0 -> tgid or else SHARED. Userspace
    cannot compare-and-swap, so a slot is recomputed from the hash's keys,
    written, and the keys read again: if the slot's members changed in
    between (a fork), it is done again. A child the kernel wrote into a slot
    before our write was in the hash before it, so the second read shows it;
    one added after our write sees a non-zero slot and makes it SHARED.
    SHARED is always safe (it only costs the hash lookup)."""

    def __init__(self, targets_fd: int, slots_fd: int | None) -> None:
        self.fd = targets_fd
        self.slots_fd = slots_fd  # None: objects without the front cache (older builds)

    def add(self, pid: int, flag: int = FLAG_EXPLICIT, sync: bool = True) -> None:
        libbpf.map_update(self.fd, ctypes.c_uint32(pid), ctypes.c_uint32(flag))
        if sync:
            self.sync_slots({slot_of(pid)})

    def remove(self, pid: int, sync: bool = True) -> None:
        libbpf.map_delete(self.fd, ctypes.c_uint32(pid))
        if sync:
            self.sync_slots({slot_of(pid)})

    def _members(self, slots: set[int]) -> dict[int, frozenset[int]]:
        out: dict[int, set[int]] = {s: set() for s in slots}
        for key in libbpf.map_keys(self.fd, ctypes.c_uint32):
            pid = int(key.value)
            if slot_of(pid) in out:
                out[slot_of(pid)].add(pid)
        return {s: frozenset(m) for s, m in out.items()}

    def _write_slot(self, slot: int, value: int) -> None:
        assert self.slots_fd is not None
        libbpf.map_update(self.slots_fd, ctypes.c_uint32(slot), ctypes.c_uint64(value))

    def sync_slots(self, slots: set[int]) -> None:
        """Make these slots of target_slots agree with the targets hash."""
        if self.slots_fd is None or not slots:
            return
        members = self._members(slots)
        for _ in range(_SLOT_TRIES):
            for slot, m in members.items():
                self._write_slot(slot, slot_value(m))
            again = self._members(slots)
            if again == members:
                return
            members = again
        for slot in slots:  # forks keep racing us: let the hash decide
            self._write_slot(slot, SLOT_SHARED)


class TargetTracker:
    """Keeps the targets map equal to the spec; reports arrivals and exits."""

    def __init__(self, spec: TargetSpec, map_fd: int, slots_fd: int | None = None) -> None:
        self.spec = spec
        self.fd = map_fd
        self.map = TargetMap(map_fd, slots_fd)
        self.current: dict[int, int] = {}
        self.ever: set[int] = set()

    def add(self, pid: int, flag: int = FLAG_EXPLICIT, sync: bool = True) -> None:
        self.map.add(pid, flag, sync)
        self.current[pid] = flag
        self.ever.add(pid)

    def remove(self, pid: int, sync: bool = True) -> None:
        self.map.remove(pid, sync)
        self.current.pop(pid, None)

    def in_kernel(self) -> dict[int, int]:
        out = {}
        for key in libbpf.map_keys(self.fd, ctypes.c_uint32):
            val = ctypes.c_uint32()
            if libbpf.map_lookup(self.fd, key, val):
                out[int(key.value)] = int(val.value)
        return out

    def refresh(self) -> tuple[list[int], list[int]]:
        """Sync with the host: returns (new pids, exited pids).

        Children the kernel added while following a command count as new the
        first time we see them, so they are welcomed (named, and attached to
        if they are servers) like any other target."""
        want: set[int] = {p for p in self.spec.pids if pid_alive(p)}
        if self.spec.comms:
            want.update(pids_with_comm(self.spec.comms))
        followed: dict[int, int] = {}
        for pid, flag in self.in_kernel().items():
            if flag & FLAG_FOLLOWED and pid_alive(pid):
                followed[pid] = flag
        want.update(followed)
        if self.spec.command and self.spec.talked_to_servers:
            want.update(servers_talked_to(want))
        new = sorted(want - set(self.current))
        gone = sorted(p for p in self.current if p not in want)
        touched: set[int] = set()
        for pid in new:
            if pid in followed:
                self.current[pid] = followed[pid]  # already in the kernel map (and its slot)
                self.ever.add(pid)
            else:
                self.add(pid, sync=False)
                touched.add(slot_of(pid))
        for pid in gone:
            self.remove(pid, sync=False)
            touched.add(slot_of(pid))
        self.map.sync_slots(touched)
        return new, gone

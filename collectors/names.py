"""Human names for what the kernel gives as numbers, resolved off the hot path.

- files: (dev, inode) -> path, from open events streamed by the BPF side
  (resolved at once through /proc/PID/fd while the fd is still open), from
  scans of /proc/PID/fd and /proc/PID/maps, cached. Deleted files keep the
  name they had, marked "(deleted)"; O_TMPFILE files are labelled as
  anonymous temp files; files never seen open stay unnamed (None), never guessed.
- devices: dev_t -> "vda" from sysfs.
- processes and threads: pid/tid -> comm, cached so exited ones keep a name.
"""
from __future__ import annotations

import os
import re
import time

from ioattr.collectors import abi

_TMPFILE_RE = re.compile(r"^(?P<dir>.*)/#\d+ \(deleted\)$")


def label_link(target: str) -> str:
    """Turn a /proc/PID/fd link target into the name we record."""
    m = _TMPFILE_RE.match(target)
    if m:
        return f"[anonymous tmpfile in {m.group('dir') or '/'}]"
    return target


class FileNames:
    def __init__(self, rescan_seconds: float = 2.0) -> None:
        self.names: dict[tuple[int, int], str] = {}
        self.rescan_seconds = rescan_seconds
        self._last_scan: dict[int, float] = {}

    def set(self, dev: int, ino: int, name: str) -> None:
        prev = self.names.get((dev, ino))
        # a later "(deleted)" view of the same file keeps the original path visible
        if prev and name.endswith(" (deleted)") and not prev.endswith(" (deleted)"):
            name = prev + " (deleted)"
        self.names[(dev, ino)] = name

    def on_open(self, ev: abi.OpenEvent) -> None:
        key = (int(ev.dev), int(ev.ino))
        link = f"/proc/{ev.tgid}/fd/{ev.fd}"
        try:
            st = os.stat(link)
            if abi.kernel_dev_of_stat(st.st_dev) == key[0] and st.st_ino == key[1]:
                self.names[key] = label_link(os.readlink(link))
                return
        except OSError:
            pass
        path = ev.path.decode(errors="replace")
        if not path:
            return
        if not path.startswith("/"):
            base = f"/proc/{ev.tgid}/cwd" if ev.dfd == -100 else f"/proc/{ev.tgid}/fd/{ev.dfd}"
            try:
                path = os.path.join(os.readlink(base), path)
            except OSError:
                pass
        # an open is the freshest word on this inode: it overrides a name the
        # inode had before it was freed and reused
        self.names[key] = os.path.normpath(path)

    def scan_process(self, pid: int) -> None:
        """Name every file pid has open or mapped."""
        self._last_scan[pid] = time.monotonic()
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            return
        for fd in fds:
            link = f"{fd_dir}/{fd}"
            try:
                st = os.stat(link)
                target = os.readlink(link)
            except OSError:
                continue
            if target.startswith(("socket:", "pipe:", "anon_inode:")):
                continue
            self.set(abi.kernel_dev_of_stat(st.st_dev), st.st_ino, label_link(target))
        try:
            with open(f"/proc/{pid}/maps") as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) < 6 or not parts[5].startswith("/"):
                        continue
                    ino = int(parts[4])
                    if ino == 0:
                        continue
                    major, minor = (int(x, 16) for x in parts[3].split(":"))
                    key = (abi.kernel_dev(major, minor), ino)
                    if key not in self.names:
                        self.names[key] = parts[5].strip()
        except (OSError, ValueError):
            pass

    def lookup(self, dev: int, ino: int, pid: int = 0) -> str | None:
        name = self.names.get((dev, ino))
        if name is None and pid:
            last = self._last_scan.get(pid, 0.0)
            if time.monotonic() - last >= self.rescan_seconds:
                self.scan_process(pid)
                name = self.names.get((dev, ino))
        return name


class DeviceNames:
    def __init__(self) -> None:
        self.cache: dict[int, str] = {}

    def lookup(self, dev: int) -> str:
        if dev in self.cache:
            return self.cache[dev]
        major, minor = abi.dev_major_minor(dev)
        name = f"{major}:{minor}"
        try:
            with open(f"/sys/dev/block/{major}:{minor}/uevent") as f:
                for line in f:
                    if line.startswith("DEVNAME="):
                        name = line.split("=", 1)[1].strip()
        except OSError:
            pass
        self.cache[dev] = name
        return name


class TaskNames:
    """comm of processes and threads, remembered after they exit.

    A live task is re-read once per interval (exec and prctl rename tasks);
    an exited one keeps the last name seen."""

    def __init__(self) -> None:
        self.procs: dict[int, str] = {}
        self.threads: dict[int, str] = {}
        self._fresh: set[tuple[str, int]] = set()

    def new_interval(self) -> None:
        self._fresh.clear()

    def process(self, pid: int) -> str | None:
        if ("p", pid) not in self._fresh:
            self._fresh.add(("p", pid))
            name = _read(f"/proc/{pid}/comm")
            if name is not None:
                self.procs[pid] = name
        return self.procs.get(pid)

    def thread(self, pid: int, tid: int) -> str | None:
        if ("t", tid) not in self._fresh:
            self._fresh.add(("t", tid))
            name = _read(f"/proc/{pid}/task/{tid}/comm")
            if name is not None:
                self.threads[tid] = name
        return self.threads.get(tid)

    def on_task_event(self, pid: int, tid: int, comm: str, renamed: bool = False) -> None:
        """The kernel's word on a thread's name at its first IO, or at exec (renamed)."""
        if renamed:
            self.threads[tid] = comm
            if pid == tid:
                self.procs[pid] = comm
            return
        self.threads.setdefault(tid, comm)
        if pid == tid:
            self.procs.setdefault(pid, comm)

    def remember_threads(self, pid: int) -> None:
        """Cache every thread's name now, while they are alive."""
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return
        for t in tids:
            name = _read(f"/proc/{pid}/task/{t}/comm")
            if name is not None:
                self.threads[int(t)] = name


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None

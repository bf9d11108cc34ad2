"""Human names for what the kernel gives as numbers, resolved off the hot path.

- files: (dev, inode) -> path, from open events streamed by the BPF side
  (resolved at once through /proc/PID/fd while the fd is still open), from
  scans of /proc/PID/fd and /proc/PID/maps, cached. Deleted files keep the
  name they had, marked "(deleted)"; O_TMPFILE files are labelled as
  anonymous temp files; files never seen open stay unnamed (None), never guessed.
  Counts are kept per inode, and a filesystem reuses the inode of a deleted file
  for the next one created (ext4 does at once): when one inode had several paths
  within an interval, its rows are labelled "DIR/[N files reusing one inode]"
  (DIR: the paths' common directory) rather than given the newest path; when the paths
  share their extension, it is said ("DIR/[N .sst files reusing one inode]"), so the
  file_class is still known where the extension gives it (an LSM's SSTs: compaction
  outputs take the inodes of the inputs it just deleted, all the time).
  An earlier file counts only if it can have done IO in the interval: the session
  says which files the targets have open right before each drain (note_open_files),
  and an earlier file that none of them had open when the interval began, and that
  was not opened since, did no syscall IO in it (IO needs an open file) -- so a new
  SST on the inode of a temporary table deleted seconds before keeps its own name.
  Block and page-cache rows keep every path (writeback of a closed file's pages).
  The table is bounded (least recently used names go first; a live file's name
  comes back from /proc), so millions of short-lived files don't grow it forever.
- devices: dev_t -> "vda" from sysfs.
- processes and threads: pid/tid -> comm, cached so exited ones keep a name.
"""
from __future__ import annotations

import os
import re
import time
from collections import OrderedDict
from typing import Callable

from ioattr.collectors import abi
from ioattr.collectors.targets import open_fds, read_proc_text

_TMPFILE_RE = re.compile(r"^(?P<dir>.*)/#\d+ \(deleted\)$")
_TMPFILE_LABEL_RE = re.compile(r"^\[anonymous tmpfile in (?P<dir>.*)\]$")
#: what a reused inode's paths are called when every one was a temporary file
TEMPORARY_FILES = "temporary files"


def label_link(target: str) -> str:
    """Turn a /proc/PID/fd link target into the name we record."""
    m = _TMPFILE_RE.match(target)
    if m:
        return f"[anonymous tmpfile in {m.group('dir') or '/'}]"
    return target


MAX_FILE_NAMES = 100_000    # more than the kernel's io_stats / tracked_inodes maps hold
MAX_TASK_NAMES = 100_000
_DELETED = " (deleted)"


def _base(name: str) -> str:
    return name[: -len(_DELETED)] if name.endswith(_DELETED) else name


def _same_inode(path: str, key: tuple[int, int]) -> bool:
    """path still leads to inode key (a hard link or another spelling, not a reuse)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_ino == key[1] and abi.kernel_dev_of_stat(st.st_dev) == key[0]


def _stat_key(path: str, ino: int) -> tuple[int, int] | None:
    """(dev, ino) of path as stat() says, if it is still inode ino."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (abi.kernel_dev_of_stat(st.st_dev), ino) if st.st_ino == ino else None


def cap_oldest(table: dict, limit: int) -> None:
    """Drop the oldest entries (insertion order; an OrderedDict in LRU order) over limit."""
    while len(table) > limit:
        del table[next(iter(table))]


class FileNames:
    def __init__(self, rescan_seconds: float = 2.0, max_names: int = MAX_FILE_NAMES,
                 temporary: Callable[[str], bool] | None = None) -> None:
        self.names: "OrderedDict[tuple[int, int], str]" = OrderedDict()  # least recently used first
        # whether a path is a temporary file (the engines' file_class tmp): an inode reused only
        # by temporary files -- an index build's O_TMPFILE merge runs taking the inodes of the
        # server's just-deleted temporary tables, all the time -- is labelled
        # "DIR/[N temporary files reusing one inode]", which is still class tmp
        self.temporary = temporary
        self.max_names = max_names
        self.rescan_seconds = rescan_seconds
        self._last_scan: dict[int, float] = {}
        # inodes that had more than one path since the last end_interval():
        # (paths, directories, extensions, whether every path was a temporary file); _overlap
        # holds the same for the paths that can have done syscall IO in the interval (names
        # assigned since, or open at, its start), _reused for every path (other layers)
        self._reused: dict[tuple[int, int], tuple[int, set[str], set[str], bool]] = {}
        self._overlap: dict[tuple[int, int], tuple[int, set[str], set[str], bool]] = {}
        # which earlier names can have done IO in the interval being named: a clock ticked by
        # every assignment and every note_open_files(); the clock of each name's last
        # assignment; and the inodes the targets had open at the snapshot taken right before
        # the drain that began the interval, with its clock (None: not known, so any can)
        self._clock = 0
        self._named_at: dict[tuple[int, int], int] = {}
        self._open_then: frozenset[tuple[int, int]] | None = None
        self._open_clock = 0
        self._open_next: tuple[frozenset[tuple[int, int]] | None, int] | None = None
        # pid -> its working directory, for relative opens of processes already gone (the
        # session's: a PostgreSQL backend runs in its cluster's data directory)
        self.cwd_hint: Callable[[int], str | None] | None = None

    def _assign(self, key: tuple[int, int], name: str, opened: bool = False) -> None:
        """Name an inode. `opened`: a new open of it -- if the inode had another path that no
        longer leads to it, the filesystem reused a deleted file's inode."""
        prev = self.names.get(key)
        if opened and prev is not None and _base(prev) != _base(name) and not _same_inode(_base(prev), key):
            self._add_path(self._reused, key, prev, name)
            if key in self._overlap or self._may_have_io(key):
                self._add_path(self._overlap, key, prev, name)
        self.names[key] = name
        self.names.move_to_end(key)
        self._clock += 1
        self._named_at[key] = self._clock
        while len(self.names) > self.max_names:
            self._named_at.pop(self.names.popitem(last=False)[0], None)

    def _add_path(self, table: dict, key: tuple[int, int], prev: str, name: str) -> None:
        n, dirs, exts, temp = table.get(key, (1, {self._dir(prev)}, {self._ext(prev)}, self._is_temporary(prev)))
        dirs.add(self._dir(name))
        exts.add(self._ext(name))
        table[key] = (n + 1, dirs, exts, temp and self._is_temporary(name))

    def _may_have_io(self, key: tuple[int, int]) -> bool:
        """Whether the file the inode's current name is (about to be replaced by a new file's)
        can have done syscall IO in the interval being named: unless the targets had it open
        when the interval began (the snapshot taken right before the drain that began it) or
        its name was given since -- an open, whose event names it -- it did none, for IO goes
        through an open file. Not known (no snapshot yet): it can."""
        if self._open_then is None or key in self._open_then:
            return True
        return self._named_at.get(key, self._open_clock + 1) > self._open_clock

    @staticmethod
    def _dir(name: str) -> str:
        """The directory of a path, or of an O_TMPFILE file ("[anonymous tmpfile in DIR]")."""
        m = _TMPFILE_LABEL_RE.match(name)
        return m.group("dir") if m else os.path.dirname(_base(name))

    @staticmethod
    def _ext(name: str) -> str:
        return "" if _TMPFILE_LABEL_RE.match(name) else os.path.splitext(_base(name))[1]

    def _is_temporary(self, name: str) -> bool:
        return self.temporary is not None and self.temporary(name)

    def set(self, dev: int, ino: int, name: str) -> None:
        prev = self.names.get((dev, ino))
        # a later "(deleted)" view of the same file keeps the original path visible
        if prev and name.endswith(_DELETED) and not prev.endswith(_DELETED):
            name = prev + _DELETED
        self._assign((dev, ino), name)

    def on_open(self, ev: abi.OpenEvent) -> None:
        key = (int(ev.dev), int(ev.ino))
        asked = os.path.basename(ev.path.decode(errors="replace").rstrip("/"))
        link = f"/proc/{ev.tgid}/fd/{ev.fd}"
        try:
            st = os.stat(link)
            if abi.kernel_dev_of_stat(st.st_dev) == key[0] and st.st_ino == key[1]:
                name = label_link(os.readlink(link))
                # the fd may have been closed and reused since, for another file that got the
                # same (freed and reused) inode: then the name it shows is not this open's
                if not asked or name.startswith("[") or os.path.basename(_base(name)) == asked:
                    self._assign(key, name, opened=True)
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
                # the process is gone (a short-lived PostgreSQL backend opens "base/5/1259"
                # relative to its data directory): its cwd from who knows it, else the file stays
                # unnamed -- never resolved against ioattr's own directory
                hint = self.cwd_hint(int(ev.tgid)) if self.cwd_hint is not None and ev.dfd == -100 else None
                if hint is None:
                    return
                path = os.path.join(hint, path)
        # the file may be gone already: its directory's real path (as /proc/PID/fd would show it)
        path = os.path.normpath(path)
        path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        # the BPF side sends opens of regular files only: one whose path names a directory was
        # an O_TMPFILE open (an index build's merge runs, a sort's spill) whose fd was closed
        # before this event was read (a busy host delays the reader by more than such a file
        # lives), so /proc/PID/fd could not say so: the directory is not the file's name
        if os.path.isdir(path):
            path = f"[anonymous tmpfile in {os.path.realpath(path)}]"
        # an open is the freshest word on this inode: it overrides a name the
        # inode had before it was freed and reused
        self._assign(key, path, opened=True)

    def note_open_files(self, keys: "set[tuple[int, int]] | frozenset[tuple[int, int]] | None") -> None:
        """The (dev, inode) of every file the targets have open now (their fds), taken right
        before a drain; None when not known (too many to scan). It describes the start of the
        interval that drain begins, so it takes effect at the end_interval() that follows: names
        replaced before then are of the interval the drain ends, which began earlier."""
        self._clock += 1
        self._open_next = (frozenset(keys) if keys is not None else None, self._clock)

    def end_interval(self) -> None:
        """The interval's rows are named: inode reuse seen so far no longer applies."""
        self._reused.clear()
        self._overlap.clear()
        if self._open_next is not None:
            self._open_then, self._open_clock = self._open_next
            self._open_next = None

    def scan_process(self, pid: int) -> None:
        """Name every file pid has open or mapped."""
        self._last_scan[pid] = time.monotonic()
        for target, dev, ino in open_fds(pid):
            if not target.startswith(("socket:", "pipe:", "anon_inode:")):
                self.set(dev, ino, label_link(target))
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
                    if major == 0:
                        # maps shows the superblock's device, which on btrfs is not the
                        # subvolume's that stat() and the BPF side key files by
                        key = _stat_key(parts[5].strip(), ino) or key
                    if key not in self.names:
                        self._assign(key, parts[5].strip())
        except (OSError, ValueError):
            pass

    def lookup(self, dev: int, ino: int, pid: int = 0, fd_io: bool = True) -> str | None:
        """The name of an inode's rows in the interval being named. fd_io: rows of IO through
        the targets' open files (the syscall layer), which an earlier file of the inode that
        none of them had open in the interval is not in; else (block and page-cache rows:
        writeback of a closed file's pages) every file the inode had in the interval counts."""
        key = (dev, ino)
        reused = (self._overlap if fd_io else self._reused).get(key)
        if reused is not None:
            n, dirs, exts, temp = reused
            common = os.path.commonpath(sorted(dirs)) if all(d.startswith("/") for d in dirs) else ""
            ext = next(iter(exts)) if len(exts) == 1 else ""
            what = TEMPORARY_FILES if temp else f"{ext} files" if ext and " " not in ext else "files"
            return f"{common.rstrip('/')}/[{n} {what} reusing one inode]"
        name = self.names.get(key)
        if name is not None:
            self.names.move_to_end(key)
        elif pid:
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
        if major == 0:
            name = mounted_source(dev) or name
        self.cache[dev] = name
        return name


def mounted_source(dev: int) -> str | None:
    """The block device under an anonymous device (major 0): a btrfs subvolume's files carry
    their subvolume's device (docs/filesystems.md), which is no block device; where that
    subvolume is mounted here, the mount's source names the disk ("loop0"). None otherwise
    (tmpfs, a subvolume not mounted on its own)."""
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.readlines()
    except OSError:
        return None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        # only btrfs's (a stat of every mount point could hang on a network filesystem)
        if not sep or len(fields) < 5 or len(tail) < 2 or tail[0] != "btrfs" or not tail[1].startswith("/dev/"):
            continue
        try:
            st = os.stat(fields[4].replace("\\040", " "))
        except OSError:
            continue
        if abi.kernel_dev_of_stat(st.st_dev) == dev:
            return os.path.basename(tail[1])
    return None


class TaskNames:
    """comm of processes and threads, remembered after they exit.

    A live task is re-read once per interval (exec and prctl rename tasks);
    an exited one keeps the last name seen."""

    def __init__(self, max_names: int = MAX_TASK_NAMES) -> None:
        self.procs: dict[int, str] = {}
        self.threads: dict[int, str] = {}
        self.max_names = max_names  # oldest first out: a recording's tasks come and go
        self._fresh: set[tuple[str, int]] = set()

    def new_interval(self) -> None:
        self._fresh.clear()

    def process(self, pid: int) -> str | None:
        return self._name(self.procs, "p", pid, f"/proc/{pid}/comm")

    def thread(self, pid: int, tid: int) -> str | None:
        return self._name(self.threads, "t", tid, f"/proc/{pid}/task/{tid}/comm")

    def _name(self, table: dict[int, str], kind: str, key: int, path: str) -> str | None:
        """table[key], re-read from path once an interval while the task lives."""
        if (kind, key) not in self._fresh:
            self._fresh.add((kind, key))
            name = _read(path)
            if name is not None:
                table[key] = name
                cap_oldest(table, self.max_names)
        return table.get(key)

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
        cap_oldest(self.threads, self.max_names)
        cap_oldest(self.procs, self.max_names)

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
        cap_oldest(self.threads, self.max_names)


_read = read_proc_text

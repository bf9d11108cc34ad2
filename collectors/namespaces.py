"""A traced process in other namespaces (a container), seen from the recorder on the host.

A server in its own mount namespace names its files and socket by paths of that namespace
(its datadir may be mounted where the host has nothing); the host reaches them under
/proc/PID/root. A server in its own PID namespace reports its threads' ids as that namespace
numbers them (performance_schema THREAD_OS_ID, gettid() inside), while BPF and /proc give
host ids; /proc/PID/task/TID/status says both (its NSpid line: host id first, innermost last).
"""
from __future__ import annotations

import os

from ioattr.collectors.targets import read_proc_text


def _same_namespace(pid: int, kind: str) -> bool:
    """Whether pid shares our namespace of this kind (an unreadable one counts as shared)."""
    try:
        return os.stat(f"/proc/{pid}/ns/{kind}").st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino
    except OSError:
        return True


def root_of(pid: int) -> str:
    """The prefix that makes a path pid names reachable from here: "" when it sees our mount
    namespace from our root, else /proc/PID/root (its root in its own mount namespace)."""
    try:
        if _same_namespace(pid, "mnt") and os.readlink(f"/proc/{pid}/root") == os.readlink("/proc/self/root"):
            return ""
    except OSError:
        return ""
    return f"/proc/{pid}/root"


def in_root(root: str, path: str) -> str:
    """A path of the process whose root_of() is `root`, as reachable from here."""
    return root + path if root and path.startswith("/") else path


def namespace_tids(pid: int) -> dict[int, int] | None:
    """{thread id inside pid's PID namespace: host thread id} of pid's threads, or None when
    pid shares our PID namespace (its ids are ours). A thread that exits meanwhile is left out."""
    if _same_namespace(pid, "pid"):
        return None
    out: dict[int, int] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        status = read_proc_text(f"/proc/{pid}/task/{t}/status")
        for line in (status or "").splitlines():
            if line.startswith("NSpid:"):
                ids = line.split()[1:]
                if ids:
                    out[int(ids[-1])] = int(t)
                break
    return out

"""The cgroup of a traced process, as a path (the `cgroup` dimension: which container or
systemd unit did the IO).

Resolved in user space, per process, from /proc/PID/cgroup, not per IO in BPF
(bpf_get_current_cgroup_id()): a server stays in its cgroup for its life, so one read per
process per interval names all its IO, costs nothing on the hot path and needs no id -> path
walk of the cgroup filesystem. A process that moves between cgroups is named by where it was
at the drain that counted its IO (at most one interval late).

The path is the cgroup v2 (unified hierarchy) one: the `0::PATH` line, which is what
systemd, Docker, Kubernetes, Inspektor Gadget and bcc's cgroup filters name. A host with
cgroup v1 only has no such line: the `name=systemd` hierarchy's path stands in (the unit or
container, as systemd placed it); with neither the cgroup is unknown (None). Paths are
relative to the recorder's own cgroup namespace (the host's, for a recorder run on the host).
"""
from __future__ import annotations

from ioattr.collectors.names import cap_oldest
from ioattr.collectors.targets import read_proc_text

MAX_CGROUP_NAMES = 100_000


def parse_cgroup(text: str | None) -> str | None:
    """The cgroup path in a /proc/PID/cgroup text: the v2 line's, else the v1 name=systemd
    one's, else None."""
    if not text:
        return None
    systemd = None
    for line in text.splitlines():
        hier, sep, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if not sep or not sep2 or not path.startswith("/"):
            continue
        if hier == "0" and controllers == "":
            return path
        if controllers == "name=systemd":
            systemd = path
    return systemd


def process_cgroup(pid: int) -> str | None:
    """pid's cgroup path now (None when the process is gone or the host has no hierarchy
    that names it)."""
    return parse_cgroup(read_proc_text(f"/proc/{pid}/cgroup"))


class CgroupNames:
    """pid -> cgroup path, re-read once per interval while the process lives (the targets
    are rescanned every interval too), remembered after it exits so its last IO is named."""

    def __init__(self, max_names: int = MAX_CGROUP_NAMES) -> None:
        self.paths: dict[int, str] = {}
        self.max_names = max_names
        self._fresh: set[int] = set()

    def new_interval(self) -> None:
        self._fresh.clear()

    def lookup(self, pid: int) -> str | None:
        if not pid:
            return None
        if pid not in self._fresh:
            self._fresh.add(pid)
            path = process_cgroup(pid)
            if path is not None:
                self.paths.pop(pid, None)  # newest last: the oldest go first past max_names
                self.paths[pid] = path
                cap_oldest(self.paths, self.max_names)
        return self.paths.get(pid)

"""Host and per-process counters from /proc, as (name, value, text) rows.

source 'host' (pid NULL):
    diskstats:<dev>:<field>   /proc/diskstats, for every device that has done any IO
                              (all-zero devices, e.g. unused loop devices, are left out
                              until they do some). Fields, cumulative unless noted:
                              reads reads_merged sectors_read read_ms writes writes_merged
                              sectors_written write_ms in_flight (gauge) io_ms weighted_io_ms
                              discards discards_merged sectors_discarded discard_ms
                              flushes flush_ms (older kernels print fewer; sectors are 512 B)
    cpu:user cpu:nice cpu:sys cpu:idle cpu:iowait cpu:irq cpu:softirq cpu:steal
                              /proc/stat all-CPU times in seconds
    cpu:count                 online CPUs (gauge)
    ctxt                      context switches since boot
    processes                 forks since boot
    procs_running procs_blocked   gauges

source 'proc' (pid = the target process):
    io:rchar io:wchar io:syscr io:syscw io:read_bytes io:write_bytes io:cancelled_write_bytes
                              /proc/PID/io (the whole process, exited threads included)
    cpu:user cpu:sys          /proc/PID/stat utime/stime in seconds (whole process)
    cpu:tree_user cpu:tree_sys  a server that forks a process per connection (PostgreSQL's
                              postmaster): its own utime/stime, its exited children's
                              (cutime/cstime: the backends it reaped) and its living traced
                              children's but ioattr's own connections', summed in one snapshot,
                              so a phase's delta is the cluster's CPU however short its backends
                              lived (ProcCounters.tree_rows)
    threads                   number of threads (gauge)
    ctxt ctxt_nonvoluntary    context switches of the process's threads: voluntary +
                              involuntary, and involuntary alone, from
                              /proc/PID/task/*/status; a thread that exits keeps its last
                              count in the sum (threads born and gone within one interval
                              are missed), so the value never goes down
    comm                      the process name (text)
"""
from __future__ import annotations

import os

Row = tuple[str, "float | None", "str | None"]

DISKSTAT_FIELDS = ("reads", "reads_merged", "sectors_read", "read_ms", "writes", "writes_merged",
                   "sectors_written", "write_ms", "in_flight", "io_ms", "weighted_io_ms",
                   "discards", "discards_merged", "sectors_discarded", "discard_ms", "flushes", "flush_ms")
CPU_FIELDS = ("user", "nice", "sys", "idle", "iowait", "irq", "softirq", "steal")
PROC_IO_FIELDS = ("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes")
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


class HostCounters:
    """Reads /proc/diskstats and /proc/stat; remembers which devices were ever active."""

    def __init__(self, proc: str = "/proc") -> None:
        self.proc = proc
        self.active_devices: set[str] = set()

    def rows(self) -> list[Row]:
        out: list[Row] = []
        try:
            text = _read(f"{self.proc}/diskstats")
        except OSError:
            text = ""
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 4:
                continue
            dev = parts[2]
            vals = parts[3:3 + len(DISKSTAT_FIELDS)]
            if dev not in self.active_devices:
                if not any(v != "0" for v in vals):
                    continue
                self.active_devices.add(dev)
            for field, v in zip(DISKSTAT_FIELDS, vals):
                out.append((f"diskstats:{dev}:{field}", float(v), None))
        try:
            text = _read(f"{self.proc}/stat")
        except OSError:
            return out
        ncpu = 0
        for line in text.splitlines():
            parts = line.split()
            if not parts:
                continue
            key = parts[0]
            if key == "cpu":
                for field, v in zip(CPU_FIELDS, parts[1:]):
                    out.append((f"cpu:{field}", int(v) / CLK_TCK, None))
            elif key.startswith("cpu"):
                ncpu += 1
            elif key in ("ctxt", "processes", "procs_running", "procs_blocked") and len(parts) > 1:
                out.append((key, float(parts[1]), None))
        if ncpu:
            out.append(("cpu:count", float(ncpu), None))
        return out


class ProcCounters:
    """Per-process counters of the traced processes; keeps per-thread switch counts."""

    def __init__(self, proc: str = "/proc") -> None:
        self.proc = proc
        # pid -> tid -> (voluntary, nonvoluntary) last seen; pid -> switches of exited threads
        self._threads: dict[int, dict[int, tuple[int, int]]] = {}
        self._gone: dict[int, tuple[int, int]] = {}
        # pid -> (ppid, utime, stime, cutime, cstime) in seconds, as its last rows() read them
        self.stat: dict[int, tuple[int, float, float, float, float]] = {}

    def tree_rows(self, pid: int, exclude: set[int]) -> list[Row]:
        """cpu:tree_user and cpu:tree_sys of a forking server pid, from this snapshot's rows():
        its own CPU, its reaped children's, and its living children's that were read (not those
        in `exclude`). A child that exits between the server's read and its own is missed for one
        snapshot, then counted in the server's cutime: the sum never loses it."""
        own = self.stat.get(pid)
        if own is None:
            return []
        user, sys_ = own[1] + own[3], own[2] + own[4]
        for child, (ppid, u, s, _, _) in self.stat.items():
            if ppid == pid and child not in exclude:
                user += u
                sys_ += s
        return [("cpu:tree_user", user, None), ("cpu:tree_sys", sys_, None)]

    def forget(self, live: set[int]) -> None:
        for pid in [p for p in self.stat if p not in live]:
            self.stat.pop(pid, None)
        for pid in [p for p in self._threads if p not in live]:
            self._threads.pop(pid, None)
            self._gone.pop(pid, None)

    def rows(self, pid: int) -> list[Row]:
        """Counters of one process; [] when it is gone."""
        base = f"{self.proc}/{pid}"
        out: list[Row] = []
        try:
            stat = _read(f"{base}/stat")
        except OSError:
            return []
        close = stat.rfind(")")
        comm = stat[stat.find("(") + 1: close]
        fields = stat[close + 2:].split()
        # fields[0] is state (field 3); utime = field 14, stime = 15, num_threads = 20
        try:
            out.append(("cpu:user", int(fields[11]) / CLK_TCK, None))
            out.append(("cpu:sys", int(fields[12]) / CLK_TCK, None))
            out.append(("threads", float(fields[17]), None))
            self.stat[pid] = (int(fields[1]), int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK,
                              int(fields[13]) / CLK_TCK, int(fields[14]) / CLK_TCK)
        except (IndexError, ValueError):
            pass
        try:
            for line in _read(f"{base}/io").splitlines():
                key, _, val = line.partition(":")
                if key in PROC_IO_FIELDS:
                    out.append((f"io:{key}", float(val), None))
        except OSError:
            pass  # not ours to read (no ptrace access): left out
        switches = self._switches(pid, base)
        if switches is not None:
            out.append(("ctxt", float(switches[0] + switches[1]), None))
            out.append(("ctxt_nonvoluntary", float(switches[1]), None))
        out.append(("comm", None, comm))
        return out

    def _switches(self, pid: int, base: str) -> tuple[int, int] | None:
        try:
            tids = [int(t) for t in os.listdir(f"{base}/task") if t.isdigit()]
        except OSError:
            return None
        seen: dict[int, tuple[int, int]] = {}
        for tid in tids:
            try:
                text = _read(f"{base}/task/{tid}/status")
            except OSError:
                continue  # exited meanwhile
            vol = nonvol = None
            for line in text.splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    vol = int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    nonvol = int(line.split()[1])
            if vol is not None and nonvol is not None:
                seen[tid] = (vol, nonvol)
        if not seen:
            return None
        prev = self._threads.get(pid, {})
        gv, gn = self._gone.get(pid, (0, 0))
        for tid, (v, n) in prev.items():
            now = seen.get(tid)
            if now is None or now[0] < v or now[1] < n:  # exited (or its tid was reused)
                gv, gn = gv + v, gn + n
        self._gone[pid] = (gv, gn)
        self._threads[pid] = seen
        return gv + sum(v for v, _ in seen.values()), gn + sum(n for _, n in seen.values())

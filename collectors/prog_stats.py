"""What the kernel says about each of our loaded BPF programs (its fdinfo entry).

Three numbers per program, the same ones `bpftool prog show` prints:
- run_time_ns and run_cnt count only while run-time statistics are on
  (`libbpf.enable_run_time_stats()` or `sysctl kernel.bpf_stats_enabled=1`);
- recursion_misses always counts: runs the kernel skipped because the
  program fired while it (a raw tracepoint program) or any tracing program
  (a tracepoint or uprobe program) was already running on that CPU, e.g. in
  an interrupt that landed inside a program. A skipped run is IO or an event
  we never saw, so the recorder reports their sum as a drop ("prog_skipped").

Read from /proc/self/fdinfo: no extra syscall binding needed. RunTimeStats is the one holder
of the statistics' switch (the live session's, ioattr/live/self_cost.py, which the exporter
reads too).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ioattr.collectors.libbpf import enable_run_time_stats

FIELDS = ("run_time_ns", "run_cnt", "recursion_misses")


@dataclass(frozen=True)
class ProgStats:
    run_time_ns: int
    run_cnt: int
    recursion_misses: int = 0


def stats_enabled_by_sysctl() -> bool:
    """Whether someone turned BPF run-time statistics on for everybody
    (kernel.bpf_stats_enabled): then every program counts without our own switch."""
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def read_prog_stats(fd: int, fdinfo: str = "/proc/self/fdinfo") -> ProgStats | None:
    """The counters of one program fd of this process (None if unreadable or not a program)."""
    try:
        with open(f"{fdinfo}/{fd}") as f:
            text = f.read()
    except OSError:
        return None
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, val = line.partition(":")
        if key in FIELDS:
            try:
                values[key] = int(val.strip())
            except ValueError:
                return None
    if "run_time_ns" not in values or "run_cnt" not in values:
        return None
    return ProgStats(values["run_time_ns"], values["run_cnt"], values.get("recursion_misses", 0))


def all_prog_stats(fds: dict[str, int], fdinfo: str = "/proc/self/fdinfo") -> dict[str, ProgStats]:
    """name -> counters of every loaded program among `fds` (fd < 0: a program not loaded)."""
    out = {}
    for name, fd in fds.items():
        if fd < 0:
            continue  # a program of a set that is loaded but not this one (autoload off)
        st = read_prog_stats(fd, fdinfo)
        if st is not None:
            out[name] = st
    return out


def skipped_runs(fds: dict[str, int], fdinfo: str = "/proc/self/fdinfo") -> int:
    """Runs of these programs the kernel skipped (recursion_misses, summed)."""
    return sum(st.recursion_misses for st in all_prog_stats(fds, fdinfo).values())


class RunTimeStats:
    """Kernel BPF run-time statistics held on while open (BPF_ENABLE_STATS: the kernel counts the
    holders of the fd it returns, so closing it, or the process dying, ends ours and leaves
    kernel.bpf_stats_enabled as it was). enable False: count only if someone else turned them on."""

    def __init__(self, enable: bool = True) -> None:
        self.fd: int | None = None
        self.error: str | None = None
        if enable:
            try:
                self.fd = enable_run_time_stats()
                if self.fd is None:
                    self.error = "BPF_ENABLE_STATS failed"
            except Exception as e:  # noqa: BLE001 - an old libbpf without the call: the sysctl may still be on
                self.error = str(e)

    @property
    def source(self) -> str:
        """Who keeps them on: "ioattr" (this holder), "sysctl" (on for everyone), or "off"."""
        return "ioattr" if self.fd is not None else ("sysctl" if stats_enabled_by_sysctl() else "off")

    @property
    def enabled(self) -> bool:
        return self.source != "off"

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None

"""What attaching costs, measured while it runs: each of our BPF programs' runs and run time
(the kernel's own accounting, as `bpftool prog show` and bpftop read it) and the CPU of the
process that drains them. A benchmarker quotes these next to the numbers they record.

The kernel counts run time only while BPF run-time statistics are on. The session turns them
on with BPF_ENABLE_STATS, which holds them on for as long as the returned fd is open (the
kernel counts the holders; `kernel.bpf_stats_enabled` is neither read nor written), so
nothing is left to restore: closing the fd, or the process dying, ends it. Counting adds two
clock reads to every program run (~20-40 ns here), which is the price of a quotable figure.
"""
from __future__ import annotations

import resource
import time

from ioattr.collectors.prog_stats import RunTimeStats, all_prog_stats
from ioattr.model.self_cost import ProgramCost, SelfCostSample


def own_cpu_s() -> float:
    """User + system CPU seconds of this process, all its threads."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class SelfCost:
    """Run-time statistics held on from open() to close(); sample() says what our programs
    and this process have used since open()."""

    def __init__(self) -> None:
        self.stats: RunTimeStats | None = None  # the statistics' one holder (collectors/prog_stats.py)
        self.source = "off"  # "ioattr" (held by us), "sysctl" (on for everyone), "off"
        self._cpu0 = 0.0
        self._t0 = 0.0

    def open(self, enable: bool = True) -> None:
        """enable False: count only if someone else turned the statistics on."""
        self.stats = RunTimeStats(enable)
        self.source = self.stats.source
        self.restart()

    def restart(self) -> None:
        """From now on: the attach (loading and verifying the objects) is not the recording's cost."""
        self._cpu0 = own_cpu_s()
        self._t0 = time.monotonic()

    @property
    def counting(self) -> bool:
        return self.source != "off"

    def sample(self, program_fds: dict[str, int]) -> SelfCostSample:
        """meta.json's self_cost: {"bpf_stats", "seconds", "recorder_cpu_s", "programs":
        {name: {"run_cnt", "run_time_ns"}}} -- programs that ran (none when not counting).
        Counts run from when the statistics went on (at attach), which is the recording's
        start but for the few runs between attaching and the baseline."""
        progs: dict[str, ProgramCost] = {}
        if self.counting:
            for name, st in all_prog_stats(program_fds).items():
                if st.run_cnt:
                    p = progs.setdefault(name, {"run_cnt": 0, "run_time_ns": 0})
                    p["run_cnt"] += st.run_cnt
                    p["run_time_ns"] += st.run_time_ns
        return {"bpf_stats": self.source, "seconds": round(time.monotonic() - self._t0, 3),
                "recorder_cpu_s": round(own_cpu_s() - self._cpu0, 3), "programs": progs}

    def close(self) -> None:
        if self.stats is not None:
            self.stats.close()

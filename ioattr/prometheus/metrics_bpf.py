"""How much CPU ioattr's own BPF programs use, per program.

The kernel counts run time and runs of every BPF program while run-time
statistics are on (`ioattr.collectors.libbpf.enable_run_time_stats()`, held
by an fd for as long as the exporter runs, or `sysctl
kernel.bpf_stats_enabled=1`). Both counters appear in the program fd's
/proc/self/fdinfo entry (collectors/prog_stats.py reads it). Counting adds
two clock reads per program run (~20-40 ns), which is why it is a switch
(`--no-probe-stats`).
"""
from __future__ import annotations

import os

from ioattr.collectors.prog_stats import ProgStats, all_prog_stats, read_prog_stats, stats_enabled_by_sysctl

__all__ = ["ProgStats", "RunTimeStats", "all_prog_stats", "read_prog_stats", "stats_enabled_by_sysctl"]


class RunTimeStats:
    """Holds kernel BPF run-time accounting on while open (when asked to)."""

    def __init__(self, enable: bool) -> None:
        self.fd: int | None = None
        self.error: str | None = None
        if enable:
            try:
                from ioattr.collectors.libbpf import enable_run_time_stats

                self.fd = enable_run_time_stats()
                if self.fd is None:
                    self.error = "BPF_ENABLE_STATS failed"
            except Exception as e:  # noqa: BLE001 - the statistics are optional
                self.error = str(e)

    @property
    def enabled(self) -> bool:
        return self.fd is not None or stats_enabled_by_sysctl()

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None

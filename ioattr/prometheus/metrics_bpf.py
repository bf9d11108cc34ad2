"""How much CPU ioattr's own BPF programs use, per program.

The kernel counts run time and runs of every BPF program while run-time
statistics are on (collectors/prog_stats.RunTimeStats, held by the live
session for as long as the exporter runs, or `sysctl kernel.bpf_stats_enabled=1`). Both counters appear in the program fd's
/proc/self/fdinfo entry (collectors/prog_stats.py reads it). Counting adds
two clock reads per program run (~20-40 ns), which is why it is a switch
(`--no-probe-stats`).
"""
from __future__ import annotations

from ioattr.collectors.prog_stats import (ProgStats, RunTimeStats, all_prog_stats, read_prog_stats,
                                         stats_enabled_by_sysctl)

__all__ = ["ProgStats", "RunTimeStats", "all_prog_stats", "read_prog_stats", "stats_enabled_by_sysctl"]

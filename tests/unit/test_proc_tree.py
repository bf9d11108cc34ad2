"""A forking server's CPU (ProcCounters.tree_rows): its own, its reaped children's and its living
children's, summed in one snapshot from a fake /proc."""
from __future__ import annotations

from pathlib import Path

import pytest

from ioattr.collectors.counters_host import CLK_TCK, ProcCounters


def _stat(root: Path, pid: int, ppid: int, utime: int, stime: int, cutime: int = 0, cstime: int = 0) -> None:
    d = root / str(pid)
    d.mkdir(exist_ok=True)
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
    fields = ["S", ppid, 1, 1, 0, -1, 0, 0, 0, 0, 0, utime, stime, cutime, cstime, 20, 0, 1, 0]
    (d / "stat").write_text(f"{pid} (postgres: x) " + " ".join(str(f) for f in fields) + "\n")


def test_tree_counts_living_and_reaped_children_once(tmp_path: Path) -> None:
    _stat(tmp_path, 10, 1, utime=5, stime=1, cutime=100, cstime=20)   # postmaster, reaped 1.2 s of children
    _stat(tmp_path, 11, 10, utime=30, stime=10)                       # a backend
    _stat(tmp_path, 12, 10, utime=7, stime=3)                         # ioattr's own backend: left out
    _stat(tmp_path, 13, 99, utime=50, stime=50)                       # someone else's child
    procs = ProcCounters(str(tmp_path))
    for pid in (10, 11, 12, 13):
        procs.rows(pid)
    got = dict((n, v) for n, v, _ in procs.tree_rows(10, exclude={12}))
    assert got["cpu:tree_user"] == pytest.approx(135 / CLK_TCK) and got["cpu:tree_sys"] == pytest.approx(31 / CLK_TCK)
    # the backend exits and is reaped: its CPU moves into the postmaster's cutime, the sum stays
    (tmp_path / "11" / "stat").unlink()
    _stat(tmp_path, 10, 1, utime=5, stime=1, cutime=130, cstime=30)
    procs.forget({10, 12, 13})
    procs.rows(10)
    again = dict((n, v) for n, v, _ in procs.tree_rows(10, exclude={12}))
    assert again == pytest.approx(got)
    assert procs.tree_rows(42, set()) == []  # never read: nothing

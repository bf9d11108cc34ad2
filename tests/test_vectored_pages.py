"""Page classification of plain and vectored reads and libaio vectored writes, on known pages.

benchmarks/innodb_page_loop.c reads a file of InnoDB index pages (each page's index id and level
known from its number) registered in page_files, by pread, by preadv of two, seven and sixteen
iovecs (the iovec array is read four at a time: a whole batch, a part of one, and both), by libaio's
IOCB_CMD_PREAD and by IOCB_CMD_PREADV of two iovecs, and writes them back (the same bytes) by
IOCB_CMD_PWRITEV, and by one io_uring READV of two iovecs (only its first iovec's page classified:
the others' buffers are not known at completion); bench_iopath.py checks each run exact: the loop's syscall IOs in io_stats equal
its calls, and its classified pages equal, per index id and level, the pages it read or wrote
(a vectored iocb's iovec array read as page data would show as pages of another space or type,
or none).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import need, need_root
from tests.helpers import ROOT, assert_no_ioattr_programs


@pytest.mark.parametrize("mode", ["pread", "preadv", "iovecs=7", "iovecs=16", "aio", "aiov", "aiovw", "uringv"])
@pytest.mark.parametrize("hook", ["tracepoints", "raw"])
def test_pages_of_each_read_path_are_classified_exactly(mode: str, hook: str) -> None:
    need_root()
    if hook == "tracepoints":
        need(os.path.isdir("/sys/kernel/tracing/events/syscalls/sys_enter_pread64"),
             "this kernel has no per-syscall tracepoints (CONFIG_FTRACE_SYSCALLS)")
    argv = [sys.executable, str(ROOT / "benchmarks" / "bench_iopath.py"), "--variant", "tree=",
            "--rounds", "1", "--calls", "300"]
    if mode != "pread":
        argv.append(f"--{mode}")  # iovecs=K: preadv of K iovecs, read four at a time
    if mode == "uringv":  # io_uring's own programs; only the first iovec's page is classified
        argv += ["--sets", "syscalls,targets,block,uring"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, IOATTR_SYSCALL_HOOK=hook))
    assert r.returncode == 0, r.stdout + r.stderr
    assert_no_ioattr_programs()

"""Block-layer attribution on a busy host, the way an IO-bound benchmark leaves it.

Two `ioflood` processes keep 512 random 4 KiB O_DIRECT reads in flight on the
disk the tests write to (a full device queue: requeues, completions batched in
the block softirq on whatever CPU and task the interrupt lands on), and another
BPF tool (bpftrace) runs a slow program on every CPU and on every block
completion. Under that load the kernel finishes some requests without any BPF
program seeing their block_rq_complete (docs/block.md); a target's requests
must still be counted exactly, once each, at every IO size and API.

The load runs once for the module; each test's target is its own process.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import need
from tests.fixtures_mariadb import shared_process
from tests.helpers import IOGEN, ROOT, ioattr
from tests.test_block_attribution import (DIRECT_SCENARIOS, _need_iogen, assert_iogen_bytes_on_their_files,
                                          one_bio_requests_are_counted_once_each, other_tracer_running)

IOFLOOD = ROOT / "tests" / "workloads" / "ioflood"
FLOODS, FLOOD_DEPTH, FLOOD_MIB = 2, 256, 64


@pytest.fixture(scope="module")
def busy_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    """The disk saturated by FLOODS ioflood processes and another tracer attached, for the
    module's tests; everything stopped by pid at the end. Yields the load's pids."""
    _need_iogen()
    if not IOFLOOD.exists():
        subprocess.run(["make", "-s", "-C", str(IOFLOOD.parent)], check=False)
    need(IOFLOOD.exists(), "tests/workloads/ioflood is not built (make -C tests/workloads; needs liburing-dev)")
    base = tmp_path_factory.mktemp("flood")  # /tmp: the disk the tests' files are on
    floods: list[subprocess.Popen] = []
    try:
        for i in range(FLOODS):
            p = subprocess.Popen([str(IOFLOOD), str(base / f"flood{i}"), str(FLOOD_MIB), str(FLOOD_DEPTH)],
                                 stdout=subprocess.PIPE, text=True, start_new_session=True)
            floods.append(p)
            assert p.stdout is not None and p.stdout.readline().strip() == "ready", f"ioflood {i} did not start"
        with other_tracer_running() as tracer_pids, _shared(*(p.pid for p in floods), *tracer_pids):
            yield [p.pid for p in floods] + tracer_pids
    finally:
        for p in floods:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.fixture
def busy(busy_host: list[int]) -> list[int]:
    """The module's load, checked to be still running when a test starts."""
    for pid in busy_host:
        assert Path(f"/proc/{pid}").exists(), f"the busy host's load (pid {pid}) ended early"
    return busy_host


class _shared:
    """shared_process for several pids at once."""

    def __init__(self, *pids: int) -> None:
        self.cms = [shared_process(pid) for pid in pids]

    def __enter__(self) -> None:
        for cm in self.cms:
            cm.__enter__()

    def __exit__(self, *exc: object) -> None:
        for cm in reversed(self.cms):
            cm.__exit__(*exc)


def test_busy_host_one_bio_direct_requests_are_counted_once_each(tmp_path: Path, busy: list[int]) -> None:
    """64 4 KiB O_DIRECT writes, then 64 reads, one at a time, each one device request: every
    one counted once, on its file and thread, beside a saturated queue and another tracer.
    (Before the drain-time sweep, 52 of 64 reads were counted here in one CI run.)"""
    one_bio_requests_are_counted_once_each(tmp_path)


# (IO size, --size, --prealloc): a page, a split direct IO (1 MiB of scattered pages is over
# the queue's segments), and IOs over max_sectors_kb
BUSY_CASES = [("4K", "2M", "none"), ("1M", "16M", "none"), ("8M", "32M", "written")]


@pytest.mark.parametrize("case", BUSY_CASES, ids=["-".join(c) for c in BUSY_CASES])
def test_busy_host_direct_io_is_exact(tmp_path: Path, busy: list[int], case: tuple[str, str, str]) -> None:
    """iogen's direct IO through pread/pwrite, libaio and io_uring, recorded with defaults while
    the host is busy: at the syscall and the block layer every byte on its file, exactly;
    nothing dropped, no run of ours skipped. Requests whose completion no program saw are
    counted without a latency and said in meta.json (block_untimed)."""
    block, size, prealloc = case
    truth_path = tmp_path / "truth.json"
    r = ioattr("record", "-o", str(tmp_path / "rec"), "--only-command", "--",
               str(IOGEN), "--dir", str(tmp_path / "data"), "--scenario", DIRECT_SCENARIOS, "--size", size,
               "--block", block, "--prealloc", prealloc, "--json", str(truth_path), timeout=300)
    assert r.returncode == 0, r.stderr
    truth = json.loads(truth_path.read_text())
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert sum(meta["dropped"].values()) == 0, meta["dropped"]
    assert isinstance(meta.get("block_untimed"), int), meta.get("block_untimed")
    assert_iogen_bytes_on_their_files(tmp_path / "rec", truth, case)

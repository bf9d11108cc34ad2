"""A fio-like IO load for the benchmarks (shared by bench_top.py and bench_recorder.py).

`procs` worker processes x `threads` threads each do 4 KiB pread/pwrite at random
offsets of their own `files` files (4 MiB each, filled first, so reads hit the page
cache and writes are buffered and written back: both the syscall and the block layer
have rows), paced to `iops` in all, `write_share` of them writes. Each thread counts
its calls in a shared array, so the achieved rate is known without tracing.

    with IopsLoad(iops=30000) as load:    # files created, load running
        pids = load.pids
        ...
        print(load.ops())                 # calls so far, all workers
"""
from __future__ import annotations

import glob
import multiprocessing as mp
import os
import random
import shutil
import tempfile
import threading
import time

FILE_SIZE = 4 << 20
BLOCK = 4096


def _worker(directory: str, files: int, threads: int, iops: float, write_share: float, slot0: int,
            counts, ready, go, stop) -> None:
    paths = [os.path.join(directory, f"f{os.getpid()}_{i}") for i in range(files)]
    fds = []
    for p in paths:
        fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
        os.ftruncate(fd, FILE_SIZE)
        os.pwrite(fd, b"\0" * FILE_SIZE, 0)  # real blocks, in the page cache
        fds.append(fd)
    ready.set()
    go.wait()
    per_thread = iops / threads

    def run(i: int) -> None:
        rnd = random.Random(os.getpid() * 100 + i)
        buf = b"x" * BLOCK
        batch = max(1, int(per_thread / 100))  # ~100 bursts a second
        done = 0
        t_next = time.monotonic()
        while not stop.is_set():
            for _ in range(batch):
                fd = fds[rnd.randrange(len(fds))]
                off = rnd.randrange(FILE_SIZE // BLOCK) * BLOCK
                if rnd.random() < write_share:
                    os.pwrite(fd, buf, off)
                else:
                    os.pread(fd, BLOCK, off)
            done += batch
            counts[slot0 + i] = done
            t_next += batch / per_thread
            delay = t_next - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -1:
                t_next = time.monotonic()  # can't keep up: don't burst to catch up

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for fd in fds:
        os.close(fd)


class IopsLoad:
    """The load, as a context manager: entering creates the files and starts the IO."""

    def __init__(self, iops: float = 30000, procs: int = 4, threads: int = 8, files: int = 16,
                 write_share: float = 0.2, directory: str | None = None) -> None:
        self.iops, self.procs, self.threads, self.files = iops, procs, threads, files
        self.write_share = write_share
        self.directory = directory
        self.tmp: str | None = None
        self.workers: list = []
        self.started = 0.0

    def describe(self) -> dict:
        return {"target_iops": self.iops, "processes": self.procs, "threads_per_process": self.threads,
                "files_per_process": self.files, "write_share": self.write_share,
                "file_mib": FILE_SIZE >> 20, "block": BLOCK}

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.workers]

    def start(self) -> "IopsLoad":
        self.tmp = tempfile.mkdtemp(prefix="ioattr-bench-load-", dir=self.directory)
        ctx = mp.get_context("fork")
        self.counts = ctx.Array("q", self.procs * self.threads, lock=False)
        self.go, self.stop_ev = ctx.Event(), ctx.Event()
        readies = []
        for n in range(self.procs):
            ready = ctx.Event()
            p = ctx.Process(target=_worker, args=(self.tmp, self.files, self.threads, self.iops / self.procs,
                                                  self.write_share, n * self.threads, self.counts, ready,
                                                  self.go, self.stop_ev), daemon=True)
            p.start()
            self.workers.append(p)
            readies.append(ready)
        for r in readies:
            if not r.wait(60):
                self.stop()
                raise RuntimeError("the load's workers did not create their files within 60 s")
        self.go.set()
        self.started = time.monotonic()
        return self

    def ops(self) -> int:
        """Calls done so far by all workers (updated after each burst, ~100 times a second)."""
        return int(sum(self.counts))

    def stop(self) -> None:
        if not self.workers and self.tmp is None:
            return
        self.stop_ev.set()
        self.go.set()
        for p in self.workers:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join(5)
        self.workers = []
        if self.tmp is not None:
            for f in glob.glob(os.path.join(self.tmp, "*")):
                try:
                    os.unlink(f)
                except OSError:
                    pass
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self) -> "IopsLoad":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

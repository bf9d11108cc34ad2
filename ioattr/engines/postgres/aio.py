"""Charge PostgreSQL 18's io workers' IO to the backends that asked for it (bpf/pg_aio.bpf.h).

With io_method=worker (PostgreSQL 18's default) a backend's relation reads are run by
`postgres: io worker N` processes. Three uprobes on the server's binary hand each IO handle's
owner (the backend that staged it: its pid, statement, stage, phase) to the io worker that
runs it; the worker's syscalls are then charged to that backend with api `io_worker`.

Cost rule: the uprobes trap once per IO staged and twice per IO a worker runs, so they are
attached only to a server whose io workers are running (io_method=worker); a 15-17 server, or
18 with io_method=sync or io_uring, pays nothing. The uprobes are attached to the binary (pid
-1: the backends and workers a postmaster forks later must hit them too; a pid-filtered uprobe
is not inherited at fork), once per binary file however many servers run it, and the BPF side
keeps only the targets' hits.
"""
from __future__ import annotations

from ioattr.collectors.probes import LoadedSet
from ioattr.engines.postgres.binary_uprobes import BinaryUprobes

# (program, symbol, uretprobe): bpf/pg_aio.bpf.h
PG_AIO_PROBES = (
    ("ioattr_pg_aio_stage", "pgaio_io_stage", False),
    ("ioattr_pg_aio_perform", "pgaio_io_perform_synchronously", False),
    ("ioattr_pg_aio_done", "pgaio_io_perform_synchronously", True),
)


class PgAioProbes:
    """The io-worker uprobes of every traced PostgreSQL server that uses io workers."""

    def __init__(self, loaded: LoadedSet | None) -> None:
        self.uprobes = BinaryUprobes(loaded, PG_AIO_PROBES)

    def attach(self, pid: int, io_workers: int) -> str:
        """Attach for postmaster pid, which runs io_workers io workers now. Returns the one line
        saying what its io workers' IO is charged to."""
        if not io_workers:
            return "async IO: no io workers (io_method is not worker): each process's IO is its own"
        why = self.uprobes.attach(pid)
        if why:
            return f"async IO: io workers' IO stays theirs ({why})"
        return (f"async IO: {io_workers} io workers; their IO is charged to the backend that asked "
                f"(api io_worker; {len(PG_AIO_PROBES)} uprobes, paid per IO)")

    @property
    def attached_pids(self) -> set[int]:
        return self.uprobes.attached_pids

    def detach(self, pid: int) -> None:
        self.uprobes.detach(pid)

    def close(self) -> None:
        self.uprobes.close()

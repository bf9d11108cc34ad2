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

import os

from ioattr.collectors import libbpf
from ioattr.collectors.elf import symbol_offsets
from ioattr.collectors.probes import LoadedSet

# (program, symbol, uretprobe): bpf/pg_aio.bpf.h
PG_AIO_PROBES = (
    ("ioattr_pg_aio_stage", "pgaio_io_stage", False),
    ("ioattr_pg_aio_perform", "pgaio_io_perform_synchronously", False),
    ("ioattr_pg_aio_done", "pgaio_io_perform_synchronously", True),
)


class PgAioProbes:
    """The io-worker uprobes of every traced PostgreSQL server that uses io workers."""

    def __init__(self, loaded: LoadedSet | None) -> None:
        # loaded: the stage probe set whose object holds the programs
        self.programs: dict[str, libbpf.Program] = (
            {p.name: p for p in loaded.obj.programs()} if loaded is not None else {})
        # per binary file (st_dev, st_ino): its links and the servers (postmaster pids) using them
        self._binaries: dict[tuple[int, int], tuple[list[libbpf.Link], set[int]]] = {}
        self.attached_pids: set[int] = set()

    def attach(self, pid: int, io_workers: int) -> str:
        """Attach for postmaster pid, which runs io_workers io workers now. Returns the one line
        saying what its io workers' IO is charged to."""
        if not io_workers:
            return "async IO: no io workers (io_method is not worker): each process's IO is its own"
        if not all(name in self.programs for name, _, _ in PG_AIO_PROBES):
            return "async IO: io workers' IO stays theirs (the stage BPF object predates them: make -C bpf)"
        binary = f"/proc/{pid}/exe"
        try:
            st = os.stat(binary)
            offsets = symbol_offsets(binary, {sym for _, sym, _ in PG_AIO_PROBES})
        except (OSError, ValueError) as e:
            return f"async IO: io workers' IO stays theirs (cannot read the server binary's symbols: {e})"
        missing = sorted({sym for _, sym, _ in PG_AIO_PROBES if sym not in offsets})
        if missing:
            return f"async IO: io workers' IO stays theirs (no {', '.join(missing)} in the server binary)"
        key = (st.st_dev, st.st_ino)
        if key not in self._binaries:
            links: list[libbpf.Link] = []
            try:
                for name, sym, ret in PG_AIO_PROBES:
                    links.append(self.programs[name].attach_uprobe(-1, binary, offsets[sym], retprobe=ret))
            except libbpf.LibbpfError as e:
                for link in links:
                    link.destroy()
                return f"async IO: io workers' IO stays theirs (uprobe attach failed: {e})"
            self._binaries[key] = (links, set())
        self._binaries[key][1].add(pid)
        self.attached_pids.add(pid)
        return (f"async IO: {io_workers} io workers; their IO is charged to the backend that asked "
                f"(api io_worker; {len(PG_AIO_PROBES)} uprobes, paid per IO)")

    def detach(self, pid: int) -> None:
        """Server pid is gone (or the recording ends): drop its binary's uprobes if no other
        traced server runs that binary."""
        self.attached_pids.discard(pid)
        for key, (links, pids) in list(self._binaries.items()):
            pids.discard(pid)
            if not pids:
                for link in links:
                    link.destroy()
                del self._binaries[key]

    def close(self) -> None:
        for pid in list(self.attached_pids):
            self.detach(pid)

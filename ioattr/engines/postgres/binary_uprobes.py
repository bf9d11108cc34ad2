"""Uprobes on a PostgreSQL server's binary, shared by every traced server that runs it.

A postmaster forks its backends and io workers after the attach, and a pid-filtered uprobe is
not inherited at fork, so these are attached to the binary file (pid -1) once per file however
many traced servers run it; the BPF side keeps only the targets' hits. The stage uprobes
(stages.py) and the io-worker uprobes (aio.py) are two such sets.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from ioattr.collectors import libbpf
from ioattr.collectors.elf import symbol_offsets
from ioattr.collectors.probes import LoadedSet

#: (BPF program, symbol, uretprobe)
Probe = tuple[str, str, bool]


class BinaryUprobes:
    """One set of uprobes, attached per server binary and detached with its last server."""

    def __init__(self, loaded: LoadedSet | None, probes: Sequence[Probe]) -> None:
        # loaded: the stage probe set whose object holds the programs
        self.programs: dict[str, libbpf.Program] = (
            {p.name: p for p in loaded.obj.programs()} if loaded is not None else {})
        self.probes = tuple(probes)
        # per binary file (st_dev, st_ino): its links and the servers (postmaster pids) using them
        self._binaries: dict[tuple[int, int], tuple[list[libbpf.Link], set[int]]] = {}
        self.attached_pids: set[int] = set()

    def attach(self, pid: int) -> str:
        """Attach for postmaster pid: "" when attached, else why not (one clause)."""
        if not all(name in self.programs for name, _, _ in self.probes):
            return "the stage BPF object predates them: make -C bpf"
        binary = f"/proc/{pid}/exe"
        try:
            st = os.stat(binary)
            offsets = symbol_offsets(binary, {sym for _, sym, _ in self.probes})
        except (OSError, ValueError) as e:
            return f"cannot read the server binary's symbols: {e}"
        missing = sorted({sym for _, sym, _ in self.probes if sym not in offsets})
        if missing:
            return f"no {', '.join(missing)} in the server binary"
        key = (st.st_dev, st.st_ino)
        if key not in self._binaries:
            links: list[libbpf.Link] = []
            try:
                for name, sym, ret in self.probes:
                    links.append(self.programs[name].attach_uprobe(-1, binary, offsets[sym], retprobe=ret))
            except libbpf.LibbpfError as e:
                for link in links:
                    link.destroy()
                return f"uprobe attach failed: {e}"
            self._binaries[key] = (links, set())
        self._binaries[key][1].add(pid)
        self.attached_pids.add(pid)
        return ""

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

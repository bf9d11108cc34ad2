"""Stages inside a PostgreSQL statement: parse, optimize (the planner), execute (bpf/pg_stage.bpf.h).

A statement starts in parse when the wire reader sees it; a uprobe on standard_planner() moves it to
optimize, and uprobes on ExecutorStart() and standard_ProcessUtility() to execute. So the reads a query
does while it is planned (catalog lookups, the btree metapage, get_actual_variable_range's
probes of an index's ends for a constant past the statistics' histogram) are their own stage.

Cost rule: each uprobe hit is a trap (~1-2 us here, docs/cost.md), and every statement hits
them: a planned statement two (planner, ExecutorStart), a utility statement one, an Execute of
a cached generic plan one. Entry probes only. They are attached to the server's binary (pid -1:
a backend forked later must hit them; a pid-filtered uprobe is not inherited at fork), once per
binary file however many traced servers run it; the BPF side keeps only the targets' hits.
With `--stages statement` none is attached and a statement's stage stays null.
"""
from __future__ import annotations

import os

from ioattr.collectors import libbpf
from ioattr.collectors.elf import symbol_offsets
from ioattr.collectors.probes import LoadedSet

# (program, symbol): bpf/pg_stage.bpf.h. The standard_* implementations, not the wrappers that
# call a hook first (planner, ProcessUtility): an extension's hook calls them too, and they start
# with a push, which the kernel emulates, where the wrappers start with a rip-relative load of
# the hook, which a uprobe must single-step out of line (a second trap: docs/cost.md)
PG_STAGE_PROBES = (
    ("ioattr_pg_plan", "standard_planner"),
    ("ioattr_pg_execute", "ExecutorStart"),
    ("ioattr_pg_execute", "standard_ProcessUtility"),
)
PG_STAGES_FLAG = 8  # bpf/ioattr.h IOA_TARGET_PG_STAGES: a targets value bit, "its stage uprobes are on"


class PgStageProbes:
    """The stage uprobes of every traced PostgreSQL server."""

    def __init__(self, loaded: LoadedSet | None) -> None:
        # loaded: the stage probe set whose object holds the programs
        self.programs: dict[str, libbpf.Program] = (
            {p.name: p for p in loaded.obj.programs()} if loaded is not None else {})
        # per binary file (st_dev, st_ino): its links and the servers (postmaster pids) using them
        self._binaries: dict[tuple[int, int], tuple[list[libbpf.Link], set[int]]] = {}
        self.attached_pids: set[int] = set()

    def attach(self, pid: int) -> str:
        """Attach for postmaster pid; "" when attached (the caller sets PG_STAGES_FLAG on the
        server and its children), else why not (its statements' stage stays null)."""
        if not all(name in self.programs for name, _ in PG_STAGE_PROBES):
            return "the stage BPF object predates them: make -C bpf"
        binary = f"/proc/{pid}/exe"
        try:
            st = os.stat(binary)
            offsets = symbol_offsets(binary, {sym for _, sym in PG_STAGE_PROBES})
        except (OSError, ValueError) as e:
            return f"cannot read the server binary's symbols: {e}"
        missing = sorted({sym for _, sym in PG_STAGE_PROBES if sym not in offsets})
        if missing:
            return f"no {', '.join(missing)} in the server binary"
        key = (st.st_dev, st.st_ino)
        if key not in self._binaries:
            links: list[libbpf.Link] = []
            try:
                for name, sym in PG_STAGE_PROBES:
                    links.append(self.programs[name].attach_uprobe(-1, binary, offsets[sym]))
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

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

from ioattr.collectors.probes import LoadedSet
from ioattr.engines.postgres.binary_uprobes import BinaryUprobes

# (program, symbol, uretprobe): bpf/pg_stage.bpf.h. The standard_* implementations, not the wrappers that
# call a hook first (planner, ProcessUtility): an extension's hook calls them too, and they start
# with a push, which the kernel emulates, where the wrappers start with a rip-relative load of
# the hook, which a uprobe must single-step out of line (a second trap: docs/cost.md)
PG_STAGE_PROBES = (
    ("ioattr_pg_plan", "standard_planner", False),
    ("ioattr_pg_execute", "ExecutorStart", False),
    ("ioattr_pg_execute", "standard_ProcessUtility", False),
)
PG_STAGES_FLAG = 8  # bpf/ioattr.h IOA_TARGET_PG_STAGES: a targets value bit, "its stage uprobes are on"


class PgStageProbes(BinaryUprobes):
    """The stage uprobes of every traced PostgreSQL server: attach(pid) is "" when attached (the
    caller sets PG_STAGES_FLAG on the server and its children), else why not (its statements'
    stage stays null)."""

    def __init__(self, loaded: LoadedSet | None) -> None:
        super().__init__(loaded, PG_STAGE_PROBES)

"""--auto-phases: start a new phase when the statement mix changes.

Each interval is labelled from what the server's clients were doing:
statements started (stage probes) and IO done on behalf of a statement
(so a long index build, one statement running for minutes, still counts).
  ddl    CREATE INDEX / ALTER TABLE / CREATE TABLE ... SELECT running
  load   inserts only
  mixed  reads and writes
  read   reads only
  write  updates/deletes without reads
An idle interval keeps the current phase. A label that differs from the
current phase's starts a phase named auto<N>.<label> at that interval's
start, so the interval that shows the change already belongs to it.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from ioattr.collectors.abi import DIGEST_INTERNAL
from ioattr.live.rows import statement_kind

MIN_ACTIVITY = 20      # statements (or 100 IO ops) before an interval may start a phase
IO_PER_STATEMENT = 100  # how many IO ops weigh like one statement started
SHARE = 0.10           # a kind counts as active above this share of the interval's activity


def _activity(statements: dict[str, Any] | None, io: dict[str, Any] | None) -> Counter:
    act: Counter = Counter()
    if statements:
        for kind, n in zip(statements["kind"], statements["count"]):
            if kind not in ("quit", "ping", "set", "show", "sleep", "query"):
                act[kind] += float(n)
    if io:
        for dg, q, layer, n in zip(io["digest"], io["query"], io["layer"], io["count"]):
            if dg is None or dg == DIGEST_INTERNAL or layer != "syscall" or not q:
                continue
            act[statement_kind("query", q)] += float(n) / IO_PER_STATEMENT
    return act


def label(act: Counter) -> str | None:
    total = sum(act.values())
    if total < MIN_ACTIVITY:
        return None
    active = {k for k, v in act.items() if v >= SHARE * total}
    if any(k.startswith(("create_index", "create_unique", "alter_table", "create_table", "optimize"))
           for k in active):
        return "ddl"
    reads = "select" in active
    writes = bool(active & {"insert", "replace", "update", "delete", "load"})
    if reads and writes:
        return "mixed"
    if reads:
        return "read"
    if active <= {"insert", "replace", "load"} and writes:
        return "load"
    if writes:
        return "write"
    return None


class AutoPhaser:
    def __init__(self) -> None:
        self.current: str | None = None
        self.count = 0

    def observe(self, statements: dict[str, Any] | None, io: dict[str, Any] | None) -> str | None:
        """The name of a phase to start with this interval, or None."""
        lab = label(_activity(statements, io))
        if lab is None or lab == self.current:
            return None
        self.current = lab
        self.count += 1
        return f"auto{self.count}.{lab}"

"""IOATTR_MEMTRACE=FILE: where the recorder's memory goes over a long run (a debugging aid).

A recorder's RSS over hours should be flat; when it is not, this says which Python lines hold
the growth. Set, the recorder starts tracemalloc (which slows every allocation: a debugging
run only) and, every MEMTRACE_SECONDS, appends one JSON line to FILE: its RSS, the bytes
Arrow's memory pool holds, and the lines whose allocations grew most since the first sample
(tracemalloc's own snapshot diff), so a growth seen in RSS can be matched to its line or shown
to lie outside Python's heap (Arrow, the allocator's arenas).
"""
from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa  # imported before tracemalloc starts: its import is not a growth

MEMTRACE_SECONDS = 60.0
TOP_LINES = 15


def _rss_kib() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class MemTrace:
    """Samples of the recorder's memory (see the module's docstring); a no-op without a file."""

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None
        self._first: tracemalloc.Snapshot | None = None
        self._t0 = time.monotonic()
        self._next = 0.0
        if self.path is not None:
            tracemalloc.start(1)

    def due(self) -> bool:
        """Whether a sample is due (never without a file): the caller measures its sizes then."""
        return self.path is not None and time.monotonic() >= self._next

    def sample(self, **sizes: int) -> None:
        """One line; `sizes`: the caller's own structure sizes, written as given."""
        if self.path is None:
            return
        self._next = time.monotonic() + MEMTRACE_SECONDS
        snap = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__),))
        if self._first is None:
            self._first = snap
        grown = snap.compare_to(self._first, "lineno")[:TOP_LINES]
        traced, _peak = tracemalloc.get_traced_memory()
        line = {"t": round(time.monotonic() - self._t0, 1), "rss_kib": _rss_kib(),
                "python_traced": traced, "arrow_bytes": pa.total_allocated_bytes(),
                "sizes": sizes,
                "grown": [{"where": str(s.traceback[0]), "bytes": s.size, "diff": s.size_diff,
                           "count_diff": s.count_diff} for s in grown]}
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")

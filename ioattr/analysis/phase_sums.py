"""A recording's per-phase sums, each read in one pass over its table for every phase at once.

`report --by phase`, `explain` and `compare` want the same numbers for every phase (counter
deltas, table sizes, storage reads and writes, statements): asked phase by phase, each phase
scanned the whole counters table (74M rows in a synthetic day) once for its deltas and once
more for its table sizes, and explain asked for every phase twice. Here one query per table
groups by phase and the rest is arithmetic on a few thousand rows, kept for the command's
lifetime (Recording.memo).

The arithmetic is phase_stats.py's definitions, unchanged: a counter's delta in a phase is its
last value in the phase minus its last value in the phases listed before it (or its first value
in the phase when it has none, or 0 for a counter that starts at 0 when first listed, as a
process's own do: EngineAdapter.counters_from_zero), summed over processes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ioattr.engines import registry
from ioattr.format.reader import Recording
from ioattr.model import storage


@dataclass
class _Key:
    """One counter of one process in one phase (pid None: a host counter)."""
    last_v: float
    last_ts: float
    first_v: float
    first_ts: float
    max_v: float

    def merge(self, o: "_Key") -> None:
        """Another group of the same counter (pid NULL and pid 0 count as one process)."""
        if o.last_ts > self.last_ts:
            self.last_v, self.last_ts = o.last_v, o.last_ts
        if o.first_ts < self.first_ts:
            self.first_v, self.first_ts = o.first_v, o.first_ts
        self.max_v = max(self.max_v, o.max_v)


# phase -> (source, name, pid) -> _Key
_Counters = dict[str, dict[tuple[str, str, Any], _Key]]


def _counters(rec: Recording) -> _Counters:
    """Every counter's last, first and largest value per phase and process: one scan."""
    def compute() -> _Counters:
        out: _Counters = {}
        if not rec.has_table("counters"):
            return out
        # kept beside the recording for the next command too (Recording.derived)
        table = rec.derived("counter_phases", (
            "SELECT phase, source, name, pid, arg_max(value, ts) AS last_v, max(ts) AS last_ts, "
            "arg_min(value, ts) AS first_v, min(ts) AS first_ts, max(value) AS max_v "
            "FROM counters WHERE value IS NOT NULL GROUP BY ALL"), ("counters",))
        rows = rec.query(f"SELECT * FROM {table}")
        for phase, src, name, pid, last_v, last_ts, first_v, first_ts, max_v in rows:
            k = _Key(float(last_v), float(last_ts), float(first_v), float(first_ts), float(max_v))
            keys = out.setdefault(phase, {})
            key = (src, name, pid or 0)   # coalesce(pid, 0), as the per-phase queries grouped
            if key in keys:
                keys[key].merge(k)
            else:
                keys[key] = k
        return out
    return rec.memo(("phase_sums", "counters"), compute)


def _before(rec: Recording, c: _Counters, phase: str) -> dict[tuple[str, str, Any], _Key]:
    """Per counter, its group in the latest of the phases listed before `phase` that has it
    (the last value before the phase: arg_max(value, ts) over those phases' rows)."""
    names = rec.phase_names()
    prev: dict[tuple[str, str, Any], _Key] = {}
    for name in names[: names.index(phase)]:
        for key, k in c.get(name, {}).items():
            p = prev.get(key)
            if p is None or k.last_ts > p.last_ts:
                prev[key] = k
    return prev


def counter_deltas(rec: Recording, phase: str, pids: list[int] | None = None) -> dict[str, float]:
    """phase_stats.counter_deltas, from the one-scan sums."""
    c = _counters(rec)
    if not rec.has_table("counters"):
        return {}
    keep = None if pids is None else {int(p) for p in pids}
    before = _before(rec, c, phase)
    from_zero = registry.counters_from_zero()
    first_read = _first_reads(c, from_zero) if from_zero else {}
    sums: dict[tuple[str, str], list[float]] = {}
    for key, cur in c.get(phase, {}).items():
        src, name, pid = key
        if keep is not None and pid not in keep:
            continue
        prev = before.get(key)
        acc = sums.setdefault((src, name), [0.0, 0.0, 0.0])
        if prev is not None:
            base = prev.last_v
        elif src in from_zero and cur.first_ts > first_read[(src, pid)]:
            base = 0.0   # first listed after the source's first reading: it started at 0 since
        else:
            base = cur.first_v
        acc[0] += cur.last_v - base
        acc[1] += cur.last_v
        acc[2] += cur.max_v
    out: dict[str, float] = {}
    for (src, name), (delta, last, mx) in sums.items():
        out[f"{src}:{name}"] = delta     # cumulative counters: what the phase added
        out[f"{src}_last:{name}"] = last  # gauges: the value at the phase's end
        out[f"{src}_max:{name}"] = mx     # gauges: the phase's peak
    return out


def _first_reads(c: _Counters, sources: frozenset[str]) -> dict[tuple[str, Any], float]:
    """(source, server pid) -> the time of that source's first reading, of the sources given."""
    first: dict[tuple[str, Any], float] = {}
    for keys in c.values():
        for (src, _, pid), k in keys.items():
            if src in sources:
                first[(src, pid)] = min(first.get((src, pid), k.first_ts), k.first_ts)
    return first


def table_size_rows(rec: Recording, phase: str) -> list[tuple[str, float | None, float]]:
    """phase_stats.table_sizes' rows (name, size at the phase's end, change over it), from the
    one-scan sums: the `table_files` source lists a table only when its size changed, so its
    size before the phase is its last value before it, and a table first listed after the
    process's first read grew from 0."""
    c = _counters(rec)
    first_read: dict[Any, float] = {}
    for keys in c.values():
        for (src, _, pid), k in keys.items():
            if src == "table_files":
                first_read[pid] = min(first_read.get(pid, k.first_ts), k.first_ts)
    cur = {(n, pid): k for (src, n, pid), k in c.get(phase, {}).items() if src == "table_files"}
    before = {(n, pid): k for (src, n, pid), k in _before(rec, c, phase).items() if src == "table_files"}
    sums: dict[str, list[float]] = {}
    for key in cur.keys() | before.keys():
        name, pid = key
        k, p = cur.get(key), before.get(key)
        acc = sums.setdefault(name, [0.0, 0.0])
        acc[0] += k.last_v if k is not None else before[key].last_v  # a key not in cur is in before
        if k is not None:
            base = p.last_v if p is not None else (0.0 if k.first_ts > first_read[pid] else k.first_v)
            acc[1] += k.last_v - base
    return [(name, last, change) for name, (last, change) in sums.items()]


@dataclass
class IoSums:
    """A phase's storage reads and writes (storage.py's definition) and its syscall-layer ops."""
    reads: float = 0.0
    read_bytes: float = 0.0
    writes: float = 0.0
    write_bytes: float = 0.0
    io_ops: float = 0.0


def io_sums(rec: Recording, phase: str) -> IoSums:
    """The phase's IoSums; one scan of io for every phase."""
    def compute() -> dict[str, IoSums]:
        st = storage.storage_sql("io")
        out: dict[str, IoSums] = {}
        for ph, r, rb, w, wb, ops in rec.query(
                f"SELECT phase, sum(count) FILTER ({st} AND op = 'read'), sum(bytes) FILTER ({st} AND op = 'read'), "
                f"sum(count) FILTER ({st} AND op = 'write'), sum(bytes) FILTER ({st} AND op = 'write'), "
                f"sum(count) FILTER (layer = 'syscall') FROM {rec.totals('io')} io GROUP BY phase"):
            out[ph] = IoSums(float(r or 0), float(rb or 0), float(w or 0), float(wb or 0), float(ops or 0))
        return out
    return rec.memo(("phase_sums", "io"), compute).get(phase) or IoSums()


def statement_counts(rec: Recording, phase: str) -> dict[str, float]:
    """Statements per kind in the phase; one scan of statements for every phase."""
    def compute() -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for ph, kind, n in rec.query("SELECT phase, kind, sum(count) FROM statements GROUP BY phase, kind"):
            out.setdefault(ph, {})[kind] = float(n)
        return out
    return dict(rec.memo(("phase_sums", "statements"), compute).get(phase, {}))

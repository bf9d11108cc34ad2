"""The latency histogram's bucket bounds and percentiles from summed buckets.

Mirrors hist_slot() in bpf/maps.bpf.h: slot 0 holds < 2^8 ns; above that,
two slots per power of two (so a bucket is at most ~41% wide). A
percentile is interpolated linearly inside its bucket.
"""
from __future__ import annotations

from typing import Sequence

from ioattr.collectors.abi import HIST_MIN_SHIFT, HIST_SLOTS


def slot_bounds(slot: int) -> tuple[float, float]:
    """[low, high) in nanoseconds of one slot."""
    if slot == 0:
        return 0.0, float(1 << HIST_MIN_SHIFT)
    msb = (slot - 1) // 2 + HIST_MIN_SHIFT
    half = (slot - 1) % 2
    low = float((1 << msb) + half * (1 << (msb - 1)))
    return low, low + float(1 << (msb - 1))


BOUNDS = [slot_bounds(i) for i in range(HIST_SLOTS)]


def slot_of(ns: int) -> int:
    """The slot a latency of ns nanoseconds is counted in: hist_slot() of bpf/maps.bpf.h, in
    Python (the last slot also holds everything above its bounds)."""
    if ns < (1 << HIST_MIN_SHIFT):
        return 0
    msb = ns.bit_length() - 1
    return min((msb - HIST_MIN_SHIFT) * 2 + ((ns >> (msb - 1)) & 1) + 1, HIST_SLOTS - 1)


def slot_ending_at(ns: int) -> int:
    """The slot whose upper bound is exactly ns (a power of two), for cumulative buckets
    (Prometheus `le`) that are exact sums of slots; ValueError when no slot ends there."""
    for slot, (_, high) in enumerate(BOUNDS):
        if high == ns:
            return slot
    raise ValueError(f"no histogram slot ends at {ns} ns")


def percentile_ns(hist: Sequence[int], q: float) -> float | None:
    """The q-quantile (0..1) of a histogram, or None when it is empty."""
    total = sum(hist)
    if total <= 0:
        return None
    rank = q * total
    seen = 0.0
    for slot, n in enumerate(hist):
        if n <= 0:
            continue
        if seen + n >= rank:
            low, high = BOUNDS[slot]
            frac = (rank - seen) / n
            return low + (high - low) * min(max(frac, 0.0), 1.0)
        seen += n
    return BOUNDS[-1][1]


def latency_us(hist: Sequence[int]) -> dict[str, float | None]:
    """The report contract's latency_us object: p50 and p99 in microseconds."""
    out: dict[str, float | None] = {}
    for name, q in (("p50", 0.50), ("p99", 0.99)):
        v = percentile_ns(hist, q)
        out[name] = None if v is None else round(v / 1000.0, 3)
    return out

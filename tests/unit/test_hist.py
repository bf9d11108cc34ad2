"""The latency histogram: one layout (ioattr/model/hist.py, mirroring hist_slot() in
bpf/maps.bpf.h), used as-is by `top`'s vectorised percentiles and the exporter's
Prometheus buckets; slot edges, the value -> slot mapping and percentiles exactly."""
from __future__ import annotations

import random

import numpy as np
import pytest

from ioattr.collectors.abi import HIST_MIN_SHIFT, HIST_SLOTS
from ioattr.format.schema import HIST_COLUMNS
from ioattr.model import hist
from ioattr.model.hist import BOUNDS, latency_us, percentile_ns, slot_bounds, slot_of


def test_layout_is_log2_with_two_slots_per_power() -> None:
    assert (HIST_MIN_SHIFT, HIST_SLOTS, len(BOUNDS), len(HIST_COLUMNS)) == (8, 64, 64, 64)
    assert BOUNDS[:5] == [(0.0, 256.0), (256.0, 384.0), (384.0, 512.0), (512.0, 768.0), (768.0, 1024.0)]
    # contiguous, and every even slot 2k ends at 2^(8+k) ns
    for s in range(1, HIST_SLOTS):
        assert BOUNDS[s][0] == BOUNDS[s - 1][1]
    for k in range(1, HIST_SLOTS // 2):
        assert BOUNDS[2 * k][1] == float(1 << (HIST_MIN_SHIFT + k))
    # at most 50% wide relative to its low edge (the docstring's ~41% is the geometric mean)
    assert max((hi - lo) / lo for lo, hi in BOUNDS[1:]) == 0.5


def test_value_to_slot_matches_the_edges() -> None:
    """slot_of is hist_slot(): a slot's low edge and its last nanosecond land in it."""
    assert [slot_of(v) for v in (0, 1, 255, 256, 383, 384, 511, 512, 1023, 1024)] == [0, 0, 0, 1, 1, 2, 2, 3, 4, 5]
    for s in range(1, HIST_SLOTS):
        lo, hi = slot_bounds(s)
        assert slot_of(int(lo)) == s and slot_of(int(hi) - 1) == s
    assert slot_of(1 << 62) == HIST_SLOTS - 1  # beyond the last slot: clamped, as in BPF


def test_percentiles_interpolate_inside_the_bucket() -> None:
    h = [0] * HIST_SLOTS
    assert percentile_ns(h, 0.5) is None and latency_us(h) == {"p50": None, "p99": None}
    h[3] = 100                   # [512, 768) ns
    assert percentile_ns(h, 0.5) == 640.0
    assert percentile_ns(h, 0.99) == 512 + 256 * 0.99
    h[9] = 100                   # [4096, 6144) ns: p50 is the top of slot 3, p99 98% into slot 9
    assert percentile_ns(h, 0.5) == 768.0
    assert percentile_ns(h, 0.99) == 4096 + 2048 * 0.98
    assert latency_us(h) == {"p50": 0.768, "p99": round((4096 + 2048 * 0.98) / 1000, 3)}


def test_top_uses_the_same_layout_and_interpolation() -> None:
    from ioattr.topview.top import percentiles_ns

    rnd = random.Random(7)
    rows = [[rnd.choice((0, 0, 1, 5, 40)) for _ in range(HIST_SLOTS)] for _ in range(50)]
    rows.append([0] * HIST_SLOTS)
    got50, got99 = percentiles_ns(np.array(rows), 0.5), percentiles_ns(np.array(rows), 0.99)
    for r, a, b in zip(rows, got50, got99):
        want50, want99 = percentile_ns(r, 0.5), percentile_ns(r, 0.99)
        if want50 is None:
            assert np.isnan(a) and np.isnan(b)
        else:
            assert a == pytest.approx(want50, rel=1e-12) and b == pytest.approx(want99, rel=1e-12)


def test_exporter_buckets_are_sums_of_whole_slots() -> None:
    from ioattr.prometheus.metrics_state import BUCKET_EXPONENTS, BUCKET_LAST_SLOT, BUCKET_LE_SECONDS

    assert BUCKET_LAST_SLOT[0] == 4 and BUCKET_LAST_SLOT[-1] == 52
    for slot, le in zip(BUCKET_LAST_SLOT, BUCKET_LE_SECONDS):
        assert BOUNDS[slot][1] == le * 1e9          # the bucket's edge is the slot's upper bound
    assert BUCKET_LE_SECONDS == tuple((1 << e) / 1e9 for e in BUCKET_EXPONENTS)
    with pytest.raises(ValueError):
        hist.slot_ending_at(1000)

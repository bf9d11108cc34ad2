"""explain's other_changes: when the asked metric did not change, what did (and which metric
asks for it), from the two phases' storage reads and writes per second.

Why here: it is the line a user reads first under "no significant change"; a rate said moved
when it did not, or a metric suggested that is undefined on a side, sends them the wrong way."""
from __future__ import annotations

from ioattr.analysis.explain import METRICS, Side, other_changes
from ioattr.analysis.phase_stats import PhaseStats


def _side(name: str, seconds: float, counters: dict[str, float], **io: float) -> Side:
    st = PhaseStats(name, 0.0, seconds, counters)
    for k, v in io.items():
        setattr(st, k, v)
    return Side(None, name, st, None, "query")  # type: ignore[arg-type]


def test_writes_that_moved_are_said_with_the_metric_to_ask() -> None:
    m = METRICS["reads_per_query"]
    base = _side("ro", 10.0, {"status:Com_select": 1000.0}, writes=500.0, write_bytes=500 * 16384.0)
    targ = _side("rw", 10.0, {"status:Com_select": 1000.0, "innodb_metrics:dml_inserts": 400.0},
                 writes=5000.0, write_bytes=5000 * 16384.0)
    said = other_changes(base, targ, m)
    assert said == ("reads per query did not change, but storage writes per second 50.0 -> 500; "
                    "KB written per second 800 -> 8,000 (not --metric writes_per_insert: a side has "
                    "no inserts; compare's per-transaction columns rate them)")
    base.stats.counters["innodb_metrics:dml_inserts"] = 400.0  # both insert: per row, and the metric is defined
    assert other_changes(base, targ, m).endswith("(--metric writes_per_insert)")


def test_nothing_said_under_the_floor_or_within_the_factor() -> None:
    m = METRICS["reads_per_query"]
    small = _side("a", 10.0, {}, writes=10.0, write_bytes=10 * 16384.0)
    big = _side("b", 10.0, {}, writes=90.0, write_bytes=90 * 16384.0)
    assert other_changes(small, big, m) is None          # fewer than 100 IOs on both sides
    a = _side("a", 10.0, {}, writes=1000.0, write_bytes=1000 * 16384.0)
    b = _side("b", 10.0, {}, writes=1200.0, write_bytes=1200 * 16384.0)
    assert other_changes(a, b, m) is None                # x1.2: within the factor
    # the metric's own term is never repeated: a read metric's bytes are, its ops are not
    r1 = _side("a", 10.0, {"status:Com_select": 100.0}, reads=1000.0, read_bytes=1000 * 16384.0)
    r2 = _side("b", 10.0, {"status:Com_select": 100.0}, reads=1000.0, read_bytes=1000 * 65536.0)
    assert other_changes(r1, r2, m) == ("reads per query did not change, but KB read per query "
                                        "160 -> 640 (--metric read_bytes_per_query)")
    # twice the queries in the same time, the same bytes per query: throughput, not said
    r3 = _side("b", 10.0, {"status:Com_select": 200.0}, reads=2000.0, read_bytes=2000 * 16384.0)
    assert other_changes(r1, r3, m) is None

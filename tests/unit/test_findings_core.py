"""The engine-neutral findings' verdict rules on stub evidence (no recording, no server).

Protects the difference between "the question does not apply" (not_applicable: one phase read
no pages, so there is no access pattern to compare) and "the evidence is missing"
(inconclusive: no page was classified at all), which explain ranks differently.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ioattr.engines.innodb.findings import random_access


class _Rec:
    """Answers async_read_fraction's one query with (api, pages) rows per phase."""

    def __init__(self, by_phase: dict[int, list[tuple[str, float]]]) -> None:
        self.by_phase = by_phase

    def query(self, sql: str, params: list[Any]) -> list[tuple[str, float]]:
        return self.by_phase.get(params[0], [])


def _evidence(base: list[tuple[str, float]], target: list[tuple[str, float]], change: float = 100.0) -> Any:
    rec = _Rec({1: base, 2: target})
    return SimpleNamespace(reads=True, change=change,
                           base=SimpleNamespace(rec=rec, phase=1), target=SimpleNamespace(rec=rec, phase=2))


def test_random_access_zero_baseline_is_not_applicable() -> None:
    f = random_access(_evidence([], [("sync", 500.0)]))
    assert f["verdict"] == "not_applicable"
    assert f["evidence"]["summary"] == "no page reads in the baseline phase"


def test_random_access_zero_target_is_not_applicable() -> None:
    assert random_access(_evidence([("io_uring", 80.0)], []))["verdict"] == "not_applicable"


def test_random_access_no_pages_anywhere_is_inconclusive() -> None:
    assert random_access(_evidence([], []))["verdict"] == "inconclusive"


def test_random_access_lost_read_ahead_is_supported() -> None:
    # 60% read ahead asynchronously before, 10% after, and reads grew
    f = random_access(_evidence([("io_uring", 60.0), ("sync", 40.0)], [("io_uring", 10.0), ("sync", 90.0)]))
    assert f["verdict"] == "supported"
    assert f["evidence"]["async_fraction_baseline"] == 0.6
    assert f["evidence"]["async_fraction_target"] == 0.1


def test_random_access_kept_read_ahead_is_refuted() -> None:
    f = random_access(_evidence([("io_uring", 50.0), ("sync", 50.0)], [("io_uring", 45.0), ("sync", 55.0)]))
    assert f["verdict"] == "refuted"


def _readahead_evidence(base: tuple[float, float], target: tuple[float, float], gross: float) -> Any:
    """Read-ahead (pages, evicted unused) per side over 100 queries each, no pages table rows."""
    counters = {"base": base, "target": target}
    rec = _Rec({})

    def counter(side: str, name: str) -> float:
        ra, ev = counters[side]
        return ev if name.endswith("_evicted") else ra

    side = SimpleNamespace(rec=rec, phase=1, denominator=100.0, unit="query")
    return SimpleNamespace(reads=True, change=gross, gross=gross, counter=counter,
                           metric=SimpleNamespace(measure="ops", per="query"), setting=lambda *a: None,
                           base=side, target=SimpleNamespace(rec=rec, phase=2, denominator=100.0, unit="query"),
                           connected=True)


def test_readahead_wasted_pages_are_added_io_and_supported() -> None:
    from ioattr.engines.innodb.findings import readahead_waste

    # 1,000 pages read ahead per 100 queries, 800 evicted unused; reads per query +12
    f = readahead_waste(_readahead_evidence((0.0, 0.0), (1000.0, 800.0), 12.0))
    ev = f["evidence"]
    assert f["verdict"] == "supported", f
    assert (ev["wasted_per_op_target"], ev["used_per_op_target"]) == (8.0, 2.0)
    assert ev["share_of_change"] == round(8 / 12, 6) and ev["moved_share"] == round(2 / 12, 6)
    assert "wasted (added" in ev["summary"] and "used (moved" in ev["summary"]


def test_readahead_used_pages_are_moved_io_and_refuted() -> None:
    from ioattr.engines.innodb.findings import readahead_waste

    # the same read-ahead, all used: moved IO, not a cause, however much of the change it is
    f = readahead_waste(_readahead_evidence((0.0, 0.0), (1000.0, 0.0), 12.0))
    assert f["verdict"] == "refuted", f
    assert f["evidence"]["share_of_change"] == 0.0
    assert "moved IO, not extra" in f["evidence"]["summary"]


def test_readahead_little_waste_of_a_big_change_is_not_supported() -> None:
    from ioattr.engines.innodb.findings import readahead_waste

    # 10% wasted, but the wasted pages are 1/100 of the change: not its cause
    f = readahead_waste(_readahead_evidence((0.0, 0.0), (100.0, 10.0), 10.0))
    assert f["verdict"] == "refuted", f

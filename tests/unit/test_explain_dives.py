"""Extra IO, not moved IO: the optimizer's dive reads split per statement and index (ioattr.analysis.dives)."""
from __future__ import annotations

import pytest

from ioattr.analysis import dives

RANGE = "SELECT c FROM t WHERE id BETWEEN ? AND ?"
THREE = "SELECT pad FROM u WHERE a BETWEEN ? AND ? AND b > ? AND c > ?"
TOP10 = "SELECT price FROM t FORCE INDEX (ix_price) WHERE price >= ? ORDER BY price LIMIT ?"


def _k(index: str | None, stage: str | None, query: str | None) -> tuple:
    return (index, "leaf", stage, "connection", "tablespace", query)


def test_dives_into_the_range_the_scan_reads_are_moved() -> None:
    # sysbench's ranges: the dives read the range's leaves, the scan reads the rest of them
    base = {_k("s.t.PRIMARY", None, RANGE): 10.0}
    target = {_k("s.t.PRIMARY", "estimate", RANGE): 200.0, _k("s.t.PRIMARY", None, RANGE): 50.0}
    sp = dives.split(base, target, 100.0, 100.0, 2.4)
    assert sp.added_target == 0 and sp.moved_target == pytest.approx(2.0)
    assert sp.added_share == 0 and sp.moved_share == pytest.approx(2.0 / 2.4)
    assert sp.unused == () and sp.limited == ()


def test_dives_into_an_index_the_plan_did_not_read_are_added() -> None:
    base = {_k("d.u.ix_a", "estimate", THREE): 5.0, _k("d.u.PRIMARY", None, THREE): 100.0}
    target = {_k("d.u.ix_a", "estimate", THREE): 5.0, _k("d.u.ix_b", "estimate", THREE): 150.0,
              _k("d.u.ix_c", "estimate", THREE): 150.0, _k("d.u.PRIMARY", None, THREE): 100.0,
              _k("[ibuf_bitmap]", "estimate", THREE): 4.0}
    sp = dives.split(base, target, 100.0, 100.0, 3.04)
    assert sp.unused == ("d.u.ix_b", "d.u.ix_c")
    assert sp.added_base == 0 and sp.added_target == pytest.approx(3.0)
    # ix_a (the plan's index: nothing shows its dives extra) and the bitmap page stay moved
    assert sp.moved_base == pytest.approx(0.05) and sp.moved_target == pytest.approx(0.09)
    assert sp.added_share == pytest.approx(3.0 / 3.04)


def test_limit_range_ends_beyond_the_execution_reads_are_added() -> None:
    target = {_k("ib.t.ix_price", "estimate", TOP10): 900.0, _k("ib.t.ix_price", None, TOP10): 100.0}
    sp = dives.split({}, target, 100.0, 100.0, 10.0)
    assert sp.limited == ("ib.t.ix_price",) and sp.unused == ()
    assert sp.added_target == pytest.approx(8.0) and sp.moved_target == pytest.approx(1.0)


def test_a_statement_whose_execution_read_nothing_keeps_its_dives_moved() -> None:
    # a covering IN list: the dives read every leaf the execution then found in the pool
    q = "SELECT count(*) FROM b.t WHERE k IN (...)"
    sp = dives.split({}, {_k("b.t.k", "estimate", q): 500.0}, 10.0, 10.0, 50.0)
    assert sp.added_target == 0 and sp.moved_target == pytest.approx(50.0) and sp.unused == ()

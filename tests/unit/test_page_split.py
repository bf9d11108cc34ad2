"""page_split: integer apportioning and the split of one join key preserve sums exactly."""
from __future__ import annotations

import random

from ioattr.analysis.page_split import apportion, split_key


def test_apportion_sums_exactly() -> None:
    rnd = random.Random(7)
    for _ in range(2000):
        n = rnd.randint(1, 8)
        w = [rnd.randint(0, 50) for _ in range(n)]
        total = rnd.randint(0, 500)
        got = apportion(total, w)
        assert sum(got) == total and len(got) == n
        if sum(w):
            for g, x in zip(got, w):
                assert abs(g - total * x / sum(w)) < 1  # within one of the exact share


def test_apportion_edges() -> None:
    assert apportion(5, []) == []
    assert apportion(0, [1, 2]) == [0, 0]
    assert apportion(3, [0, 0, 0]) == [1, 1, 1]
    assert apportion(10, [1, 1]) == [5, 5]
    assert apportion(1, [1, 1]) == [1, 0]  # ties go to the earlier weight


def test_one_page_per_io_splits_exactly() -> None:
    io = [(("f", "read"), 10, 10 * 16384)]
    pages = [(("PRIMARY",), 7, 7 * 16384), (("k",), 3, 3 * 16384)]
    cells = split_key(io, pages)
    assert sorted(cells) == sorted([(("f", "read"), ("PRIMARY",), 7, 7 * 16384, 7),
                                    (("f", "read"), ("k",), 3, 3 * 16384, 3)])


def test_multi_page_writes_apportion_ops() -> None:
    # two doublewrite batches of 64 pages each: 2 writes, 128 pages of three indexes
    io = [(("ibdata1", "write"), 2, 128 * 16384)]
    pages = [(("a",), 100, 100 * 16384), (("b",), 20, 20 * 16384), (("c",), 8, 8 * 16384)]
    cells = split_key(io, pages)
    assert sum(c[2] for c in cells) == 2 and sum(c[3] for c in cells) == 128 * 16384
    assert {c[1]: c[4] for c in cells} == {("a",): 100, ("b",): 20, ("c",): 8}


def test_unclassified_rest_keeps_null_page_dims() -> None:
    io = [(("f", "read"), 5, 5 * 16384 + 100)]
    pages = [(("PRIMARY",), 4, 4 * 16384)]
    cells = split_key(io, pages)
    assert (("f", "read"), None, 1, 16384 + 100, 0) in cells
    assert sum(c[2] for c in cells) == 5 and sum(c[3] for c in cells) == 5 * 16384 + 100


def test_random_keys_preserve_every_io_group() -> None:
    rnd = random.Random(3)
    for _ in range(500):
        io = [((f"g{j}",), rnd.randint(0, 30), rnd.randint(0, 30) * 4096) for j in range(rnd.randint(1, 4))]
        pages = [((f"p{i}",), rnd.randint(0, 40), rnd.randint(0, 40) * 4096) for i in range(rnd.randint(0, 5))]
        cells = split_key(io, pages)
        for d, c, b in io:
            mine = [x for x in cells if x[0] == d]
            assert sum(x[2] for x in mine) == c and sum(x[3] for x in mine) == b
        if pages and any(c or b for _, c, b in io):
            assert sum(x[4] for x in cells) == sum(p[1] for p in pages)

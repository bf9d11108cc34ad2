"""Splitting IO rows by InnoDB page dimensions so that adding a dimension only splits rows.

The io table counts IO operations and bytes per (thread, file, op, api, stage, statement...);
the pages table counts the InnoDB pages those same IOs carried, per (thread, op, api, stage,
statement, file, index, level, page type). A report by page dimensions is the io table's rows,
each split by the pages of the same IO:

* the join key of an IO row and its pages is `JOIN_KEY` (phase, process, thread, op, api,
  stage, statement digest, and the file as device + inode); every io dimension is taken from
  the io row, every page dimension from the pages;
* within one key, the pages' bytes go to their page classes exactly, and the IO operations are
  apportioned to them in proportion to pages (exact whenever each IO is one page, as InnoDB's
  page reads and page-cleaner writes are; a doublewrite batch of 64 pages in one write is
  apportioned); `pages` is the exact page count;
* what is left of an io row (IO of other files, other layers, bytes no page was classified for)
  keeps index, level and page_type null.

So for any dimension lists A within B, the rows of `--by B` summed over B's extra dimensions
are the rows of `--by A`, count and bytes, per layer and op. Everything here is integer
arithmetic (largest remainders), so the sums are exact, not rounded.
"""
from __future__ import annotations

from typing import Hashable, Sequence

# io and pages columns that identify one IO's rows in both tables (dev/ino: pages.dev, pages.ino)
JOIN_KEY = ("phase", "pid", "tid", "op", "api", "stage", "digest", "dev", "ino")


def apportion(total: int, weights: Sequence[int]) -> list[int]:
    """Integers proportional to weights that sum to exactly `total` (largest remainders; ties
    go to the earlier weight). All-zero weights get an even split, so nothing is lost."""
    n = len(weights)
    if n == 0:
        return []
    w = [max(0, int(x)) for x in weights]
    s = sum(w)
    if s == 0:
        w, s = [1] * n, n
    base = [total * x // s for x in w]
    left = total - sum(base)
    if left:
        order = sorted(range(n), key=lambda i: (-(total * w[i] % s), i))
        for i in order[:left]:
            base[i] += 1
    return base


IoGroup = tuple[Hashable, int, int]        # (io dims incl. layer/op, count, bytes)
PageGroup = tuple[Hashable, int, int]      # (page dims, pages, bytes)
Cell = tuple[Hashable, Hashable, int, int, int]  # (io dims, page dims or None, count, bytes, pages)


def split_key(io: Sequence[IoGroup], pages: Sequence[PageGroup]) -> list[Cell]:
    """The cells of one join key: every io group split over the page groups.

    The split part of the key's IO is min(io bytes, page bytes) and min(io ops, pages) ops
    (a key whose pages cover all its bytes, with one page per IO, is split whole); each io
    group gets its share of that in proportion to its own bytes and ops, and spreads it over
    the page groups in proportion to their bytes and pages. The rest of each io group is one
    cell with page dimensions None. Sums per io group are preserved exactly."""
    if not pages:
        return [(d, None, c, b, 0) for d, c, b in io]
    n_pages = sum(p[1] for p in pages)
    p_bytes = sum(p[2] for p in pages)
    i_count = sum(g[1] for g in io)
    i_bytes = sum(g[2] for g in io)
    split_c = apportion(min(i_count, n_pages), [g[1] for g in io])
    split_b = apportion(min(i_bytes, p_bytes), [g[2] for g in io])
    split_p = apportion(n_pages, [g[2] or g[1] for g in io])
    out: list[Cell] = []
    for (d, c, b), sc, sb, sp in zip(io, split_c, split_b, split_p):
        cs = apportion(sc, [p[1] for p in pages])
        bs = apportion(sb, [p[2] for p in pages])
        ps = apportion(sp, [p[1] for p in pages])
        for (pd, _, _), cc, bb, pp in zip(pages, cs, bs, ps):
            if cc or bb or pp:
                out.append((d, pd, cc, bb, pp))
        if c - sc or b - sb:
            out.append((d, None, c - sc, b - sb, 0))
    return out

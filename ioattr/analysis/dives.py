"""Extra IO, not moved IO: which of the optimizer's index-dive reads the execution did not need.

A dive (records_in_range) reads pages before the query runs. When those are pages the
execution then reads anyway (a range on the plan's index: the dive reads the range's ends and
the pages between them, which the scan then finds in the buffer pool), the dive only *moved*
the reads earlier: without it the execution would have read the same pages. Only the pages
the execution did not need were *added*: dives into indexes other than the plan's, and range
ends a LIMIT scan never reaches.

What the recording holds to tell them apart: storage reads per statement, index and stage
(no page numbers per stage), and a statement's buffer-pool hits are not recorded. So the split
is made per (statement, index), with both phases of the comparison as evidence of the plan:

  added   dives into an index other than the plan's. A statement's plan index is the one
          among those it dived into that its execution read from storage (in either phase);
          when it read none of them (the dives had put the pages it needed in the pool), the
          one its dives read least: the optimizer picks the narrowest range, and a narrow range
          costs a dive the fewest pages. A statement that dived into one index keeps it.
  added   for a statement with LIMIT, dives into the plan's index beyond the statement's own
          execution reads of it in the phase: the scan stops after LIMIT rows, so range ends
          and pages between that the dives read are not scanned (its execution reads found
          in the buffer pool are not recorded: this part is an upper bound).
  moved   the rest: dives into the index the execution read, over the range it scans. Dives
          of a statement whose execution read nothing from storage at all (every page it
          needed was in the pool, possibly put there by its dives) and dive reads of no index
          (e.g. the change-buffer bitmap) count as moved: nothing shows they were extra.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ioattr.model import explain_math as em

I_INDEX, I_STAGE, I_QUERY = 0, 2, 5   # contributor keys: (index, level, stage, role, file_class, query)
EXECUTE = (None, "optimize", "execute")  # a statement's own reads outside its dives: stage null
#   (--stages statement), or optimize (const tables read while optimizing) and execute (--stages full)
_LIMIT = re.compile(r"\bLIMIT\b", re.IGNORECASE)


@dataclass(frozen=True)
class Split:
    """Dive reads per operation on each side, split into added and moved, with shares of the
    gross change (None when the change is zero)."""
    added_base: float
    added_target: float
    moved_base: float
    moved_target: float
    added_share: float | None
    moved_share: float | None
    unused: tuple[str, ...]     # indexes dived into that the diving statements' execution did not read
    limited: tuple[str, ...]    # indexes dived into by LIMIT statements beyond their execution's reads


def _named(index: Any) -> bool:
    return bool(index) and not str(index).startswith("[")


def _tally(contrib: dict[tuple, float]) -> tuple[dict[tuple, float], dict[tuple, float]]:
    """(dive reads per (query, index), execution reads per (query, index))."""
    dive: dict[tuple, float] = {}
    execute: dict[tuple, float] = {}
    for k, v in contrib.items():
        if not v:
            continue
        qi = (k[I_QUERY], k[I_INDEX])
        if k[I_STAGE] == "estimate":
            dive[qi] = dive.get(qi, 0.0) + v
        elif k[I_STAGE] in EXECUTE and k[I_QUERY] is not None:
            execute[qi] = execute.get(qi, 0.0) + v
    return dive, execute


def _plans(sides: list[tuple[dict, dict]]) -> dict[Any, set[Any]]:
    """Each diving statement's plan indexes (the module's rule), from both phases."""
    dived: dict[Any, dict[Any, float]] = {}
    for dive, _ in sides:
        for (q, index), v in dive.items():
            if _named(index) and q is not None:
                dived.setdefault(q, {})[index] = dived.get(q, {}).get(index, 0.0) + v
    read = {qi for _, execute in sides for qi, v in execute.items() if v}
    out: dict[Any, set[Any]] = {}
    for q, by_index in dived.items():
        used = {i for i in by_index if (q, i) in read}
        out[q] = used or {min(by_index, key=lambda i: (by_index[i], str(i)))}
    return out


def split(base_contrib: dict[tuple, float], target_contrib: dict[tuple, float], base_den: float,
          target_den: float, gross: float) -> Split:
    """The dives' reads of both sides split into added and moved (the module's rules)."""
    sides = [_tally(base_contrib), _tally(target_contrib)]
    plan = _plans(sides)
    unused: set[str] = set()
    limited: set[str] = set()
    per: list[tuple[float, float]] = []
    for (dive, execute), den in zip(sides, (base_den, target_den)):
        added = moved = 0.0
        for (q, index), v in dive.items():
            extra = 0.0
            if _named(index) and q is not None:
                if index not in plan.get(q, {index}):
                    extra = v
                    unused.add(index)
                elif _LIMIT.search(q):
                    extra = max(0.0, v - execute.get((q, index), 0.0))
                    if extra:
                        limited.add(index)
            added += extra
            moved += v - extra
        per.append((added / den if den else 0.0, moved / den if den else 0.0))
    (ab, mb), (at, mt) = per
    return Split(ab, at, mb, mt, em.share(at - ab, gross) if gross else None,
                 em.share(mt - mb, gross) if gross else None, tuple(sorted(unused)), tuple(sorted(limited)))

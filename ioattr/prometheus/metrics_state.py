"""The exporter's counters: cumulative since start, label cardinality bounded, never decreasing.

Each interval's deltas (the session's `Interval`) are added to cumulative
series, one per label set. The series of a family can multiply with files
and indexes, so those labels are bounded: at most N values of `file` (and of
`index`) have series of their own, everything else is counted under the
value `other`, its other labels kept (so `sum by (file_class)` stays exact).

Which N? The values with the most decayed activity (IOs plus 4 KiB units
moved, half-life `half_life` seconds). A value outside the top N takes the
place of the weakest member only when it is `hysteresis` times as active
and that member has been in for `min_dwell` seconds, so membership does not
flap. Series: at most N members, plus the values that left within
`retention` (beyond N of those, only the ones that left less than
`min_frozen` seconds ago), plus `other` per combination of the other labels.

Counters stay monotonic through membership changes, by construction:
- a value's series only ever grows. When it leaves the top N its series is
  kept as it was (frozen), its new IO goes to `other` (which only grows),
  and after `retention` seconds of being out the frozen series is dropped
  (Prometheus then marks it stale; it has not moved since it froze, so no
  rate or increase over a later window changes). With more than N frozen,
  the oldest go after `min_frozen` seconds, long enough for every scrape to
  have seen their final value. A value that comes back within `retention`
  continues its own series.
- a value entering the top N starts a series from what it does from then
  on (its first interval included); what it did before stays in `other`.
So in every interval the growth of all series, summed, is exactly the IO
counted: nothing counted twice, nothing lost, no series going down. (The IO
of a PostgreSQL relation's file whose relation is not known yet is counted
in the interval its name comes, at most HOLD_SECONDS late: ExporterState._hold_unnamed.)
"""
from __future__ import annotations

from typing import SupportsInt

import numpy as np

from ioattr.collectors.file_classes import LSM_LEVELS, ONE_INDEX_PER_FILE
from ioattr.format.schema import HIST_COLUMNS
from ioattr.model.hist import slot_ending_at
from ioattr.model.labels import file_label

OTHER = "other"
#: how long the rows of a relation's file wait for its name (ExporterState._hold_unnamed): past one
#: re-read of the names (the session's: throttled to every 5 s) with room for a slow one
HOLD_SECONDS = 30.0
OTHER_CGROUP = "[other]"  # cgroups past CgroupLabels' cap (a cgroup path starts with "/")
MAX_CGROUPS = 32

IO_LABELS = ("layer", "op", "file", "file_class", "device", "role", "cgroup")
HIST_LABELS = ("layer", "op", "file_class", "role")
PAGE_LABELS = ("op", "index", "level", "page_type", "file_class", "role")

# Histogram buckets: every power of two from 2^10 ns (~1 us) to 2^34 ns (~17 s). Each is the upper
# edge of an even slot of the log-linear histogram (see ioattr.model.hist), so counts are exact sums of
# slots, never interpolated. Slots above the last edge only count in +Inf.
BUCKET_EXPONENTS = tuple(range(10, 35))
BUCKET_LAST_SLOT = tuple(slot_ending_at(1 << e) for e in BUCKET_EXPONENTS)  # slot 2k ends at 2^(8+k) ns
BUCKET_LE_SECONDS = tuple((1 << e) / 1e9 for e in BUCKET_EXPONENTS)


class TopN:
    """Which values of one label get series of their own (see the module docstring)."""

    def __init__(self, n: int, *, half_life: float = 60.0, min_dwell: float = 30.0,
                 hysteresis: float = 2.0, retention: float = 600.0, min_frozen: float = 120.0) -> None:
        self.n = n
        self.min_frozen = min(min_frozen, retention)
        self.half_life = half_life
        self.min_dwell = min_dwell
        self.hysteresis = hysteresis
        self.retention = retention
        self.members: dict[str, float] = {}   # value -> when it was admitted
        self.frozen: dict[str, float] = {}    # value -> when it left the top N
        self.score: dict[str, float] = {}
        self._last: float | None = None
        self.evictions = 0

    def __contains__(self, value: str) -> bool:
        return value == "" or value in self.members

    def observe(self, activity: dict[str, float], now: float) -> tuple[list[str], list[str], list[str]]:
        """Update with one interval's activity per value: (admitted, evicted, expired)."""
        if self._last is not None and now > self._last:
            f = 0.5 ** ((now - self._last) / self.half_life)
            for k in list(self.score):
                v = self.score[k] * f
                if v < 1e-3 and k not in self.members:
                    del self.score[k]
                else:
                    self.score[k] = v
        self._last = now
        for k, a in activity.items():
            if k != "":
                self.score[k] = self.score.get(k, 0.0) + a
        admitted: list[str] = []
        evicted: list[str] = []
        cands = sorted((k for k in activity if k != "" and k not in self.members),
                       key=lambda k: self.score.get(k, 0.0), reverse=True)
        for c in cands:
            if len(self.members) < self.n:
                self._admit(c, now)
                admitted.append(c)
                continue
            weakest = min((m for m, t in self.members.items() if now - t >= self.min_dwell),
                          key=lambda m: self.score.get(m, 0.0), default=None)
            if weakest is None or self.score.get(c, 0.0) <= self.hysteresis * self.score.get(weakest, 0.0):
                break  # candidates come strongest first: no later one would win either
            del self.members[weakest]
            self.frozen[weakest] = now
            self.evictions += 1
            evicted.append(weakest)
            self._admit(c, now)
            admitted.append(c)
        expired = [k for k, t in self.frozen.items() if now - t >= self.retention]
        if len(self.frozen) - len(expired) > self.n:
            # bound the frozen ones too: beyond N, the oldest go early, once they have been
            # frozen long enough for any scraper to have read their last value
            rest = sorted((t, k) for k, t in self.frozen.items() if k not in expired)
            expired += [k for t, k in rest[: len(rest) - self.n] if now - t >= self.min_frozen]
        for k in expired:
            del self.frozen[k]
        return admitted, evicted, expired

    def _admit(self, value: str, now: float) -> None:
        self.members[value] = now
        self.frozen.pop(value, None)


class SeriesTable:
    """Cumulative values per label tuple; `bound` (a label) folded to `other` outside its TopN."""

    def __init__(self, labels: tuple[str, ...], width: int, bound: str | None = None,
                 topn: TopN | None = None) -> None:
        self.labels = labels
        self.width = width
        self.bound = bound
        self.bound_at = labels.index(bound) if bound else -1
        self.topn = topn
        self.series: dict[tuple, np.ndarray] = {}
        self._by_value: dict[str, set[tuple]] = {}

    def __len__(self) -> int:
        return len(self.series)

    def add(self, deltas: dict[tuple, np.ndarray], activity_of: int | None, now: float) -> None:
        """Add one interval's deltas (unfolded label tuple -> values); column `activity_of`
        ranks the bound label's values (an idle interval still ages them: pass {})."""
        if self.topn is not None and self.bound_at >= 0:
            activity: dict[str, float] = {}
            col = activity_of or 0
            for key, v in deltas.items():
                val = key[self.bound_at]
                activity[val] = activity.get(val, 0.0) + float(v[col])
            _, _, expired = self.topn.observe(activity, now)
            for val in expired:
                for key in self._by_value.pop(val, ()):
                    self.series.pop(key, None)
        for key, v in deltas.items():
            if self.topn is not None and self.bound_at >= 0 and key[self.bound_at] not in self.topn:
                key = key[: self.bound_at] + (OTHER,) + key[self.bound_at + 1:]
            cur = self.series.get(key)
            if cur is None:
                self.series[key] = np.array(v, dtype=np.int64, copy=True)
                if self.bound_at >= 0:
                    self._by_value.setdefault(key[self.bound_at], set()).add(key)
            else:
                cur += v


class CgroupLabels:
    """Which cgroups get a label value of their own: the first `n` seen, for the exporter's
    life; any later one is counted under "[other]".

    The targets' cgroups are few (one per container or unit a server runs in) and a server
    stays in its cgroup, so a first-come cap is enough to bound the series and, unlike a
    ranking, never moves a cgroup's IO from one series to another (counters stay monotonic
    without freezing). Past the cap (e.g. --comm on a host with many short-lived containers)
    the rest is folded, said by ioattr_label_evictions_total{label="cgroup"}."""

    def __init__(self, n: int = MAX_CGROUPS) -> None:
        self.n = n
        self.own: set[str] = set()
        self.folded = 0  # distinct cgroups counted under "[other]"
        self._folded: set[str] = set()

    def label(self, path: str | None) -> str:
        if not path:
            return ""
        if path in self.own:
            return path
        if len(self.own) < self.n:
            self.own.add(path)
            return path
        if path not in self._folded:
            self._folded.add(path)
            self.folded += 1
        return OTHER_CGROUP


def _group(keys: list[tuple], values: np.ndarray) -> dict[tuple, np.ndarray]:
    """Sum the rows of `values` by key."""
    ids: dict[tuple, int] = {}
    gid = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), dtype=np.int64, count=len(keys))
    out = np.zeros((len(ids), values.shape[1] if values.ndim == 2 else 0), dtype=np.int64)
    if len(keys):
        np.add.at(out, gid, values)
    return dict(zip(ids, out))


def _unnamed_relation(relations: dict, path: str | None) -> bool:
    """Whether the relation map knows path as a relation's file but not which relation's."""
    if not path:
        return False
    rel = relations.get(path.removesuffix(" (deleted)"))
    return isinstance(rel, dict) and not rel.get("relation")


def _take_rows(cols: dict, idx: np.ndarray) -> dict:
    """The rows idx of an io table's columns (lists or numpy arrays)."""
    out = {}
    for k, v in cols.items():
        out[k] = v[idx] if isinstance(v, np.ndarray) else [v[i] for i in idx.tolist()]
    return out


def _concat_rows(a: dict, b: dict) -> dict:
    """Two io tables' columns, a's rows first (a column one of them lacks: None in its rows)."""
    na, nb = len(a["count"]), len(b["count"])
    out = {}
    for k in dict.fromkeys([*a, *b]):
        x = a.get(k, [None] * na)
        y = b.get(k, [None] * nb)
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            out[k] = np.concatenate((x, y))
        else:
            out[k] = list(x) + list(y)
    return out


def _s(v: object) -> str:
    return "" if v is None else str(v)


def _level(v: SupportsInt | None) -> str:
    if v is None:
        return ""
    return "leaf" if int(v) == 0 else "non_leaf"


class ExporterState:
    """All cumulative series of one exporter, fed one Interval at a time.

    top_n values of `file` and of `index` get series of their own; `membership` is TopN's
    keyword arguments (half_life, min_dwell, hysteresis, retention, min_frozen), whose
    defaults TopN holds."""

    def __init__(self, top_n: int = 50, **membership: float) -> None:
        self.top_n = top_n
        # io: count, bytes, lat_sum_ns, activity (count + bytes / 4096: what ranks the top N)
        self.io = SeriesTable(IO_LABELS, 4, "file", TopN(top_n, **membership))
        # hist: 64 slots, count, lat_sum_ns
        self.hist = SeriesTable(HIST_LABELS, len(HIST_COLUMNS) + 2)
        # pages: pages, bytes
        self.pages = SeriesTable(PAGE_LABELS, 2, "index", TopN(top_n, **membership))
        self.cgroups = CgroupLabels()
        self.intervals = 0
        self.version = 0
        # io rows held back until their relation is named (_hold_unnamed), and since when
        self._held: dict | None = None
        self._held_since = np.empty(0, dtype=np.float64)

    def ingest(self, io: dict | None, pages: dict | None, now: float, relations: dict | None = None) -> None:
        """Add one interval; `relations` (the session's relation_files(): path -> relation) names
        a relation's file by its relation in the `file` label, as every file view does
        (labels.file_label: a relation's segments share its value, each fork its own)."""
        if relations is not None or self._held is not None:
            io = self._hold_unnamed(io, now, relations or {})
        if io:
            self._ingest_io(io, now, relations)
        else:
            self.io.add({}, None, now)
        if pages:
            self._ingest_pages(pages, now)
        else:
            self.pages.add({}, None, now)
        self.intervals += 1
        self.version += 1

    def _hold_unnamed(self, io: dict | None, now: float, relations: dict) -> dict | None:
        """The rows to count now: this interval's and the held ones, less those of a relation's
        file whose relation is not known yet, held back to a later interval.

        A counter keeps its labels: bytes of a relation's file counted under its path (the
        relation map says the file is a relation's -- `relations[path]` with "relation" None --
        but not which: a table created, truncated or rewritten since the catalogs were read)
        would stay under the path for good, after the name came, beside the name's series.
        The session re-reads the names (throttled) when such a file shows up, so its rows wait
        for that, at most HOLD_SECONDS; a file still unnamed then (a relation created in a
        transaction not committed, or dropped before the read) is counted under its path.
        Rows of a file the map does not know as a relation's are not held."""
        if not relations and self._held is None:
            return io
        held, since = self._held, self._held_since
        self._held, self._held_since = None, np.empty(0, dtype=np.float64)
        if held is not None:
            if io:
                since = np.concatenate((since, np.full(len(io["count"]), now)))
                io = _concat_rows(held, io)
            else:
                io = held
        elif io:
            since = np.full(len(io["count"]), now)
        if not io:
            return None
        wait = np.fromiter((_unnamed_relation(relations, f) for f in io["file"]), dtype=bool,
                           count=len(io["file"])) & (now - since < HOLD_SECONDS)
        if not wait.any():
            return io
        keep = np.nonzero(~wait)[0]
        hold = np.nonzero(wait)[0]
        self._held, self._held_since = _take_rows(io, hold), since[hold]
        return _take_rows(io, keep) if len(keep) else None

    def _ingest_io(self, io: dict, now: float, relations: dict | None = None) -> None:
        count = np.asarray(io["count"], dtype=np.int64)
        nbytes = np.asarray(io["bytes"], dtype=np.int64)
        lat = np.asarray(io["lat_sum_ns"], dtype=np.int64)
        layer, op, fclass, role = io["layer"], io["op"], io["file_class"], io["role"]
        cgroup = io.get("cgroup") or [None] * len(count)
        files = [_s(file_label(relations, f) if f else f) for f in io["file"]] if relations else map(_s, io["file"])
        keys = list(zip(layer, op, files, map(_s, fclass), map(_s, io["device"]), map(_s, role),
                        map(self.cgroups.label, cgroup)))
        # activity column: IOs plus 4 KiB units (so big sequential IO and many small ones both count)
        values = np.column_stack((count, nbytes, lat, count + nbytes // 4096))
        self.io.add(_group(keys, values), 3, now)

        hist = np.column_stack([np.asarray(io[c], dtype=np.int64) for c in HIST_COLUMNS])
        hcount = hist.sum(axis=1)
        rows = np.nonzero(hcount)[0]
        hkeys = [(layer[i], op[i], _s(fclass[i]), _s(role[i])) for i in rows]
        hvalues = np.column_stack((hist[rows], hcount[rows], lat[rows]))
        self.hist.add(_group(hkeys, hvalues), None, now)

    def _ingest_pages(self, p: dict, now: float) -> None:
        pages = np.asarray(p["pages"], dtype=np.int64)
        nbytes = np.asarray(p["bytes"], dtype=np.int64)
        keys = []
        for op, index, level, ptype, fclass, role, iid in zip(p["op"], p["index"], p["level"], p["page_type"],
                                                               p["file_class"], p["role"], p["index_id"]):
            if fclass in ONE_INDEX_PER_FILE:  # e.g. a MyRocks SST read: index_id is the file's number
                name = index or (f"[{fclass} {iid}]" if iid is not None else "")
                lev = ("" if level is None else f"L{level}") if fclass in LSM_LEVELS else _level(level)
                keys.append((op, name, lev, _s(ptype), _s(fclass), _s(role)))
                continue
            name = index or (f"[index id {iid}]" if iid is not None else "")
            keys.append((op, name, _level(level), _s(ptype), _s(fclass), _s(role)))
        self.pages.add(_group(keys, np.column_stack((pages, nbytes))), 0, now)

    def series_count(self) -> dict[str, int]:
        return {"io": len(self.io), "latency": len(self.hist), "pages": len(self.pages)}

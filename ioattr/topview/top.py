"""`ioattr top`: the numbers behind the live view, one interval at a time.

A `Snapshot` holds one interval's deltas (the session's `Interval`: io and
pages rows, column-wise) and turns them, on demand, into the rows of one
view: files, indexes, threads (or roles), queries, devices or cgroups. Only the view
on screen is computed, so switching views costs one aggregation of the
interval already held, never a new drain.

Rates are per second over the interval's real length. Latency p50/p99 of a
row are those of its reads and writes (fsyncs left out: one slow flush would
hide every read); for an index they are those of the IOs that carried its
pages (see `_index_latency`). Everything unknown stays None and shows as "-".

Screen layout and terminal handling are in ioattr.topview.top_render and
ioattr.topview.top_term; the loop that drives the session is ioattr.topview.top_live.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence, cast

import numpy as np

from ioattr.format.schema import HIST_COLUMNS, Columns
from ioattr.collectors.file_classes import FILE_CLASSES, LSM_LEVELS, ONE_INDEX_PER_FILE
from ioattr.model.hist import BOUNDS
from ioattr.model.labels import file_label, relation_label
from ioattr.model.storage import STORAGE_FILE_CLASSES
from ioattr.collectors.abi import DIGEST_INTERNAL

# short forms of file_class for an 80-column screen
CLASS_ABBREV = {c.name: c.short for c in FILE_CLASSES}

_LOW = np.array([b[0] for b in BOUNDS], dtype=np.float64)
_HIGH = np.array([b[1] for b in BOUNDS], dtype=np.float64)


def percentiles_ns(hist: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of every row of a (rows x slots) histogram matrix, NaN where empty.

    The same interpolation as ioattr.model.hist.percentile_ns, vectorised (and so
    fine with fractional counts)."""
    hist = np.asarray(hist, dtype=np.float64)
    if hist.ndim != 2 or hist.shape[0] == 0:
        return np.empty(0)
    total = hist.sum(axis=1)
    rank = q * total
    cum = np.cumsum(hist, axis=1)
    reached = cum >= rank[:, None]
    slot = np.argmax(reached, axis=1)
    rows = np.arange(hist.shape[0])
    n = hist[rows, slot]
    seen = cum[rows, slot] - n
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip(np.where(n > 0, (rank - seen) / n, 1.0), 0.0, 1.0)
    out = _LOW[slot] + (_HIGH[slot] - _LOW[slot]) * frac
    out = np.where(reached.any(axis=1), out, _HIGH[-1])
    return np.where(total > 0, out, np.nan)


# -- columns and views ----------------------------------------------------------
@dataclass(frozen=True)
class Column:
    key: str
    header: str
    width: int           # characters on screen (the name column takes what is left)
    numeric: bool = True
    kind: str = "rate"   # rate | mbps | latency | pct | text | count
    help: str = ""


NAME = "name"


def _megabytes(of: str) -> tuple[Column, Column]:
    """RMB/s and WMB/s of what a view counts ("" for its IO, "of pages " for page views)."""
    return (Column("rmb", "RMB/s", 6, kind="mbps", help=f"MB {of}read per second"),
            Column("wmb", "WMB/s", 6, kind="mbps", help=f"MB {of}written per second"))


def _latency(of: str) -> tuple[Column, Column]:
    """P50 and P99 of the IOs a view's rows stand for."""
    return (Column("p50", "P50", 6, kind="latency", help=f"median latency of {of}"),
            Column("p99", "P99", 6, kind="latency", help=f"99th percentile latency of {of}"))


IO_NUMERIC = (
    Column("iops", "IO/s", 6, help="reads + writes per second (= R/s + W/s; fsyncs are on the header's lines)"),
    Column("r", "R/s", 6, help="reads per second"),
    Column("w", "W/s", 6, help="writes per second"),
    *_megabytes(""),
    *_latency("reads and writes"),
)
QUERY_NUMERIC = (
    Column("exec", "EXEC/s", 6, help="executions started per second (stage probes)"),
    Column("rpe", "R/EXEC", 6, kind="ratio", help="reads per execution"),
) + tuple(c for c in IO_NUMERIC if c.key not in ("wmb",))
PAGE_NUMERIC = (
    Column("pgs", "PG/s", 6, help="pages read + written per second (InnoDB pages, PostgreSQL blocks, MyRocks SST blocks)"),
    Column("rpg", "RPG/s", 6, help="pages read per second"),
    Column("wpg", "WPG/s", 6, help="pages written per second"),
    *_megabytes("of pages "),
    Column("leaf", "LEAF%", 5, kind="pct", help="share of the page reads that were B-tree leaves"),
    *_latency("the IOs that carried these pages"),
)


@dataclass(frozen=True)
class View:
    key: str              # the key that shows it
    name: str
    title: str            # header of the name column
    extra: Column | None  # a short text column after the name
    numeric: tuple[Column, ...]
    default_sort: str
    table: str            # io | pages

    @property
    def columns(self) -> list[Column]:
        cols = [Column(NAME, self.title, 0, numeric=False, kind="text")]
        if self.extra is not None:
            cols.append(self.extra)
        return cols + list(self.numeric)


VIEWS: dict[str, View] = {
    "files": View("f", "files", "FILE", Column("class", "CLASS", 6, numeric=False, kind="text"),
                  IO_NUMERIC, "iops", "io"),
    "indexes": View("i", "indexes", "INDEX", None, PAGE_NUMERIC, "pgs", "pages"),
    "threads": View("t", "threads", "THREAD", Column("role", "ROLE", 13, numeric=False, kind="text"),
                    IO_NUMERIC, "iops", "io"),
    "roles": View("t", "roles", "ROLE", Column("threads", "THR", 4, kind="count"),
                  IO_NUMERIC, "iops", "io"),
    "queries": View("s", "queries", "QUERY", None, QUERY_NUMERIC, "iops", "io"),  # s: statements (q quits)
    "devices": View("d", "devices", "DEVICE", None, IO_NUMERIC, "iops", "io"),
    # the processes' cgroups (a container, a systemd unit); PROCS: processes seen in each
    "cgroups": View("c", "cgroups", "CGROUP", Column("procs", "PROCS", 5, kind="count"),
                    IO_NUMERIC, "iops", "io"),
}
BY_CHOICES = ("file", "index", "thread", "role", "query", "device", "cgroup")
BY_TO_VIEW = {"file": "files", "index": "indexes", "thread": "threads", "role": "roles",
              "query": "queries", "device": "devices", "cgroup": "cgroups"}


def find_column(view: View, spec: str) -> Column | None:
    """A column of the view named by key or header, case-insensitively (p99, RMB/s, name...)."""
    s = spec.strip().lower()
    aliases = {"reads": "r", "writes": "w", "io": "iops", "ops": "iops", "pages": "pgs",
               "file": NAME, "index": NAME, "thread": NAME, "query": NAME, "device": NAME, "role": NAME,
               "cgroup": NAME}
    if view.name == "roles" and s == "role":
        s = NAME
    s = aliases.get(s, s)
    for c in view.columns:
        if s in (c.key.lower(), c.header.lower(), c.header.lower().rstrip("/s")):
            return c
    return None


# -- rows ----------------------------------------------------------------------
@dataclass
class Row:
    name: str
    extra: str | None
    values: dict[str, float | None]
    full: str | None = None  # the untruncated name (a path before shortening)
    relation: str | None = None  # the files view: the relation the file holds (PostgreSQL), else None


@dataclass
class Totals:
    """The header's numbers for one layer: rates per second."""

    reads: float = 0.0
    writes: float = 0.0
    fsyncs: float = 0.0
    read_bytes: float = 0.0
    write_bytes: float = 0.0


def _sum_by(groups: np.ndarray, n_groups: int, values: np.ndarray) -> np.ndarray:
    return np.bincount(groups, weights=values, minlength=n_groups) if len(groups) else np.zeros(n_groups)


@dataclass
class Snapshot:
    """One interval, ready to be shown in any view."""

    start: float
    end: float
    io: Columns | None
    pages: Columns | None
    statements: Columns | None = None   # executions started per digest (stage probes)
    status_delta: dict[str, int] | None = None   # server counters' change (questions, selects...)
    datadirs: Sequence[str] = ()
    #: path -> the relation its file holds (the session's relation_files(), meta.json "relations")
    relations: Mapping[str, dict] | None = None
    _hist: np.ndarray | None = field(default=None, repr=False)
    _cache: dict[tuple, list[Row]] = field(default_factory=dict, repr=False)
    _threads: dict | None = field(default=None, repr=False)
    _queries: dict | None = field(default=None, repr=False)

    @property
    def seconds(self) -> float:
        return max(self.end - self.start, 1e-6)

    @property
    def io_rows(self) -> int:
        return len(self.io["count"]) if self.io else 0

    @property
    def page_rows(self) -> int:
        return len(self.pages["pages"]) if self.pages else 0

    @property
    def _io(self) -> Columns:
        """The io columns (empty when the interval has none: callers look at io_rows first)."""
        return self.io or {}

    @property
    def _pages(self) -> Columns:
        """The pages columns (empty when the interval has none: callers look at page_rows first)."""
        return self.pages or {}

    def hist(self) -> np.ndarray:
        """The io rows' latency histograms as one (rows x 64) matrix (built once)."""
        if self._hist is None:
            if not self.io_rows:
                self._hist = np.zeros((0, len(HIST_COLUMNS)))
            else:
                self._hist = np.column_stack([np.asarray(self._io[c], dtype=np.float64)
                                              for c in HIST_COLUMNS])
        return self._hist

    # -- header ------------------------------------------------------------------
    def totals(self, layer: str, classes: Sequence[str] | None = None) -> Totals:
        """Rates of one layer, of every file or only of these file classes."""
        t = Totals()
        if not self.io_rows:
            return t
        io = self._io
        count = np.asarray(io["count"], dtype=np.float64)
        nbytes = np.asarray(io["bytes"], dtype=np.float64)
        fclass = io["file_class"]
        for i, (lay, op) in enumerate(zip(io["layer"], io["op"])):
            if lay != layer or (classes is not None and fclass[i] not in classes):
                continue
            if op == "read":
                t.reads += count[i]
                t.read_bytes += nbytes[i]
            elif op == "write":
                t.writes += count[i]
                t.write_bytes += nbytes[i]
            elif op == "fsync":
                t.fsyncs += count[i]
        sec = self.seconds
        return Totals(t.reads / sec, t.writes / sec, t.fsyncs / sec, t.read_bytes / sec, t.write_bytes / sec)

    def page_reads(self) -> float:
        if not self.page_rows:
            return 0.0
        pages = np.asarray(self._pages["pages"], dtype=np.float64)
        ops = np.asarray(self._pages["op"])
        return float(pages[ops == "read"].sum())

    def per_query(self) -> dict[str, float] | None:
        """The server's rates and the IO per query, if known, in ioattr/model/per.py's terms (the
        ones report, compare and explain use): qps counts SELECTs, statements_ps every statement
        (Questions: sysbench's queries/s), and "per query" is per SELECT -- storage reads
        (ioattr/model/storage.py), the engine's pages read and the engine's own cache misses."""
        d = self.status_delta or {}
        if "questions" in d:
            statements, q = float(d["questions"]), float(d.get("selects", 0))
        else:
            # a server with no statement counter (PostgreSQL): the statements the wire reader
            # counted, as report's stmt/s and qps count them there
            wire = self._wire_statements()
            if wire is None:
                return None
            statements, q = wire
        out = {"qps": q / self.seconds, "statements_ps": statements / self.seconds}
        if "questions" not in d:
            out["from_wire"] = True
        if q > 0:
            out["reads_per_query"] = self.totals("syscall", STORAGE_FILE_CLASSES).reads * self.seconds / q
            out["page_reads_per_query"] = self.page_reads() / q
            if "cache_misses" in d:  # the engines' own count (Innodb_buffer_pool_reads), base.SERVER_COUNTERS
                out["cache_misses_per_query"] = d["cache_misses"] / q
        return out

    # -- views -------------------------------------------------------------------
    def rows(self, view: View, layer: str = "syscall") -> list[Row]:
        key = (view.name, layer if view.table == "io" else None)
        if key not in self._cache:
            if view.table == "pages":
                self._cache[key] = self._page_rows()
            else:
                self._cache[key] = self._io_rows(view, layer)
        return self._cache[key]

    def _group_io(self, view: View, layer: str) -> tuple[np.ndarray, list, np.ndarray]:
        """(row indices of the layer, group labels, group id per selected row)."""
        io = self._io
        lay = io["layer"]
        sel = [i for i in range(self.io_rows) if lay[i] == layer]
        keyfn: Callable[[int], object]
        if view.name == "files":
            files = io["file"]
            keyfn = lambda i: files[i]  # noqa: E731
        elif view.name == "threads":
            pids, tids = io["pid"], io["tid"]
            keyfn = lambda i: (pids[i], tids[i])  # noqa: E731
        elif view.name == "roles":
            roles = io["role"]
            keyfn = lambda i: roles[i]  # noqa: E731
        elif view.name == "queries":
            digests = io["digest"]
            keyfn = lambda i: digests[i]  # noqa: E731
        elif view.name == "devices":
            devices, devs = io["device"], io["dev"]
            keyfn = lambda i: devices[i] or devs[i]  # noqa: E731
        elif view.name == "cgroups":
            # recordings' io columns from before the cgroup column have none: every row unknown
            cgroups = io.get("cgroup") or [None] * len(lay)
            keyfn = lambda i: cgroups[i]  # noqa: E731
        else:
            raise ValueError(view.name)
        ids: dict[object, int] = {}
        labels: list = []
        gid = np.empty(len(sel), dtype=np.int64)
        for j, i in enumerate(sel):
            k = keyfn(i)
            g = ids.get(k)
            if g is None:
                g = ids[k] = len(labels)
                labels.append(k)
            gid[j] = g
        return np.asarray(sel, dtype=np.int64), labels, gid

    def _io_rows(self, view: View, layer: str) -> list[Row]:
        if not self.io_rows:
            return []
        io = self._io
        sel, labels, gid = self._group_io(view, layer)
        if not len(sel):
            return []
        n = len(labels)
        ops = np.asarray(io["op"], dtype=object)[sel]
        count = np.asarray(io["count"], dtype=np.float64)[sel]
        nbytes = np.asarray(io["bytes"], dtype=np.float64)[sel]
        is_r, is_w = ops == "read", ops == "write"
        sec = self.seconds
        r = _sum_by(gid, n, count * is_r) / sec
        w = _sum_by(gid, n, count * is_w) / sec
        allops = r + w  # IO/s = R/s + W/s: fsyncs are in the header (fsync N/s), not in the rows
        rmb = _sum_by(gid, n, nbytes * is_r) / sec / 1e6
        wmb = _sum_by(gid, n, nbytes * is_w) / sec / 1e6
        hist = np.zeros((n, len(HIST_COLUMNS)))
        rw = is_r | is_w
        np.add.at(hist, gid[rw], self.hist()[sel[rw]])
        p50 = percentiles_ns(hist, 0.50)
        p99 = percentiles_ns(hist, 0.99)

        extra: list[str | None] = [None] * n
        if view.name == "files":
            classes = io["file_class"]
            for j, i in enumerate(sel):
                if extra[gid[j]] is None and classes[i]:
                    extra[gid[j]] = CLASS_ABBREV.get(classes[i], classes[i])
        elif view.name == "threads":
            roles = io["role"]
            for j, i in enumerate(sel):
                if extra[gid[j]] is None and roles[i]:
                    extra[gid[j]] = roles[i]
        elif view.name in ("roles", "cgroups"):  # how many threads (a role's), processes (a cgroup's)
            ids = io["tid" if view.name == "roles" else "pid"]
            seen: list[set] = [set() for _ in range(n)]
            for j, i in enumerate(sel):
                if ids[i]:
                    seen[gid[j]].add(ids[i])
            extra = [str(len(s)) for s in seen]

        names = [self._io_name(view, lab) for lab in labels]
        execs = self._executions() if view.name == "queries" else {}
        rows = []
        for g in range(n):
            name, full = names[g]
            values = {
                "iops": allops[g], "r": r[g], "w": w[g], "rmb": rmb[g], "wmb": wmb[g],
                "p50": None if np.isnan(p50[g]) else float(p50[g]),
                "p99": None if np.isnan(p99[g]) else float(p99[g]),
            }
            if view.name == "queries":
                ex = execs.get(labels[g]) if labels[g] else None
                values["exec"] = ex / sec if ex is not None else None
                values["rpe"] = (r[g] * sec / ex) if ex else None
                values["executions"] = ex  # the count behind EXEC/s (top --format json)
            rel = relation_label(self.relations, full) if view.name == "files" else None
            rows.append(Row(name, extra[g], values, full, rel))
        if view.name == "queries" and execs:
            # statements that ran without doing IO in this layer: shown, with no IO
            with_io = set(labels)
            for digest, ex in execs.items():
                if digest not in with_io and digest >= 256:
                    name, full = self._io_name(view, digest)
                    rows.append(Row(name, None, {"exec": ex / sec, "rpe": 0.0, "iops": 0.0, "r": 0.0,
                                                 "w": 0.0, "rmb": 0.0, "wmb": 0.0, "p50": None,
                                                 "p99": None, "executions": ex}, full))
        return rows

    def _wire_statements(self) -> tuple[float, float] | None:
        """(statements, SELECTs) the statement probes counted in this interval, ioattr's own left
        out; None when no statement was counted (no probes, or nothing ran)."""
        st = self.statements
        if not st or not len(st.get("count", ())) or "kind" not in st:
            return None
        total = selects = 0.0
        for dg, kind, c in zip(st["digest"], st["kind"], st["count"]):
            if dg is not None and int(dg) == DIGEST_INTERNAL:
                continue
            total += int(c)
            if kind == "select":
                selects += int(c)
        return total, selects

    def _executions(self) -> dict[int, int]:
        """Executions started per digest in this interval (empty without the stage probes)."""
        st = self.statements
        if not st or not len(st.get("count", ())):
            return {}
        out: dict[int, int] = {}
        for d, c in zip(st["digest"], st["count"]):
            if d is not None:
                out[int(d)] = out.get(int(d), 0) + int(c)
        return out

    def _io_name(self, view: View, label: object) -> tuple[str, str | None]:
        if view.name == "files":
            if label is None:
                return "[unnamed file]", None
            # a relation's file by the relation's name, as report --by file names it
            return file_label(self.relations, str(label), self.datadirs) or str(label), str(label)
        if view.name == "threads":
            pid, tid = cast("tuple[object, object]", label)  # a threads view's label (_group_io)
            if not tid:
                return "[no thread]", None
            thread = self._thread_name(pid, tid)
            return f"{thread or '?'}[{tid}]", None
        if view.name == "roles":
            return (str(label) if label else "[unknown]"), None
        if view.name == "cgroups":
            return (str(label) if label else "[unknown cgroup]"), None
        if view.name == "queries":
            if not label:
                return "[no statement]", None
            text = self._query_text(label)
            return (text if text else f"digest:{int(cast(int, label)):016x}"), text  # a digest (_group_io)
        return (str(label) if label else "[unknown]"), None

    def _thread_name(self, pid: object, tid: object) -> str | None:
        if self._threads is None:
            io = self._io
            self._threads = {}
            for p, t, name in zip(io["pid"], io["tid"], io["thread"]):
                if name:
                    self._threads.setdefault((p, t), name)
        return self._threads.get((pid, tid))

    def _query_text(self, digest: object) -> str | None:
        if self._queries is None:
            self._queries = {}
            sources = [self.io, self.statements]
            for cols in sources:
                if not cols:
                    continue
                commands = cols.get("command") or [None] * len(cols["digest"])
                for d, text, cmd in zip(cols["digest"], cols["query"], commands):
                    if d and (text or cmd):
                        self._queries.setdefault(d, " ".join(str(text).split()) if text else f"[{cmd}]")
        return self._queries.get(digest)

    def _page_rows(self) -> list[Row]:
        if not self.page_rows:
            return []
        p = self._pages
        n_rows = self.page_rows
        ids: dict[object, int] = {}
        labels: list[str] = []
        gid = np.empty(n_rows, dtype=np.int64)
        index, ptype, iid = p["index"], p["page_type"], p["index_id"]
        # reads of files holding one index (MyRocks' SSTs): index_id is the file's number
        per_file = np.array([fc in ONE_INDEX_PER_FILE for fc in p["file_class"]], dtype=bool)
        for i in range(n_rows):
            if index[i]:
                lab = index[i]
            elif per_file[i] and iid[i] is not None:
                lab = f"[{p['file_class'][i]} {iid[i]}]"
            elif iid[i] is not None:
                lab = f"[index id {iid[i]}]"
            else:
                lab = f"[{ptype[i] or 'unknown'}]"
            g = ids.get(lab)
            if g is None:
                g = ids[lab] = len(labels)
                labels.append(lab)
            gid[i] = g
        n = len(labels)
        ops = np.asarray(p["op"], dtype=object)
        pages = np.asarray(p["pages"], dtype=np.float64)
        nbytes = np.asarray(p["bytes"], dtype=np.float64)
        levels = p["level"]
        is_r, is_w = ops == "read", ops == "write"
        # an LSM file's level is no B-tree level (no leaf)
        lsm = np.array([fc in LSM_LEVELS for fc in p["file_class"]], dtype=bool)
        leaf = np.array([lv == 0 for lv in levels], dtype=bool) & ~lsm
        sec = self.seconds
        rpg = _sum_by(gid, n, pages * is_r)
        wpg = _sum_by(gid, n, pages * is_w)
        leaf_r = _sum_by(gid, n, pages * (is_r & leaf))
        has_level = _sum_by(gid, n, pages * is_r * (np.array([lv is not None for lv in levels], dtype=bool) & ~lsm))
        rmb = _sum_by(gid, n, nbytes * is_r) / sec / 1e6
        wmb = _sum_by(gid, n, nbytes * is_w) / sec / 1e6
        hist = self._index_latency(gid, n)
        p50 = percentiles_ns(hist, 0.50)
        p99 = percentiles_ns(hist, 0.99)
        rows = []
        for g in range(n):
            rows.append(Row(labels[g], None, {
                "pgs": (rpg[g] + wpg[g]) / sec, "rpg": rpg[g] / sec, "wpg": wpg[g] / sec,
                "rmb": rmb[g], "wmb": wmb[g],
                "leaf": (100.0 * leaf_r[g] / has_level[g]) if has_level[g] > 0 else None,
                "p50": None if np.isnan(p50[g]) else float(p50[g]),
                "p99": None if np.isnan(p99[g]) else float(p99[g]),
            }))
        return rows

    def _index_latency(self, gid: np.ndarray, n: int) -> np.ndarray:
        """Latency histograms for page groups, from the syscall-layer IOs that carried the pages.

        A page row and an io row describe the same IO when they share process,
        thread, file, op, api, stage and statement digest. Each such IO group's
        histogram is shared out among the page groups it carried, in
        proportion to their pages: exact when one IO group carries one index
        (a point select reading its clustered index), a blend otherwise."""
        hist = np.zeros((n, len(HIST_COLUMNS)))
        if not self.io_rows:
            return hist
        io, p = self._io, self._pages
        keys = ("pid", "tid", "file", "op", "api", "stage", "digest")
        io_hist: dict[tuple, np.ndarray] = {}
        H = self.hist()
        lay = io["layer"]
        cols = [io[k] for k in keys]
        for i in range(self.io_rows):
            if lay[i] != "syscall":
                continue
            k = tuple(c[i] for c in cols)
            if k in io_hist:
                io_hist[k] = io_hist[k] + H[i]
            else:
                io_hist[k] = H[i]
        pcols = [p[k] for k in keys]
        pages = np.asarray(p["pages"], dtype=np.float64)
        pkeys = [tuple(c[i] for c in pcols) for i in range(self.page_rows)]
        group_pages: dict[tuple, float] = {}
        for i, k in enumerate(pkeys):
            if k in io_hist:
                group_pages[k] = group_pages.get(k, 0.0) + pages[i]
        for i, k in enumerate(pkeys):
            total = group_pages.get(k)
            if total:
                hist[gid[i]] += io_hist[k] * (pages[i] / total)
        return hist


def sort_rows(rows: list[Row], column: Column, reverse: bool = False) -> list[Row]:
    """Biggest first for numbers (unknowns last), A-Z for text; `reverse` flips either."""
    if column.key == NAME:
        out = sorted(rows, key=lambda r: r.name.lower())
    elif not column.numeric:
        out = sorted(rows, key=lambda r: (r.extra is None, (r.extra or "").lower(), r.name.lower()))
    else:
        def key(r: Row) -> tuple:
            v = r.values.get(column.key)
            if column.kind == "count":
                v = float(r.extra) if r.extra and r.extra.isdigit() else None
            return (v is None, -(v or 0.0), r.name.lower())
        out = sorted(rows, key=key)
    if reverse:
        out.reverse()
    return out


@dataclass
class Header:
    """What the header shows besides the rates: who, where, how healthy."""

    host: str = field(default_factory=lambda: os.uname().nodename)
    targets: list[str] = field(default_factory=list)
    phase: str | None = None
    interval: float = 1.0
    degraded: list[str] = field(default_factory=list)
    dropped: int = 0
    drops: dict[str, int] = field(default_factory=dict)  # reason -> count (the BPF drops map)
    notes: list[str] = field(default_factory=list)
    cost: str | None = None  # what top itself costs: "cost: BPF 2.1% rec 0.9%" (model/self_cost.py)

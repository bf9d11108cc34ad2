"""Compaction: merge a recording's closed chunks into larger immutable segments.

A 24-hour recording is 8640 chunks per table (one per --chunk-seconds);
reading that many small Parquet files is what made reports slow. The
recorder compacts while it records (in a background thread, after each
chunk and once more when it stops), and `ioattr compact REC`
does the same to any recording, finished, crashed or still being written.

    REC/io/chunk-000123.parquet          level 0: what the recorder writes
    REC/io/seg1-000001-000030.parquet    level 1: chunks 1..30, rolled up
    REC/io/seg2-000001-000360.parquet    level 2: twelve level-1 segments
    REC/io/seg3-000001-008640.parquet    level 3: twenty-four level-2 segments

A segment's name says which chunk numbers it covers. Readers take, for
each table, the parts not covered by a wider one (`live_parts`), so a
chunk and the segment that replaced it are never both counted, whatever
moment a reader looks at. Merging `FANOUT[level]` parts of one level gives
one part of the next; the oldest parts are merged first, so the parts of a
table always cover adjacent ranges.

Rollup, when chunks become a level-1 segment: io, pages and statements rows
are summed per ROLLUP_SECONDS (60 s, aligned to the epoch) time bucket and
every other column (phase, file, thread, op, layer, ...), so counts, bytes,
latency sums and histogram buckets stay exact per phase and per key; what
is lost is the time resolution inside a bucket: a segment reads like a
recording made with --interval 60 (every row of a bucket has the same
ts_start and ts_end: the first merged interval's start and the last one's
end; a bucket cut by a segment boundary has one such span on each side).
Counter snapshots (not sums) keep, per counter, phase and bucket, the
first, last, lowest and highest snapshot: a phase's counter deltas, last
values and peaks are unchanged. Higher levels concatenate their inputs
(streaming, little memory). Tables this module does not know are only
concatenated.

Crash safety, in order: the segment is written to `segN-A-B.parquet.tmp`
(owner-only) and fsynced; renamed to its final name and the directory
fsynced (from then on readers use it and ignore what it covers); only then
are the covered files deleted. A crash before the rename leaves a .tmp
that nothing reads and the next compaction deletes; a crash after it
leaves covered files that readers ignore and the next compaction deletes
(until then plain SQL over `io/*.parquet` counts them twice: run
`ioattr compact REC` on a crashed recording). The recorder
keeps writing chunks meanwhile: a compaction only touches files that were
complete when it listed the directory. A segment stands for (and lets the
cleanup delete) the chunks it names only if its own footer says it covers
them (`usable_part`): a torn segment, or any other file under a segment's
name, hides and deletes nothing.

Locks (flock, advisory): one compactor per recording (REC itself,
exclusive, non-blocking); a table directory is locked exclusively only
around a rename or deletions, and shared by a reader while it lists it and
while each of its queries runs (reader.py), so a listing never sees half
of a swap and no file a query reads is deleted under it; a reader whose
listing went stale between two queries lists again.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from ioattr.format import duck
from ioattr.format.partcheck import part_problem
from ioattr.format.schema import TABLES, duck_type

ROLLUP_SECONDS = 60
FANOUT = (30, 12, 24)        # parts of level L merged into one part of level L+1
ROW_GROUP_ROWS = 32_768      # a merge holds ~one row group (io: 82 columns); DuckDB scans them in parallel
SUM_COLUMNS = {
    "io": ["count", "bytes", "lat_sum_ns"] + [f"h{i:02d}" for i in range(64)],
    "pages": ["pages", "bytes"],
    "statements": ["count", "estimates"],
}
TIME_COLUMNS = ("ts_start", "ts_end")

CHUNK_RE = re.compile(r"^chunk-(\d+)\.parquet$")
SEG_RE = re.compile(r"^seg(\d+)-(\d+)-(\d+)\.parquet$")
SEG_TMP_RE = re.compile(r"^seg\d+-\d+-\d+\.parquet\.tmp$")
PARQUET_MAGIC = b"PAR1"

Warn = Callable[[str], None]


def _stderr_warn(msg: str) -> None:
    print(f"ioattr: warning: {msg}", file=sys.stderr)


@dataclass(frozen=True)
class Part:
    """One Parquet file of a table: a chunk (level 0) or a segment."""
    path: Path
    level: int
    first: int
    last: int

    @property
    def span(self) -> int:
        return self.last - self.first + 1


def parse_part(path: Path) -> Part | None:
    m = CHUNK_RE.match(path.name)
    if m:
        n = int(m.group(1))
        return Part(path, 0, n, n)
    m = SEG_RE.match(path.name)
    if m and int(m.group(1)) > 0 and int(m.group(2)) <= int(m.group(3)):
        return Part(path, int(m.group(1)), int(m.group(2)), int(m.group(3)))
    return None


def complete_parquet(path: Path) -> bool:
    """Starts and ends with the Parquet magic (a torn or truncated file does not)."""
    try:
        size = path.stat().st_size
        if size < 12:
            return False
        with open(path, "rb") as f:
            head = f.read(4)
            f.seek(-4, 2)
            tail = f.read(4)
        return head == PARQUET_MAGIC and tail == PARQUET_MAGIC
    except OSError:
        return False


@contextlib.contextmanager
def dir_lock(path: Path, mode: int) -> Iterator[bool]:
    """flock a directory; yields False (no lock) where the directory can't be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield False
        return
    try:
        fcntl.flock(fd, mode)
        yield True
    finally:
        os.close(fd)     # releases the lock


def scan(table_dir: Path) -> list[Part]:
    try:
        names = os.listdir(table_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    parts = [p for p in (parse_part(table_dir / n) for n in names) if p is not None]
    return sorted(parts, key=lambda p: (p.first, -p.last, -p.level))


def live_parts(parts: list[Part], warn: Warn = _stderr_warn) -> list[Part]:
    """The parts to read: each chunk number counted once, by the widest part covering it."""
    out: list[Part] = []
    end = -1
    for p in sorted(parts, key=lambda p: (p.first, -p.last, -p.level)):
        if p.last <= end:
            continue                      # replaced by a segment already taken
        if p.first <= end:
            warn(f"skipping {p.path}: it overlaps {out[-1].path.name} without being covered by it")
            continue
        out.append(p)
        end = p.last
    return out


def segment_covers(path: Path) -> tuple[int, int] | None:
    """The chunk numbers a segment's own footer says it covers (write_segment's
    `ioattr.segment` metadata); None when the footer can't be read or has none."""
    try:
        info = json.loads((pq.read_schema(path).metadata or {})[b"ioattr.segment"])
        first, last = info["covers"]
        return int(first), int(last)
    except Exception:       # any damage: pyarrow's errors, a missing key, bad JSON, ...
        return None


def part_damage(p: Part) -> str | None:
    """Why this part can't be read (one line), None if it can: a torn or truncated file,
    sizes in its footer or page headers that DuckDB must not be given (partcheck.py), or
    a segment whose footer is not that segment's. Cached per file version (parts are
    immutable), so listing a recording again costs a stat per file."""
    try:
        st = p.path.stat()
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
    return _part_damage(p, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=65536)
def _part_damage(p: Part, dev: int, ino: int, size: int, mtime_ns: int) -> str | None:
    if not complete_parquet(p.path):
        return "not a complete Parquet file"
    why = part_problem(p.path)
    if why is not None:
        return why
    if p.level > 0 and segment_covers(p.path) != (p.first, p.last):
        return "its footer does not say it is this segment"
    return None


def usable_part(p: Part) -> bool:
    """A chunk that is a complete, sane Parquet file, or such a segment whose footer says it
    is the segment its name says: only such a segment may stand for (and retire) the chunks
    it names; a torn file, or any other file under a segment's name, is not one."""
    return part_damage(p) is None


def readable_live(parts: list[Part], warn: Warn = _stderr_warn,
                  ok: Callable[[Part], bool] = usable_part) -> tuple[list[Part], list[Part]]:
    """(live parts that are complete, damaged parts that would have been live). A damaged
    part shadows nothing: the parts it would have replaced are taken instead, so a torn
    or foreign file named like a segment never hides the chunks it names."""
    usable, damaged = list(parts), []
    while True:
        live = live_parts(usable, warn)
        bad = [p for p in live if not ok(p)]
        if not bad:
            return live, damaged
        damaged += bad
        usable = [p for p in usable if p not in bad]


def snapshot(table_dir: Path, warn: Warn = _stderr_warn, locked: bool = False,
             exclude: "set[Path] | frozenset[Path]" = frozenset(),
             known_good: Callable[[Path], bool] = lambda p: False) -> list[Path]:
    """The files a reader should read now: live parts that are complete Parquet files.

    Listed under a shared lock (taken here unless the caller holds it), so never in
    the middle of a compactor's rename or deletions; damaged files (and those in
    `exclude`, found damaged by the caller) are reported and left out (never fatal).
    `known_good`: parts an earlier check found good, unchanged since (derived.py)."""
    with contextlib.nullcontext() if locked else dir_lock(table_dir, fcntl.LOCK_SH):
        parts = [p for p in scan(table_dir) if p.path not in exclude]
        good, bad = readable_live(parts, warn, lambda p: known_good(p.path) or usable_part(p))
    for p in bad:
        why = part_damage(p)
        warn(f"skipping damaged {'chunk' if p.level == 0 else 'segment'} {p.path}" + (f": {why}" if why else ""))
    return [p.path for p in good]


# -- compaction -------------------------------------------------------------------


@dataclass
class Merge:
    table: str
    table_dir: Path
    inputs: list[Part]
    level: int                 # of the new segment

    @property
    def target(self) -> Path:
        first, last = self.inputs[0].first, self.inputs[-1].last
        return self.table_dir / f"seg{self.level}-{first:06d}-{last:06d}.parquet"

    @property
    def tmp(self) -> Path:
        return self.target.with_name(self.target.name + ".tmp")


def plan(table: str, table_dir: Path, fanout: tuple[int, ...] = FANOUT, warn: Warn = _stderr_warn,
         checked: dict[Path, bool] | None = None) -> Merge | None:
    """The next merge: the oldest FANOUT[L] adjacent complete parts of the lowest level L
    that has them. `checked` caches completeness across calls (parts are immutable)."""
    cache = {} if checked is None else checked

    def ok(p: Part) -> bool:
        if p.path not in cache:
            cache[p.path] = usable_part(p)
        return cache[p.path]

    run = _first_run(readable_live(scan(table_dir), warn, ok)[0], fanout, ok)
    return None if run is None else Merge(table, table_dir, run, run[0].level + 1)


def _first_run(live: list[Part], fanout: tuple[int, ...], ok: Callable[[Part], bool]) -> list[Part] | None:
    for level, need in enumerate(fanout):
        run: list[Part] = []
        for p in live:
            if p.level == level and ok(p):
                run.append(p)
                if len(run) == need:
                    return run
            else:
                run = []
    return None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def write_segment(m: Merge, rollup: int = ROLLUP_SECONDS) -> Path:
    """Step 1: the merged rows, written and fsynced at m.tmp (owner-only). Nothing reads it yet.

    Chunks (a level-1 merge) are rolled up per `rollup` seconds; segments (higher levels)
    are already rolled up and are concatenated, streaming, so memory stays small."""
    schema = TABLES.get(m.table)
    # the recorder's host is busy with the benchmark: one thread, streaming, little memory
    con = duck.connect(threads=1)
    try:
        con.execute("SET preserve_insertion_order = true")
        con.execute("SET enable_progress_bar = false")
        files = "[" + ", ".join(_lit(p.path) for p in m.inputs) + "]"
        src = f"read_parquet({files}, union_by_name = true)"
        have = {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()}
        names = [f.name for f in schema] if schema is not None else list(have)
        names += [n for n in have if n not in names]          # columns a newer writer added: kept as is

        def col(n: str) -> str:
            if n in have:
                return _q(n)
            return f"NULL::{duck_type(schema.field(n).type)}"

        how = "concatenated"
        sql = f"SELECT {', '.join(col(n) + ' AS ' + _q(n) for n in names)} FROM {src}"
        if m.level == 1 and m.table in SUM_COLUMNS and all(t in have for t in TIME_COLUMNS):
            sql, how = _sum_rollup(m.table, names, have, col, src, rollup), f"summed per {int(rollup)} s"
        elif m.level == 1 and m.table == "counters" and {"ts", "value"} <= set(have):
            sql, how = _snapshot_rollup(names, col, src, rollup), f"first/last/min/max per {int(rollup)} s"
        info = {"level": m.level, "covers": [m.inputs[0].first, m.inputs[-1].last], "parts": len(m.inputs),
                "rollup_seconds": int(rollup), "rows": how}
        rel = con.sql(sql)
        reader = (rel.to_arrow_reader(ROW_GROUP_ROWS) if hasattr(rel, "to_arrow_reader")   # duckdb 2
                  else rel.fetch_arrow_reader(ROW_GROUP_ROWS))                             # duckdb 1
        # the recording's own schema (types and nullability exactly as the chunks have them)
        out = pa.schema([schema.field(n) if schema is not None and n in schema.names else reader.schema.field(n)
                         for n in names], metadata={b"ioattr.segment": json.dumps(info).encode()})
        tmp = m.tmp
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                with pq.ParquetWriter(f, out, compression="zstd") as w:
                    pending: list = []
                    rows = 0
                    for batch in reader:            # streamed: one row group in memory at a time
                        pending.append(batch.cast(out))
                        rows += batch.num_rows
                        if rows >= ROW_GROUP_ROWS:
                            w.write_table(pa.Table.from_batches(pending, out), row_group_size=ROW_GROUP_ROWS)
                            pending, rows = [], 0
                    if pending:
                        w.write_table(pa.Table.from_batches(pending, out), row_group_size=ROW_GROUP_ROWS)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
    finally:
        con.close()
    return tmp


def _sum_rollup(table: str, names: list[str], have: dict, col, src: str, rollup: int) -> str:
    """Per key and bucket: the sums; per bucket: one span (first interval's start to the last
    one's end) shared by all of the bucket's rows, as if it were one long interval."""
    sums = set(SUM_COLUMNS[table]) & set(have)
    dims = [n for n in names if n not in sums and n not in TIME_COLUMNS]
    inner = ([f"floor(ts_start / {int(rollup)}) AS _bucket", "min(ts_start) AS _s", "max(ts_end) AS _e"]
             + [f"{col(d)} AS {_q(d)}" for d in dims]
             + [f"sum({_q(n)})::BIGINT AS {_q(n)}" for n in names if n in sums])
    outer = []
    for n in names:
        if n == "ts_start":
            outer.append("min(_s) OVER (PARTITION BY _bucket) AS ts_start")
        elif n == "ts_end":
            outer.append("max(_e) OVER (PARTITION BY _bucket) AS ts_end")
        else:
            outer.append(_q(n))
    order = ["ts_start"] + [d for d in ("phase", "layer", "op", "file", "tid") if d in dims]
    return (f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(inner)} FROM {src} GROUP BY ALL) "
            f"ORDER BY {', '.join(_q(o) for o in order)}")


def _snapshot_rollup(names: list[str], col, src: str, rollup: int) -> str:
    """Counter snapshots: per counter, phase and bucket, the first, the last, the lowest and
    the highest snapshot. A cumulative counter's delta over a phase (last minus the last
    before it) and a gauge's min/max stay exact; values in between are dropped."""
    key = ", ".join([f"floor(ts / {int(rollup)})"] + [col(n) for n in ("phase", "pid", "source", "name")])
    ranks = (f"row_number() OVER (PARTITION BY {key} ORDER BY ts) AS _f, "
             f"row_number() OVER (PARTITION BY {key} ORDER BY ts DESC) AS _l, "
             f"row_number() OVER (PARTITION BY {key} ORDER BY value ASC NULLS LAST, ts) AS _lo, "
             f"row_number() OVER (PARTITION BY {key} ORDER BY value DESC NULLS LAST, ts) AS _hi")
    cols = ", ".join(col(n) + " AS " + _q(n) for n in names)
    return (f"SELECT {', '.join(_q(n) for n in names)} FROM (SELECT {cols}, {ranks} FROM {src}) "
            f"WHERE _f = 1 OR _l = 1 OR _lo = 1 OR _hi = 1 ORDER BY ts, source, name, pid")


def _lit(v) -> str:
    return "'" + str(v).replace("'", "''") + "'"


def publish(m: Merge) -> None:
    """Step 2: rename the segment into place; from now on readers use it instead of its inputs."""
    with dir_lock(m.table_dir, fcntl.LOCK_EX):
        os.replace(m.tmp, m.target)
        _fsync_dir(m.table_dir)


def retire(m: Merge) -> None:
    """Step 3: delete the inputs the (durable) segment replaced."""
    _delete(m.table_dir, m.inputs)


def _delete(table_dir: Path, parts: list[Part]) -> None:
    with dir_lock(table_dir, fcntl.LOCK_EX):
        for p in parts:
            with contextlib.suppress(FileNotFoundError):
                p.path.unlink()
        _fsync_dir(table_dir)


def cleanup(table_dir: Path, warn: Warn = _stderr_warn) -> int:
    """Finish what a crashed compaction left: its .tmp, and files a published segment covers.

    Damaged files are left in place for inspection (readers skip them)."""
    removed = 0
    try:
        names = os.listdir(table_dir)
    except FileNotFoundError:
        return 0
    for n in names:
        if SEG_TMP_RE.match(n):
            with contextlib.suppress(FileNotFoundError):
                (table_dir / n).unlink()
                removed += 1
    parts = scan(table_dir)
    # only a complete segment replaces what it covers: a damaged one deletes nothing
    live = {p.path for p in readable_live(parts, warn)[0]}
    covered = [p for p in parts if p.path not in live and _covered_by_segment(p, parts, live)
               and complete_parquet(p.path)]
    if covered:
        _delete(table_dir, covered)
        removed += len(covered)
    return removed


def _covered_by_segment(p: Part, parts: list[Part], live: set[Path]) -> bool:
    return any(q.path in live and q.level > 0 and q.first <= p.first and p.last <= q.last and q.span > p.span
               for q in parts)


class Busy(Exception):
    """Another compactor holds the recording."""


def compact(rec: Path, *, tables: list[str] | None = None, fanout: tuple[int, ...] = FANOUT,
            rollup: int = ROLLUP_SECONDS, max_merges: int | None = None, wait: bool = False,
            warn: Warn = _stderr_warn) -> list[Merge]:
    """Clean up, then merge until nothing is left to merge; returns the merges done."""
    rec = Path(rec)
    done: list[Merge] = []
    fd = os.open(rec, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise Busy(f"{rec} is being compacted by another process") from None
        for table in tables or list(TABLES):
            tdir = rec / table
            if not tdir.is_dir():
                continue
            cleanup(tdir, warn)
            checked: dict[Path, bool] = {}
            while max_merges is None or len(done) < max_merges:
                m = plan(table, tdir, fanout, warn, checked)
                if m is None:
                    break
                write_segment(m, rollup)
                publish(m)
                retire(m)
                done.append(m)
    finally:
        os.close(fd)
    return done


def needs_compaction(rec: Path, fanout: tuple[int, ...] = FANOUT) -> bool:
    """Cheap (directory listings only): is there a merge to do, or a crash's leftovers?"""
    for table in TABLES:
        tdir = Path(rec) / table
        try:
            names = os.listdir(tdir)
        except OSError:
            continue
        if any(SEG_TMP_RE.match(n) for n in names):
            return True
        parts = [p for p in (parse_part(tdir / n) for n in names) if p is not None]
        live = live_parts(parts, lambda m: None)
        if len(live) != len(parts) or _first_run(live, fanout, lambda p: True) is not None:
            return True
    return False


class BackgroundCompactor:
    """The recorder's: compacts in a child process (`ioattr compact --background`),
    at low priority, so the recorder's loop, its memory and the GIL are left alone. A child
    is started after a chunk is written when there is something to merge, and once more when
    the recording ends (waited for). A child killed with the recorder leaves nothing a reader
    would miscount (see the module's crash-safety notes)."""

    def __init__(self, rec: Path, warn: Warn = _stderr_warn) -> None:
        self.rec = Path(rec)
        self.warn = warn
        self.proc: "subprocess.Popen | None" = None
        self.failures = 0

    def poke(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                return                      # still at it; the next chunk will poke again
            self._reap()
        if self.failures < 3 and needs_compaction(self.rec):
            self._start()

    def finish(self) -> None:
        """Wait for a running compaction, then run one to completion."""
        if self.proc is not None:
            self.proc.wait()
            self._reap()
        if self.failures < 3 and needs_compaction(self.rec):
            self._start(wait=True)
            if self.proc is not None:
                self.proc.wait()
                self._reap()

    def _start(self, wait: bool = False) -> None:
        args = [sys.executable, "-m", "ioattr.cli.main", "compact", "--background", str(self.rec)]
        if wait:
            args.insert(-1, "--wait")
        try:
            # close_fds (the default): the child holds none of the recorder's BPF objects
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        except OSError as e:
            self.failures = 3
            self.warn(f"cannot start compaction ({e.strerror}); the recording stays in chunks")

    def _reap(self) -> None:
        rc = self.proc.returncode if self.proc is not None else 0
        self.proc = None
        if rc not in (0, EXIT_BUSY):
            self.failures += 1
            if self.failures == 3:
                self.warn("compaction keeps failing; the recording stays in chunks (still complete)")


EXIT_BUSY = 75     # another compactor holds the recording (EX_TEMPFAIL)

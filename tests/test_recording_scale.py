"""Compaction (ioattr/format/compact.py) at a small scale: the synthetic generator of
benchmarks/synthetic_recording.py writes a few minutes of a MariaDB
recording as the recorder would (one chunk per second here), and the
compactor merges it with small fan-outs so that every level is exercised.

Whatever the moment a reader looks (before, during, after, or after a
crash of a compaction) the report is the same, to the byte.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest

from ioattr.analysis.report import ReportRequest, build_report
from ioattr.format import compact as C
from ioattr.format.reader import Recording
from tests.helpers import synthetic_generator

SECONDS = 32                 # one chunk per second
FANOUT = (4, 4)              # 32 chunks -> 8 seg1 -> 2 seg2
BYS = (["file"], ["thread", "op"], ["phase"], ["index"], ["query", "api", "stage"])
QUICK = (["file"], ["thread", "op"])   # io table only: while only io is being compacted


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """32 one-second chunks, 6 phases (5 s each, 7 s the last): never compacted."""
    rec = tmp_path_factory.mktemp("scale") / "rec"
    synthetic_generator().generate(rec, hours=SECONDS / 3600, interval=1.0, chunk_seconds=1.0, seed=7,
                                   compact=False, tables=4, connections=3)
    return rec


@pytest.fixture
def rec(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "rec"
    shutil.copytree(pristine, copy)
    return copy


@pytest.fixture(scope="module")
def expected(pristine: Path) -> dict[str, str]:
    return reports(pristine)


def reports(rec: Path, bys=BYS) -> dict[str, str]:
    """The report JSON (less the recording's path) per --by."""
    r = Recording(rec, warn=_no_warnings)
    return {",".join(by): json.dumps({**build_report(r, ReportRequest(by=by)), "recording": None}, sort_keys=True)
            for by in bys}


def reports_keys(bys) -> list[str]:
    return [",".join(by) for by in bys]


def _no_warnings(msg: str) -> None:
    raise AssertionError(f"unexpected warning: {msg}")


def plain_sql_totals(rec: Path) -> tuple:
    return duckdb.sql(f"SELECT count(*) > 0, sum(count), sum(bytes), sum(h20) FROM "
                      f"read_parquet('{rec}/io/*.parquet')").fetchall()[0][1:]


def files(rec: Path, table: str = "io") -> list[str]:
    return sorted(p.name for p in (rec / table).iterdir())


def test_compaction_gives_the_same_report(rec: Path, expected: dict[str, str]) -> None:
    before_sql = plain_sql_totals(rec)
    rows_before = duckdb.sql(f"SELECT count(*) FROM read_parquet('{rec}/io/*.parquet')").fetchall()[0][0]
    merges = C.compact(rec, fanout=FANOUT)
    assert {m.level for m in merges} == {1, 2}
    assert not any(n.startswith("chunk-") for n in files(rec)), "every chunk was merged"
    assert files(rec) == ["seg2-000001-000016.parquet", "seg2-000017-000032.parquet"]
    assert reports(rec) == expected
    # plain SQL over the directory sees each row once, with fewer rows (60 s buckets)
    assert plain_sql_totals(rec) == before_sql
    rows_after = duckdb.sql(f"SELECT count(*) FROM read_parquet('{rec}/io/*.parquet')").fetchall()[0][0]
    assert rows_after < rows_before / 2        # 6 phases of 5 s in one 60 s bucket, cut by 8 seg1s
    # a bucket's rows share one span, inside the recording, and buckets do not overlap
    spans = duckdb.sql(f"SELECT DISTINCT ts_start, ts_end FROM read_parquet('{rec}/io/*.parquet') "
                       f"ORDER BY 1").fetchall()
    assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:]))
    meta = json.loads((rec / "meta.json").read_text())
    assert spans[0][0] >= meta["started"] and spans[-1][1] <= meta["ended"]
    # nothing left to do: compacting again changes nothing
    assert C.compact(rec, fanout=FANOUT) == []
    # owner-only, like everything in a recording
    for root, dirs, names in os.walk(rec):
        for d in dirs:
            assert stat.S_IMODE(os.stat(os.path.join(root, d)).st_mode) == 0o700, d
        for n in names:
            assert stat.S_IMODE(os.stat(os.path.join(root, n)).st_mode) == 0o600, n


def test_reader_never_double_counts_or_misses_between_steps(rec: Path, expected: dict[str, str]) -> None:
    want = {k: expected[k] for k in reports_keys(QUICK)}
    steps = 0
    while (m := C.plan("io", rec / "io", FANOUT)) is not None:
        C.write_segment(m)
        assert reports(rec, QUICK) == want       # segment written, not yet in place
        C.publish(m)
        assert reports(rec, QUICK) == want       # segment and the chunks it covers both there
        C.retire(m)
        assert reports(rec, QUICK) == want       # chunks gone
        steps += 1
    assert steps == 10


def test_reader_running_while_compaction_runs(rec: Path, expected: dict[str, str]) -> None:
    seen: list[bool] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                r = Recording(rec, warn=_no_warnings)
                got = json.dumps({**build_report(r, ReportRequest(by=["file"])), "recording": None},
                                 sort_keys=True)
                seen.append(got == expected["file"])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    try:
        merges = C.compact(rec, fanout=(2, 2, 2, 2, 2), tables=["io"])   # 31 merges: many moments
        assert len(merges) == 31
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert seen and all(seen), f"{seen.count(False)} of {len(seen)} reports differed"


CRASH = """
import os, signal, sys
from ioattr.format import compact as C
rec, where, k = C.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
calls = {"write": 0, "publish": 0}
real = {"write": C.write_segment, "publish": C.publish}

def dying(step):
    def f(*args, **kw):
        out = real[step](*args, **kw)
        calls[step] += 1
        if step == where and calls[step] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    return f

C.write_segment, C.publish = dying("write"), dying("publish")
C.compact(rec, fanout=(4, 4))
"""


def test_crash_mid_compaction(rec: Path, expected: dict[str, str]) -> None:
    """A compactor SIGKILLed after writing its 3rd segment (before the rename), then another
    after renaming its 2nd (before deleting the chunks it covers): readers see every row once."""
    quick = {k: expected[k] for k in reports_keys(QUICK)}

    def crash(where: str, k: int) -> None:
        r = subprocess.run([sys.executable, "-c", CRASH, str(rec), where, str(k)], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == -signal.SIGKILL, r.stderr

    crash("write", 3)
    tmp = rec / "io" / "seg1-000009-000012.parquet.tmp"
    assert tmp.exists() and stat.S_IMODE(tmp.stat().st_mode) == 0o600
    assert "chunk-000009.parquet" in files(rec) and "seg1-000009-000012.parquet" not in files(rec)
    assert reports(rec, QUICK) == quick
    crash("publish", 2)       # cleans up the .tmp first, redoes seg1-9-12, dies after seg1-13-16
    assert not tmp.exists()
    names = files(rec)
    assert "seg1-000009-000012.parquet" in names and "chunk-000009.parquet" not in names
    assert "seg1-000013-000016.parquet" in names and "chunk-000013.parquet" in names
    assert reports(rec, QUICK) == quick
    C.compact(rec, fanout=FANOUT)            # deletes the covered chunks, then goes on
    assert files(rec) == ["seg2-000001-000016.parquet", "seg2-000017-000032.parquet"]
    assert reports(rec) == expected


def test_the_writer_compacts_as_it_records(tmp_path: Path, expected: dict[str, str]) -> None:
    """RecordingWriter compacts (child processes) as chunks accumulate and when closed (default
    fan-out: 30 chunks per level-1 segment)."""
    rec = tmp_path / "rec"
    synthetic_generator().generate(rec, hours=SECONDS / 3600, interval=1.0, chunk_seconds=1.0, seed=7,
                                   compact=True, tables=4, connections=3)
    assert files(rec) == ["chunk-000031.parquet", "chunk-000032.parquet", "seg1-000001-000030.parquet"]
    assert reports(rec) == expected     # same data as the uncompacted twin (same seed)
    r = subprocess.run([sys.executable, "-m", "ioattr.cli.main", "compact", str(rec)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and ": 0 merges in " in r.stderr, (r.stdout, r.stderr)


def test_only_the_widest_part_counts() -> None:
    P = lambda name: C.parse_part(Path(name))  # noqa: E731
    parts = [P("chunk-000001.parquet"), P("chunk-000002.parquet"), P("seg1-000001-000002.parquet"),
             P("chunk-000003.parquet"), P("seg2-000001-000004.parquet"), P("chunk-000005.parquet"),
             P("seg1-000004-000006.parquet")]
    warned: list[str] = []
    live = C.live_parts(parts, warned.append)
    assert [p.path.name for p in live] == ["seg2-000001-000004.parquet", "chunk-000005.parquet"]
    assert warned and "overlaps" in warned[0]      # seg1-4-6 is not nested: never produced, skipped
    assert C.parse_part(Path("chunk-000001.parquet.tmp")) is None
    assert C.parse_part(Path("seg1-000009-000001.parquet")) is None

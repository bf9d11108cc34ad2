"""Recordings of several shapes, built deterministically, for the reader's fuzz tests.

The parts the fuzzers mutate must not depend on what a live recording happened
to capture (issue 10: the same seed took a different, fatal path on another
machine), so most of them are written here through the project's own
recording writer with known content:

    wide      benchmarks/synthetic_recording.py: 4 tablespaces, 2 connections,
              all four tables (io, pages, statements, counters), 4 s chunks
    segments  the same recording compacted (level-1 segments: rolled-up rows,
              other row-group and dictionary layouts)
    sparse    RecordingWriter directly: a handful of io rows per chunk, nulls in
              every nullable column, long and non-ASCII strings, no counters

plus, in the tests, one real recording's chunks. Each build is a pure
function of its arguments (fixed seeds, fixed timestamps).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import synthetic_generator


def wide(out: Path) -> Path:
    synthetic_generator().generate(out, hours=24 / 3600, interval=1.0, chunk_seconds=4.0, seed=11,
                                   compact=False, tables=4, connections=2)
    return out


def segments(wide_rec: Path, out: Path) -> Path:
    from ioattr.format.compact import compact

    shutil.copytree(wide_rec, out)
    assert compact(out, fanout=(2,), warn=lambda m: None)
    return out


def sparse(out: Path) -> Path:
    """Three chunks of a few io rows each: nulls, long and non-ASCII names, odd sizes."""
    import pyarrow as pa

    from ioattr.format.recording import RecordingWriter
    from ioattr.format.schema import TABLES

    w = RecordingWriter.create(out, targets=["fuzz"], interval=1.0, phase="load", probe_sets=["syscalls"],
                               degraded={})
    w.auto_compact = False
    schema = TABLES["io"]
    t0 = 1_700_000_000.0
    for c in range(3):
        rows = 2 + c
        cols = {}
        for f in schema:
            if f.name == "ts_start":
                cols[f.name] = [t0 + c] * rows
            elif f.name == "ts_end":
                cols[f.name] = [t0 + c + 1] * rows
            elif f.name == "phase":
                cols[f.name] = ["load" if c < 2 else "query"] * rows
            elif f.name == "layer":
                cols[f.name] = ["syscall"] * rows
            elif f.name == "op":
                cols[f.name] = ["read", "write", "fsync", "read", "write"][:rows]
            elif f.name in ("count", "bytes"):
                cols[f.name] = [(c + 1) * (i + 1) * (4096 if f.name == "bytes" else 1) for i in range(rows)]
            elif pa.types.is_string(f.type):
                cols[f.name] = ([None] if f.nullable else ["x"]) + \
                    [f"/data/{'é' * 40}/{f.name}-{c}-{i}" + "z" * (300 * i) for i in range(rows - 1)]
            elif f.nullable:
                cols[f.name] = [None] + [c * 1000 + i for i in range(rows - 1)]
            else:
                cols[f.name] = [c * 1000 + i for i in range(rows)]
        w.add_columns(cols, "io")
        if c == 1:
            w.start_phase("query", at=t0 + 2)
        w.flush({})
    w.meta["started"] = t0
    w.close("complete")
    return out


def build(base: Path) -> dict[str, Path]:
    """The synthetic recordings, by shape name, under `base`."""
    base.mkdir(parents=True, exist_ok=True)
    w = wide(base / "wide")
    return {"wide": w, "segments": segments(w, base / "segments"), "sparse": sparse(base / "sparse")}


def parts(rec: Path) -> list[Path]:
    """Every Parquet part of a recording (chunks and segments), in a stable order."""
    return sorted(rec.glob("*/*.parquet"))

"""The recording: one directory, readable with plain SQL.

    REC/meta.json                   tool version, host, kernel, targets, phases, drops, status
    REC/io/chunk-NNNNNN.parquet     per-interval IO aggregates (immutable once written)
    REC/pages/chunk-NNNNNN.parquet  per-interval InnoDB page classes (index, level, page type)
    REC/statements/chunk-NNNNNN.parquet  statements started per interval and digest (stage probes)
    REC/counters/chunk-NNNNNN.parquet    engine and host counter snapshots (collectors/counters.py)

Chunks are written to a temporary name and renamed, so a reader (report on
a recording still being written) never sees half a file and a crash loses
at most the chunk being built. meta.json is replaced the same way. Closed
chunks are merged into segments (`segL-FIRST-LAST.parquet`, rows summed
per 60 s) in the background and when the recording ends: compact.py.
Everything is created owner-only (0700 directories, 0600 files): a
recording names files, queries and processes of the traced host.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import platform
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ioattr import __version__
from ioattr.errors import RuntimeFailure, UsageError
from ioattr.format.compact import BackgroundCompactor
from ioattr.format.schema import FORMAT, TABLES


class RecordingWriteError(RuntimeFailure):
    """The recording can't be written any more (disk full, quota, I/O error): exit 1.

    The writer stays broken once this happened; what was written before stays readable."""

    def __init__(self, rec: Path, file: Path, err: OSError) -> None:
        no = err.errno
        text = str(err)
        self.disk_full = (no in (errno.ENOSPC, errno.EDQUOT) or "No space left on device" in text
                          or "Disk quota exceeded" in text)
        if not self.disk_full:
            try:
                self.disk_full = os.statvfs(rec).f_bavail == 0
            except OSError:
                pass
        if self.disk_full:
            why = "disk full (no space left on device)" if no != errno.EDQUOT else "disk quota exceeded"
        else:
            why = err.strerror or text
        self.rec = rec
        self.file = file
        self.reason = why
        super().__init__(f"{why}: cannot write {file}")


def _write_private(path: Path, data: bytes) -> None:
    """Replace path with data, atomically: a failure (disk full...) leaves the old file as it was."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:                       # a nearly full disk takes part of a write, then fails
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    os.close(fd)
    os.replace(tmp, path)


def check_output_dir(path: Path) -> None:
    """Refuse an output that is not a directory, holds a recording or is not empty."""
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"output {path} exists and is not a directory")
        if (path / "meta.json").exists():
            raise UsageError(f"output {path} already holds a recording; choose another -o")
        if any(path.iterdir()):
            raise UsageError(f"output directory {path} is not empty")


def prepare_output_dir(path: Path) -> None:
    """Create an empty, owner-only recording directory or refuse clearly."""
    check_output_dir(path)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)
        for table in TABLES:
            (path / table).mkdir(mode=0o700, exist_ok=True)
        probe = path / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"cannot write the recording at {path}: {e.strerror}") from e


@dataclass
class Phase:
    name: str
    start: float
    end: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "start": self.start, "end": self.end}


@dataclass
class RecordingWriter:
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)
    batches: dict[str, list[pa.RecordBatch]] = field(default_factory=dict)
    chunk_no: int = 0
    auto_compact: bool = True       # merge closed chunks into segments as we go (compact.py)
    broken: RecordingWriteError | None = None  # set by the first failed write
    _compactor: Any = field(default=None, repr=False)

    @classmethod
    def create(cls, path: Path, *, targets: list[str], interval: float, phase: str,
               probe_sets: list[str], degraded: dict[str, str]) -> "RecordingWriter":
        prepare_output_dir(path)
        now = time.time()
        meta = {
            "format": FORMAT,
            "tool": "ioattr",
            "tool_version": __version__,
            "host": socket.gethostname(),
            "kernel": platform.release(),
            "started": now,
            "ended": None,
            "status": "recording",
            "interval": interval,
            "targets": targets,
            "probe_sets": probe_sets,
            "degraded": degraded,
            "phases": [Phase(phase, now).as_dict()],
            "chunks": 0,
            "dropped": {},
            "notes": [],
        }
        w = cls(path, meta)
        w.write_meta()
        return w

    @property
    def current_phase(self) -> str:
        return self.meta["phases"][-1]["name"]

    def _failed(self, file: Path, err: OSError) -> RecordingWriteError:
        """From now on the writer is broken: every later write raises the same error."""
        self.broken = RecordingWriteError(self.path, file, err)
        self.batches = {}                 # rows that can't be written: freed, not kept growing
        return self.broken

    def write_meta(self) -> None:
        if self.broken is not None:
            raise self.broken
        target = self.path / "meta.json"
        try:
            _write_private(target, json.dumps(self.meta, indent=2).encode())
        except OSError as e:
            raise self._failed(target, e) from None

    def note(self, text: str) -> None:
        """Something the reader of the recording should know (a target exited...)."""
        self.meta["notes"].append({"time": time.time(), "text": text})
        self.write_meta()

    def start_phase(self, name: str, at: float | None = None, source: str = "mark") -> None:
        at = time.time() if at is None else at
        self.meta["phases"][-1]["end"] = at
        phase = Phase(name, at).as_dict()
        phase["source"] = source
        self.meta["phases"].append(phase)
        self.write_meta()

    def add_columns(self, columns: dict[str, Any], table: str = "io") -> None:
        """Buffer one interval's rows of a table, given column-wise (lists or numpy arrays)."""
        schema = TABLES[table]
        arrays = [pa.array(columns[f.name], type=f.type) for f in schema]
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        if batch.num_rows:
            self.batches.setdefault(table, []).append(batch)

    def flush(self, dropped: dict[str, int] | None = None) -> None:
        """Write buffered rows as one immutable chunk."""
        if dropped is not None:
            self.meta["dropped"] = dropped
        if self.broken is not None:
            raise self.broken
        if any(self.batches.values()):
            self.chunk_no += 1
            for name, batches in self.batches.items():
                if not batches:
                    continue
                table = pa.Table.from_batches(batches, schema=TABLES[name])
                final = self.path / name / f"chunk-{self.chunk_no:06d}.parquet"
                tmp = final.with_name(final.name + ".tmp")
                try:
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        pq.write_table(table, f, compression="zstd")
                    os.replace(tmp, final)
                except OSError as e:
                    # this chunk is lost (those of its tables already renamed stay: each is
                    # complete); the ones before it are untouched
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                    raise self._failed(final, e) from None
            self.batches = {}
            self.meta["chunks"] = self.chunk_no
            if self.auto_compact:
                self._compaction().poke()
        self.write_meta()

    def _compaction(self) -> Any:
        if self._compactor is None:
            self._compactor = BackgroundCompactor(self.path)
        return self._compactor

    def abandon(self, error: RecordingWriteError) -> bool:
        """After a write error: say so in meta.json if there is room for that (the failed
        chunk's space was given back); no compaction. True if meta.json was updated."""
        now = time.time()
        self.meta.update(ended=now, status="incomplete", error=str(error))
        if self.meta["phases"][-1]["end"] is None:
            self.meta["phases"][-1]["end"] = now
        self.meta["notes"].append({"time": now, "text": f"recording stopped: {error}"})
        try:
            _write_private(self.path / "meta.json", json.dumps(self.meta, indent=2).encode())
            return True
        except OSError:
            return False          # meta.json stays as last written (status "recording")

    def close(self, status: str = "complete") -> None:
        self.flush()
        now = time.time()
        self.meta["ended"] = now
        self.meta["status"] = status
        if self.meta["phases"][-1]["end"] is None:
            self.meta["phases"][-1]["end"] = now
        self.write_meta()
        if self.auto_compact:
            self._compaction().finish()

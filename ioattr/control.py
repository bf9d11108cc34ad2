"""Talking to a running `ioattr record`: phase marks and stop requests.

A running recorder registers itself in /run/ioattr (one small JSON file
per recorder, removed when it ends) and watches REC/control/ for requests.
`ioattr mark NAME` drops a request file there, atomically; the recorder
picks it up within 100 ms. Plain files keep this debuggable and need no
socket or listener.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ioattr.errors import UsageError

RUN_DIR = Path(os.environ.get("IOATTR_RUN_DIR", "/run/ioattr"))
PHASE_NAME = re.compile(r"^[A-Za-z0-9_.:@+-]{1,64}$")


def check_phase_name(name: str) -> str:
    if not PHASE_NAME.match(name):
        raise UsageError(f"bad phase name {name!r}: use 1-64 letters, digits and _ . : @ + -")
    return name


def _write_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


@dataclass
class Control:
    recording: Path
    run_file: Path | None

    @property
    def dir(self) -> Path:
        return self.recording / "control"

    def take_marks(self) -> list[tuple[float, str]]:
        out = []
        try:
            names = sorted(p for p in os.listdir(self.dir) if p.startswith("mark-") and p.endswith(".json"))
        except OSError:
            return out
        for n in names:
            path = self.dir / n
            try:
                req = json.loads(path.read_text())
                out.append((float(req["time"]), check_phase_name(str(req["phase"]))))
            except (OSError, ValueError, KeyError, UsageError):
                pass  # a malformed request is dropped, never fatal to the recording
            try:
                path.unlink()
            except OSError:
                pass
        return out

    def stop_requested(self) -> bool:
        return (self.dir / "stop").exists()

    def unregister(self) -> None:
        if self.run_file is not None:
            try:
                self.run_file.unlink()
            except OSError:
                pass


def _start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot): with the pid, it names one process
    for good (a pid alone is reused once the recorder that wrote a run file is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _alive(info: dict) -> bool:
    """The recorder a run file describes is still running (not a reused pid)."""
    pid = info.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    now = _start_time(pid)
    if now is None:
        return False
    return info.get("start_time") in (None, now)  # files without it: from an older version


def _run_files() -> list[tuple[Path, dict | None]]:
    out: list[tuple[Path, dict | None]] = []
    try:
        files = sorted(RUN_DIR.glob("record-*.json"))
    except OSError:
        return out
    for f in files:
        try:
            info = json.loads(f.read_text())
        except (OSError, ValueError):
            info = None
        out.append((f, info if isinstance(info, dict) else None))
    return out


def register(recording: Path) -> Control:
    ctl_dir = recording / "control"
    ctl_dir.mkdir(mode=0o700, exist_ok=True)
    run_file = None
    try:
        RUN_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
        # run files of recorders that were killed (SIGKILL, a crash) never got removed
        for f, info in _run_files():
            if info is not None and not _alive(info):
                try:
                    f.unlink()
                except OSError:
                    pass
        run_file = RUN_DIR / f"record-{os.getpid()}.json"
        _write_atomic(run_file, {"pid": os.getpid(), "start_time": _start_time(os.getpid()),
                                 "recording": str(recording.resolve()), "started": time.time()})
    except OSError:
        run_file = None  # marks then need --recording
    return Control(recording, run_file)


def active_recordings() -> list[dict]:
    return [info for _, info in _run_files() if info is not None and _alive(info)]


def resolve_recording(recording: str | None) -> Path:
    """The recording a mark is for: the one given, or the only one running."""
    if recording:
        rec = Path(recording)
        meta = rec / "meta.json"
        if not meta.exists():
            raise UsageError(f"not an ioattr recording: {rec}")
        try:
            status = json.loads(meta.read_text()).get("status")
        except (OSError, ValueError):
            status = None
        if status != "recording":
            raise UsageError(f"{rec} is not being recorded now (status {status})")
        return rec
    active = active_recordings()
    if not active:
        raise UsageError("no recording is running (start one with ioattr record, or give --recording)")
    if len(active) > 1:
        paths = ", ".join(a["recording"] for a in active)
        raise UsageError(f"several recordings are running ({paths}); say which with --recording")
    return Path(active[0]["recording"])


def send_mark(recording: Path, phase: str) -> None:
    check_phase_name(phase)
    ctl = recording / "control"
    if not ctl.is_dir():
        raise UsageError(f"{recording} takes no marks (no control directory)")
    _write_atomic(ctl / f"mark-{time.time_ns()}.json", {"phase": phase, "time": time.time()})


def send_stop(recording: Path) -> None:
    (recording / "control" / "stop").touch()

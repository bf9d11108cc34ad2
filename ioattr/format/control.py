"""Talking to a running `ioattr record`: phase marks and stop requests.

A running recorder registers itself in /run/ioattr (one small JSON file
per recorder, removed when it ends) and watches REC/control/ for requests.
`ioattr mark NAME` drops a request file there, atomically, and pokes the
FIFO REC/control/wake so the recorder looks at once (it also looks every
100 ms). The recorder starts the phase, snapshots the engine counters, and
only then removes the request: `mark` waits for that, so a benchmark that
runs `ioattr mark NEXT` and then its next phase has every IO of that phase
in it. Plain files keep this debuggable and need no socket or listener.
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from ioattr.errors import UsageError
from ioattr import environment

RUN_DIR = Path(environment.get("IOATTR_RUN_DIR"))
PHASE_NAME = re.compile(r"^[A-Za-z0-9_.:@+-]{1,64}$")
WAKE_FIFO = "wake"
MARK_WAIT_SECONDS = 10.0  # how long `ioattr mark` waits for the recorder to take the mark


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


def drain_fd(fd: int) -> None:
    """Read a non-blocking pipe or FIFO until it is empty (its bytes only say "look now")."""
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass


@dataclass
class Mark:
    """One `ioattr mark` request: ack() it once its phase has started (or, with no phase, once
    its operations are counted)."""

    time: float   # when `ioattr mark` asked
    name: str | None  # the phase to start (None: --ops alone)
    path: Path
    ops: float | None = None  # --ops: the benchmark's operations in the phase in force at `time`

    def ack(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass


@dataclass
class Control:
    recording: Path
    run_file: Path | None
    wake_fd: int | None = None  # the read side of REC/control/wake (held open read-write)
    _taken: set[str] = field(default_factory=set)

    @property
    def dir(self) -> Path:
        return self.recording / "control"

    def take_marks(self) -> list[Mark]:
        """New mark requests, oldest first. Each stays on disk until acked, so `ioattr mark`
        knows when its phase has really started."""
        out: list[Mark] = []
        self.clear_wake()
        try:
            names = sorted(p for p in os.listdir(self.dir) if p.startswith("mark-") and p.endswith(".json"))
        except OSError:
            return out
        self._taken &= set(names)
        for n in names:
            if n in self._taken:
                continue
            self._taken.add(n)
            path = self.dir / n
            try:
                req = json.loads(path.read_text())
                ops = req.get("ops")
                if ops is not None and (isinstance(ops, bool) or not isinstance(ops, (int, float)) or ops < 0
                                        or ops != ops or ops == float("inf")):
                    raise ValueError(f"bad ops {ops!r}")
                name = check_phase_name(str(req["phase"])) if "phase" in req or ops is None else None
                out.append(Mark(float(req["time"]), name, path, ops))
            except (OSError, ValueError, KeyError, UsageError, TypeError, AttributeError):
                try:
                    path.unlink()  # a malformed request is dropped, never fatal to the recording
                except OSError:
                    pass
        return out

    def clear_wake(self) -> None:
        """Empty the wake FIFO (its bytes only say "look now")."""
        if self.wake_fd is not None:
            drain_fd(self.wake_fd)

    def stop_requested(self) -> bool:
        return (self.dir / "stop").exists()

    def unregister(self) -> None:
        if self.wake_fd is not None:
            os.close(self.wake_fd)
            self.wake_fd = None
            try:
                (self.dir / WAKE_FIFO).unlink()
            except OSError:
                pass
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
    wake_fd = None
    try:
        fifo = ctl_dir / WAKE_FIFO
        if fifo.exists() and not stat.S_ISFIFO(fifo.lstat().st_mode):
            fifo.unlink()
        if not fifo.exists():
            os.mkfifo(fifo, 0o600)
        # read-write: never EOF when the last writer goes; non-blocking for clear_wake()
        wake_fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    except OSError:
        wake_fd = None  # marks are still seen by the 100 ms look
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
    return Control(recording, run_file, wake_fd)


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


def _poke(ctl: Path) -> None:
    """Wake the recorder (if it listens on the FIFO); never blocks."""
    try:
        fd = os.open(ctl / WAKE_FIFO, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return  # no FIFO, or nobody reading it (ENXIO): the recorder's 100 ms look finds the mark
    try:
        os.write(fd, b"m")
    except OSError as e:
        if e.errno != errno.EAGAIN:  # a full FIFO already says "look"
            pass
    finally:
        os.close(fd)


def send_mark(recording: Path, phase: str | None, wait: float = MARK_WAIT_SECONDS, *,
              ops: float | None = None) -> bool:
    """Ask the recorder to start `phase`; wait (up to `wait` s) until it has: then IO issued
    after this returns is the new phase's. `ops`: the benchmark's operations to add to the phase
    in force now, before `phase` starts (with phase None: only that). Returns whether the
    recorder took it in time (if not, the request stays queued)."""
    if phase is None and ops is None:
        raise ValueError("a mark needs a phase or ops")
    if phase is not None:
        check_phase_name(phase)
    ctl = recording / "control"
    if not ctl.is_dir():
        raise UsageError(f"{recording} takes no marks (no control directory)")
    req = ctl / f"mark-{time.time_ns()}.json"
    body: dict[str, object] = {"time": time.time()}
    if phase is not None:
        body["phase"] = phase
    if ops is not None:
        body["ops"] = ops
    _write_atomic(req, body)
    _poke(ctl)
    deadline = time.monotonic() + wait
    while req.exists():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)
    return True


def send_stop(recording: Path) -> None:
    (recording / "control" / "stop").touch()
    _poke(recording / "control")

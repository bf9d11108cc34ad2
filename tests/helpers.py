"""Helpers shared by the suite: run the installed `ioattr`, watch BPF state."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

ROOT = Path(__file__).resolve().parent.parent
IOATTR = str(Path(sys.executable).parent / "ioattr")
IOGEN = ROOT / "tests" / "workloads" / "iogen"
T = TypeVar("T")


def ioattr(*args: str, timeout: float = 120, check: bool = False, **kw) -> subprocess.CompletedProcess:
    """Run `ioattr ARGS` to completion, capturing text output."""
    r = subprocess.run([IOATTR, *args], capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"ioattr {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r


def report_json(rec: Path, *args: str) -> dict:
    r = ioattr("report", str(rec), "--format", "json", *args, check=True)
    return json.loads(r.stdout)


def loaded_ioattr_programs() -> list[str]:
    """Names of loaded BPF programs that belong to ioattr (prefix ioattr_)."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True)
    return [p.get("name", "") for p in json.loads(out.stdout or "[]")
            if p.get("name", "").startswith(("ioattr_", "doctor_"))]


def _prog_ids_held_by_processes() -> set[int]:
    """Ids of BPF programs some live process holds (directly or through a link), from fdinfo."""
    held: set[int] = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fdinfo")
        except OSError:
            continue
        for fd in fds:
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    for line in f:
                        if line.startswith("prog_id:"):
                            held.add(int(line.split()[1]))
            except (OSError, ValueError):
                continue
    return held


def leaked_ioattr_programs() -> list[str]:
    """ioattr programs still loaded although no process holds them: a leak.

    Programs of other ioattr processes running at the same time (another test
    session, a developer's recording) are held by those processes and are not
    counted, so two ioattr runs at once can't fail each other's checks."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True)
    progs = [(p["id"], p.get("name", "")) for p in json.loads(out.stdout or "[]")
             if p.get("name", "").startswith(("ioattr_", "doctor_"))]
    if not progs:
        return []
    held = _prog_ids_held_by_processes()
    return [name for pid, name in progs if pid not in held]


def wait_until(cond: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll `cond` until it returns something truthy and return that; fail clearly
    after `timeout` seconds. Tests wait for the event they need with this, never
    for a fixed time: the timeout is a safety net against hangs (make it generous),
    not a claim about speed, so a slow machine only makes the test slower."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def assert_no_ioattr_programs(timeout: float = 5.0) -> None:
    """Programs go away when their last fd closes; allow the kernel a moment."""
    deadline = time.monotonic() + timeout
    while True:
        progs = leaked_ioattr_programs()
        if not progs or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert progs == [], f"BPF programs still loaded with no process holding them: {progs}"


class Background:
    """`ioattr ARGS` running in the background until stopped; stderr collected by a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([IOATTR, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.stderr_lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def wait_for(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr:
                return
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise AssertionError(f"ioattr exited {self.proc.returncode}: {self.stderr}")
            time.sleep(0.05)
        raise AssertionError(f"ioattr did not say {text!r}: {self.stderr}")

    def wait_recording(self, timeout: float = 30) -> None:
        """Block until the recorder says it is attached and recording."""
        self.wait_for("recording ", timeout)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        return self.proc.returncode, self.stderr

"""Stopping a recorder, however it is stopped, leaves a readable recording and
nothing loaded in the kernel."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import need_root
from tests.helpers import Background, assert_no_ioattr_programs, report_json

WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o600)
while True:
    os.pwrite(fd, b"x" * 4096, 0)
    time.sleep(0.005)
"""


@pytest.fixture
def writer(tmp_path: Path):
    """A process that keeps writing 4 KiB to one file, stopped after the test."""
    need_root()
    target = tmp_path / "written"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)])
    time.sleep(0.2)
    yield proc, target
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_cleanly_and_keeps_everything(writer, tmp_path: Path, sig: int) -> None:
    proc, target = writer
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(proc.pid), "--interval", "0.3")
    bg.wait_recording()
    time.sleep(1.5)
    code, err = bg.stop(sig)
    assert code == 0, err
    assert "Traceback" not in err
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["ended"]
    rep = report_json(rec, "--by", "file", "--layer", "syscall")
    writes = [r for r in rep["rows"] if r["file"] == str(target) and r["op"] == "write"]
    assert writes and writes[0]["bytes"] == 4096 * writes[0]["count"] > 0
    assert_no_ioattr_programs()


def test_kill_9_leaves_a_readable_recording_and_no_programs(writer, tmp_path: Path) -> None:
    proc, target = writer
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(proc.pid), "--interval", "0.25",
                    "--chunk-seconds", "0.5")
    bg.wait_recording()
    time.sleep(2.0)
    bg.stop(signal.SIGKILL)
    # the kernel detached everything when the process died: nothing is pinned
    assert_no_ioattr_programs()
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["status"] == "recording"  # it never got to say complete
    rep = report_json(rec, "--by", "file")
    assert any(r["file"] == str(target) and r["bytes"] > 0 for r in rep["rows"])


def test_report_works_while_recording(writer, tmp_path: Path) -> None:
    proc, target = writer
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(proc.pid), "--interval", "0.25",
                    "--chunk-seconds", "0.5")
    try:
        bg.wait_recording()
        time.sleep(1.5)
        rep = report_json(rec, "--by", "file")
        first = sum(r["bytes"] for r in rep["rows"] if r["file"] == str(target))
        assert first > 0
        time.sleep(1.0)
        rep = report_json(rec, "--by", "file")
        assert sum(r["bytes"] for r in rep["rows"] if r["file"] == str(target)) > first
    finally:
        code, err = bg.stop()
    assert code == 0, err


def test_target_exit_is_noted_and_recording_goes_on(tmp_path: Path) -> None:
    need_root()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(proc.pid), "--interval", "0.25")
    bg.wait_recording()
    proc.wait()
    time.sleep(1.0)
    assert bg.proc.poll() is None, "the recorder must keep going when a target exits"
    code, err = bg.stop()
    assert code == 0, err
    meta = json.loads((rec / "meta.json").read_text())
    assert any(f"[{proc.pid}] exited" in n["text"] for n in meta["notes"]), meta["notes"]


def test_command_tree_is_followed(tmp_path: Path) -> None:
    """`record -- CMD`: grandchildren forked by the command are traced too."""
    need_root()
    rec = tmp_path / "rec"
    out = tmp_path / "grandchild.dat"
    script = f"dd if=/dev/zero of={out} bs=4096 count=25 status=none conv=fsync"
    r = subprocess.run([str(Path(sys.executable).parent / "ioattr"), "record", "-o", str(rec),
                        "--interval", "0.25", "--only-command", "--", "sh", "-c", f"sh -c '{script}'"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rep = report_json(rec, "--by", "file,process", "--layer", "syscall")
    rows = [x for x in rep["rows"] if x["file"] == str(out) and x["op"] == "write"]
    assert rows and rows[0]["bytes"] == 25 * 4096
    assert rows[0]["process"].startswith("dd[")


def test_failing_command_exit_status_is_reported(tmp_path: Path) -> None:
    need_root()
    rec = tmp_path / "rec"
    r = subprocess.run([str(Path(sys.executable).parent / "ioattr"), "record", "-o", str(rec), "--only-command",
                        "--", "sh", "-c", "exit 3"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "status 3" in r.stderr
    assert json.loads((rec / "meta.json").read_text())["status"] == "complete"

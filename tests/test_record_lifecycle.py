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
from tests.helpers import Background, Prompted, assert_no_ioattr_programs, report_json, wait_until

WRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o600)
print("ready", flush=True)
for line in sys.stdin:                  # "N": N pwrites of 4 KiB, then say done
    for _ in range(int(line)):
        os.pwrite(fd, b"x" * 4096, 0)
    print("done", flush=True)
"""


class Writer(Prompted):
    """A process that writes exactly N x 4 KiB to one file when asked: the ground truth."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.written = 0
        super().__init__("-c", WRITER, str(target))  # ready: the file is open, nothing of it yet

    def write(self, n: int) -> None:
        """Do n writes and return when they are done."""
        self.step(str(n))
        self.written += n


@pytest.fixture
def writer(tmp_path: Path):
    """The writer above on tmp_path/written, stopped after the test."""
    need_root()
    w = Writer(tmp_path / "written")
    yield w
    w.close()


def _writes(rec: Path, target: Path) -> tuple[int, int]:
    """(count, bytes) of syscall writes to target in the recording, as far as it is written."""
    rows = report_json(rec, "--by", "file", "--layer", "syscall")["rows"]
    w = [r for r in rows if r["file"] == str(target) and r["op"] == "write"]
    return sum(r["count"] for r in w), sum(r["bytes"] for r in w)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_cleanly_and_keeps_everything(writer: Writer, tmp_path: Path, sig: int) -> None:
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(writer.pid), "--interval", "0.3")
    try:
        bg.wait_recording()
        writer.write(50)
    finally:
        code, err = bg.stop(sig)
    assert code == 0, err
    assert "Traceback" not in err
    # -p of a process that is no database server: said in one line, with what is still traced
    said = [ln for ln in err.splitlines() if "not a database server" in ln]
    comm = Path(f"/proc/{writer.pid}/comm").read_text().strip()
    assert said == [f"ioattr: pid {writer.pid} ({comm}) is not a database server ioattr can name: only its "
                    "own file IO is traced (no index, page, query or role names)"], err
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["ended"]
    assert meta["servers"] == [] and any("not a database server" in n["text"] for n in meta["notes"])
    # the final drain keeps every write the recorder saw: all 50, not one more
    assert _writes(rec, writer.target) == (50, 50 * 4096)
    assert_no_ioattr_programs()


def _chunked_recorder(rec: Path, pid: int) -> Background:
    """A recorder of `pid` that writes a chunk every half second (quarter-second intervals)."""
    return Background("record", "-o", str(rec), "--pid", str(pid), "--interval", "0.25", "--chunk-seconds", "0.5")


def test_kill_9_leaves_a_readable_recording_and_no_programs(writer: Writer, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    bg = _chunked_recorder(rec, writer.pid)
    try:
        bg.wait_recording()
        writer.write(40)
        # a chunk holding all 40 writes is on disk (what a kill -9 can't take away)
        wait_until(lambda: _writes(rec, writer.target) == (40, 40 * 4096), 30,
                   lambda: f"40 writes in the recording's chunks, have {_writes(rec, writer.target)}")
    finally:
        bg.stop(signal.SIGKILL)
    # the kernel detached everything when the process died: nothing is pinned
    assert_no_ioattr_programs()
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["status"] == "recording"  # it never got to say complete
    assert _writes(rec, writer.target) == (40, 40 * 4096)


def test_report_works_while_recording(writer: Writer, tmp_path: Path) -> None:
    """Reports of a running recording see each flushed chunk: exactly the writes so far."""
    rec = tmp_path / "rec"
    bg = _chunked_recorder(rec, writer.pid)
    try:
        bg.wait_recording()
        for total in (30, 50):
            writer.write(total - writer.written)
            wait_until(lambda: _writes(rec, writer.target) == (total, total * 4096), 30,
                       lambda: f"{total} writes reported while recording, have {_writes(rec, writer.target)}")
        assert bg.proc.poll() is None
    finally:
        code, err = bg.stop()
    assert code == 0, err
    assert _writes(rec, writer.target) == (50, 50 * 4096)


def test_recording_stops_when_every_pid_target_exited(tmp_path: Path) -> None:
    """--pid P of a process that exits: nothing can be traced again (a restarted server is a new
    pid), so the recorder notes the exit, drains and stops by itself -- exit 0, a complete
    recording with every write the target made -- instead of recording nothing until Ctrl-C."""
    need_root()
    w = Writer(tmp_path / "written")
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(w.pid), "--interval", "0.25")
    try:
        bg.wait_recording()
        w.write(25)
        assert w.proc.stdin is not None
        w.proc.stdin.close()  # the writer's loop ends: it exits
        w.proc.wait()
        wait_until(lambda: bg.proc.poll() is not None, 60, "the recorder to stop after its only target exited")
    finally:
        code, err = bg.stop()
        w.close()
    assert code == 0, err
    assert "stopping: every --pid target exited" in err, err
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["status"] == "complete"
    assert any(f"[{w.pid}] exited" in n["text"] for n in meta["notes"]), meta["notes"]
    assert _writes(rec, w.target) == (25, 25 * 4096)
    assert_no_ioattr_programs()


def test_recording_goes_on_while_a_comm_target_may_come_back(tmp_path: Path) -> None:
    """--comm follows restarts: a target's exit is noted and the recorder keeps going."""
    need_root()
    comm = "ioattr-tgt-%d" % (abs(hash(str(tmp_path))) % 10000)
    # a target named comm (PR_SET_NAME) that exits when its stdin closes, not after some time
    proc = subprocess.Popen([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(None).prctl(15, sys.argv[1].encode());"
                             " print('ready', flush=True); sys.stdin.read()", comm],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--comm", comm[:15], "--interval", "0.25")
    try:
        bg.wait_recording()
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()

        def exit_noted() -> bool:
            notes = json.loads((rec / "meta.json").read_text())["notes"]
            return any(f"[{proc.pid}] exited" in n["text"] for n in notes)

        wait_until(exit_noted, 30, "the recorder to note the target's exit")
        assert bg.proc.poll() is None, "with --comm the recorder keeps going when a target exits"
    finally:
        code, err = bg.stop()
    assert code == 0, err


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


def test_server_start_lines_mark_command_and_idle_tail(mariadb_factory, tmp_path: Path) -> None:
    """`record -p SERVER` on a server whose INNODB_METRICS modules are off: the note that they were
    switched on is one line (the undo SQL in meta.json), the start line's `ioattr mark` command
    works as printed (from another directory, with a second recording running), no
    non-server warning, and a phase left running idle after the last statement gets the one
    line that suggests `record -- CMD`."""
    import re
    import shlex

    from tests.helpers import IOATTR

    db = mariadb_factory()
    rec, other = tmp_path / "rec", tmp_path / "other"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3")
    bystander = None
    try:
        bg.wait_recording()  # it switched the modules on: the second recorder finds them on
        bystander = Background("record", "-o", str(other), "--pid", str(db.pid), "--interval", "0.3")
        bystander.wait_recording()
        start = next(ln for ln in bg.stderr_lines if "recording " in ln)
        m = re.search(r"; phases: (ioattr mark --recording \S+) NAME\)$", start.rstrip())
        assert m, start
        argv = shlex.split(m.group(1))
        r = subprocess.run([IOATTR, *argv[1:], "q1"], capture_output=True, text=True, timeout=60, cwd="/")
        assert r.returncode == 0, r.stderr
        for i in range(40):
            db.query(f"SELECT {i}")
        bg.wait_for("phase q1 (mark)")
        time.sleep(3)  # the benchmark is over; the recorder runs on
    finally:
        code, err = bg.stop()
        if bystander is not None:
            assert "INNODB_METRICS" not in bystander.stop()[1]
    assert code == 0, err
    metrics = [ln for ln in err.splitlines() if "INNODB_METRICS" in ln]
    assert metrics == [f"ioattr: counters: server {db.pid}: switched on INNODB_METRICS buffer_page, "
                       "purge, index, log_checkpoints (left on; undo: meta.json notes)"], err
    assert "not a database server" not in err
    tail = [ln for ln in err.splitlines() if "past its last statement" in ln]
    assert len(tail) == 1 and tail[0].startswith("ioattr: phase q1 ran ") and tail[0].endswith(
        "s past its last statement (idle time counted in its rates); for exact phase ends: "
        "ioattr record ... -- CMD"), err
    meta = json.loads((rec / "meta.json").read_text())
    assert [p["name"] for p in meta["phases"]] == ["main", "q1"]
    undo = [n["text"] for n in meta["notes"] if "INNODB_METRICS" in n["text"]]
    assert len(undo) == 1 and "SET GLOBAL innodb_monitor_disable = 'module_buffer_page'" in undo[0]
    assert_no_ioattr_programs()


def test_a_server_that_goes_away_mid_recording(mariadb_factory, tmp_path: Path) -> None:
    """`record -p SERVER` and the server dies (kill -9: its connections reset under the counter
    reads): no traceback, every stderr line one `ioattr:` line, the recorder stops by itself
    (its only target exited) with a complete recording of the statements run before."""
    db = mariadb_factory()
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3")
    try:
        bg.wait_recording()
        for i in range(20):
            db.query(f"SELECT {i}")
        pid = db.pid
        db._kill()  # SIGKILL to our own server's pid
        wait_until(lambda: bg.proc.poll() is not None, 60, "the recorder to stop after its server died")
    finally:
        code, err = bg.stop()
    assert code == 0, err
    assert "Traceback" not in err and all(ln.startswith("ioattr: ") for ln in err.splitlines()), err
    assert "stopping: every --pid target exited" in err, err
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["status"] == "complete" and any(f"[{pid}] exited" in n["text"] for n in meta["notes"]), meta
    assert_no_ioattr_programs()

"""Benchmark phases: --phase, `ioattr mark`, --phase-pattern and SQL markers."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import need_root
from tests.helpers import IOATTR, Background, ioattr, report_json


def _phase_bytes(rec: Path, path: str) -> dict[str, int]:
    rep = report_json(rec, "--by", "phase,file", "--layer", "syscall")
    out: dict[str, int] = {}
    for r in rep["rows"]:
        if r["file"] == path and r["op"] == "write":
            out[r["phase"]] = out.get(r["phase"], 0) + r["bytes"]
    return out


def test_phase_pattern_over_command_output(tmp_path: Path) -> None:
    need_root()
    f = tmp_path / "data"
    # a phase starts when its line is read, a few ms after it is printed: the workload gives it that
    script = (f"echo 'PHASE load'; sleep 0.3; dd if=/dev/zero of={f} bs=4096 count=10 status=none; sleep 0.4; "
              f"echo 'PHASE query'; sleep 0.3; dd if=/dev/zero of={f} bs=4096 count=3 status=none; sleep 0.4")
    rec = tmp_path / "rec"
    r = subprocess.run([IOATTR, "record", "-o", str(rec), "--only-command", "--interval", "0.2", "--phase", "setup",
                        "--phase-pattern", r"PHASE (\w+)", "--", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "PHASE load" in r.stdout  # the command's output is passed through
    meta = json.loads((rec / "meta.json").read_text())
    assert [p["name"] for p in meta["phases"]] == ["setup", "load", "query"]
    assert meta["phases"][1]["source"] == "output"
    assert _phase_bytes(rec, str(f)) == {"load": 40960, "query": 12288}
    assert report_json(rec, "--phase", "query", "--by", "file")["rows"]


def test_mark_starts_a_phase_in_a_running_recording(tmp_path: Path, monkeypatch) -> None:
    need_root()
    # a registry of our own, so other recordings running on this host can't make "the only one" ambiguous
    monkeypatch.setenv("IOATTR_RUN_DIR", str(tmp_path / "run"))
    f = tmp_path / "w"
    writer = subprocess.Popen([sys.executable, "-c", f"""
import os, sys, time
fd = os.open({str(f)!r}, os.O_CREAT | os.O_WRONLY, 0o600)
for line in sys.stdin:
    os.pwrite(fd, b"x" * 4096 * int(line), 0)
    print("ok", flush=True)
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(writer.pid), "--interval", "0.2")
    try:
        bg.wait_recording()

        def write(n: int) -> None:
            writer.stdin.write(f"{n}\n")
            writer.stdin.flush()
            writer.stdout.readline()
            time.sleep(0.3)

        write(2)
        r = ioattr("mark", "second", "--recording", str(rec))
        assert r.returncode == 0, r.stderr
        time.sleep(0.4)
        write(5)
        r = ioattr("mark", "third")  # the only recording running: found without --recording
        assert r.returncode == 0, r.stderr
        time.sleep(0.4)
        write(1)
    finally:
        code, err = bg.stop()
        writer.kill()
        writer.wait()
    assert code == 0, err
    meta = json.loads((rec / "meta.json").read_text())
    assert [p["name"] for p in meta["phases"]] == ["main", "second", "third"]
    assert _phase_bytes(rec, str(f)) == {"main": 8192, "second": 20480, "third": 4096}


def test_mark_errors(tmp_path: Path) -> None:
    r = ioattr("mark", "x", "--recording", str(tmp_path))
    assert r.returncode == 2 and "not an ioattr recording" in r.stderr
    r = ioattr("mark", "bad name!", "--recording", str(tmp_path))
    assert r.returncode == 2
    r = ioattr("mark")
    assert r.returncode == 2 and "PHASE" in r.stderr


def test_sql_marker_starts_a_phase(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="8M")
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.2")
    try:
        bg.wait_recording()
        db.query("SELECT 1 /* ioattr:phase=load */")
        time.sleep(0.5)
        db.query("SELECT 'ioattr:phase=query' AS marker")
        time.sleep(0.5)
    finally:
        code, err = bg.stop()
    assert code == 0, err
    meta = json.loads((rec / "meta.json").read_text())
    names = [p["name"] for p in meta["phases"]]
    assert names == ["main", "load", "query"], (names, err)
    assert meta["phases"][1]["source"] == "sql"


def test_auto_phases_follow_the_statement_mix(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="16M")
    db.query("CREATE DATABASE ib")
    db.query("CREATE TABLE ib.t (id INT AUTO_INCREMENT PRIMARY KEY, a INT, b CHAR(100)) ENGINE=InnoDB")
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.25", "--auto-phases")
    try:
        bg.wait_recording()
        conn = db.connect()
        with conn.cursor() as cur:
            deadline = time.monotonic() + 1.5
            i = 0
            while time.monotonic() < deadline:  # load: inserts only
                cur.execute("INSERT INTO ib.t (a, b) SELECT seq * %s, 'x' FROM ib.seq_1_to_2000", (i,))
                i += 1
            cur.execute("CREATE INDEX a ON ib.t (a, b)")  # ddl
            time.sleep(0.3)
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:  # mixed
                cur.execute("SELECT COUNT(*) FROM ib.t WHERE a BETWEEN %s AND %s", (i, i + 1000))
                cur.execute("INSERT INTO ib.t (a, b) VALUES (%s, 'y')", (i,))
                i += 1
        conn.close()
        time.sleep(0.4)
    finally:
        code, err = bg.stop()
    assert code == 0, err
    meta = json.loads((rec / "meta.json").read_text())
    labels = [p["name"].split(".", 1)[1] for p in meta["phases"][1:]]
    assert [p["source"] for p in meta["phases"][1:]] == ["auto"] * len(labels)
    # the three parts of the workload, in order (short transitions may add a phase between)
    order = [lab for lab in labels if lab in ("load", "ddl", "mixed")]
    assert order[:1] == ["load"] and "mixed" in order and order.index("mixed") > 0, labels

"""`record --no-marker-wait`: SQL phase markers are not held for the counters snapshot.

By default a recorder sets stage.bpf.c's `phase_ack` non-zero while it runs, which
makes a statement carrying `ioattr:phase=` wait (bounded) in its probe until the
boundary's engine counters are read. With --no-marker-wait the recorder leaves it
at 0, so no statement ever waits; phases still start at the marker, IO still exact.
The map is read from the recorder's own file descriptors (fdinfo `map_id`), so
other ioattr processes running at the same time can't confuse the test.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.conftest import need_tool
from tests.helpers import Background, wait_until


def _phase_ack(pid: int) -> int:
    """The value of the recorder's phase_ack map (stage.bpf.c)."""
    bpftool = need_tool("bpftool")
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            m = re.search(r"^map_id:\s+(\d+)", fd.read_text(), re.M)
        except OSError:
            continue
        if not m:
            continue
        info = json.loads(subprocess.run([bpftool, "-j", "map", "show", "id", m.group(1)],
                                         capture_output=True, text=True, check=True).stdout)
        if info.get("name") != "phase_ack":
            continue
        out = json.loads(subprocess.run([bpftool, "-j", "map", "lookup", "id", m.group(1), "key", "0", "0", "0", "0"],
                                        capture_output=True, text=True, check=True).stdout)
        return int.from_bytes(bytes(int(b, 16) for b in out["value"]), "little")
    raise AssertionError(f"recorder {pid} holds no phase_ack map")


def _marker_phases(db, rec: Path, *extra: str) -> tuple[int, list[str]]:  # type: ignore[no-untyped-def]
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.2", *extra)
    try:
        bg.wait_recording()
        ack = _phase_ack(bg.proc.pid)
        db.query("SELECT 'ioattr:phase=marked' AS marker")

        def started() -> bool:
            try:
                return "marked" in [p["name"] for p in json.loads((rec / "meta.json").read_text())["phases"]]
            except (OSError, ValueError):
                return False
        wait_until(started, 30, "phase 'marked' in meta.json")
    finally:
        code, err = bg.stop()
    assert code == 0, err
    return ack, [p["name"] for p in json.loads((rec / "meta.json").read_text())["phases"]]


def test_markers_wait_by_default_and_not_with_no_marker_wait(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="8M")
    ack, names = _marker_phases(db, tmp_path / "default")
    assert ack != 0 and names == ["main", "marked"], (ack, names)  # markers are held for the snapshot
    ack, names = _marker_phases(db, tmp_path / "nowait", "--no-marker-wait")
    assert ack == 0 and names == ["main", "marked"], (ack, names)  # never held; the phase still starts

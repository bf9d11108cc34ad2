"""A BPF map that fills up: the IO that found no room is counted per map and shown by
record, report (JSON and table), top and the exporter -- never silent -- and the keys that
were already in the map keep counting exactly.

The workload is a Python process that opens one file, waits until the tracer is attached,
writes 10 x 4 KiB to it, then one 512-byte write to each of 200 new files (200 new
io_stats keys, far more than the --max-entries 16 capacity), then 5 more x 4 KiB to the
first file (whose key was in the map before it filled).

So the answer is known exactly: the first file's key takes one of the 16 slots, the first
15 new files get the other 15, and the writes of the other 185 find the map full. The files
live on a private tmpfs, so no block-layer IO (writeback, a `sync` by anyone) can take a
slot or add a drop; the workload does no other regular-file IO after the go."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import need_root
from tests.helpers import (IOATTR, Background, Prompted, assert_no_ioattr_programs, ioattr, report_json,
                           wait_until)

CAPACITY = 16
FILES = 200
FIRST_WRITES, LATER_WRITES, BLOCK = 10, 5, 4096
FIRST_FILE_BYTES = (FIRST_WRITES + LATER_WRITES) * BLOCK
ADMITTED = CAPACITY - 1            # new files that found a slot (the first file holds one)
DROPPED = FILES - ADMITTED         # writes that found io_stats full: one per other new file

WORKLOAD = f"""
import os, sys
d = sys.argv[1]
a = os.open(os.path.join(d, "first"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
print("ready", flush=True)
sys.stdin.readline()                      # go: the tracer is attached
buf = b"x" * {BLOCK}
for _ in range({FIRST_WRITES}):
    os.write(a, buf)
for i in range({FILES}):                  # many more keys than the map holds
    fd = os.open(os.path.join(d, "many-%03d" % i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"y" * 512)
    os.close(fd)
for _ in range({LATER_WRITES}):           # the first file's key was in the map before it filled
    os.write(a, buf)
print("done", flush=True)
sys.stdin.readline()                      # exit when told
"""


class Workload(Prompted):
    """The workload above, held at its start until go()."""

    def __init__(self, tmp: Path) -> None:
        self.dir = tmp / "files"
        self.dir.mkdir()
        # a tmpfs of its own: no block IO, so the drops are exactly the syscall writes above
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "ioattr-drops", str(self.dir)],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"cannot mount a tmpfs: {r.stderr.strip()}"
        script = tmp / "workload.py"
        script.write_text(WORKLOAD)
        super().__init__(str(script), str(self.dir))

    def go(self) -> None:
        self.step()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("\n")  # type: ignore[union-attr]
                self.proc.stdin.close()      # type: ignore[union-attr]
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if os.path.ismount(self.dir):
            subprocess.run(["umount", "-l", str(self.dir)], capture_output=True)


@pytest.fixture(scope="module")
def full_recording(tmp_path_factory) -> tuple[Path, str]:
    """A recording with --max-entries 16 over the workload: (recording, record's stderr)."""
    need_root()
    tmp = tmp_path_factory.mktemp("drops")
    rec = tmp / "rec"
    with Workload(tmp) as wl:
        bg = Background("record", "-o", str(rec), "--pid", str(wl.pid), "--interval", "0.2",
                        "--max-entries", str(CAPACITY))
        try:
            bg.wait_recording()
            wl.go()          # returns once every write is done; stopping drains them all
        finally:
            code, err = bg.stop()
    assert code == 0, err
    assert_no_ioattr_programs()
    return rec, err


def test_record_says_so_and_meta_keeps_the_capacity(full_recording) -> None:
    rec, err = full_recording
    assert "Traceback" not in err
    warn = [ln for ln in err.splitlines() if "dropped" in ln]
    assert len(warn) == 1 and "io_stats" in warn[0] and "--max-entries" in warn[0], err
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["max_entries"] == {"io_stats": CAPACITY}
    assert meta["dropped"]["stats_full"] == DROPPED, meta["dropped"]
    assert sum(meta["dropped"].values()) == DROPPED, meta["dropped"]  # and nothing else was lost


def test_report_json_counts_drops_per_map(full_recording) -> None:
    rec, _ = full_recording
    rep = report_json(rec, "--by", "file", "--layer", "syscall")
    assert rep["dropped"] == DROPPED
    by_map = {d["map"]: d for d in rep["dropped_by"]}
    assert by_map["io_stats"]["reason"] == "stats_full"
    assert by_map["io_stats"]["count"] == DROPPED and by_map["io_stats"]["max_entries"] == CAPACITY
    assert sum(d["count"] for d in rep["dropped_by"]) == rep["dropped"]
    # the first 15 new files found a slot (one write of 512 B each); the other 185 are not there
    many = [r for r in rep["rows"] if (r["file"] or "").rsplit("/", 1)[-1].startswith("many-")]
    assert sorted((r["file"].rsplit("/", 1)[-1], r["op"], r["count"], r["bytes"]) for r in many) == \
        [(f"many-{i:03d}", "write", 1, 512) for i in range(ADMITTED)], many


def test_a_key_already_in_the_full_map_still_counts_exactly(full_recording) -> None:
    rec, _ = full_recording
    rows = report_json(rec, "--by", "file", "--layer", "syscall")["rows"]
    first = [r for r in rows if (r["file"] or "").endswith("/files/first") and r["op"] == "write"]
    assert len(first) == 1, rows
    assert first[0]["bytes"] == FIRST_FILE_BYTES
    assert first[0]["count"] == FIRST_WRITES + LATER_WRITES


def test_report_table_and_csv_and_html_warn(full_recording, tmp_path: Path) -> None:
    rec, _ = full_recording
    table = ioattr("report", str(rec), "--by", "file", check=True).stdout
    warn = [ln for ln in table.splitlines() if ln.startswith("WARNING:")]
    assert len(warn) == 1 and "dropped" in warn[0] and "io_stats" in warn[0] and f"capacity {CAPACITY}" in warn[0]
    html = tmp_path / "r.html"
    ioattr("report", str(rec), "--format", "html", "-o", str(html), check=True)
    assert "dropped" in html.read_text()


def test_report_of_a_recording_without_drops_has_no_warning(tmp_path: Path) -> None:
    need_root()
    rec = tmp_path / "rec"
    ioattr("record", "-o", str(rec), "--only-command", "--interval", "0.2", "--",
           "dd", "if=/dev/zero", f"of={tmp_path / 'f'}", "bs=4096", "count=4", "status=none", check=True)
    rep = report_json(rec)
    assert rep["dropped"] == 0 and "dropped_by" not in rep  # the contract's keys, unchanged
    assert "WARNING" not in ioattr("report", str(rec), check=True).stdout


def test_top_batch_shows_the_drops(tmp_path: Path) -> None:
    """top's header counts every drop: once the workload is done, a snapshot says DROPPED 185.

    top runs with room for many snapshots; the test reads them as they come until one shows
    the whole count (or top ends without one), then stops top with SIGTERM (a clean exit)."""
    need_root()
    with Workload(tmp_path) as wl:
        top = subprocess.Popen([IOATTR, "top", "--batch", "--pid", str(wl.pid), "--interval", "0.3", "-n", "200",
                                "--max-entries", str(CAPACITY), "--width", "160"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        seen: list[str] = []
        try:
            assert top.stdout is not None
            first = top.stdout.readline()  # the first snapshot: attached
            assert first.startswith("ioattr top"), (first, top.stderr.read() if top.poll() is not None else "")
            wl.go()
            for line in top.stdout:        # snapshots as they come; ends if top exits
                seen.append(line)
                if f"DROPPED {DROPPED} " in line:
                    break
            top.send_signal(signal.SIGTERM)
            out, err = top.communicate(timeout=60)
        finally:
            if top.poll() is None:
                top.kill()
                top.wait()
    out = "".join(seen) + out
    assert top.returncode == 0, err
    assert "Traceback" not in err
    dropped = [ln for ln in out.splitlines() if "DROPPED" in ln]
    assert dropped, out
    assert "(io_stats full)" in dropped[-1], dropped[-1]
    assert int(dropped[-1].split("DROPPED ")[1].split()[0]) == DROPPED, dropped[-1]
    assert_no_ioattr_programs()


def _metric(text: str, name: str) -> dict[tuple, float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_exporter_counts_the_drops(tmp_path: Path) -> None:
    need_root()
    from tests.helpers import exporter_port

    with Workload(tmp_path) as wl:
        exp = Background("exporter", "--pid", str(wl.pid), "--listen", "127.0.0.1:0", "--interval", "0.2",
                         "--max-entries", str(CAPACITY), "--no-probe-stats")
        try:
            port = exporter_port(exp)  # the kernel picked a free one: no race for it
            wl.go()
            got: dict = {}

            def all_drops_exported() -> bool:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                    got["text"] = r.read().decode()
                got["drops"] = _metric(got["text"], "ioattr_drops_total")
                return got["drops"].get((("map", "io_stats"), ("reason", "stats_full")), 0) >= DROPPED

            wait_until(all_drops_exported, 30, lambda: f"{DROPPED} io_stats drops exported: {got.get('drops')}")
            text, drops = got["text"], got["drops"]
        finally:
            code, err = exp.stop()
    assert drops[(("map", "io_stats"), ("reason", "stats_full"))] == DROPPED, drops
    assert sum(drops.values()) == DROPPED, drops
    assert _metric(text, "ioattr_map_max_entries")[(("map", "io_stats"),)] == CAPACITY
    assert code == 0, err
    assert "Traceback" not in err
    assert sum("dropped" in ln for ln in err.splitlines()) == 1, err  # said once on stderr, too
    assert_no_ioattr_programs()


@pytest.mark.parametrize("value", ["0", "15", "abc", str((1 << 24) + 1)])
def test_bad_capacity_is_one_line(value: str) -> None:
    for cmd in ("record", "top", "exporter"):
        r = ioattr(cmd, "--max-entries", value, "--pid", "1")
        assert r.returncode == 2, (cmd, r.stderr)
        assert "--max-entries" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr

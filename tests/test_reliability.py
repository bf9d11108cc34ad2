"""Reliability: what a long recording on a real host runs into.

- the traced server restarts (a new pid, new uprobes, nothing lost from before);
- the recording's disk fills up (a clean stop, one line, the recording readable);
- 10,000 temp files created and deleted (exact totals, bounded name tables);
- two recorders and a `top` at once (each its own numbers, nothing left behind).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import need, need_root, need_tool
from tests.helpers import IOATTR, Background, assert_no_ioattr_programs, ioattr, report_json, \
    synthetic_generator, wait_until


def _notes(rec: Path) -> list[str]:
    return [n["text"] for n in json.loads((rec / "meta.json").read_text())["notes"]]


def _has_queries(rec: Path, process: str, *prefixes: str) -> bool:
    """Whether the recording (its chunks so far) has syscall IO of process under each query prefix."""
    r = ioattr("report", str(rec), "--format", "json", "--by", "process,query", "--layer", "syscall")
    if r.returncode != 0:               # no chunk written yet
        return False
    queries = [row["query"] or "" for row in json.loads(r.stdout)["rows"] if row["process"] == process]
    return all(any(q.startswith(p) for q in queries) for p in prefixes)


# -- 1. the traced server restarts ---------------------------------------------------------

def test_restarted_server_is_traced_again_with_its_uprobes(mariadb_factory, tmp_path: Path) -> None:
    """`--comm NAME` follows a server through a restart on the same datadir: the exit and the
    new pid are noted, the new process's IO and statements (stage uprobes re-attached) are
    attributed to it, and what was recorded before the restart is all still there."""
    need_root()
    # the server runs under a name of its own (a link to mariadbd: comm is the link's name,
    # /proc/PID/exe the real binary), so --comm can't pick up any other server on the host
    comm = f"mdbrst{os.getpid() % 100000}"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / comm).symlink_to(need_tool("mariadbd"))
    db = mariadb_factory(mariadbd=str(bindir / comm), buffer_pool="16M")
    db.query("CREATE DATABASE rel")
    db.query("CREATE TABLE rel.t (id INT PRIMARY KEY AUTO_INCREMENT, pad VARCHAR(255)) ENGINE=InnoDB")
    db.query("INSERT INTO rel.t (pad) SELECT REPEAT('x', 250) FROM mysql.seq_1_to_4000")
    old_pid = db.pid

    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--comm", comm, "--interval", "0.5", "--chunk-seconds", "1")
    try:
        bg.wait_recording()
        for _ in range(3):
            db.query("INSERT INTO rel.t (pad) SELECT REPEAT('b', 250) FROM mysql.seq_1_to_500")
        # the inserts are in the recording (a flushed chunk), named by the old pid, before it goes
        wait_until(lambda: _has_queries(rec, f"{comm}[{old_pid}]", "INSERT INTO rel.t"), 30,
                   "the old server's inserts in the recording", interval=0.3)
        db.restart()                       # SHUTDOWN, then a new mariadbd on the same datadir
        new_pid = db.pid
        assert new_pid != old_pid
        # targets are rescanned every interval: IO before the recorder notices the new process
        # is not traced (docs/recording.md), so wait for the note before the statements that must be
        wait_until(lambda: any(f"[{new_pid}] appeared" in n for n in _notes(rec)), 30,
                   lambda: f"the note that [{new_pid}] appeared: {_notes(rec)}")
        # cold buffer pool (no dump/load): this scan reads the table from disk, by the new pid
        assert db.query("SELECT SUM(LENGTH(pad)), MAX(id) FROM rel.t WHERE id > 0")[0][0] > 0
        for _ in range(3):
            db.query("UPDATE rel.t SET pad = REPEAT('a', 250) WHERE id % 7 = 3")
        # the new server's statements are in the recording while it still runs
        wait_until(lambda: _has_queries(rec, f"{comm}[{new_pid}]", "SELECT SUM(LENGTH(pad))", "UPDATE rel.t"),
                   30, "the new server's SELECT and UPDATEs in the recording", interval=0.3)
        assert bg.proc.poll() is None, "the recorder must keep going through a restart"
    finally:
        code, err = bg.stop()
    assert code == 0, err
    assert "Traceback" not in err

    notes = _notes(rec)
    assert any(f"[{old_pid}] exited" in n for n in notes), notes
    assert any(f"[{new_pid}] appeared" in n for n in notes), notes
    meta = json.loads((rec / "meta.json").read_text())
    by_pid = {s["pid"]: s for s in meta["servers"]}
    assert new_pid in by_pid, meta["servers"]
    assert (by_pid[new_pid]["stage_probes"] or "").startswith("attached"), by_pid[new_pid]
    assert by_pid[new_pid]["connected"], by_pid[new_pid]

    rows = report_json(rec, "--by", "process,query", "--layer", "syscall")["rows"]
    mine = {(r["process"], r["query"]) for r in rows if r["query"]}
    old_proc, new_proc = f"{comm}[{old_pid}]", f"{comm}[{new_pid}]"
    # before the restart: the inserts, by the old pid (nothing lost)
    assert any(p == old_proc and q.startswith("INSERT INTO rel.t") for p, q in mine), mine
    # after: the new statements, by the new pid, named through the re-attached uprobes
    assert any(p == new_proc and q.startswith("SELECT SUM(LENGTH(pad))") for p, q in mine), mine
    assert any(p == new_proc and q.startswith("UPDATE rel.t") for p, q in mine), mine
    assert not any(p == old_proc and q.startswith(("SELECT SUM", "UPDATE")) for p, q in mine), mine

    files = report_json(rec, "--by", "process,file", "--layer", "syscall")["rows"]
    table_file = str(db.datadir / "rel" / "t.ibd")
    new_reads = [r for r in files if r["process"] == new_proc and r["file"] == table_file and r["op"] == "read"]
    assert new_reads and new_reads[0]["bytes"] > 0, [r for r in files if r["file"] == table_file]
    old_writes = [r for r in files if r["process"] == old_proc and r["op"] == "write"]
    assert old_writes, files
    assert_no_ioattr_programs()


# -- 2. the recording's disk fills up --------------------------------------------------------

MANY_FILES_WRITER = r"""
import json, os, sys, time
out_dir, done, batch1, batch2 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
go = done + ".go"
os.makedirs(out_dir, exist_ok=True)
fds = [os.open(os.path.join(out_dir, f"f{i:03d}"), os.O_CREAT | os.O_WRONLY, 0o600) for i in range(200)]

def batch(loops):
    n = 0
    for _ in range(loops):
        for fd in fds:                  # 200 files: 200 distinct rows per interval
            n += os.pwrite(fd, b"w" * 4096, 0)
    return n

first = batch(batch1)
with open(done + ".first", "w") as f:
    json.dump({"pid": os.getpid(), "written": first}, f)
while not os.path.exists(go):           # the second batch when told (the disk is full by then)
    time.sleep(0.02)
second = batch(batch2)
with open(done, "w") as f:
    json.dump({"pid": os.getpid(), "first": first, "second": second}, f)
"""
BATCH1_LOOPS, BATCH2_LOOPS = 10, 5      # x 200 files x 4 KiB


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "ioattr-test", str(path)],
                       capture_output=True, text=True)
    need(r.returncode == 0, f"cannot mount a tmpfs: {r.stderr.strip()}")


@contextlib.contextmanager
def _small_disk(tmp_path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` at tmp_path/small for the body of a `with` (root only): a disk to fill."""
    need_root()
    small = tmp_path / "small"
    _mount_tmpfs(small, size)
    try:
        yield small
    finally:
        _umount(small)


def _umount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _record_many_files_writer(rec: Path, tmp_path: Path, done: Path) -> Background:
    """record -o REC -- a writer of many small files (short intervals and chunks, so a small
    disk fills between chunks). The writer does BATCH1_LOOPS x 200 writes of 4 KiB, says so
    in DONE.first, waits for DONE.go to exist, does BATCH2_LOOPS x 200 more and writes DONE."""
    return Background("record", "-o", str(rec), "--interval", "0.25", "--chunk-seconds", "0.5",
                      "--only-command", "--", sys.executable, "-c", MANY_FILES_WRITER,
                      str(tmp_path / "data"), str(done), str(BATCH1_LOOPS), str(BATCH2_LOOPS))


def _fill(path: Path) -> None:
    """Write until the filesystem is full."""
    block = b"\0" * 65536
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        while True:
            try:
                if os.write(fd, block) < len(block):
                    continue
            except OSError:
                break
    finally:
        os.close(fd)


def _written_in(chunks: list[Path], prefix: str) -> int:
    """Syscall write bytes to files under prefix, read straight from chunk files."""
    import pyarrow.parquet as pq

    total = 0
    for f in chunks:
        t = pq.read_table(f, columns=["layer", "op", "file", "bytes"]).to_pylist()
        total += sum(r["bytes"] for r in t if r["layer"] == "syscall" and r["op"] == "write"
                     and (r["file"] or "").startswith(prefix))
    return total


def test_disk_full_stops_recording_cleanly_and_lets_the_command_finish(tmp_path: Path) -> None:
    """The recording's filesystem fills up while a wrapped command runs: ioattr stops tracing
    with one line naming the condition and exit 1, lets the command finish (waits for it: not
    killed, not orphaned), leaves no BPF programs, and the recording -- on the still full
    disk -- reports everything up to the last chunk written before the disk filled.

    Exactly: the command's first batch is in the chunks before the disk is filled, its second
    batch comes after, so the recording holds the first batch's bytes, no more, no less."""
    need_root()
    with _small_disk(tmp_path, "4m") as small:
        rec = small / "rec"
        done = tmp_path / "done.json"
        first_file = Path(str(done) + ".first")
        data = str(tmp_path / "data")
        bg = _record_many_files_writer(rec, tmp_path, done)
        try:
            bg.wait_recording()
            wait_until(first_file.exists, 60, "the command's first batch")
            first = json.loads(first_file.read_text())["written"]
            assert first == BATCH1_LOOPS * 200 * 4096
            # the whole first batch is in chunks on disk
            wait_until(lambda: _written_in(sorted((rec / "io").glob("chunk-*.parquet")), data) == first, 60,
                       lambda: f"{first} bytes in the chunks: {_written_in(sorted((rec / 'io').glob('chunk-*.parquet')), data)}")
            before = sorted((rec / "io").glob("chunk-*.parquet"))
            _fill(small / "filler")
            # ioattr stops on its own (the next chunk can't be written) and waits for the
            # command, which only then does its second batch and exits
            bg.wait_for("waiting for the command", timeout=40)
            Path(str(done) + ".go").touch()
            bg.proc.wait(timeout=40)
        finally:
            code, err = bg.stop()
        assert code == 1, err
        assert "Traceback" not in err
        errors = [line for line in err.splitlines() if line.startswith("ioattr record:")]
        assert len(errors) == 1 and "disk full" in errors[0], err
        assert "waiting for the command" in err, err
        # the command was left to finish its work and was waited for (reaped: no orphan)
        info = json.loads(done.read_text())
        assert (info["first"], info["second"]) == (first, BATCH2_LOOPS * 200 * 4096), info
        assert not os.path.exists(f"/proc/{info['pid']}"), "the command was orphaned"
        assert "status 0" in errors[0], errors
        assert_no_ioattr_programs()

        # readable as it is, on the full disk: every chunk written before the disk filled
        meta = json.loads((rec / "meta.json").read_text())
        assert meta["status"] in ("incomplete", "recording"), meta["status"]
        after = sorted((rec / "io").glob("chunk-*.parquet"))
        assert set(before) <= set(after)
        assert not list(rec.glob("*/*.tmp")), "a failed write left a temporary file"
        rep = report_json(rec, "--by", "file", "--layer", "syscall")
        got = sum(r["bytes"] for r in rep["rows"] if (r["file"] or "").startswith(data) and r["op"] == "write")
        # the first batch, all of it; nothing of the second (no chunk could be written after the fill)
        assert got == _written_in(after, data) == _written_in(before, data) == first


def test_disk_full_then_sigterm_is_passed_on_to_the_command(tmp_path: Path) -> None:
    """While ioattr waits for the command after a full disk, a SIGTERM to ioattr ends the
    command too (nothing left running) and the line gives its status."""
    need_root()
    with _small_disk(tmp_path, "4m") as small:
        rec = small / "rec"
        done = tmp_path / "done.json"
        bg = _record_many_files_writer(rec, tmp_path, done)  # never told to go on: still running
        try:
            bg.wait_recording()
            _fill(small / "filler")
            bg.wait_for("waiting for the command", timeout=40)
            child = int(bg.stderr.split("waiting for the command (pid ")[1].split(")")[0])
            code, err = bg.stop(signal.SIGTERM)
        finally:
            bg.stop()
        assert code == 1, err
        errors = [line for line in err.splitlines() if line.startswith("ioattr record:")]
        assert len(errors) == 1 and "disk full" in errors[0] and "status -15" in errors[0], err
        assert not done.exists() and not os.path.exists(f"/proc/{child}")
        assert not Path(str(done) + ".go").exists()
        assert_no_ioattr_programs()


def test_disk_full_in_the_writer_loses_only_the_chunk_being_written(tmp_path: Path) -> None:
    """ioattr/format/recording.py alone: a chunk that can't be written raises RecordingWriteError
    (disk_full) and leaves no temporary file; earlier chunks and meta.json stay intact; the
    writer stays broken (every later write raises the same error) and abandon() says so in
    meta.json once there is room again."""
    need_root()
    from ioattr.format.recording import RecordingWriteError, RecordingWriter
    from ioattr.format.schema import TABLES

    def interval(i: int) -> dict:
        row = {f.name: [None] for f in TABLES["io"]}
        row.update(ts_start=[float(i)], ts_end=[i + 1.0], phase=["main"], layer=["syscall"], op=["write"],
                   file=[f"/data/f{i}"], count=[1], bytes=[4096])
        row.update({c: [0] for c in ("lat_sum_ns",) + tuple(f"h{j:02d}" for j in range(64))})
        return row

    with _small_disk(tmp_path, "1m") as small:
        rec = small / "rec"
        w = RecordingWriter.create(rec, targets=["pid 1"], interval=1.0, phase="main", probe_sets=[],
                                   degraded={})
        w.auto_compact = False
        for i in range(3):
            w.add_columns(interval(i))
            w.flush()
        _fill(small / "filler")
        w.add_columns(interval(3))
        with pytest.raises(RecordingWriteError) as e:
            w.flush()
        assert e.value.disk_full and "chunk-000004" in str(e.value), str(e.value)
        assert not list(rec.glob("**/*.tmp"))
        assert json.loads((rec / "meta.json").read_text())["chunks"] == 3
        with pytest.raises(RecordingWriteError):
            w.note("more")                      # broken for good: the same error again
        (small / "filler").unlink()
        assert w.abandon(e.value)
        meta = json.loads((rec / "meta.json").read_text())
        assert meta["status"] == "incomplete" and "disk full" in meta["error"]
        rows = report_json(rec, "--by", "file")["rows"]
        assert sorted(r["file"] for r in rows) == ["/data/f0", "/data/f1", "/data/f2"]


def test_disk_full_during_compaction_keeps_the_chunks(tmp_path: Path) -> None:
    """Compaction (ioattr/format/compact.py) on a full disk: one line, exit 1, its temporary segment
    removed, every chunk still there and the report unchanged."""
    gen = synthetic_generator()
    with _small_disk(tmp_path, "16m") as small:
        rec = small / "rec"
        gen.generate(rec, hours=32 / 3600, interval=1.0, chunk_seconds=1.0, seed=3, compact=False,
                     tables=4, connections=3)
        want = report_json(rec, "--by", "file,op")
        chunks = sorted(rec.glob("*/chunk-*.parquet"))
        _fill(small / "filler")
        r = subprocess.run([sys.executable, "-m", "ioattr.cli.main", "compact", str(rec)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 1, r
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "disk full" in r.stderr, r.stderr
        assert sorted(rec.glob("*/chunk-*.parquet")) == chunks
        assert not list(rec.glob("*/*.tmp")), "the failed segment was left behind"
        assert report_json(rec, "--by", "file,op")["rows"] == want["rows"]


# -- 3. 10,000 temp files created and deleted --------------------------------------------------

TEMP_FILES = r"""
import json, os, sys
d, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(d, exist_ok=True)
os.read(0, 1)                                  # go: the recorder is attached
wrote = read = 0
for i in range(n):
    path = os.path.join(d, f"tmp{i:05d}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    size = 1000 + (i % 13) * 300
    wrote += os.write(fd, b"t" * size)
    read += len(os.pread(fd, size, 0))
    os.close(fd)
    os.unlink(path)
with open(out, "w") as f:
    json.dump({"pid": os.getpid(), "write_bytes": wrote, "read_bytes": read, "files": n}, f)
"""


@pytest.mark.parametrize("fs", ["ext4", "tmpfs"])
def test_ten_thousand_temp_files(tmp_path: Path, fs: str) -> None:
    """10,000 files created, written, read back and deleted while recording: the recorded
    bytes and operations on them equal what the workload did; the file dimension names them
    by path -- on ext4, which hands a deleted file's inode to the next one at once, an inode
    that had several files in one interval is labelled "DIR/[N files reusing one inode]", and
    a file created later on a reused inode (truth.json here) is never charged with the deleted
    files' IO; no drops; the recorder's file-name table stays bounded."""
    need_root()
    n = 10_000
    base = tmp_path
    if fs == "tmpfs":                      # inode numbers never reused: one row per file
        base = tmp_path / "mnt"
        _mount_tmpfs(base, "64m")
    try:
        _temp_files(tmp_path, base, n, fs)
    finally:
        if fs == "tmpfs":
            _umount(base)


def _temp_files(tmp_path: Path, base: Path, n: int, fs: str) -> None:
    d = base / "tmpfiles"
    out = base / "truth.json"
    work = subprocess.Popen([sys.executable, "-c", TEMP_FILES, str(d), str(n), str(out)], stdin=subprocess.PIPE)
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(work.pid), "--interval", "0.25")
    try:
        bg.wait_recording()
        work.stdin.write(b"g")
        work.stdin.close()
        assert work.wait(timeout=60) == 0       # done: stopping drains the last deltas
    finally:
        if work.poll() is None:
            work.kill()
            work.wait()
        code, err = bg.stop()
    assert code == 0, err
    assert "Traceback" not in err
    truth = json.loads(out.read_text())

    rep = report_json(rec, "--by", "file,inode,process", "--layer", "syscall")
    meta = json.loads((rec / "meta.json").read_text())
    mine = [r for r in rep["rows"] if r["process"].endswith(f"[{work.pid}]")]
    in_dir = [r for r in mine if (r["file"] or "").startswith(f"{d}/")]
    mixed = [r for r in mine if (r["file"] or "").startswith(f"{base}/[")]  # tmpfiles/ and truth.json
    own = [r for r in mine if r["file"] == str(out)]
    unnamed = [r for r in mine if r["file"] is None]

    def total(rows: list[dict], op: str, what: str = "bytes") -> int:
        return sum(r[what] for r in rows if r["op"] == op)

    json_size = out.stat().st_size
    # the process's writes, whatever their names: exactly the temp files' and truth.json's
    assert total(mine, "write") == truth["write_bytes"] + json_size
    assert total(mine, "write", "count") == n + 1
    # IO is never lost; the one loss a busy host may cause is open events (the ring buffer full
    # before the recorder read it), which only cost names: every inode without a name is one
    # whose open event was dropped, and the drops are in the recording (none: all named)
    drops = meta["dropped"]
    assert {k: v for k, v in drops.items() if k != "events_full" and v} == {}, drops
    assert rep["dropped"] == sum(drops.values()), (rep["dropped"], drops)
    assert len({r["inode"] for r in unnamed}) <= drops.get("events_full", 0), (unnamed[:3], drops)
    named = in_dir + mixed + own
    assert total(named + unnamed, "write") == truth["write_bytes"] + json_size
    assert total(in_dir + mixed + unnamed, "read") == truth["read_bytes"]
    assert total(in_dir + mixed + unnamed, "read", "count") == n
    assert total(own, "read") == 0, own
    if fs == "ext4":
        # truth.json, created after the last temp file was deleted on a maybe reused inode, is
        # charged only its own write (under its name, or under the reused inode's label)
        assert total(own, "write") in (0, json_size), own
    else:
        # tmpfs: every file its own inode, so per inode the answer is exact, named or not:
        # truth.json's inode has its one write, and the temp files' inodes are n inodes each
        # written and read once with its own size
        truth_ino = out.stat().st_ino
        per_inode: dict[int, list[int]] = {}
        for r in mine:
            if r["op"] in ("read", "write") and r["inode"] != truth_ino:
                per_inode.setdefault(r["inode"], [0, 0])[r["op"] == "read"] += r["bytes"]
        assert total([r for r in mine if r["inode"] == truth_ino], "write") == json_size
        assert not mixed, mixed[:3]
        want = Counter(1000 + (i % 13) * 300 for i in range(n))
        assert Counter(w for w, _ in per_inode.values()) == want
        assert all(w == rd for w, rd in per_inode.values())
        # and each named one by its own path, one path per inode
        paths = {r["inode"]: r["file"] for r in in_dir}
        assert len(set(paths.values())) == len(paths) == len({r["inode"] for r in in_dir})
        assert len(paths) + len({r["inode"] for r in unnamed if r["inode"] != truth_ino}) == n
        for i in range(0, n, 997):
            f = f"{d}/tmp{i:05d}"
            rows = [r for r in in_dir if r["file"] == f]
            if rows or not drops.get("events_full"):  # absent only when its open event was dropped
                assert total(rows, "write") == total(rows, "read") == 1000 + (i % 13) * 300, (f, rows)
    # bounded: at most one name per inode the filesystem had in use, and never more than the cap
    from ioattr.collectors.names import MAX_FILE_NAMES

    files_named = meta["name_tables"]["files"]
    assert files_named <= MAX_FILE_NAMES
    if fs == "ext4":
        assert files_named < 1000, meta["name_tables"]   # reused inodes: one entry each


def test_file_name_table_is_bounded_and_labels_reused_inodes() -> None:
    """collectors/names.py without BPF: the least recently used names go first past the cap,
    and an inode that had two paths in one interval gets the common-directory label."""
    from ioattr.collectors import abi
    from ioattr.collectors.names import FileNames

    def opened(names: FileNames, ino: int, path: str) -> None:
        ev = abi.OpenEvent()
        ev.tgid, ev.fd, ev.dev, ev.ino, ev.dfd = 0x3FFFFFFF, 3, 7, ino, -100  # no such process
        ev.path = path.encode()
        names.on_open(ev)

    names = FileNames(max_names=100)
    opened(names, 1, "/nonexistent/keep")
    for i in range(2, 10_002):
        opened(names, i, f"/nonexistent/d/f{i}")
        if i % 50 == 0:
            assert names.lookup(7, 1) == "/nonexistent/keep"   # in use: stays
    assert len(names.names) == 100
    assert names.lookup(7, 10_001) == "/nonexistent/d/f10001"
    assert names.lookup(7, 2) is None                          # long gone, never guessed
    names.end_interval()
    opened(names, 10_001, "/nonexistent/d/g")
    opened(names, 10_001, "/nonexistent/e/h")
    assert names.lookup(7, 10_001) == "/nonexistent/[3 files reusing one inode]"
    names.end_interval()
    opened(names, 20_000, "/nonexistent/r/000013.sst")  # an LSM's compaction output on its input's inode
    opened(names, 20_000, "/nonexistent/r/000020.sst")
    assert names.lookup(7, 20_000) == "/nonexistent/r/[2 .sst files reusing one inode]"
    names.end_interval()
    assert names.lookup(7, 10_001) == "/nonexistent/e/h"


# -- 4. two recorders and a top at once ---------------------------------------------------------

ON_DEMAND_WRITER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o600)
for line in sys.stdin:                      # "N": do N writes of 4 KiB, then say done
    for i in range(int(line)):
        os.pwrite(fd, b"x" * 4096, (i % 64) * 4096)
        time.sleep(0.002)
    print("done", flush=True)
"""


class _Writer:
    """A process that writes exactly N x 4 KiB to its own file when asked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.proc = subprocess.Popen([sys.executable, "-c", ON_DEMAND_WRITER, str(path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def start(self, n: int) -> None:
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()

    def wait_done(self) -> None:
        assert self.proc.stdout.readline().strip() == "done"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _written(rec: Path, path: Path) -> tuple[int, int]:
    rows = report_json(rec, "--by", "file", "--layer", "syscall")["rows"]
    w = [r for r in rows if r["file"] == str(path) and r["op"] == "write"]
    return sum(r["count"] for r in w), sum(r["bytes"] for r in w)


def test_two_recorders_and_top_at_once(tmp_path: Path) -> None:
    """Two `ioattr record` (one on A, one on A and B: an overlapping target) and an
    `ioattr top --batch` on B at the same time: each recording counts exactly the writes of its
    own targets while it ran; stopping the first leaves the second counting exactly; marks go
    to the recording they name; the control files don't collide; nothing stays loaded."""
    need_root()
    run_dir = tmp_path / "run"
    env = dict(os.environ, IOATTR_RUN_DIR=str(run_dir))
    a, b = _Writer(tmp_path / "a.dat"), _Writer(tmp_path / "b.dat")
    rec1, rec2 = tmp_path / "rec1", tmp_path / "rec2"
    # run files left by killed recorders: a dead pid, and a live pid that is not that recorder
    run_dir.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    fake = tmp_path / "fake"
    (fake / "control").mkdir(parents=True)
    (fake / "meta.json").write_text('{"status": "recording"}')
    for pid, start in ((dead.pid, 1), (os.getpid(), 1)):
        (run_dir / f"record-{pid}.json").write_text(json.dumps(
            {"pid": pid, "start_time": start, "recording": str(fake), "started": 0}))
    bgs: list[Background] = []
    try:
        os.environ["IOATTR_RUN_DIR"] = str(run_dir)   # inherited by Background
        try:
            r1 = Background("record", "-o", str(rec1), "--pid", str(a.proc.pid), "--interval", "0.3")
            bgs.append(r1)
            r2 = Background("record", "-o", str(rec2), "--pid", str(a.proc.pid), "--pid", str(b.proc.pid),
                            "--interval", "0.3")
            bgs.append(r2)
        finally:
            del os.environ["IOATTR_RUN_DIR"]
        r1.wait_recording()
        r2.wait_recording()
        # each recorder its own control file
        runs = sorted(p.name for p in run_dir.glob("record-*.json"))
        assert runs == sorted([f"record-{r1.proc.pid}.json", f"record-{r2.proc.pid}.json"]), runs
        both = ioattr("mark", "x", env=env)
        assert both.returncode == 2 and "several recordings" in both.stderr, both.stderr
        assert str(fake) not in both.stderr, both.stderr
        assert ioattr("mark", "only2", "--recording", str(rec2), env=env).returncode == 0

        top = subprocess.Popen([IOATTR, "top", "--pid", str(b.proc.pid), "--batch", "-n", "200", "--interval", "0.3",
                                "--width", "200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = top.stdout.readline()           # the first snapshot: top is attached
        assert first.startswith("ioattr top"), first + top.stderr.read()
        a.start(300)
        b.start(200)
        a.wait_done()
        b.wait_done()
        seen = []
        for line in top.stdout:                 # snapshots until one shows b's writes (or top ends)
            seen.append(line)
            if "b.dat" in line:
                break
        top.send_signal(signal.SIGTERM)         # a clean stop
        rest, terr = top.communicate(timeout=30)
        out = first + "".join(seen) + rest
        assert top.returncode == 0, terr
        assert "b.dat" in out and "a.dat" not in out, out

        code, err = r1.stop()                   # the first recorder ends; the second goes on
        assert code == 0, err
        assert not (run_dir / f"record-{r1.proc.pid}.json").exists()
        # the one left running is the only recording now: a mark needs no --recording
        only = ioattr("mark", "after1", env=env)
        assert only.returncode == 0 and str(rec2) in only.stderr, only.stderr
        a.start(100)
        b.start(50)
        a.wait_done()
        b.wait_done()
        assert r2.proc.poll() is None
        code, err = r2.stop()
        assert code == 0, err
    finally:
        for bg in bgs:
            bg.stop()
        a.close()
        b.close()
    assert list(run_dir.glob("record-*.json")) == []
    assert _written(rec1, a.path) == (300, 300 * 4096)
    assert _written(rec1, b.path) == (0, 0)
    assert _written(rec2, a.path) == (400, 400 * 4096)
    assert _written(rec2, b.path) == (250, 250 * 4096)
    assert [p["name"] for p in json.loads((rec1 / "meta.json").read_text())["phases"]] == ["main"]
    assert [p["name"] for p in json.loads((rec2 / "meta.json").read_text())["phases"]] == ["main", "only2", "after1"]
    assert_no_ioattr_programs()

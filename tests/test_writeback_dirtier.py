"""Writeback is charged to whoever dirtied the pages, not to the file's user.

Benchmarkers copy a prepared datadir and start the server on it: the copy's pages are
still dirty when the server opens the files, and reach the disk during the recording --
written back by a flusher, by the server's own O_DIRECT IO (the kernel writes the cached
range first), or by a `sync`. They are the copy's, not the server's: block writes of a
target's file whose pages no target dirtied while traced are nobody's (no pid, kind
others_dirty, process "[not a target: ...]"), while a target's own buffered writes stay its
own whoever writes them back (tests/test_block_attribution.py has the plain case).

Ground truth: `cp --sparse=never` dirties every page of every file it writes, so the
writeback of a copy is the copied sizes rounded up to pages, exactly; `sync` returns when
it is on the disk. No step depends on timing: the files are the target's (it did IO on
them) before cp writes a byte, so a flusher writing some of the copy back early still
writes it while it is counted, and every byte is counted once whoever writes it back.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ioattr.host import datadir_cache
from ioattr.model.labels import NOT_A_TARGET
from tests.conftest import need_root
from tests.helpers import Background, Prompted, recording, report_json

MiB = 1024 * 1024
PAGE = 4096

# A target that makes the copy's destination files its own before cp writes them (it
# creates each empty and reads it: one syscall-layer IO each), then dirties some pages.
HOLDER = """
import os, sys
root = sys.argv[1]
print("ready", flush=True)
for line in sys.stdin:
    cmd, _, arg = line.strip().partition(" ")
    if cmd == "claim":              # arg: a file listing the relative paths, one a line
        for rel in open(arg).read().splitlines():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            os.read(fd, 1)          # empty: 0 bytes, but an IO on the file
            os.close(fd)
    elif cmd == "dirty":            # arg: PATH OFFSET LENGTH: buffered writes, no sync
        path, off, length = arg.split()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.pwrite(fd, b"t" * int(length), int(off))
        os.close(fd)
    print("done", flush=True)
"""


def _cached_datadir(mariadb_factory) -> Path:
    """A pristine datadir of the suite's datadir cache (ioattr/host/datadir_cache.py), made
    by starting a server when the cache has none yet."""
    root = os.environ.get(datadir_cache.ENV)
    assert root, f"{datadir_cache.ENV} is not set (tests/fixtures_mariadb.py sets it)"

    def entries() -> list[Path]:
        return sorted(p for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith("."))

    if not entries():
        mariadb_factory(buffer_pool="8M")  # installs once, into the cache
    found = entries()
    assert found, f"no datadir in the cache {root}"
    return found[0]


def _files(top: Path) -> dict[str, int]:
    """Relative path -> size of every regular file under top."""
    return {str(p.relative_to(top)): p.stat().st_size for p in top.rglob("*") if p.is_file() and not p.is_symlink()}


def _pages(size: int) -> int:
    return -(-size // PAGE) * PAGE


def _disk_written(path: Path) -> int:
    """Bytes the disk holding path has written since boot (/sys/block/DEV/stat)."""
    st = os.stat(path)
    dev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    stat = dev / "stat"
    if not stat.exists():  # a partition's own stat is there too; anything else: its disk's
        stat = dev.resolve().parent / "stat"
    return int(stat.read_text().split()[6]) * 512


def _block_writes(rec: Path) -> list[dict]:
    return [r for r in report_json(rec, "--by", "process,file,api,op", "--layer", "block")["rows"]
            if r["op"] == "write"]


def _sync() -> None:
    """Write everything back, from a process that is not a target."""
    subprocess.run(["sync"], check=True)


def test_a_copy_is_nobodys_and_the_targets_own_writes_are_its(tmp_path: Path, mariadb_factory) -> None:
    """A target holds the destination files; `cp` (not a target) copies a datadir into them
    and `sync` writes it back: every byte of the copy is nobody's, none the target's. Then
    the target overwrites 64 KiB of a copied file and writes 8 MiB of its own: after the next
    sync those are the target's, exactly."""
    need_root()
    src = _cached_datadir(mariadb_factory)
    files = _files(src)
    dst = tmp_path / "copy"
    listing = tmp_path / "files.txt"
    listing.write_text("\n".join(files) + "\n")
    _sync()  # the list is this process's writes: on the disk before the target reads it
    copied = sum(_pages(s) for s in files.values())
    big = max(files, key=files.get)  # ibdata1 or the redo log: several MiB
    own = tmp_path / "own.bin"
    rec = tmp_path / "rec"
    with Prompted("-c", HOLDER, str(dst)) as holder, recording(holder.pid, rec):
        holder.step(f"claim {listing}")
        disk_before = _disk_written(tmp_path)
        subprocess.run(["cp", "-r", "--sparse=never", f"{src}/.", f"{dst}/"], check=True)
        _sync()
        disk_copy = _disk_written(tmp_path) - disk_before
        holder.step(f"dirty {dst / big} 0 {64 * 1024}")
        holder.step(f"dirty {own} 0 {8 * MiB}")
        _sync()
    assert _files(dst) == files  # cp wrote into the files the target held

    rows = _block_writes(rec)
    nobody = [r for r in rows if r["process"] == NOT_A_TARGET]
    mine = [r for r in rows if r["process"] and r["process"].endswith(f"[{holder.pid}]")]
    assert not [r for r in rows if r not in nobody and r not in mine], rows
    assert not [r for r in nobody if r["api"] != "buffered" or not r["file"].startswith(f"{dst}/")], nobody
    # the copy, exactly: every file's pages, nobody's
    by_file = {r["file"]: r["bytes"] for r in nobody}
    want = {f"{dst}/{rel}": _pages(s) for rel, s in files.items() if s}
    assert by_file == want, sorted(set(by_file.items()) ^ set(want.items()))[:10]
    assert sum(by_file.values()) == copied
    assert disk_copy >= copied, (disk_copy, copied)  # the disk wrote it (and others' IO besides)
    # the target's own dirtying: its own file and its 64 KiB of the copied one, exactly
    got = {r["file"]: r["bytes"] for r in mine if r["api"] == "buffered"}
    assert got == {str(own): 8 * MiB, f"{dst}/{big}": 64 * 1024}, mine


def _innodb_file(path: str) -> bool:
    """InnoDB's own files, which the server (O_DIRECT) never writes through the page cache."""
    name = os.path.basename(path)
    return name.endswith(".ibd") or name in ("ibdata1", "ib_logfile0") or name.startswith("undo")


def test_a_server_started_on_a_fresh_copy_is_not_charged_its_writeback(mariadb_factory, tmp_path: Path) -> None:
    """The benchmarker's case: a server started on a datadir just copied from the cache (by
    this process, not synced), recorded at once, then `sync`: none of the copy's bytes are in
    the server's rows -- no buffered writes of InnoDB's files, which it writes only with
    O_DIRECT, and of the files it writes through the page cache no more than its own writes
    dirtied -- and what the recording has of the copy is nobody's, on the server's files.
    (How much of the copy is still dirty at the attach varies -- InnoDB fsyncs its files at
    start-up, Aria's stay dirty -- so these are bounds; the test above is the exact one.)"""
    need_root()
    server = mariadb_factory(buffer_pool="8M", flush_method="O_DIRECT")
    copied = sum(_pages(s) for s in _files(server.datadir).values())
    rec = tmp_path / "rec"
    recorder = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3")
    try:
        recorder.wait_recording()
        # the server writes its redo log and tablespaces (O_DIRECT): the kernel writes the
        # copy's cached pages of those ranges back first, from the server's threads
        server.query("CREATE DATABASE d")
        server.query("CREATE TABLE d.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
        server.query("INSERT INTO d.t SELECT seq, REPEAT('x', 200) FROM d.seq_1_to_5000")
        server.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        _sync()
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        recorder.stop()
    rows = _block_writes(rec)
    mine = f"[{server.pid}]"
    theirs = [r for r in rows if r["process"] and r["process"].endswith(mine)]
    assert theirs, rows
    assert not [r for r in theirs if r["api"] == "buffered" and _innodb_file(r["file"] or "")], theirs
    # the files it does write through the page cache (Aria's, ddl_recovery.log, .frm): no more
    # written back as its own than the pages its own write calls can have dirtied
    wrote: dict[str, list[int]] = {}
    for r in report_json(rec, "--by", "process,file,op", "--layer", "syscall")["rows"]:
        if r["op"] == "write" and r["process"] and r["process"].endswith(mine):
            wrote[r["file"]] = [r["count"], r["bytes"]]
    for r in theirs:
        if r["api"] == "buffered" and (r["file"] or "").startswith(f"{server.datadir}/"):
            n, b = wrote.get(r["file"], [0, 0])
            assert r["bytes"] <= _pages(b) + n * PAGE, (r, wrote.get(r["file"]))
    # nobody's: the copy's pages, and pages the server itself dirtied before the attach (its
    # start-up's temporary tables in its tmpdir: a loaded host writes them back later)
    nobody = [r for r in rows if r["process"] == NOT_A_TARGET]
    ours = (f"{server.datadir}/", f"{server.tmpdir}/")
    assert not [r for r in nobody if not (r["file"] or "").startswith(ours)], nobody
    assert sum(r["bytes"] for r in nobody if r["file"].startswith(f"{server.datadir}/")) <= copied, (nobody, copied)

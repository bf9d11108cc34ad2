"""Per-file attribution on ext4, XFS and btrfs, each a small filesystem on a loop device.

Each filesystem gets the same known workload (tests/workloads/iogen): O_DIRECT writes and
reads (sync, libaio, io_uring) and buffered writes, fsync and a cold buffered read, on one
file per scenario. Ground truth: what iogen did (the kernel's return values), and the loop
device's own counters (/sys/block/loopN/stat) for what reached it. btrfs is the case that
needs its own code (docs/filesystems.md): subvolume devices in stat(), its own bios, and
direct writes that fall back to buffered writes written back at once. A private MariaDB
(O_DIRECT) with its datadir on btrfs is checked against performance_schema.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import need, need_root, need_tool
from tests.helpers import (IOGEN, assert_no_ioattr_programs, assert_ps_lower_bound, ioattr, proc_read_bytes, recording,
                           report_json)

MiB = 1024 * 1024
SIZE = 2 * MiB
SCENARIOS = "odirect,libaio,uring,buffered_read_cold"
# btrfs-nocow: files created under `chattr +C` (nodatacow, no data checksums, as databases
# on btrfs are often set up), whose O_DIRECT writes stay direct; on a checksummed btrfs file
# they become buffered writes written back at once (docs/filesystems.md)
FILESYSTEMS = ("ext4", "xfs", "btrfs", "btrfs-nocow")
MKFS = {"ext4": ["mkfs.ext4", "-q", "-F"], "xfs": ["mkfs.xfs", "-q", "-f"], "btrfs": ["mkfs.btrfs", "-q", "-f"]}
IMAGE_SIZE = 320 * MiB  # mkfs.xfs wants 300 MiB at least; the image file is sparse


def _run(*cmd: str) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (cmd, r.stdout, r.stderr)
    return r.stdout


@contextlib.contextmanager
def loop_filesystem(fs: str, base: Path) -> Iterator[tuple[Path, str]]:
    """A fresh `fs` on a loop device over a sparse file under base, mounted: (mount point,
    loop device name). Unmounted, detached and deleted afterwards, whatever happened."""
    need_root()
    need_tool(MKFS[fs][0])
    need_tool("losetup")
    img, mnt = base / f"{fs}.img", base / f"mnt-{fs}"
    mnt.mkdir(parents=True, exist_ok=True)
    with open(img, "wb") as f:
        f.truncate(IMAGE_SIZE)
    dev = None
    mounted = False
    try:
        _run(*MKFS[fs], str(img))
        dev = _run("losetup", "--find", "--show", str(img)).strip()
        _run("mount", dev, str(mnt))
        mounted = True
        yield mnt, os.path.basename(dev)
    finally:
        if mounted:
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        if dev:
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        img.unlink(missing_ok=True)


def device_bytes(loop: str) -> tuple[int, int]:
    """(bytes read, bytes written) the device completed, from /sys/block/loopN/stat."""
    f = Path(f"/sys/block/{loop}/stat").read_text().split()
    return int(f[2]) * 512, int(f[6]) * 512


def _by_file(rec: Path, layer: str) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for r in report_json(rec, "--by", "file,device,op", "--layer", layer)["rows"]:
        key = (r["file"], r["op"])
        out[key] = out.get(key, 0) + r["bytes"]
    return out


@pytest.fixture(scope="module")
def fs_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict]]:
    """One recording of iogen's scenarios per filesystem."""
    need(IOGEN.exists(), "tests/workloads/iogen is not built (make -C tests/workloads)")
    runs: dict[str, dict] = {}
    for fs in FILESYSTEMS:
        base = tmp_path_factory.mktemp(f"fs-{fs}")
        with loop_filesystem(fs.split("-")[0], base) as (mnt, loop):
            if fs.endswith("-nocow"):
                (mnt / "data").mkdir()
                _run("chattr", "+C", str(mnt / "data"))
            truth = base / "truth.json"
            before = device_bytes(loop)
            r = ioattr("record", "-o", str(base / "rec"), "--interval", "0.5", "--only-command", "--",
                       str(IOGEN), "--dir", str(mnt / "data"), "--scenario", SCENARIOS,
                       "--size", str(SIZE), "--json", str(truth))
            assert r.returncode == 0, r.stderr
            os.sync()
            after = device_bytes(loop)
            rows = report_json(base / "rec", "--by", "file,device,op,api", "--layer", "block")["rows"]
            runs[fs] = {"rec": base / "rec", "truth": json.loads(truth.read_text()), "loop": loop, "mnt": str(mnt),
                        "device": (after[0] - before[0], after[1] - before[1]), "block_rows": rows,
                        "syscall": _by_file(base / "rec", "syscall"), "block": _by_file(base / "rec", "block")}
    yield runs


@pytest.mark.parametrize("fs", FILESYSTEMS)
@pytest.mark.parametrize("layer", ("syscall", "block"))
def test_bytes_per_file_are_what_was_done(fs_runs: dict, fs: str, layer: str) -> None:
    """Every byte iogen read and wrote is on its own file, at the syscall layer (what it asked)
    and at the block layer (direct IO, and buffered IO that was written back and read cold)."""
    run = fs_runs[fs]
    for path, t in run["truth"]["files"].items():
        for op, want in (("read", t["read_bytes"]), ("write", t["write_bytes"])):
            assert want == SIZE
            assert run[layer].get((path, op), 0) == want, (fs, layer, t["scenario"], op, run[layer])


@pytest.mark.parametrize("fs", FILESYSTEMS)
def test_block_io_is_named_and_within_what_the_device_did(fs_runs: dict, fs: str) -> None:
    """No block byte of the target is left unnamed, and all of it (files, metadata, journal)
    is no more than the loop device completed in the run."""
    run = fs_runs[fs]
    # the target's block IO on this filesystem: its files' and the rest on the loop device
    mine = [r for r in run["block_rows"] if r["device"] == run["loop"] or (r["file"] or "").startswith(run["mnt"])]
    assert not [r for r in mine if r["file"] in ("[unknown]", "[untracked files]") and r["bytes"]], mine
    data = {op: sum(t[f"{op}_bytes"] for t in run["truth"]["files"].values()) for op in ("read", "write")}
    dev_read, dev_written = run["device"]
    for op, dev in (("read", dev_read), ("write", dev_written)):
        ours = sum(r["bytes"] for r in mine if r["op"] == op)
        assert data[op] <= ours <= dev, (fs, op, data[op], ours, dev)


@pytest.mark.parametrize("fs", FILESYSTEMS)
def test_files_are_on_their_device(fs_runs: dict, fs: str) -> None:
    """The device column names the loop device, also for btrfs, whose files carry their
    subvolume's anonymous device (named by the mount it is mounted at)."""
    run = fs_runs[fs]
    devices = {r["device"] for r in run["block_rows"] if r["file"] in run["truth"]["files"]}
    assert devices == {run["loop"]}, (fs, devices)


@pytest.mark.parametrize("fs", FILESYSTEMS)
def test_direct_io_reaches_the_device_as_direct_io(fs_runs: dict, fs: str) -> None:
    """O_DIRECT IO is direct at the block layer (btrfs: its own direct-IO bios), but for
    btrfs's checksummed files, whose direct writes btrfs turns into buffered ones."""
    run = fs_runs[fs]
    direct = {p for p, t in run["truth"]["files"].items() if t["direct"]}
    assert direct
    for r in run["block_rows"]:
        if r["file"] in direct and r["bytes"]:
            want = "buffered" if fs == "btrfs" and r["op"] == "write" else "direct"
            assert r["api"] == want, (fs, r)


def test_without_btrfs_symbols_the_session_says_so_in_one_line(tmp_path: Path) -> None:
    """Where btrfs's end_io symbols are not known (hidden kallsyms), the block probes still
    load, and the session carries the one line meta.json and report show."""
    from ioattr.collectors.probes import ProbeSession

    with loop_filesystem("btrfs", tmp_path):  # btrfs mounted: the line concerns this host
        ps = ProbeSession(("syscalls", "targets", "block"))
        ps.btrfs_end_io = dict.fromkeys(ps.btrfs_end_io, 0)
        with ps:
            assert any(s.spec.name == "block" for s in ps.loaded), ps.degraded
            line = ps.degraded.get("btrfs", "")
    assert line.startswith("btrfs: ") and "[unknown]" in line and "\n" not in line, ps.degraded


def test_no_programs_left(fs_runs: dict) -> None:
    assert_no_ioattr_programs()


# -- a private MariaDB with its datadir on btrfs -------------------------------------------

def _ps_reads(db) -> dict[str, int]:
    rows = db.query("SELECT FILE_NAME, SUM_NUMBER_OF_BYTES_READ FROM performance_schema.file_summary_by_instance "
                    "WHERE EVENT_NAME LIKE 'wait/io/file/innodb/%'")
    return {name: int(n) for name, n in rows}


def test_mariadb_on_btrfs_reads_per_tablespace_match_performance_schema(tmp_path: Path) -> None:
    """sysbench oltp_read_only on a cold 8 MB buffer pool: every tablespace's reads at the
    syscall layer are what the server's performance_schema counted (or a read or two more: it
    can lose an increment, helpers.assert_ps_lower_bound), and the block layer has
    every byte the server had read from storage (the kernel's /proc/PID/io read_bytes), on the
    tablespaces, none unnamed, and no more than the loop device read. (On btrfs a tablespace's
    block reads need not equal the server's: btrfs serves some O_DIRECT reads through the page
    cache, with readahead. The device's count is not the server's either: other processes read
    btrfs's tree blocks there now and then, ioattr's own stat() of the server's files and btrfs's
    workers among them; a CI run's device read 48 KiB more than the server.)"""
    from ioattr.host.sandbox import PrivateMariaDB
    from tests import fixtures_mariadb

    fixtures_mariadb._need_mariadb()
    with loop_filesystem("btrfs", tmp_path) as (mnt, loop):
        db = PrivateMariaDB(basedir=mnt / "server", buffer_pool="8M")
        (mnt / "server").mkdir()
        db.start()
        try:
            db.sysbench("oltp_read_only", "prepare", tables=1, table_size=20000)
            db.restart()  # cold buffer pool
            with recording(db.pid, tmp_path / "rec"):
                dev_before = device_bytes(loop)
                kernel_before = proc_read_bytes(db.pid)
                before = _ps_reads(db)
                db.sysbench("oltp_read_only", "run", tables=1, table_size=20000, time=3, threads=2)
                after = _ps_reads(db)
                kernel_read = proc_read_bytes(db.pid) - kernel_before
                dev_read = device_bytes(loop)[0] - dev_before[0]
        finally:
            db.stop()
        rows = report_json(tmp_path / "rec", "--by", "file,device,op", "--layer", "block")["rows"]
    ps = {f: after[f] - before.get(f, 0) for f in after if f.endswith(".ibd")}
    busy = {f: n for f, n in ps.items() if n >= MiB}
    assert busy, ps
    syscall = _by_file(tmp_path / "rec", "syscall")
    for path, want in busy.items():
        # two sysbench threads read one file: performance_schema may have lost an increment
        assert_ps_lower_bound(syscall.get((path, "read"), 0), want, 16384, path)
    # the tablespaces are InnoDB's page files on btrfs too (registered by stat()'s device): their
    # pages are classified by index
    by_index = {r["index"]: r["bytes"] for r in report_json(tmp_path / "rec", "--by", "index,op", "--layer",
                                                            "syscall")["rows"] if r["op"] == "read"}
    assert by_index.get("sbtest.sbtest1.PRIMARY", 0) >= 0.9 * sum(busy.values()), by_index
    mine = [r for r in rows if r["op"] == "read" and (r["device"] == loop or (r["file"] or "").startswith(str(mnt)))]
    assert not [r for r in mine if r["file"] in ("[unknown]", "[untracked files]") and r["bytes"]], mine
    on_ibd = sum(r["bytes"] for r in mine if r["file"] in busy)
    ours = sum(r["bytes"] for r in mine)
    everywhere = sum(r["bytes"] for r in rows if r["op"] == "read")
    # measured: 3.6-4.2 MB read by the server, all of it on sbtest1.ibd (performance_schema:
    # ~2.6 MB), now and then a 16 KiB [metadata] read of its own; the recording spans the
    # kernel's window, so it has at least the kernel's bytes, and the server read nothing else
    assert kernel_read <= everywhere == ours <= dev_read, (kernel_read, everywhere, ours, dev_read, rows)
    assert everywhere <= kernel_read + 64 * 1024, (kernel_read, everywhere, rows)
    assert on_ibd >= 0.9 * ours, (on_ibd, ours, mine)

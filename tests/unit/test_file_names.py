"""collectors/names.py: an inode a deleted file freed and a new file took is labelled as
several files' only where the earlier file can have done IO in the interval being named.

The session calls note_open_files() right before each drain with the files the targets have
open, and end_interval() once the drained rows are named (ioattr/live/session.py tick()).
"""
from __future__ import annotations

import os
from pathlib import Path

from ioattr.collectors.names import FileNames
from ioattr.collectors.targets import open_inodes

KEY = (7, 11)  # (dev, inode); the paths do not exist, so no path still leads to the inode
TMP = "/srv/tmp/#sql-temptable-1a-2-3.MAI"
SST = "/srv/data/#rocksdb/000018.sst"
REUSED = "/srv/[2 files reusing one inode]"


def tick(names: FileNames, open_now: set | None) -> None:
    """What LiveSession.tick() does around a drain: the snapshot, (the drain, the naming), the end."""
    names.note_open_files(open_now)
    names.end_interval()


def test_a_temporary_table_gone_before_the_interval_does_not_rename_the_new_sst() -> None:
    """The test_myrocks flake: a flush's SST took the inode of a temporary table the server had
    dropped intervals before; its rows were "[2 files reusing one inode]" in the directory
    above #rocksdb, so the flush's bytes left #rocksdb (class other)."""
    names = FileNames()
    tick(names, set())
    names._assign(KEY, TMP, opened=True)   # created, written, dropped within this interval
    assert names.lookup(*KEY) == TMP
    tick(names, set())                     # not open when the next interval began
    tick(names, set())
    names._assign(KEY, SST, opened=True)   # the flush creates its SST on the freed inode
    assert names.lookup(*KEY) == SST
    # block and page-cache rows keep every path: the table's dirty pages may be written back
    # after its last close
    assert names.lookup(*KEY, fd_io=False) == REUSED
    tick(names, {KEY})
    assert names.lookup(*KEY) == names.lookup(*KEY, fd_io=False) == SST


def test_an_earlier_file_open_when_the_interval_began_is_still_in_its_rows() -> None:
    names = FileNames()
    tick(names, set())
    names._assign(KEY, TMP, opened=True)
    tick(names, {KEY})                     # still open at the drain: may do IO after it
    names._assign(KEY, SST, opened=True)
    assert names.lookup(*KEY) == names.lookup(*KEY, fd_io=False) == REUSED


def test_an_earlier_file_opened_during_the_interval_is_in_its_rows() -> None:
    names = FileNames()
    tick(names, set())
    names._assign(KEY, TMP, opened=True)   # opened (named) after the snapshot that began it
    names._assign(KEY, SST, opened=True)
    assert names.lookup(*KEY) == REUSED
    tick(names, set())
    names._assign(KEY, "/srv/data/#rocksdb/000020.sst", opened=True)  # the SST's IO was in the last one
    assert names.lookup(*KEY) == "/srv/data/#rocksdb/000020.sst"


def test_reuse_seen_between_the_snapshot_and_the_naming_is_the_ending_intervals() -> None:
    """An open read from the event stream after the snapshot but before the drained rows are
    named is judged by the snapshot that began the interval being named, not the new one."""
    names = FileNames()
    tick(names, set())
    names._assign(KEY, TMP, opened=True)
    tick(names, {KEY})                     # open when this interval began...
    names.note_open_files(set())           # ...closed (and dropped) by its end: it did IO in it
    names._assign(KEY, SST, opened=True)
    assert names.lookup(*KEY) == REUSED
    names.end_interval()
    names._assign(KEY, "/srv/data/#rocksdb/000020.sst", opened=True)
    # the SST was opened after the snapshot that began this interval (the one just above)
    assert names.lookup(*KEY) == "/srv/data/#rocksdb/[2 .sst files reusing one inode]"
    names.note_open_files(None)            # too many fds to scan: not known...
    names.end_interval()
    names._assign(KEY, "/srv/data/#rocksdb/000021.sst", opened=True)
    # ...so any earlier file can have done IO
    assert names.lookup(*KEY) == "/srv/data/#rocksdb/[2 .sst files reusing one inode]"


def test_without_snapshots_every_earlier_path_counts() -> None:
    names = FileNames()
    names._assign(KEY, TMP, opened=True)
    names.end_interval()
    names._assign(KEY, SST, opened=True)
    assert names.lookup(*KEY) == REUSED


def test_open_inodes_sees_this_process_files_and_gives_up_past_its_limit(tmp_path: Path) -> None:
    from ioattr.collectors import abi

    f = tmp_path / "f"
    fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        st = os.stat(f)
        got = open_inodes([os.getpid(), 0x3FFFFFFF], 100_000)  # a process gone is skipped
        assert got is not None and (abi.kernel_dev_of_stat(st.st_dev), st.st_ino) in got
        assert open_inodes([os.getpid()], 1) is None
    finally:
        os.close(fd)


def _open_event(fd: int, dev: int, ino: int, path: str):
    from ioattr.collectors import abi

    return abi.OpenEvent(type=0, tgid=os.getpid(), tid=os.getpid(), fd=fd, ino=ino, dev=dev, dfd=-100,
                         path=path.encode())


def test_an_o_tmpfile_closed_before_its_open_event_is_read_is_still_an_anonymous_tmpfile(tmp_path: Path) -> None:
    """An index build's O_TMPFILE merge files live for less than the recorder's event reader can
    lag on a busy host: once the fd is closed /proc/PID/fd can't say the file was anonymous, and
    the open's path is the directory. It was named as that directory (class other), so the merge
    runs' IO left class tmp (test_bulk_load's ALTER on a loaded CI host)."""
    from ioattr.collectors import abi
    from ioattr.engines.innodb.files import FC, classify_path

    d = tmp_path / "tmpdir"
    d.mkdir()
    want = f"[anonymous tmpfile in {d.resolve()}]"
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
    try:
        st = os.fstat(fd)
        key = (abi.kernel_dev_of_stat(st.st_dev), st.st_ino)
        live = FileNames()
        live.on_open(_open_event(fd, *key, str(d)))    # read while the file is open
        assert live.lookup(*key) == want
    finally:
        os.close(fd)
    late = FileNames()
    late.on_open(_open_event(fd, *key, str(d)))        # read after the close
    assert late.lookup(*key) == want and classify_path(want) == FC.TMP
    # a relative path, and a closed fd number another (regular) file now has, say the same
    late = FileNames()
    other = os.open(tmp_path / "other", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        ev = _open_event(other, *key, "tmpdir")
        ev.dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            late.on_open(ev)
        finally:
            os.close(ev.dfd)
    finally:
        os.close(other)
    assert late.lookup(*key) == want
    # a regular file's open read after its close keeps the file's own path
    late.on_open(_open_event(fd, key[0], key[1] + 1, str(tmp_path / "other")))
    assert late.lookup(key[0], key[1] + 1) == str((tmp_path / "other").resolve())

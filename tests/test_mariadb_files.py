"""Per-file attribution on a real, private MariaDB under sysbench.

Ground truth is the server's own performance_schema.file_summary_by_instance,
which counts every page read and written, synchronous or io_uring.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Background, assert_no_ioattr_programs, report_json, wait_until

TABLES, ROWS = 2, 60000


def _ps_files(db) -> dict[str, tuple[int, int]]:
    rows = db.query("SELECT FILE_NAME, SUM_NUMBER_OF_BYTES_READ, SUM_NUMBER_OF_BYTES_WRITE "
                    "FROM performance_schema.file_summary_by_instance "
                    "WHERE EVENT_NAME LIKE 'wait/io/file/innodb/%'")
    return {name: (int(r), int(w)) for name, r, w in rows}


def _wait_clean(db, timeout: float = 60) -> None:
    """Make the page cleaner flush everything, then wait until nothing is dirty."""
    db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    wait_until(lambda: db.status("Innodb_buffer_pool_pages_dirty") == 0, timeout,
               "the buffer pool to have no dirty pages", interval=0.2)


@pytest.fixture(scope="module")
def sysbench_recording(tmp_path_factory):
    """One recording of an IO-bound sysbench read/write run on a cold buffer pool."""
    from ioattr.host.sandbox import PrivateMariaDB
    from tests.fixtures_mariadb import _need_mariadb

    _need_mariadb()
    base = tmp_path_factory.mktemp("mariadb-files")
    from tests import fixtures_mariadb

    db = PrivateMariaDB(buffer_pool="16M")
    db.start()
    fixtures_mariadb._SESSION_SERVERS.append(db)  # outlives single tests, by design
    try:
        db.sysbench("oltp_read_write", "prepare", tables=TABLES, table_size=ROWS)
        db.restart()  # cold buffer pool
        rec = base / "rec"
        bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.5")
        bg.wait_recording()
        before = _ps_files(db)
        db.sysbench("oltp_read_write", "run", tables=TABLES, table_size=ROWS, time=6, threads=2)
        _wait_clean(db)
        after = _ps_files(db)
        code, err = bg.stop()  # the final drain takes everything up to now
        assert code == 0, err
        delta = {f: (after[f][0] - before.get(f, (0, 0))[0], after[f][1] - before.get(f, (0, 0))[1])
                 for f in after}
        yield {"rec": rec, "ps": delta, "db_pid": db.pid, "datadir": Path(db.datadir)}
    finally:
        db.stop()
        fixtures_mariadb.forget_server(db)


def _ours(rec: Path, layer: str = "syscall") -> dict[tuple[str, str], int]:
    rep = report_json(rec, "--by", "file,op", "--layer", layer)
    out: dict[tuple[str, str], int] = {}
    for r in rep["rows"]:
        out[(r["file"], r["op"])] = out.get((r["file"], r["op"]), 0) + r["bytes"]
    return out


def test_read_bytes_per_ibd_match_performance_schema(sysbench_recording) -> None:
    ours = _ours(sysbench_recording["rec"])
    checked = 0
    for path, (ps_read, _) in sysbench_recording["ps"].items():
        if not path.endswith(".ibd") or ps_read < 1_000_000:
            continue
        got = ours.get((path, "read"), 0)
        assert abs(got - ps_read) <= 0.01 * ps_read, (path, got, ps_read)
        checked += 1
    assert checked >= TABLES, sysbench_recording["ps"]


def test_page_writes_land_on_the_right_files(sysbench_recording) -> None:
    """The page cleaner writes through io_uring: bytes per file agree with the server's count."""
    rep = report_json(sysbench_recording["rec"], "--by", "file,api,op", "--layer", "syscall")
    uring_writes = {r["file"]: r["bytes"] for r in rep["rows"] if r["api"] == "io_uring" and r["op"] == "write"}
    ours = _ours(sysbench_recording["rec"])
    checked = 0
    for path, (_, ps_write) in sysbench_recording["ps"].items():
        if ps_write < 1_000_000:
            continue
        assert uring_writes.get(path, 0) > 0, (path, "no io_uring writes seen")
        got = ours.get((path, "write"), 0)
        assert abs(got - ps_write) <= 0.02 * ps_write, (path, got, ps_write)
        checked += 1
    assert checked >= 1


def test_block_layer_sees_the_tablespaces(sysbench_recording) -> None:
    """Direct IO of every busy tablespace reaches the block layer, charged to the file: each
    sysbench table's .ibd (the ones performance_schema says were read) is checked."""
    syscall = _ours(sysbench_recording["rec"])
    block = _ours(sysbench_recording["rec"], "block")
    busy = {path for path, (ps_read, _) in sysbench_recording["ps"].items()
            if path.endswith(".ibd") and ps_read >= 1_000_000}
    assert len(busy) >= TABLES, sysbench_recording["ps"]
    for path in busy:
        nbytes = syscall.get((path, "read"), 0)
        assert nbytes >= 1_000_000, (path, nbytes)
        assert abs(block.get((path, "read"), 0) - nbytes) <= 0.02 * nbytes, (path, block.get((path, "read")))


def test_threads_are_named_and_charged(sysbench_recording) -> None:
    rep = report_json(sysbench_recording["rec"], "--by", "thread,file", "--layer", "syscall")
    threads = {r["thread"] for r in rep["rows"] if r["thread"]}
    assert threads and all(t.startswith("mariadbd[") for t in threads), threads
    # more than one thread did IO: connection threads and background ones
    assert len(threads) >= 2


def test_no_programs_left(sysbench_recording) -> None:
    assert_no_ioattr_programs()


def test_page_files_are_looked_for_in_the_servers_directories_only(mariadb, tmp_path: Path,
                                                                     monkeypatch) -> None:
    """MariaDB's innodb_undo_directory is './' by default: the server's datadir. A recorder
    started somewhere else (a shell in / or in another server's datadir) used to take it for
    its own working directory, walk it at every sync and register the page files there."""
    import os
    import shutil

    from ioattr.collectors.engine import EngineOptions
    from ioattr.collectors.mysqld import ServerContext
    from ioattr.engines import registry

    datadir = os.path.realpath(os.readlink(f"/proc/{mariadb.pid}/cwd"))
    stray = tmp_path / "elsewhere" / "other"
    stray.mkdir(parents=True)
    shutil.copy(Path(datadir) / "mysql" / "innodb_table_stats.ibd", stray / "copied.ibd")
    shutil.copy(Path(datadir) / "ibdata1", tmp_path / "elsewhere" / "ibdata1")
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert mariadb.query("SELECT @@innodb_undo_directory")[0][0] in ("./", ".")  # the premise

    pages = registry.page_engine()
    ctx = ServerContext(mariadb.pid, EngineOptions(socket=str(mariadb.socket)), pages.file_registry(None),
                        engines=registry.engines_for(None))
    ctx.connect()
    try:
        assert ctx.engine is not None, ctx.engine_error
        assert ctx.directories and all(os.path.realpath(d).startswith(datadir) for d in ctx.directories), \
            ctx.directories
        ctx.refresh(new_files=True)
        paths = [pf.path for pf in ctx.files.files.values()]
        assert any(p.endswith("innodb_table_stats.ibd") for p in paths), paths  # the server's own
        assert not [p for p in paths if not os.path.realpath(p).startswith(datadir)], paths
    finally:
        if ctx.engine is not None:
            ctx.engine.close()

"""The private MariaDB sandbox: private, configured as promised, and leaves nothing behind."""
from __future__ import annotations

import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from ioattr.host.sandbox import PrivateMariaDB, SandboxError, live_servers
from tests.conftest import need_tool
from tests.fixtures_mariadb import _descendants, _need_mariadb
from tests.helpers import tcp_listeners

PAGE = 16384


def _listeners(port: int) -> list[tuple[str, str]]:
    """(file, local address hex) of LISTEN sockets on ``port`` in /proc/net/tcp{,6}."""
    return [(table, addr) for table, addr, p, _ in tcp_listeners() if p == port]


def _ibd_io(db: PrivateMariaDB, schema: str, table: str) -> tuple[int, int, int, int]:
    """(count_read, bytes_read, count_write, bytes_write) for schema/table.ibd from P_S."""
    rows = db.query(
        "SELECT COUNT_READ, SUM_NUMBER_OF_BYTES_READ, COUNT_WRITE, SUM_NUMBER_OF_BYTES_WRITE"
        " FROM performance_schema.file_summary_by_instance WHERE FILE_NAME LIKE %s",
        (f"%/{schema}/{table}.ibd",),
    )
    assert len(rows) == 1, rows
    return tuple(int(v) for v in rows[0])  # type: ignore[return-value]


def test_server_starts_and_is_private(mariadb: PrivateMariaDB) -> None:
    base = mariadb.basedir
    assert base is not None and mariadb.running
    assert mariadb.query("SELECT 1") == [(1,)]

    # Data, socket and pid file all live in our directory, not /var/lib/mysql.
    datadir = Path(mariadb.query("SELECT @@datadir")[0][0])
    assert datadir.resolve() == mariadb.datadir.resolve()
    assert datadir.resolve().is_relative_to(base.resolve())
    sock = Path(mariadb.query("SELECT @@socket")[0][0])
    assert sock == mariadb.socket and sock.parent == base
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert int(mariadb.pid_file.read_text()) == mariadb.pid
    assert os.path.basename(os.readlink(f"/proc/{mariadb.pid}/exe")) == "mariadbd"

    # TCP only on loopback: one listener on 127.0.0.1:port, none on any/IPv6.
    assert mariadb.query("SELECT @@bind_address, @@port, @@skip_networking") == [
        ("127.0.0.1", mariadb.port, 0)
    ]
    assert _listeners(mariadb.port) == [("tcp", "0100007F")]
    with socket.create_connection(("127.0.0.1", mariadb.port), timeout=5) as s:
        assert s.recv(4)  # the server greets first

    # The client option file is enough for the stock client: no password, no socket in argv.
    out = subprocess.run(
        ["mariadb", f"--defaults-file={mariadb.client_defaults_file}", "-N", "-e", "SELECT CURRENT_USER()"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()
    assert out == "root@localhost"


def test_server_options_applied(mariadb: PrivateMariaDB) -> None:
    row = mariadb.query(
        "SELECT @@innodb_flush_method, @@innodb_buffer_pool_size, @@performance_schema,"
        " @@innodb_use_native_aio, @@innodb_buffer_pool_dump_at_shutdown,"
        " @@innodb_buffer_pool_load_at_startup, @@innodb_log_file_size, @@tmpdir"
    )[0]
    assert row == ("O_DIRECT", 32 * 2**20, 1, 1, 0, 0, 32 * 2**20, str(mariadb.tmpdir))
    assert mariadb.status("Uptime") >= 0
    with pytest.raises(KeyError):
        mariadb.status("No_such_status_variable")
    enabled = mariadb.query(
        "SELECT COUNT(*) FROM performance_schema.setup_instruments"
        " WHERE NAME LIKE 'wait/io/file/%%' AND (ENABLED <> 'YES' OR TIMED <> 'YES')"
    )
    assert enabled == [(0,)]
    assert mariadb.aio_backend in ("io_uring", "libaio")


def test_file_summary_has_ibd_rows(mariadb: PrivateMariaDB) -> None:
    mariadb.query("CREATE DATABASE IF NOT EXISTS sandbox_fs")
    mariadb.query("DROP TABLE IF EXISTS sandbox_fs.t")
    mariadb.query("CREATE TABLE sandbox_fs.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
    conn = mariadb.connect("sandbox_fs")
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t SELECT seq, REPEAT('p', 200) FROM seq_1_to_20000")
            # FOR EXPORT writes the table's dirty pages now instead of whenever
            # the page cleaner gets to them.
            cur.execute("FLUSH TABLES t FOR EXPORT")
            cur.execute("UNLOCK TABLES")
    finally:
        conn.close()
    _, _, writes, written = _ibd_io(mariadb, "sandbox_fs", "t")
    assert writes > 0
    assert written % PAGE == 0 and written >= writes * PAGE
    mariadb.query("DROP DATABASE sandbox_fs")


def _start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat field 22); None: no such pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def test_perfschema_counts_async_read_ahead(mariadb_factory) -> None:
    """A cold full scan: P_S per-file bytes match InnoDB's own read counters,
    including pages fetched asynchronously by linear read-ahead (io_uring/libaio)."""
    db = mariadb_factory()
    db.query("CREATE DATABASE ra")
    db.query("CREATE TABLE ra.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
    db.query("INSERT INTO ra.t SELECT seq, REPEAT('r', 200) FROM ra.seq_1_to_60000")
    old_pid = db.pid
    old_start = _start_time(old_pid)
    db.restart()  # cold buffer pool: no dump/load
    # the old server is gone: no process with its pid and its start time (these VMs' pid_max is
    # 32768 and a busy host makes threads fast, so /proc/OLD_PID may be a new task's by now)
    assert old_start is not None and db.pid != old_pid and _start_time(old_pid) != old_start, (old_pid, db.pid)
    # After a restart InnoDB opens a tablespace lazily, and P_S has a row for a file only once
    # it is opened: whether a background task (purge, stats) has done so by now is luck. Open
    # the table ourselves first: that also keeps the open's own reads of the file header
    # (not buffer-pool reads, not in Innodb_data_read) out of the measured window.
    db.query("SHOW CREATE TABLE ra.t")

    names = ["Innodb_data_read", "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_ahead"]
    before = {n: db.status(n) for n in names}
    ps_before = _ibd_io(db, "ra", "t")
    assert db.query("SELECT COUNT(*) FROM ra.t") == [(60000,)]
    ps_after = _ibd_io(db, "ra", "t")
    delta = {n: db.status(n) - before[n] for n in names}
    ps_reads = ps_after[0] - ps_before[0]
    ps_bytes = ps_after[1] - ps_before[1]

    assert delta["Innodb_buffer_pool_read_ahead"] > 0, delta
    assert ps_bytes == ps_reads * PAGE  # one P_S read per page, async or not
    # Counted by P_S: more pages than the synchronous misses alone.
    sync_reads = delta["Innodb_buffer_pool_reads"] - delta["Innodb_buffer_pool_read_ahead"]
    assert ps_reads > sync_reads
    # Nearly all InnoDB reads in the window are this table's (a few may be dictionary pages).
    assert 0.9 * delta["Innodb_data_read"] <= ps_bytes <= delta["Innodb_data_read"], (ps_bytes, delta)


def test_sysbench_point_select(mariadb: PrivateMariaDB) -> None:
    need_tool("sysbench")
    kw = dict(tables=1, table_size=2000, threads=1)
    mariadb.sysbench("oltp_point_select", "prepare", **kw)
    try:
        assert mariadb.query("SELECT COUNT(*) FROM sbtest.sbtest1") == [(2000,)]
        res = mariadb.sysbench("oltp_point_select", "run", time=2, **kw)
        tx = [line for line in res.stdout.splitlines() if line.strip().startswith("transactions:")]
        assert tx and int(tx[0].split()[1]) > 0, res.stdout
    finally:
        mariadb.sysbench("oltp_point_select", "cleanup", **kw)
    assert mariadb.query("SHOW TABLES FROM sbtest") == []


def test_stop_leaves_nothing() -> None:
    _need_mariadb()
    db = PrivateMariaDB()
    db.stop()  # stopping a never-started server is fine
    with db:
        pid, base = db.pid, db.basedir
        assert pid in _descendants()
        assert base is not None and base.is_dir()
    assert db.pid is None and not db.running
    assert not os.path.exists(f"/proc/{pid}")  # gone and reaped, not a zombie
    assert not base.exists()
    db.stop()  # idempotent


def test_given_basedir_is_kept_and_long_paths_work(tmp_path: Path) -> None:
    _need_mariadb()
    base = tmp_path / ("long-" * 20)  # socket path would exceed sun_path
    with PrivateMariaDB(basedir=base) as db:
        assert db.socket.parent != base and db.query("SELECT 1") == [(1,)]
        sock_dir = db.socket.parent
    assert (base / "data" / "mysql").is_dir()  # the caller's directory stays
    assert not sock_dir.exists()
    with PrivateMariaDB(basedir=base) as db:  # restart on the same data
        assert db.query("SELECT 1") == [(1,)]


def test_keep_keeps_temp_dir() -> None:
    _need_mariadb()
    import shutil

    db = PrivateMariaDB(keep=True)
    with db:
        base = db.basedir
    try:
        assert base is not None and (base / "error.log").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)  # type: ignore[arg-type]


def test_failed_start_reports_error_log_and_cleans_up() -> None:
    _need_mariadb()
    db = PrivateMariaDB(extra_options={"innodb_no_such_option": "1"})
    with pytest.raises(SandboxError) as err:
        db.start()
    assert "innodb_no_such_option" in str(err.value) or "unknown" in str(err.value).lower()
    assert db.pid is None and db.basedir is None
    assert db not in live_servers()


def test_factory_servers_are_independent(mariadb_factory, mariadb: PrivateMariaDB) -> None:
    a = mariadb_factory(buffer_pool="16M", flush_method="fsync")
    b = mariadb_factory(performance_schema=False)
    assert len({a.pid, b.pid, mariadb.pid}) == 3
    assert len({a.port, b.port, mariadb.port}) == 3
    assert a.query("SELECT @@innodb_buffer_pool_size, @@innodb_flush_method") == [(16 * 2**20, "fsync")]
    assert b.query("SELECT @@performance_schema") == [(0,)]

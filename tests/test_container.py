"""A server in a container, attached from the host by pid.

The container is made the way container runtimes make one, without their daemons: a private
MariaDB started in its own mount and PID namespaces (`unshare --mount --pid --fork
--mount-proc`) and its own cgroup v2 (its pid written to cgroup.procs of a new cgroup). Inside,
its basedir is bind-mounted at /mnt/db on a tmpfs only the container sees, so every path the
server has (datadir, socket, P_S FILE_NAMEs) is a container path that does not exist on the
host, and its threads' ids (P_S THREAD_OS_ID) are the namespace's, not the host's.

`ioattr record -p PID` with defaults, from the host, must find the server's socket and files
through /proc/PID/root, name its thread roles through the namespace's thread ids, charge every
file exactly what performance_schema counted, and put every row under the container's cgroup.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Iterator

import pytest

from ioattr.host.sandbox import PrivateMariaDB
from tests.fixtures_mariadb import _need_mariadb
from tests.helpers import Background, assert_no_ioattr_programs, ioattr, report_json, wait_until

INSIDE = "/mnt/db"  # the server's basedir as the container sees it
ROWS = 12_000        # ~14 MB of rows: more than the 8 MB buffer pool, so a scan reads from disk
IDLE_SLACK = 256 * 1024  # bound on an idle server's own IO outside the recording (32 KiB seen)


def cgroup2_root() -> Path:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or .../unified on hybrid hosts)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            _, where, kind = line.split()[:3]
            if kind == "cgroup2":
                return Path(where)
    raise AssertionError("no cgroup2 hierarchy mounted: cannot make the container's cgroup")


class ContainerMariaDB(PrivateMariaDB):
    """A PrivateMariaDB in its own mount + PID namespaces and cgroup; `pid` is the launcher's
    (unshare, the process this test started and stops), `server_pid` mariadbd's host pid."""

    def __init__(self, cgroup: Path, **kw) -> None:
        super().__init__(**kw)
        self.cgroup = cgroup

    def server_options(self) -> dict[str, str]:
        host = str(self.basedir)
        return {k: v.replace(host, INSIDE) for k, v in super().server_options().items()}

    def _server_argv(self) -> list[str]:
        inside = (f"mount -t tmpfs ioattr-ct /mnt && mkdir {INSIDE} && "
                  f"mount --bind {shlex.quote(str(self.basedir))} {INSIDE} && cd {INSIDE} && "
                  f"exec {shlex.quote(self._mariadbd)} --defaults-file={INSIDE}/my.cnf --user=root")
        # the shell joins the cgroup first, so unshare and the server are born in it
        launch = (f"echo $$ > {shlex.quote(str(self.cgroup / 'cgroup.procs'))} && exec unshare --mount "
                  f"--propagation private --pid --fork --kill-child --mount-proc sh -c {shlex.quote(inside)}")
        return ["sh", "-c", launch]

    @property
    def server_pid(self) -> int:
        """mariadbd's pid on the host: unshare's one child."""
        assert self.pid is not None
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        assert len(children) == 1, children
        return int(children[0])


@pytest.fixture()
def container(tmp_path: Path) -> Iterator[ContainerMariaDB]:
    _need_mariadb()
    cg = cgroup2_root() / f"ioattr-test-{os.getpid()}"
    cg.mkdir()
    db = ContainerMariaDB(cg, buffer_pool="8M")
    try:
        db.start()
        yield db
    finally:
        db.stop()
        # the cgroup empties when the launcher and server are gone (stop() waited for them)
        wait_until(lambda: not (cg / "cgroup.procs").read_text().strip(), 10, "the container's cgroup to empty")
        cg.rmdir()


def _wait_clean(db) -> None:
    wait_until(lambda: db.status("Innodb_buffer_pool_pages_dirty") == 0, 30,
               "the buffer pool to have no dirty pages", interval=0.2)


def _ps_files(db) -> dict[str, tuple[int, int]]:
    rows = db.query("SELECT FILE_NAME, SUM_NUMBER_OF_BYTES_READ, SUM_NUMBER_OF_BYTES_WRITE "
                    "FROM performance_schema.file_summary_by_instance "
                    "WHERE EVENT_NAME LIKE 'wait/io/file/innodb/%'")
    return {name: (int(r), int(w)) for name, r, w in rows}


def test_container_server_attached_from_the_host(container: ContainerMariaDB, tmp_path: Path) -> None:
    db = container
    pid = db.server_pid
    cgroup_path = "/" + db.cgroup.name
    assert Path(f"/proc/{pid}/cgroup").read_text().splitlines()[-1] == f"0::{cgroup_path}"
    assert os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid")
    assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    assert db.query("SELECT @@datadir")[0][0].startswith(INSIDE) and not Path(INSIDE).exists()

    # no persistent statistics (no background writes of them); pages flushed as soon as dirty
    db.query("CREATE DATABASE ct")
    db.query("CREATE TABLE ct.t (id INT PRIMARY KEY, pad VARCHAR(1000)) ENGINE=InnoDB STATS_PERSISTENT=0")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
    db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    _wait_clean(db)
    # performance_schema's counts bracket the recording: taken before it attaches and after it
    # stopped, so ours can only be lower, by what the idle server did in between (nothing on
    # the table's file, which no one touches then)
    before = _ps_files(db)
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "-p", str(pid), "--interval", "0.5")
    try:
        bg.wait_recording()
        conn = db.connect()
        with conn.cursor() as cur:
            for start in range(0, ROWS, 1000):
                cur.execute("INSERT INTO ct.t VALUES " + ",".join(
                    f"({i}, REPEAT('x', 1000))" for i in range(start, start + 1000)))
            _wait_clean(db)  # every page written, the pool too small to keep them: the scan reads
            cur.execute("SELECT count(*) FROM ct.t WHERE pad LIKE '%y%'")
            assert cur.fetchall()[0][0] == 0
        conn.close()
    finally:
        code, err = bg.stop()
    assert code == 0, err
    after = _ps_files(db)
    assert_no_ioattr_programs()

    ps = {f: (after[f][0] - before.get(f, (0, 0))[0], after[f][1] - before.get(f, (0, 0))[1]) for f in after}
    table = f"{INSIDE}/data/ct/t.ibd"
    assert ps[table][0] > 4_000_000 and ps[table][1] > 4_000_000, ps[table]  # a cold scan, a flushed load
    rep = report_json(rec, "--by", "file,op,cgroup", "--layer", "syscall")
    ours: dict[tuple[str, str], int] = {}
    for r in rep["rows"]:
        assert r["cgroup"] == cgroup_path, r
        ours[(r["file"], r["op"])] = ours.get((r["file"], r["op"]), 0) + r["bytes"]
    assert (ours.get((table, "read")), ours.get((table, "write"))) == ps[table]
    checked = 0
    for path, (read, written) in ps.items():
        for op, n in (("read", read), ("write", written)):
            got = ours.get((path, op), 0)
            # other files: what the idle server did (purge, checkpoints) before and after it
            assert got <= n and n - got <= IDLE_SLACK, (path, op, got, n)
            checked += got > 0
    assert checked >= 4, (ps, ours)

    # connected through /proc/PID/root: the scan's pages named by index; thread roles from
    # performance_schema's THREAD_OS_IDs, which are the namespace's (page_cleaner is known from
    # there only: every thread's comm is "mariadbd")
    rep = report_json(rec, "--by", "cgroup,role,file,index", "--layer", "syscall")
    assert {r["cgroup"] for r in rep["rows"]} == {cgroup_path}
    of_table = [r for r in rep["rows"] if r["file"] == table]
    assert sum(r["bytes"] for r in of_table if r["op"] == "read" and r["role"] == "connection") == ps[table][0]
    named = sum(r["bytes"] for r in of_table if r["op"] == "read" and r["index"] == "ct.t.PRIMARY")
    assert named >= 0.95 * ps[table][0], of_table
    cleaner = sum(r["bytes"] for r in of_table if r["op"] == "write" and r["role"] == "page_cleaner")
    assert cleaner >= 0.5 * ps[table][1], of_table
    text = ioattr("report", str(rec), "--by", "cgroup", check=True).stdout
    assert cgroup_path in text
    csv = ioattr("report", str(rec), "--by", "cgroup", "--format", "csv", check=True).stdout.splitlines()
    assert csv[0].startswith("cgroup,layer,op,") and all(r.startswith(cgroup_path + ",") for r in csv[1:])

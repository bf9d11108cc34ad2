"""InnoDB awareness against the engine's own counters, on a cold buffer pool.

Ground truth: INFORMATION_SCHEMA.INNODB_METRICS buffer_page_read_* and
buffer_page_written_* (module_buffer_page enabled at start-up), which count
every page InnoDB reads or writes by type and B-tree level.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers import Background, assert_no_ioattr_programs, innodb_metrics, ioattr, report_json

ROWS = 120000
PAGE_METRICS = ("index_leaf", "index_non_leaf", "undo_log", "blob", "system_page")


@pytest.fixture(scope="module")
def server():
    """A private server with page monitors on and a table bigger than its buffer pool."""
    from tests.fixtures_mariadb import private_server

    with private_server("CREATE DATABASE bench",
                        "CREATE TABLE bench.t (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(200) NOT NULL, "
                        "KEY k (k)) ENGINE=InnoDB",
                        "INSERT INTO bench.t SELECT seq, (seq * 7919) % 100000, REPEAT('x', 200) "
                        f"FROM bench.seq_1_to_{ROWS}",
                        buffer_pool="8M", extra_options={"innodb_monitor_enable": "module_buffer_page",
                                                         "innodb_stats_persistent": "OFF"}) as db:
        yield db


def record_queries(db, tmp: Path, statements: list[str], *extra: str,
                   flush: bool = False) -> tuple[Path, dict, dict]:
    """Cold restart, record while running statements; return (rec, read deltas, write deltas)."""
    db.restart()
    # open the table (and sample its statistics) before measuring: that is not the scan's IO
    db.query("SELECT id FROM bench.t WHERE id = 1")
    rec = tmp / f"rec-{time.monotonic_ns()}"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3", *extra)
    bg.wait_recording()
    r0, w0 = innodb_metrics(db, "buffer_page_read_"), innodb_metrics(db, "buffer_page_written_")
    for sql in statements:
        db.query(sql)
    if flush:
        db.query("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
        db.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        deadline = time.monotonic() + 60
        while db.status("Innodb_buffer_pool_pages_dirty") > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
    time.sleep(0.5)
    code, err = bg.stop()
    assert code == 0, err
    # read the engine's counters after the recorder's final drain: the server is quiet by
    # now (nothing dirty), so both cover the same window
    r1, w1 = innodb_metrics(db, "buffer_page_read_"), innodb_metrics(db, "buffer_page_written_")
    return rec, {k: r1[k] - r0.get(k, 0) for k in r1}, {k: w1[k] - w0.get(k, 0) for k in w1}


def pages_by(rec: Path, *dims: str, op: str = "read") -> dict[tuple, int]:
    rep = report_json(rec, "--by", ",".join(dims))
    out: dict[tuple, int] = {}
    for row in rep["rows"]:
        if row["op"] == op and row["pages"]:  # rows of IO without pages (redo, fsync...) are not pages
            key = tuple(row[d] for d in dims)
            out[key] = out.get(key, 0) + row["pages"]  # InnoDB pages (count: IO operations)
    return out


def test_secondary_index_scan_reads_that_index(server, tmp_path: Path) -> None:
    rec, reads, _ = record_queries(server, tmp_path, ["SELECT COUNT(*) FROM bench.t FORCE INDEX (k)"])
    by_index = pages_by(rec, "index", "page_type")
    index_pages = {k: v for k, v in by_index.items() if k[1] == "index"}
    total = sum(index_pages.values())
    assert total > 100, by_index
    assert by_index.get(("bench.t.k", "index"), 0) >= 0.95 * total, by_index
    # leaf / non-leaf agree with the engine's counters
    by_level = pages_by(rec, "level")
    for level, metric in (("leaf", "index_leaf"), ("non_leaf", "index_non_leaf")):
        want = reads[metric]
        assert abs(by_level.get((level,), 0) - want) <= max(2, 0.02 * want), (level, by_level, reads)


def test_clustered_scan_reads_primary(server, tmp_path: Path) -> None:
    rec, reads, _ = record_queries(server, tmp_path,
                                   ["SELECT COUNT(*), SUM(LENGTH(c)) FROM bench.t FORCE INDEX (PRIMARY)"])
    by_index = pages_by(rec, "index", "page_type")
    total = sum(v for k, v in by_index.items() if k[1] == "index")
    assert total > 1000, by_index
    assert by_index.get(("bench.t.PRIMARY", "index"), 0) >= 0.95 * total, by_index
    by_level = pages_by(rec, "level")
    assert abs(by_level.get(("leaf",), 0) - reads["index_leaf"]) <= max(2, 0.02 * reads["index_leaf"])
    # a scan this size is mostly read-ahead, issued asynchronously: classified just as exactly
    by_api = pages_by(rec, "api", "index")
    assert by_api.get(("io_uring", "bench.t.PRIMARY"), 0) > 0.5 * by_index[("bench.t.PRIMARY", "index")], by_api


@pytest.mark.parametrize("source", ["thd", "uprobes"])
def test_non_covering_range_reads_primary_under_its_digest(server, tmp_path: Path, monkeypatch,
                                                           source: str) -> None:
    """--stages full, the stage read from the server's THD at IO time (the default where the
    binary's layout is found) or followed by the four stage uprobes: the same answer."""
    if source == "uprobes":
        monkeypatch.setenv("IOATTR_THD_STAGES", "off")
    covering = "SELECT k FROM bench.t WHERE k BETWEEN 20000 AND 60000"
    non_covering = "SELECT c FROM bench.t WHERE k BETWEEN 20000 AND 60000"
    # changes, autocommit: the connection thread writes and flushes the redo at each commit,
    # unless a background thread's log write already covered it (a fresh-clone run once had the
    # page cleaner, writing the log before a page, do both for the only UPDATE): three commits,
    # one digest
    updates = [f"UPDATE bench.t SET c = UUID() WHERE id = {i}" for i in (77, 78, 79)]
    rec, _, _ = record_queries(server, tmp_path, [covering, non_covering, *updates], "--stages", "full")
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["stages"] == "full", meta
    pid = str(meta["servers"][0]["pid"])
    # the commit's redo log write and flush are the UPDATE's, in commit
    rows = report_json(rec, "--by", "query,stage,file_class,role", "--layer", "syscall")["rows"]
    redo = {(r["stage"], r["op"]) for r in rows
            if r["file_class"] == "redo_log" and (r["query"] or "").startswith("UPDATE bench.t")}
    assert redo == {("commit", "write"), ("commit", "fsync")}, [r for r in rows if r["file_class"] == "redo_log"]
    status = meta["servers"][0]["stage_probes"]
    if source == "thd":
        # the default's 4 uprobes and no stage uprobe: MariaDB's stage is read at IO time
        assert status.startswith("attached 4 uprobes (--stages full: stages from the server's THD"), status
        src = meta["stage_sources"][pid]
        assert list(meta["stage_sources"]) == [pid] and src["source"] == "thd" and src["why"] == "", meta
        # a name that is no stage object and not one of thd_stages.LITERAL_NAMES is read from the
        # server after the first IO in it, and its IO has its stage from then on: the IO in it
        # until the recorder's next refresh is missed (how much depends on the machine's pace: one
        # fresh-clone run had 4 misses for "login", before it was a known literal); a name is
        # learned only from a miss
        learned = src.get("learned", {})
        assert meta["thd_stage_misses"]["read"] == 0, meta
        assert not learned or meta["thd_stage_misses"]["name"] > 0, meta
        assert set(learned.values()) <= {"parse", "optimize", "execute", "commit", "background"}, learned
    else:
        assert status.startswith("attached 8 uprobes (--stages full: stage uprobes"), status
        assert meta["stage_sources"] == {pid: {"source": "uprobes", "why": "IOATTR_THD_STAGES=off"}}, meta
    # statements start from the wire reader (no dispatch_command uprobe)
    assert "statements from the wire" in status, meta["servers"]
    got = pages_by(rec, "query", "stage", "index", "level")
    cov = {k: v for k, v in got.items() if k[0] and k[0].startswith("SELECT k FROM")}
    non = {k: v for k, v in got.items() if k[0] and k[0].startswith("SELECT c FROM")}
    assert cov and non, got
    assert not any(k[2] == "bench.t.PRIMARY" and k[3] == "leaf" for k in cov), cov
    primary_exec = sum(v for k, v in non.items()
                       if k[1] == "execute" and k[2] == "bench.t.PRIMARY" and k[3] == "leaf")
    assert primary_exec > 20, non
    # literals never reach the recording
    assert all("20000" not in (k[0] or "") for k in got), got


def test_statement_stages_give_digests_with_stage_null(server, tmp_path: Path) -> None:
    """--stages statement: 4 uprobes, none hit by a plain statement (two per index the optimizer
    estimates ranges in), statements from the wire reader; IO inside a statement has its digest
    and role, and its stage is null (not traced), never `parse`, except the optimizer's index
    dives (`estimate`, reads of the index whose range it estimates)."""
    non_covering = "SELECT c FROM bench.t WHERE k BETWEEN 30000 AND 70000"
    rec, _, _ = record_queries(server, tmp_path, [non_covering], "--stages", "statement")
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["stages"] == "statement", meta
    assert meta["servers"][0]["stage_probes"].startswith("attached 4 uprobes (--stages statement)"), meta["servers"]
    assert "stage_sources" not in meta, meta
    assert meta["statement_sources"] == {str(meta["servers"][0]["pid"]): {"source": "wire",
                                                                          "why": "--statements auto"}}, meta
    got = pages_by(rec, "query", "stage", "role", "index", "level")
    mine = {k: v for k, v in got.items() if k[0] and k[0].startswith("SELECT c FROM")}
    assert sum(v for k, v in mine.items() if k[3] == "bench.t.PRIMARY" and k[4] == "leaf") > 20, got
    assert {k[1] for k in mine} <= {None, "estimate"}, mine  # stage: not traced, so null
    assert {k[3] for k in mine if k[1] == "estimate"} <= {"bench.t.k"}, mine  # the range's dive
    assert {k[2] for k in mine} == {"connection"}, mine    # the role still comes from the statement start
    assert not any(k[1] in ("parse", "optimize", "execute", "commit") for k in got), got
    # the report says why the stage is null
    rep = report_json(rec, "--by", "query,stage")
    assert rep["stages"] == "statement"
    text = ioattr("report", str(rec), "--by", "query,stage").stdout
    assert "--stages full" in " ".join(text.split()), text


def _default_recording_of_a_range(server, tmp_path: Path) -> tuple[Path, dict, str]:
    """A non-covering range recorded with default options: (recording, its meta.json, server pid)."""
    rec, _, _ = record_queries(server, tmp_path, ["SELECT c FROM bench.t WHERE k BETWEEN 30000 AND 70000"])
    meta = json.loads((rec / "meta.json").read_text())
    return rec, meta, str(meta["servers"][0]["pid"])


def test_default_stages_are_read_from_the_server(server, tmp_path: Path) -> None:
    """Default options (--stages auto): the same 4 uprobes as --stages statement and no stage
    uprobe, and yet IO inside statements has MariaDB's own stage, read from the THD at IO
    time: the range's dive into k is `estimate`, the PRIMARY lookups of its rows `execute`."""
    rec, meta, pid = _default_recording_of_a_range(server, tmp_path)
    assert meta["stages"] == "full", meta
    assert meta["servers"][0]["stage_probes"].startswith(
        "attached 4 uprobes (--stages auto: stages from the server's THD at IO time)"), meta["servers"]
    assert meta["stage_sources"][pid]["source"] == "thd" and meta["thd_stage_misses"]["read"] == 0, meta
    got = pages_by(rec, "query", "stage", "role", "index", "level")
    mine = {k: v for k, v in got.items() if k[0] and k[0].startswith("SELECT c FROM")}
    primary = {k[1]: v for k, v in mine.items() if k[3] == "bench.t.PRIMARY" and k[4] == "leaf"}
    assert set(primary) == {"execute"} and primary["execute"] > 20, mine
    assert {k[3] for k in mine if k[1] == "estimate"} <= {"bench.t.k"}, mine
    assert None not in {k[1] for k in mine}, mine
    rep = report_json(rec, "--by", "query,stage")
    assert rep["stages"] == "full"


def test_default_without_the_thd_layout_leaves_stages_null(server, tmp_path: Path, monkeypatch) -> None:
    """Default options on a server whose THD cannot be read (IOATTR_THD_STAGES=off stands in for a
    binary without the layout): no stage uprobe is added behind the user's back; the stage
    inside statements is null, and the recording says "statement" and why."""
    monkeypatch.setenv("IOATTR_THD_STAGES", "off")
    rec, meta, pid = _default_recording_of_a_range(server, tmp_path)
    assert meta["stages"] == "statement", meta
    assert meta["servers"][0]["stage_probes"].startswith(
        "attached 4 uprobes (--stages auto: no stages inside statements, the THD's stage cannot be read: "
        "IOATTR_THD_STAGES=off"), meta["servers"]
    assert meta["stage_sources"] == {pid: {"source": "none", "why": "IOATTR_THD_STAGES=off"}}, meta
    got = pages_by(rec, "query", "stage", "index", "level")
    mine = {k: v for k, v in got.items() if k[0] and k[0].startswith("SELECT c FROM")}
    assert sum(v for k, v in mine.items() if k[2] == "bench.t.PRIMARY" and k[3] == "leaf") > 20, got
    assert {k[1] for k in mine} <= {None, "estimate"}, mine
    assert not any(k[1] in ("parse", "optimize", "execute", "commit") for k in got), got


def test_a_stage_name_met_at_io_time_is_learned(server) -> None:
    """A stage name the binary's stage objects do not list (MariaDB sets some proc_info from
    literals) costs only the IO that meets it first: the IO programs leave it for userspace,
    which reads the name from the server and adds it. "Statistics" is taken out of the map
    to stand in for one: the cold point selects' reads in it are `statement` until it is
    learned, `optimize` after."""
    import ctypes
    import random

    from ioattr.collectors import abi, libbpf, thd_stages
    from ioattr.collectors.drain import io_stats_drainer
    from ioattr.collectors.probes import ProbeSession
    from ioattr.collectors.stage_probes import StageProbes
    from ioattr.collectors.targets import TargetMap

    server.restart()
    pid = server.pid
    facts = thd_stages.read_binary(f"/proc/{pid}/exe")
    assert isinstance(facts, thd_stages.ServerStages), facts
    bias = thd_stages.load_bias(pid, f"/proc/{pid}/exe", facts)
    statistics = next(ptr for ptr, name in facts.names.items() if name == "Statistics") + bias
    rnd = random.Random(11)

    def point_selects(n: int) -> None:
        for _ in range(n):
            server.query(f"SELECT c FROM bench.t WHERE id = {rnd.randrange(1, ROWS)}")

    def reads_by_stage(drain) -> dict[int, int]:
        d, out = drain.drain(), {}
        for k, c in zip(d.keys, d.count):
            if int(k["tgid"]) == pid and int(k["layer"]) == abi.Layer.SYSCALL and int(k["op"]) == abi.Op.READ:
                out[int(k["stage"])] = out.get(int(k["stage"]), 0) + int(c)
        return out

    with ProbeSession(("syscalls", "targets", "stage"), fine_stages=True) as ps:
        TargetMap(ps.map_fd("targets"), ps.map_fd("target_slots")).add(pid)
        stages = StageProbes(ps, "wire", stages="auto")
        try:
            assert "stages from the server's THD at IO time" in stages.attach(pid), stages.status
            assert libbpf.map_delete(ps.map_fd("thd_stage_names"), abi.ThdStageKey(name=statistics, tgid=pid))
            drain = io_stats_drainer(ps.map_fd("io_stats"), ps.max_stats)
            point_selects(200)
            before = reads_by_stage(drain)
            missed = stages.thd_misses()["name"]
            assert missed >= 1 and before.get(abi.Stage.STATEMENT, 0) >= 1, (missed, before)
            # (each query is a new connection: "login" is no stage object either, but a known literal)
            learned = stages.learn_thd_names()
            assert f"server {pid}: stage name 'Statistics' read from the server: optimize" in learned, learned
            assert stages.thd_learned[pid]["Statistics"] == "optimize", stages.thd_learned
            point_selects(300)
            after = reads_by_stage(drain)
            misses = stages.thd_misses()
            assert misses["read"] == 0, misses
            assert after.get(abi.Stage.OPTIMIZE, 0) >= 100, after
            assert after.get(abi.Stage.STATEMENT, 0) <= misses["name"] - missed, (after, misses, missed)
        finally:
            stages.close()
        assert not libbpf.map_lookup(ps.map_fd("thd_stage_names"), abi.ThdStageKey(name=statistics, tgid=pid),
                                     ctypes.c_uint8())  # detach removes what it learned too
    assert_no_ioattr_programs()


def _db_opt_reads(db) -> int:
    """performance_schema's count of reads of bench/db.opt (one login reads it once)."""
    rows = db.query("SELECT SUM(COUNT_READ) FROM performance_schema.file_summary_by_instance "
                    "WHERE FILE_NAME LIKE '%/bench/db.opt'")
    return int(rows[0][0] or 0) if rows else 0


def test_login_io_on_a_cached_thread_is_in_no_statement(server, tmp_path: Path) -> None:
    """A connection that ends without COM_QUIT (a killed client) leaves its server thread in the
    thread cache with that connection's last statement. The next connection logs in on that
    thread and reads its default database's db.opt (FLUSH TABLES empties MariaDB's cache of
    them). That IO is in no statement: stage background, no query, from the first login on
    ("login" is set from a string literal, which is found in the binary, not learned)."""
    from tests.helpers import wait_until

    logins = 3
    server.restart()
    admin = server.connect()  # stays busy: the cached thread the next login takes is the killed one's
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3")
    try:
        bg.wait_recording()
        reads0 = _db_opt_reads(server)
        with admin.cursor() as cur:
            for i in range(logins):
                killed = server.connect("bench")
                with killed.cursor() as kc:
                    kc.execute("SELECT c FROM bench.t WHERE id = %s", (i + 1,))
                    kc.fetchall()
                gone = killed.thread_id()
                killed._force_close()  # no COM_QUIT: the statement is the thread's last word

                def cached() -> bool:
                    cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s", (gone,))
                    return cur.fetchone()[0] == 0
                wait_until(cached, 30, f"connection {gone} to end")
                cur.execute("FLUSH TABLES")
                cur.execute("SHOW GLOBAL STATUS LIKE 'Threads_created'")
                created = int(cur.fetchone()[1])
                server.connect("bench").close()
                cur.execute("SHOW GLOBAL STATUS LIKE 'Threads_created'")
                assert int(cur.fetchone()[1]) == created, "the login did not take the cached thread"
        reads = _db_opt_reads(server) - reads0
        code, err = bg.stop()
        assert code == 0, err
    finally:
        bg.stop()
        admin.close()
    # every login after FLUSH TABLES read db.opt once; the first killed connection's login too
    # (a restart empties the cache), on a new or cached thread
    assert reads == logins + 1, reads
    rows = report_json(rec, "--by", "query,stage,file", "--layer", "syscall")["rows"]
    db_opt = [(r["query"], r["stage"], r["count"]) for r in rows
              if r["op"] == "read" and (r["file"] or "").endswith("/bench/db.opt")]
    assert db_opt == [(None, "background", reads)], db_opt
    meta = json.loads((rec / "meta.json").read_text())
    assert "login" not in meta["stage_sources"][str(server.pid)].get("learned", {}), meta["stage_sources"]


def _cold_point_selects_on_both(tmp_path: Path, dbs: list, order: list, rows: int, selects: int) -> Path:
    """The same table s.t (`rows` rows, so the same space id) in every server, each restarted
    (a cold buffer pool); `record --pid` of them in `order` with default options while each
    runs `selects` point selects; the recording."""
    for db in dbs:
        db.query("CREATE DATABASE s")
        db.query("CREATE TABLE s.t (id INT PRIMARY KEY, c CHAR(200) NOT NULL) ENGINE=InnoDB")
        db.query(f"INSERT INTO s.t SELECT seq, REPEAT('x', 200) FROM s.seq_1_to_{rows}")
        db.restart()
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), *(a for db in order for a in ("--pid", str(db.pid))),
                    "--interval", "0.3")
    bg.wait_recording()
    for db in dbs:
        conn = db.connect()
        with conn.cursor() as cur:
            for i in range(selects):
                cur.execute("SELECT c FROM s.t WHERE id = %s", ((i * 7919) % rows + 1,))
        conn.close()
    code, err = bg.stop()
    assert code == 0, err
    return rec


def test_two_traced_servers_each_read_their_own_stage(tmp_path: Path, mariadb_factory) -> None:
    """`record --pid A --pid B` with default options: each server's stage is read from its own
    THD with its own names (their binaries map at different addresses): both servers' cold
    point selects read their rows in `optimize`, each under its own pid (and opening the table,
    `execute`, a few pages), and each server's pages are its own file's (the two servers'
    tables have the same space id)."""
    dbs = [mariadb_factory(buffer_pool="8M") for _ in range(2)]
    rec = _cold_point_selects_on_both(tmp_path, dbs, dbs, rows=60000, selects=300)
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["stages"] == "full", meta
    assert {p: s["source"] for p, s in meta["stage_sources"].items()} == {str(db.pid): "thd" for db in dbs}, meta
    # both servers' s.t is space 5 (and their ibdata1 space 0): each server's page rows go to
    # its own file, so each server's index reads are named
    rows = report_json(rec, "--by", "process,query,stage,file,index", "--layer", "syscall")["rows"]
    for db in dbs:
        mine = {r["stage"]: r["count"] for r in rows if r["process"].endswith(f"[{db.pid}]") and r["op"] == "read"
                and (r["query"] or "").startswith("SELECT c FROM s.t") and r["index"] == "s.t.PRIMARY"
                and r["file"] == str(db.datadir / "s" / "t.ibd")}
        # the rows in optimize; opening the table after the restart reads a few pages in execute
        assert set(mine) <= {"optimize", "execute"} and mine["optimize"] > 20, (db.pid, mine)
        assert mine.get("execute", 0) <= 8, (db.pid, mine)
        # every read of a statement's optimize rows was pages of s.t.PRIMARY only: whole IOs,
        # not shares of split ones, so the rows keep their latency
        timed = [r for r in rows if r["process"].endswith(f"[{db.pid}]") and r["op"] == "read"
                 and (r["query"] or "").startswith("SELECT c FROM s.t") and r["index"] == "s.t.PRIMARY"
                 and r["stage"] == "optimize"]
        assert timed and all(r["latency_us"]["p50"] is not None for r in timed), timed
    # block rows: no page classification (pages null), whatever the page dimension asked
    assert all(r["pages"] is None for r in report_json(rec, "--by", "index", "--layer", "block")["rows"])
    # the same reads at the block layer (O_DIRECT: one request per pread, issued by the
    # connection's thread) carry the stage their syscalls had, or null (an interval where the
    # thread read the file in both stages: how the seconds fall decides), never `background`
    blocks = report_json(rec, "--by", "process,role,stage,file", "--layer", "block")["rows"]
    for db in dbs:
        conn = [r for r in blocks if r["process"].endswith(f"[{db.pid}]") and r["op"] == "read"
                and r["role"] == "connection" and r["file"] == str(db.datadir / "s" / "t.ibd")]
        assert conn and {r["stage"] for r in conn} <= {"optimize", "execute", None}, (db.pid, conn)


def test_page_writes_match_engine_and_roles(server, tmp_path: Path) -> None:
    rec, _, written = record_queries(server, tmp_path, [
        "UPDATE bench.t SET c = REPEAT('y', 200) WHERE id % 7 = 0",
    ], flush=True)
    ours = pages_by(rec, "level", "file_class", op="write")
    leaf = sum(v for k, v in ours.items() if k[0] == "leaf" and k[1] == "tablespace")
    want = written["index_leaf"]
    assert want > 50
    assert abs(leaf - want) <= max(3, 0.02 * want), (ours, written)
    writers = pages_by(rec, "role", "page_type", op="write")
    readers = pages_by(rec, "role", "page_type")
    # page writes come from background threads, the UPDATE's reads from the connection
    assert not any(k[0] == "connection" for k in writers), writers
    assert readers.get(("connection", "index"), 0) > 0, readers
    assert writers.get(("page_cleaner", "index"), 0) > 0, writers
    # doublewrite copies are seen and told apart
    assert any(k[1] == "doublewrite" for k in ours), ours


def test_redo_log_writes_are_log_writes_and_checkpoints(server, tmp_path: Path) -> None:
    """ioattr's redo log writes in a phase are Innodb_log_writes (the log's data, one per
    log_t::write_buf) plus INNODB_METRICS log_checkpoints (one checkpoint-block write each,
    which Innodb_log_writes does not count; the recorder switches that counter on): exactly,
    as the log does not wrap here (a write past the file's end is two pwrites counted once)."""
    from ioattr.analysis.phase_stats import phase_stats
    from ioattr.format.reader import Recording

    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3")
    try:
        bg.wait_recording()
        server.query("SELECT 'ioattr:phase=redo'")
        for i in range(12):
            server.query(f"UPDATE bench.t SET c = UUID() WHERE id = {1000 + i}")
            if i % 4 == 3:
                server.query("SET GLOBAL innodb_log_checkpoint_now = ON")  # a checkpoint, now
        server.query("SELECT 'ioattr:phase=after'")
        bg.wait_for("phase after")
    finally:
        code, err = bg.stop()
    assert code == 0, err
    rows = report_json(rec, "--by", "phase,file_class,op", "--layer", "syscall")["rows"]
    ours = sum(r["count"] for r in rows if (r["phase"], r["file_class"], r["op"]) == ("redo", "redo_log", "write"))
    st = phase_stats(Recording(rec), "redo")
    writes, checkpoints = st.counter("status:Innodb_log_writes"), st.counter("innodb_metrics:log_checkpoints")
    assert checkpoints is not None and checkpoints >= 3, st.counters
    assert ours == writes + checkpoints, (ours, writes, checkpoints)


def test_roles_on_a_mixed_workload(server, tmp_path: Path) -> None:
    """Connections read, purge cleans up after the DELETE, the page cleaner writes.

    (Runs last in this module: it deletes rows.)"""
    def history(db) -> int:
        return int(db.query("SELECT COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS "
                            "WHERE NAME = 'trx_rseg_history_len'")[0][0])

    server.restart()
    server.query("SET GLOBAL innodb_monitor_enable = 'trx_rseg_history_len'")
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3")
    bg.wait_recording()
    server.query("DELETE FROM bench.t WHERE id % 3 = 0")
    deadline = time.monotonic() + 60
    while history(server) > 0 and time.monotonic() < deadline:
        time.sleep(0.3)
    server.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    while server.status("Innodb_buffer_pool_pages_dirty") > 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    code, err = bg.stop()
    assert code == 0, err
    reads = pages_by(rec, "role", "page_type")
    writes = pages_by(rec, "role", "page_type", op="write")
    assert reads.get(("connection", "index"), 0) > 100, reads
    purge = sum(v for k, v in reads.items() if k[0] == "purge")
    assert purge > 0, reads  # purge had to read secondary-index pages to remove delete-marked entries
    assert writes.get(("page_cleaner", "index"), 0) > 0, writes
    assert not any(k[0] == "connection" for k in writes), writes


def test_no_programs_left_after_innodb_runs() -> None:
    assert_no_ioattr_programs()


@pytest.mark.parametrize("encrypted_first", [True, False], ids=["encrypted-first", "plain-first"])
def test_two_servers_one_encrypted(tmp_path: Path, mariadb_factory, encrypted_first: bool) -> None:
    """`record --pid A --pid B`, A's tables encrypted (file_key_management), B's not, the same
    table (the same space id) in both: A's page reads are counted as encrypted (their headers
    are not read), B's are classified under their index. The encrypted spaces are each
    server's own: A's report must not mark B's file of the same space id, whichever server
    the recorder connects first."""
    keys = tmp_path / "keys.txt"
    keys.write_text("1;" + "a1" * 32 + "\n")
    keys.chmod(0o600)
    enc = {"plugin_load_add": "file_key_management", "file_key_management_filename": str(keys),
           "innodb_encrypt_tables": "ON"}
    dbs = [mariadb_factory(buffer_pool="8M", extra_options=enc), mariadb_factory(buffer_pool="8M")]
    rec = _cold_point_selects_on_both(tmp_path, dbs, dbs if encrypted_first else dbs[::-1], rows=30000, selects=200)
    assert dbs[0].query("SELECT COUNT(*) FROM information_schema.INNODB_TABLESPACES_ENCRYPTION "
                        "WHERE NAME = 's/t' AND CURRENT_KEY_VERSION <> 0")[0][0] == 1
    rows = report_json(rec, "--by", "process,file,page_type,index", "--layer", "syscall")["rows"]
    got = {}
    for db, name in zip(dbs, ("encrypted", "plain")):
        mine = [r for r in rows if r["process"].endswith(f"[{db.pid}]") and r["op"] == "read"
                and r["file"] == str(db.datadir / "s" / "t.ibd")]
        got[name] = {(r["page_type"], r["index"]): r["count"] for r in mine}
    enc_rows, plain_rows = got["encrypted"], got["plain"]
    assert enc_rows.get(("encrypted", None), 0) > 20 and not any(i for _, i in enc_rows), got
    assert plain_rows.get(("index", "s.t.PRIMARY"), 0) > 20, got
    assert not any(t == "encrypted" for t, _ in plain_rows), got

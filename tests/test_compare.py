"""`ioattr compare` on two real recordings: the same point-select workload on two private
MariaDB servers that differ only in their buffer pool (8 MiB: the table does not fit; 64 MiB:
it does), each in a phase named `read`.

compare's reads per query and KB read per query must be, exactly, what `ioattr report
--format json` gives for that phase (storage reads: syscall layer, storage file classes)
divided by the phase's statement count: the work's SELECTs (its connection's own Com_select)
and the phase marker's; the small pool reads more per query. Both runs' settings
come from their meta.json. Nothing here is timed."""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

from ioattr.model import storage
from tests.helpers import Background, assert_no_ioattr_programs, ioattr, record_marked_phases

ROWS = 40_000
QUERIES = 3000


def _load(db, engine: str = "InnoDB") -> None:
    db.query("CREATE DATABASE IF NOT EXISTS c")
    db.query(f"CREATE TABLE c.t (id INT PRIMARY KEY, pad CHAR(200) NOT NULL) ENGINE={engine}")
    db.query(f"INSERT INTO c.t SELECT seq, REPEAT('x', 200) FROM c.seq_1_to_{ROWS}")


def _session_selects(cur) -> int:
    cur.execute("SHOW SESSION STATUS LIKE 'Com_select'")
    return int(cur.fetchall()[0][1])


def _run(db, rec: Path) -> dict:
    """Record the same random point selects (same seed) in a phase `read`, on the connection that
    sent the phase marker; its own Com_select around the work is the ground truth (other
    connections' SELECTs, ioattr's included, are not in it)."""
    ids = random.Random(42).sample(range(1, ROWS + 1), QUERIES)
    truth: dict = {}

    def work(cur) -> None:
        before = _session_selects(cur)
        for i in ids:
            cur.execute("SELECT pad FROM c.t WHERE id = %s", (i,))
            cur.fetchall()
        truth["selects"] = _session_selects(cur) - before

    record_marked_phases(db, rec, [("read", work)])
    return truth


def _report_storage_reads(rec: Path) -> tuple[int, int]:
    """report's storage reads of phase `read`, ioattr's own statements' left out as compare
    does (storage.is_storage: the temporary tables its INFORMATION_SCHEMA reads put on disk)."""
    r = ioattr("report", str(rec), "--by", "phase,file_class,query", "--phase", "read", "--layer", "syscall",
               "--format", "json", check=True)
    rows = json.loads(r.stdout)["rows"]
    mine = [x for x in rows if x["op"] == "read" and storage.is_storage(x["layer"], x["file_class"])
            and x["query"] != storage.INTERNAL_QUERY_LABEL]
    return sum(x["count"] for x in mine), sum(x["bytes"] for x in mine)


def test_compare_two_buffer_pools(mariadb_factory, tmp_path: Path) -> None:
    runs = {}
    for name, pool in (("bp8m", "8M"), ("bp64m", "64M")):
        db = mariadb_factory(buffer_pool=pool)
        _load(db)
        db.restart()  # both start cold: every page a query needs is read once at least
        rec = tmp_path / name
        runs[name] = (rec, _run(db, rec))
    r = ioattr("compare", str(runs["bp8m"][0]), str(runs["bp64m"][0]), "--phase", "read", "--format", "json",
               check=True)
    result = json.loads(r.stdout)
    assert [x["label"] for x in result["runs"]] == ["bp8m", "bp64m"]
    assert [x["settings"]["innodb_buffer_pool_size"] for x in result["runs"]] == [8 << 20, 64 << 20]
    assert all(x["engines"][0] == "innodb" and x["settings"]["innodb_flush_method"] == "O_DIRECT"
               for x in result["runs"])
    rows = {x["run"]: x for x in result["rows"]}
    assert set(rows) == {"bp8m", "bp64m"} and all(x["phase"] == "read" for x in result["rows"])
    for name, (rec, truth) in runs.items():
        row = rows[name]
        reads, read_bytes = _report_storage_reads(rec)
        # the statement count: the work's SELECTs as its connection counted them, plus the phase
        # marker's own SELECT (it runs once the recorder has started the phase: it is the phase's)
        assert truth["selects"] == QUERIES and row["queries"] == QUERIES + 1, (row["queries"], truth)
        assert row["storage_reads"] == reads and row["storage_read_bytes"] == read_bytes
        assert row["reads_per_query"] == storage.sig(reads / row["queries"], 4)
        assert row["kb_read_per_query"] == storage.sig(read_bytes / 1024 / row["queries"], 4)
        assert row["engine_cache_misses"] is not None
    assert rows["bp8m"]["reads_per_query"] > rows["bp64m"]["reads_per_query"]
    assert rows["bp8m"]["kb_read_per_query"] > rows["bp64m"]["kb_read_per_query"]
    # the table and the HTML page from the same two runs
    page = tmp_path / "cmp.html"
    r = ioattr("compare", str(runs["bp8m"][0]), str(runs["bp64m"][0]), "--html", str(page), check=True,
               env=dict(os.environ, COLUMNS="250"))
    assert "bp8m" in r.stdout and " 8.0 MiB " in r.stdout and " 64.0 MiB " in r.stdout  # one engine: unnamed
    assert "<svg" in page.read_text()
    assert_no_ioattr_programs()


def test_compare_shows_a_postgres_runs_settings(postgres, tmp_path: Path) -> None:
    """A PostgreSQL run: the recorder keeps the cluster's settings (meta.json servers[].settings)
    and compare shows them as the server says them; its queries are the statements read from the
    wire (issue 16: one per Execute), so the 20 SELECTs run here, and its reads per query are its
    storage reads over them."""
    rec = tmp_path / "pg"
    bg = Background("record", "-o", str(rec), "--pid", str(postgres.pid), "--phase", "read")
    try:
        bg.wait_recording()
        for i in range(20):
            postgres.query("SELECT %s::int + 1", [i])
    finally:
        code, err = bg.stop()
    assert code == 0, err
    r = ioattr("compare", str(rec), "--format", "json", check=True)
    result = json.loads(r.stdout)
    (run,) = result["runs"]
    truth = dict(postgres.query("SELECT name, setting FROM pg_settings WHERE name IN "
                                "('shared_buffers', 'block_size', 'wal_sync_method')"))
    block = int(truth["block_size"])
    assert run["engines"] == ["postgres"]
    assert run["engine_settings"]["postgres"] == {"cache": int(truth["shared_buffers"]) * block,  # unit: blocks
                                                  "io": truth["wal_sync_method"], "page": block}
    assert run["version"] == postgres.query("SHOW server_version")[0][0]
    (row,) = result["rows"]
    assert row["phase"] == "read" and row["queries"] == 20
    assert row["reads_per_query"] is not None and row["reads_per_query"] >= 0
    # the engine's own misses (pg_stat_database's blks_read, summed over the cluster) are counted
    assert isinstance(row["engine_cache_misses"], int) and row["engine_cache_misses"] >= 0
    assert_no_ioattr_programs()


def test_compare_innodb_with_myrocks(mariadb_factory, tmp_path: Path) -> None:
    """The same point selects on InnoDB and on MyRocks (8 MB block cache, direct reads): the
    MyRocks run lists both engines with the block cache size the server has, and its reads per
    query are report's storage reads (SST reads included) over its queries, exactly."""
    from tests.conftest import need

    need(Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(), "mariadb-plugin-rocksdb is not installed (make deps)")
    runs = {}
    for name, kwargs in (("innodb", {}), ("myrocks", {"rocksdb": True, "rocksdb_block_cache": "8M",
                                                      "rocksdb_direct_reads": True})):
        db = mariadb_factory(buffer_pool="8M", **kwargs)
        _load(db, "ROCKSDB" if kwargs else "InnoDB")
        if kwargs:
            db.query("SET GLOBAL rocksdb_force_flush_memtable_now = 1")  # the rows in SSTs, read from there
        db.restart()
        # open the table before recording: not for its index names any more (the recorder re-reads
        # names ROCKSDB_DDL gave empty after the restart at the end: tests/test_myrocks_names.py)
        # but because the table's first open after the restart makes the server rewrite c.t's SST
        # and the dictionary's (seen: nothing for 3 s after the restart, then 000013 -> 000027 at
        # L0 right after the first SELECT, inodes reused); without this that happens inside the
        # measured phase, whose --by index is then led by reads of files no catalog entry names
        db.query("SELECT id FROM c.t WHERE id = 1")
        cache = db.query("SELECT @@rocksdb_block_cache_size")[0][0] if kwargs else None
        rec = tmp_path / name
        runs[name] = (rec, _run(db, rec), cache)
    r = ioattr("compare", str(runs["innodb"][0]), str(runs["myrocks"][0]), "--phase", "read", "--by", "index",
               "--format", "json", check=True)
    result = json.loads(r.stdout)
    info = {x["label"]: x for x in result["runs"]}
    assert info["innodb"]["engines"] == ["innodb"]
    assert info["myrocks"]["engines"] == ["innodb", "rocksdb"]
    assert info["myrocks"]["engine_settings"]["rocksdb"]["cache"] == int(runs["myrocks"][2]) == 8 << 20
    assert info["myrocks"]["engine_settings"]["rocksdb"]["io"] == "ON"              # rocksdb_use_direct_reads
    for x in result["rows"]:
        assert x["queries"] == QUERIES + 1 and runs[x["run"]][1]["selects"] == QUERIES  # + the phase marker
        reads, read_bytes = _report_storage_reads(runs[x["run"]][0])
        assert x["storage_reads"] == reads and x["reads_per_query"] == storage.sig(reads / x["queries"], 4)
        assert x["kb_read_per_query"] == storage.sig(read_bytes / 1024 / x["queries"], 4)
    rocks = next(x for x in result["rows"] if x["run"] == "myrocks")
    assert rocks["storage_reads"] > 0 and rocks["engine_cache_misses"] > 0          # block-cache misses counted
    # --by index: a MyRocks table's SSTs (one index each here) are charged to c.t.PRIMARY
    parts = [p for p in result["breakdown"] if p["run"] == "myrocks"]
    assert parts[0]["index"] == "c.t.PRIMARY" and parts[0]["storage_reads"] > 0      # most reads first
    assert sum(p["storage_reads"] for p in parts) == rocks["storage_reads"]          # the split adds up
    assert_no_ioattr_programs()

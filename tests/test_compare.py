"""`ioattr compare` on two real recordings: the same point-select workload on two private
MariaDB servers that differ only in their buffer pool (8 MiB: the table does not fit; 64 MiB:
it does), each in a phase named `read`.

compare's reads per query and KB read per query must be, exactly, what `ioattr report
--format json` gives for that phase (storage reads: syscall layer, storage file classes)
divided by the phase's statement count, which is the server's own Com_select for the work
(checked apart, on another connection); the small pool reads more per query. Both runs' settings
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


def _load(db) -> None:
    db.query("CREATE DATABASE IF NOT EXISTS c")
    db.query("CREATE TABLE c.t (id INT PRIMARY KEY, pad CHAR(200) NOT NULL) ENGINE=InnoDB")
    db.query(f"INSERT INTO c.t SELECT seq, REPEAT('x', 200) FROM c.seq_1_to_{ROWS}")


def _com_select(db) -> int:
    return int(db.query("SHOW GLOBAL STATUS LIKE 'Com_select'")[0][1])


def _run(db, rec: Path) -> dict:
    """Record the same random point selects (same seed) in a phase `read`; Com_select around it."""
    ids = random.Random(42).sample(range(1, ROWS + 1), QUERIES)

    def work(cur) -> None:
        for i in ids:
            cur.execute("SELECT pad FROM c.t WHERE id = %s", (i,))
            cur.fetchall()

    truth = record_marked_phases(db, rec, [("read", work)], measure=lambda: _com_select(db))
    before, after = truth["read"]
    return {"selects": after - before}


def _report_storage_reads(rec: Path) -> tuple[int, int]:
    r = ioattr("report", str(rec), "--by", "phase,file_class", "--phase", "read", "--layer", "syscall",
               "--format", "json", check=True)
    rows = json.loads(r.stdout)["rows"]
    mine = [x for x in rows if x["op"] == "read" and storage.is_storage(x["layer"], x["file_class"])]
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
        # the statement count: the server's Com_select for the work, plus the phase marker's own
        # SELECT, which the server counts once the recorder has started the phase
        assert row["queries"] in (truth["selects"], truth["selects"] + 1), (row["queries"], truth)
        assert truth["selects"] == QUERIES
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
    assert "bp8m" in r.stdout and "innodb 8.0 MiB" in r.stdout and "innodb 64.0 MiB" in r.stdout
    assert "<svg" in page.read_text()
    assert_no_ioattr_programs()


def test_compare_shows_a_postgres_runs_settings(postgres, tmp_path: Path) -> None:
    """A PostgreSQL run: the recorder keeps the cluster's settings (meta.json servers[].settings)
    and compare shows them as the server says them; its per-query terms stay null (no statement
    counts are recorded for PostgreSQL yet): never guessed."""
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
    assert row["phase"] == "read" and row["queries"] is None and row["reads_per_query"] is None
    assert_no_ioattr_programs()

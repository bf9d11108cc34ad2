"""MyRocks index names right after a restart (ioattr/engines/myrocks/sst.py, names.py).

After a restart ROCKSDB_DDL lists a table nobody opened yet with an empty INDEX_NAME, so the
recorder, which reads it when the recording starts, first names that table's SSTs 'c.t.'. The
catalog re-reads those names once, at the end of the recording, after its last counters
snapshot and drain: the final names (meta.json "files", report --by index) are right, and no
phase is charged the dictionary reads of ioattr's own ROCKSDB_DDL query -- the measured phase's
SST reads are still exactly RocksDB's block-cache misses (~10 s).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import record_marked_phases, report_json

ROWS = 20000
LOOKUPS = 120


@pytest.fixture(scope="module")
def restarted_rec(tmp_path_factory):
    """c.t with its primary key in the default column family and its secondary index kv in
    cf_sec (each SST then holds one index: named by --by index), flushed, the server restarted
    and c.t not opened before the recording; a 1 KiB block cache keeps no block, so each miss is
    one pread. A warm phase opens the table (MyRocks reads its dictionary, the SSTs' table
    readers prefetch their tails), then the measured lookups through both indexes."""
    from tests.conftest import need
    from tests.fixtures_mariadb import private_server

    need(Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(), "mariadb-plugin-rocksdb is not installed (make deps)")
    rec = tmp_path_factory.mktemp("myrocks_names") / "rec"
    with private_server("CREATE DATABASE c",
                        "CREATE TABLE c.t (id INT PRIMARY KEY, k INT NOT NULL, v VARCHAR(64), "
                        "KEY kv (k) COMMENT 'cf_sec') ENGINE=ROCKSDB",
                        f"INSERT INTO c.t SELECT seq, seq * 3, MD5(seq) FROM c.seq_1_to_{ROWS}",
                        "SET GLOBAL rocksdb_force_flush_memtable_now = 1",
                        rocksdb=True, rocksdb_block_cache="8M",
                        extra_options={"rocksdb_default_cf_options": "disable_auto_compactions=true"}) as db:
        db.restart()
        db.query("SET GLOBAL rocksdb_block_cache_size = 1024")
        # the bug's precondition: c.t's indexes have no name in ROCKSDB_DDL yet
        unnamed = db.query("SELECT INDEX_NAME FROM INFORMATION_SCHEMA.ROCKSDB_DDL "
                           "WHERE TABLE_SCHEMA = 'c' AND TABLE_NAME = 't'")
        assert unnamed and all(not r[0] for r in unnamed), unnamed

        def warm(cur) -> None:
            cur.execute("SELECT v FROM c.t WHERE id = 1")
            cur.fetchall()
            cur.execute("SELECT k FROM c.t WHERE k = 3")
            cur.fetchall()

        def lookups(cur) -> None:
            for i in range(LOOKUPS):
                key = 1 + (i * 7919) % ROWS
                cur.execute(f"SELECT v FROM c.t WHERE id = {key}")    # the primary key
                cur.fetchall()
                cur.execute(f"SELECT k FROM c.t WHERE k = {key * 3}")  # kv only (covering)
                cur.fetchall()

        def measure() -> dict[str, int]:
            return {"miss": db.status("Rocksdb_block_cache_miss")}

        truth = record_marked_phases(db, rec, [("warm", warm), ("lookup", lookups)], measure=measure)
        yield {"rec": rec, "truth": truth}


def test_final_names_after_restart(restarted_rec) -> None:
    """meta.json "files" and report --by index name c.t's SSTs c.t.PRIMARY and c.t.kv (not
    'c.t.', the name ROCKSDB_DDL gave when the recording started)."""
    rec = restarted_rec["rec"]
    files = json.loads((rec / "meta.json").read_text())["files"]
    names = {i["index"] for f in files.values() for i in f["indexes"] if i["index"].startswith("c.")}
    assert names == {"c.t.PRIMARY", "c.t.kv"}, files
    rows = report_json(rec, "--by", "index", "--phase", "lookup", "--layer", "syscall")["rows"]
    reads = {r["index"]: r["count"] for r in rows if r["op"] == "read" and r["index"]}
    assert set(reads) == {"c.t.PRIMARY", "c.t.kv"} and all(reads.values()), rows


def test_no_own_reads_in_the_phase(restarted_rec) -> None:
    """The lookup phase's SST reads (page rows of every kind) are exactly the phase's
    Rocksdb_block_cache_miss delta, and none is ioattr's own statements': the names were re-read
    after the recording's last snapshot, not in the phase."""
    from ioattr.model.storage import INTERNAL_QUERY_LABEL

    before, after = restarted_rec["truth"]["lookup"]
    miss = after["miss"] - before["miss"]
    out = report_json(restarted_rec["rec"], "--by", "page_type,index,query,op", "--phase", "lookup",
                      "--layer", "syscall")
    assert "pages_without_io" not in out
    sst = [r for r in out["rows"] if str(r["page_type"] or "").startswith("sst_")]
    assert miss > 0 and sum(r["pages"] for r in sst) == miss, (miss, sst)
    assert {r["index"] for r in sst} == {"c.t.PRIMARY", "c.t.kv"}, sst
    assert not [r for r in sst if r["query"] == INTERNAL_QUERY_LABEL], sst

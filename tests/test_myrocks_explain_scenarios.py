"""MyRocks' LSM findings (ioattr/engines/myrocks/findings.py), each planted on a private server
(ha_rocksdb.so, direct reads, automatic compactions off so nothing runs in the background) as a
baseline phase without the mechanism and a target phase with it, recorded by `ioattr record`
with default options and settled by `ioattr explain REC --baseline base --target target`: the
planted cause SUPPORTED, the other LSM cause REFUTED, no InnoDB cause supported. The numbers
are checked against RocksDB's own counters read by the test around each phase's work.

  1. index_filter_misses: point lookups on one compacted SST (one L1 file, its index block
     80 KiB on disk, 156 KiB uncompressed); baseline with an 8 MiB block cache (the index block stays), target with the
     cache shrunk to 64 KiB (SET GLOBAL rocksdb_block_cache_size): every lookup reads the index
     block again before its data block.
  2. compaction_debt: point lookups on a compacted table (one L1 file, a 2 MiB block cache;
     baseline), then the same lookups after six rounds of updates (ids ending in 0..5, one
     digit a round), each flushed to its own L0 file and never compacted (target): the keys
     looked up (ids ending in 6..9) are in none of them, yet each L0 file's key range holds
     them, so every lookup reads a data block of each L0 file before finding its key in L1.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import assert_no_ioattr_programs, ioattr, record_marked_phases

LOOKUPS = 1000
STATUS = ("Com_select", "Rocksdb_block_cache_index_miss", "Rocksdb_block_cache_filter_miss",
          "Rocksdb_block_cache_data_miss", "Rocksdb_block_cache_miss", "Rocksdb_get_hit_l0")
LSM = ("index_filter_misses", "compaction_debt")
INNODB = ("clustered_lookups", "change_buffer_merges", "change_buffer_memory", "working_set", "log_rereads",
          "readahead_waste", "purge_reads", "write_amplification", "flush_storms")


@pytest.fixture
def rocks_server():
    from tests.conftest import need
    from tests.fixtures_mariadb import private_server

    need(Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(), "mariadb-plugin-rocksdb is not installed (make deps)")

    def make(rows: int, cache: str = "8M"):
        return private_server(
            "CREATE DATABASE t", "CREATE TABLE t.b (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=ROCKSDB",
            f"INSERT INTO t.b SELECT seq, CONCAT(MD5(seq), MD5(seq + 1), MD5(seq + 2)) FROM t.seq_1_to_{rows}",
            "SET GLOBAL rocksdb_force_flush_memtable_now = 1",
            "SET GLOBAL rocksdb_compact_cf = 'default'",  # one L1 file; returns when done
            rocksdb=True, rocksdb_block_cache=cache, rocksdb_direct_reads=True,
            extra_options={"rocksdb_default_cf_options": "disable_auto_compactions=true"})
    return make


def _status(db) -> dict[str, int]:
    names = ", ".join(f"'{n}'" for n in STATUS)
    return {str(k).capitalize(): int(v) for k, v in db.query(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")}


def _lookups(rows: int, untouched: bool = False):
    """LOOKUPS point selects spread over the table; `untouched`: only ids ending in 6-9, which
    the compaction_debt scenario's updates (ids ending in 0-5) leave in L1 alone."""
    def key(i: int) -> int:
        if untouched:
            return 10 * ((i * 7919) % (rows // 10 - 1)) + 6 + i % 4
        return (i * 7919) % rows + 1

    def work(cur) -> None:
        for i in range(LOOKUPS):
            cur.execute(f"SELECT v FROM t.b WHERE id = {key(i)}")
            cur.fetchall()
    return work


def _explain(rec: Path) -> dict:
    r = ioattr("explain", str(rec), "--baseline", "base", "--target", "target", "--format", "json", check=True)
    return json.loads(r.stdout)


def _delta(truth: dict, phase: str, name: str) -> int:
    before, after = truth[phase]
    return after[name] - before[name]


def _settled(rec: Path, planted: str) -> tuple[dict, dict]:
    """explain's result for `rec` and its finding `planted`: that one SUPPORTED, the other LSM
    cause REFUTED, no InnoDB cause supported."""
    j = _explain(rec)
    v = {f["id"]: f["verdict"] for f in j["findings"]}
    f = next(x for x in j["findings"] if x["id"] == planted)
    assert v[planted] == "supported", f
    (other,) = [x for x in LSM if x != planted]
    assert v[other] == "refuted", j["findings"]
    assert not [i for i in INNODB if v[i] == "supported"], v
    return j, f


def test_index_and_filter_blocks_that_do_not_fit(rocks_server, tmp_path) -> None:
    rows = 200000
    with rocks_server(rows) as db:
        def target(cur) -> None:
            cur.execute("SET GLOBAL rocksdb_block_cache_size = 65536")
            _lookups(rows)(cur)

        truth = record_marked_phases(db, tmp_path / "rec", [("base", _lookups(rows)), ("target", target)],
                                     measure=lambda: _status(db))
    assert_no_ioattr_programs()
    j, f = _settled(tmp_path / "rec", "index_filter_misses")
    # RocksDB's own counts, read around each phase's work
    # the phase's queries: the lookups and the marker SELECT that started it
    q = j["target"]["ops"]
    assert q == LOOKUPS + 1, j["target"]
    idx = _delta(truth, "target", "Rocksdb_block_cache_index_miss") + _delta(truth, "target",
                                                                             "Rocksdb_block_cache_filter_miss")
    assert idx >= LOOKUPS * 0.9, truth  # planted: nearly every lookup missed its index block
    ev = f["evidence"]
    assert ev["index_filter_misses_per_op_target"] == pytest.approx(idx / q, rel=1e-5), (ev, idx, q)
    assert ev["share_of_change"] >= 0.3, ev
    assert j["target"]["rocksdb"]["engine"]["block_cache_index_miss"] == \
        _delta(truth, "target", "Rocksdb_block_cache_index_miss"), j["target"]["rocksdb"]


def test_compaction_debt_l0_files_piling_up(rocks_server, tmp_path) -> None:
    rows = 100000
    files = 6
    with rocks_server(rows, "2M") as db:
        def pile(cur) -> None:
            for k in range(files):
                cur.execute(f"UPDATE t.b SET v = CONCAT(MD5(id + {k}), 'u') WHERE id % 10 = {k}")
                cur.execute("SET GLOBAL rocksdb_force_flush_memtable_now = 1")

        truth = record_marked_phases(db, tmp_path / "rec", [("base", _lookups(rows, True)), ("pile", pile),
                                                            ("target", _lookups(rows, True))],
                                     measure=lambda: _status(db))
        l0 = int(db.query("SELECT VALUE FROM INFORMATION_SCHEMA.ROCKSDB_COMPACTION_STATS "
                          "WHERE CF_NAME = 'default' AND LEVEL = 'L0' AND TYPE = 'NumFiles'")[0][0])
    assert_no_ioattr_programs()
    assert l0 == files
    j, f = _settled(tmp_path / "rec", "compaction_debt")
    ev = f["evidence"]
    # the default column family's L0 files as RocksDB counts them (the __system__ family's too)
    assert ev["l0_files_max_target"] >= files and ev["compaction_score_max_target"] >= 1, ev
    assert ev["l0_reads_per_op_target"] > 1 and ev["l0_reads_per_op_baseline"] == 0, ev
    # ... and found none of the keys there: every lookup's key was in L1
    assert _delta(truth, "target", "Rocksdb_get_hit_l0") == 0, truth["target"]
    q = j["target"]["ops"]
    assert q == LOOKUPS + 1, j["target"]
    assert ev["gets_l0_per_op_target"] == pytest.approx(_delta(truth, "target", "Rocksdb_get_hit_l0") / q,
                                                        rel=1e-5), (ev, truth["target"])

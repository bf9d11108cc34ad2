"""ioattr/engines/myrocks/lsm.py: the per-phase LSM terms from report rows and counter deltas."""
from __future__ import annotations

from ioattr.engines.myrocks import lsm


def _rows() -> list[dict]:
    return [
        {"file_class": "sst", "role": "compaction", "op": "read", "count": 3, "bytes": 3000},
        {"file_class": "sst", "role": "compaction", "op": "write", "count": 2, "bytes": 2000},
        {"file_class": "sst", "role": "flush", "op": "write", "count": 1, "bytes": 1000},
        {"file_class": "sst", "role": "flush", "op": "read", "count": 1, "bytes": 50},    # opening its output
        {"file_class": "sst", "role": "connection", "op": "read", "count": 4, "bytes": 400},
        {"file_class": "wal", "role": "connection", "op": "write", "count": 10, "bytes": 500},
        {"file_class": "manifest", "role": "flush", "op": "write", "count": 1, "bytes": 99},
    ]


def test_terms_are_defined_once() -> None:
    c = {"status:Rocksdb_bytes_written": 350.0, "status:Rocksdb_write_self": 8.0, "status:Rocksdb_write_other": 2.0,
         "status:Handler_commit": 30.0, "status:Rocksdb_block_cache_index_miss": 7.0,
         "rocksdb_cfstats_max:default:COMPACTION_PENDING": 1.0, "rocksdb_cfstats_max:cf_kk:COMPACTION_PENDING": 0.0,
         "rocksdb_compaction_last:default:L0:NumFiles": 5.0, "rocksdb_compaction_last:default:Sum:NumFiles": 9.0,
         "rocksdb_compaction_last:default:L0:Score": 1.25, "rocksdb_compaction_last:default:L1:Score": 0.5}
    t = lsm.phase_terms(c, _rows)
    assert t is not None
    assert (t["compaction_read_bytes"], t["compaction_write_bytes"], t["flush_write_bytes"]) == (3000, 2000, 1000)
    assert (t["foreground_sst_read_bytes"], t["foreground_sst_reads"], t["wal_write_bytes"], t["wal_writes"]) == \
        (400, 4, 500, 10)
    assert t["transactions"] == 10 and t["handler_commits"] == 30
    assert t["wal_writes_per_transaction"] == 1.0 and t["wal_bytes_per_transaction"] == 50.0
    assert t["write_amplification"] == round((1000 + 2000 + 500) / 350, 6)
    e = t["engine"]
    assert e["block_cache_index_miss"] == 7 and e["block_cache_data_miss"] is None
    assert (e["compaction_pending_max"], e["l0_files_end"], e["compaction_score_max"]) == (1, 5, 1.25)
    assert "write amplification 10" in lsm.phase_line(t)


def test_no_myrocks_no_terms() -> None:
    assert lsm.phase_terms({"status:Com_select": 3.0}, lambda: [])  is None
    t = lsm.phase_terms({"status:Rocksdb_block_cache_miss": 0.0}, lambda: [])
    assert t["write_amplification"] is None and t["transactions"] is None

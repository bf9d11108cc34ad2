"""Where each SST's data, index and filter blocks lie (ioattr/engines/myrocks/sst_blocks.py, kept
per SST in meta.json "files" as "blocks"), against RocksDB's own table properties
(INFORMATION_SCHEMA.ROCKSDB_SST_PROPS) on a private server with one column family that has a
bloom filter and one (the default) that has none.

* data blocks end where ROCKSDB_SST_PROPS says they take DATA_BLOCK_SIZE bytes;
* a filter block exactly where the column family has one, FILTER_BLOCK_SIZE long (+ its trailer);
* the extents (data, filter, index, the meta blocks the metaindex lists, the metaindex, the
  footer) tile the whole file, with no gap and no overlap.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import record_marked_phases

ROWS = 30000
TRAILER = 5


@pytest.fixture(scope="module")
def sst_rec(tmp_path_factory):
    from tests.conftest import need
    from tests.fixtures_mariadb import private_server

    need(Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(), "mariadb-plugin-rocksdb is not installed (make deps)")
    rec = tmp_path_factory.mktemp("sst_blocks") / "rec"
    bloom = "cf_bloom={block_based_table_factory={filter_policy=bloomfilter:10:false}}"
    with private_server("CREATE DATABASE t",
                        "CREATE TABLE t.f (id INT, v VARCHAR(100), PRIMARY KEY (id) COMMENT 'cf_bloom') ENGINE=ROCKSDB",
                        "CREATE TABLE t.n (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=ROCKSDB",
                        rocksdb=True, rocksdb_block_cache="8M",
                        extra_options={"rocksdb_default_cf_options": "disable_auto_compactions=true",
                                       "rocksdb_override_cf_options": bloom}) as db:
        def load(cur) -> None:
            for table in ("f", "n"):
                cur.execute(f"INSERT INTO t.{table} SELECT seq, CONCAT(MD5(seq), MD5(seq + 1)) "
                            f"FROM t.seq_1_to_{ROWS}")
            cur.execute("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
            for i in range(200):  # absent keys: the filter says "not here"
                cur.execute(f"SELECT v FROM t.f WHERE id = {ROWS + 1 + i}")
                cur.fetchall()

        record_marked_phases(db, rec, [("load", load)])
        props = {str(r[0]): r[1:] for r in db.query(
            "SELECT SST_NAME, COLUMN_FAMILY, DATA_BLOCK_SIZE, FILTER_BLOCK_SIZE, FILTER_POLICY "
            "FROM INFORMATION_SCHEMA.ROCKSDB_SST_PROPS")}
        cf_ids = {str(r[1]).split(" ")[0]: int(r[0]) for r in db.query(
            "SELECT NAME, VALUE FROM INFORMATION_SCHEMA.ROCKSDB_GLOBAL_INFO WHERE TYPE = 'CF_FLAGS'")}
        useful = db.status("Rocksdb_bloom_filter_useful")
        files = json.loads((rec / "meta.json").read_text())["files"]
        # the layouts again, straight from the files while they exist, with every meta extent
        from ioattr.engines.myrocks.sst_blocks import read_layout

        layouts = {p.rsplit("/", 1)[1]: read_layout(p) for p, f in files.items() if not f["deleted"]}
        yield {"files": files, "props": props, "cf_ids": cf_ids, "layouts": layouts, "useful": useful}


def test_blocks_are_where_rocksdb_says(sst_rec) -> None:
    live = {p.rsplit("/", 1)[1]: f for p, f in sst_rec["files"].items() if not f["deleted"]}
    assert set(live) == set(sst_rec["props"]), (sorted(live), sorted(sst_rec["props"]))
    bloom_cf = sst_rec["cf_ids"]["cf_bloom"]
    with_filter = 0
    for name, f in live.items():
        cf, data_size, filter_size, policy = sst_rec["props"][name]
        b = f["blocks"]
        assert b is not None and b["data_end"] == int(data_size), (name, b, data_size)
        if int(cf) == bloom_cf:
            assert b["filter"] is not None and b["filter_kind"] == "full" and "bloom" in str(policy).lower(), (name, b)
            assert b["filter"][1] == int(filter_size) + TRAILER, (name, b, filter_size)
            with_filter += 1
        else:
            assert b["filter"] is None and int(filter_size) == 0, (name, b, filter_size)
    assert with_filter >= 1, live
    assert sst_rec["useful"] > 0  # the filter was there and kept absent keys out of the SST


def test_extents_tile_the_file(sst_rec) -> None:
    for name, lay in sst_rec["layouts"].items():
        extents = [(0, lay.data_end), lay.index, *lay.meta.values()] + ([lay.filter] if lay.filter else [])
        extents = sorted(set(extents))
        pos = 0
        for off, size in extents:
            assert off == pos, (name, extents)
            pos = off + size
        assert pos + 53 == lay.file_size, (name, extents, lay.file_size)
        # every offset has one kind, each kind where its extent is
        assert lay.kind(0) == "data" and lay.kind(lay.index[0]) == "index" and lay.kind(lay.file_size - 1) == "meta"
        if lay.filter:
            assert lay.kind(lay.filter[0]) == "filter"

"""Where each SST's data, index and filter blocks lie (ioattr/engines/myrocks/sst_blocks.py, kept
per SST in meta.json "files" as "blocks"), against RocksDB's own table properties
(INFORMATION_SCHEMA.ROCKSDB_SST_PROPS) on a private server with one column family that has a
bloom filter and one (the default) that has none.

* data blocks end where ROCKSDB_SST_PROPS says they take DATA_BLOCK_SIZE bytes;
* a filter block exactly where the column family has one, FILTER_BLOCK_SIZE long (+ its trailer);
* the extents (data, filter, index, the meta blocks the metaindex lists, the metaindex, the
  footer) tile the whole file, with no gap and no overlap.

And every read of an SST classified in BPF by the kind at its offset (bpf/rocksdb_sst.h) against
RocksDB's misses by kind, after a restart with a block cache that keeps nothing (~14 s).
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


# -- reads classified by block kind in BPF (bpf/rocksdb_sst.h), against RocksDB's own misses ----
LOOKUP_ROWS = 20000
KINDS = {"sst_index": "Rocksdb_block_cache_index_miss", "sst_filter": "Rocksdb_block_cache_filter_miss",
         "sst_data": "Rocksdb_block_cache_data_miss"}


@pytest.fixture(scope="module", params=[False, True], ids=["buffered", "direct"])
def lookup_rec(request, tmp_path_factory):
    """One compacted SST of a bloom column family, the server restarted (cold block cache, its
    tables opened again) with a 1 KiB block cache, so that no block stays cached: every lookup
    misses each block it needs and reads it with one pread of exactly that block and its trailer
    (buffered reads: no direct-IO alignment, no readahead for point lookups). A warm phase
    first (the table's first access reads MyRocks' dictionary and opens the SST's table reader,
    whose tail prefetch serves the index and filter misses of that access without a read of
    their own), then the measured lookups: present keys (filter, index, data) and absent ones
    (the filter says no: filter only)."""
    from tests.conftest import need
    from tests.fixtures_mariadb import private_server

    need(Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(), "mariadb-plugin-rocksdb is not installed (make deps)")
    rec = tmp_path_factory.mktemp("sst_kinds") / "rec"
    bloom = "cf_bloom={block_based_table_factory={filter_policy=bloomfilter:10:false}}"
    with private_server("CREATE DATABASE t",
                        "CREATE TABLE t.f (id INT, v VARCHAR(100), PRIMARY KEY (id) COMMENT 'cf_bloom') ENGINE=ROCKSDB",
                        f"INSERT INTO t.f SELECT seq, CONCAT(MD5(seq), MD5(seq + 1)) FROM t.seq_1_to_{LOOKUP_ROWS}",
                        "SET GLOBAL rocksdb_force_flush_memtable_now = 1",
                        "SET GLOBAL rocksdb_compact_cf = 'cf_bloom'",
                        rocksdb=True, rocksdb_block_cache="8M", rocksdb_direct_reads=request.param,
                        extra_options={"rocksdb_default_cf_options": "disable_auto_compactions=true",
                                       "rocksdb_override_cf_options": bloom}) as db:
        db.restart()
        db.query("SET GLOBAL rocksdb_block_cache_size = 1024")

        def warm(cur) -> None:
            for key in (1, LOOKUP_ROWS + 5):
                cur.execute(f"SELECT v FROM t.f WHERE id = {key}")
                cur.fetchall()

        def lookups(cur) -> None:
            for i in range(150):
                key = 1 + (i * 7919) % LOOKUP_ROWS if i % 3 else LOOKUP_ROWS + 1 + i  # a third absent
                cur.execute(f"SELECT v FROM t.f WHERE id = {key}")
                cur.fetchall()

        def measure() -> dict[str, int]:
            return {name: db.status(name) for name in (*KINDS.values(), "Rocksdb_block_cache_miss")}

        truth = record_marked_phases(db, rec, [("warm", warm), ("lookup", lookups)], measure=measure)
        files = json.loads((rec / "meta.json").read_text())["files"]
        sst = {r[0]: r[1] for r in db.query("SELECT SST_NAME, COLUMN_FAMILY FROM INFORMATION_SCHEMA.ROCKSDB_SST_PROPS")}
        cf_bloom = {str(r[1]).split(" ")[0]: int(r[0]) for r in db.query(
            "SELECT NAME, VALUE FROM INFORMATION_SCHEMA.ROCKSDB_GLOBAL_INFO WHERE TYPE = 'CF_FLAGS'")}["cf_bloom"]
        ours = [p for p, f in files.items() if not f["deleted"] and int(sst.get(p.rsplit("/", 1)[1], -1)) == cf_bloom]
        yield {"rec": rec, "truth": truth, "files": files, "table_sst": ours, "direct": request.param}


def test_lookup_reads_by_block_kind_are_rocksdb_misses(lookup_rec) -> None:
    """Reads of each kind == RocksDB's misses of that kind, exactly: with a block cache that
    keeps nothing, each miss is one pread of that one block (BlockBasedTable::RetrieveBlock ->
    ReadBlockContents: offset and size + trailer from the block handle), and nothing else reads
    SSTs during the phase (no writes, no compaction). Buffered, the index and filter reads are
    each that block's whole extent; with direct reads each is that extent padded to 4 KiB
    boundaries, still counted as its block's kind (the kind holding most of its bytes)."""
    from tests.helpers import report_json

    before, after = lookup_rec["truth"]["lookup"]
    out = report_json(lookup_rec["rec"], "--by", "page_type,op", "--phase", "lookup", "--layer", "syscall")
    assert "pages_without_io" not in out  # every classified read joined its io row
    rows = out["rows"]
    reads = {r["page_type"]: r for r in rows if r["op"] == "read" and str(r["page_type"] or "").startswith("sst_")}
    for kind, status in KINDS.items():
        miss = after[status] - before[status]
        assert miss > 0, (kind, before, after)
        assert kind in reads and reads[kind]["pages"] == miss, (kind, miss, reads)
    assert "sst_mixed" not in reads and "sst_meta" not in reads, reads
    assert sum(r["pages"] for r in reads.values()) == after["Rocksdb_block_cache_miss"] - before["Rocksdb_block_cache_miss"]
    [path] = lookup_rec["table_sst"]
    blocks = lookup_rec["files"][path]["blocks"]
    if not lookup_rec["direct"]:
        assert reads["sst_index"]["bytes"] == reads["sst_index"]["pages"] * blocks["index"][1], (reads, blocks)
        assert reads["sst_filter"]["bytes"] == reads["sst_filter"]["pages"] * blocks["filter"][1], (reads, blocks)
    else:  # each block padded to 4 KiB boundaries on both sides (a read reaching the end of the
        # file stops there): under 8 KiB more per read, charged by the kind holding most bytes
        for kind, ext in (("sst_index", blocks["index"]), ("sst_filter", blocks["filter"])):
            n = reads[kind]["pages"]
            assert n * ext[1] <= reads[kind]["bytes"] < n * (ext[1] + 8192), (kind, reads, blocks)
    assert reads["sst_data"]["bytes"] <= reads["sst_data"]["pages"] * blocks["data_end"]


def test_sst_reads_by_index_and_level(lookup_rec) -> None:
    """--by index,page_type names the one index the SST holds (ROCKSDB_INDEX_FILE_MAP and
    ROCKSDB_DDL) and --by level,page_type gives the SST's LSM level
    from the catalog (L1: one compaction of L0 files)."""
    from tests.helpers import report_json

    [path] = lookup_rec["table_sst"]
    level = lookup_rec["files"][path]["level"]
    [index] = [i["index"] for i in lookup_rec["files"][path]["indexes"]]
    # after the restart ROCKSDB_DDL's INDEX_NAME was '' when the recording started (t.f not
    # opened yet): the catalog re-read it at the end (tests/test_myrocks_names.py)
    assert index == "t.f.PRIMARY" and level == 1, lookup_rec["files"][path]
    rows = report_json(lookup_rec["rec"], "--by", "index,level,page_type", "--phase", "lookup",
                       "--layer", "syscall")["rows"]
    sst_rows = [r for r in rows if str(r["page_type"] or "").startswith("sst_")]
    assert sst_rows and {(r["index"], r["level"]) for r in sst_rows} == {(index, "L1")}, sst_rows

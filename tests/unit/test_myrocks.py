"""The MyRocks adapter without a server: file classes of #rocksdb/ paths, thread roles from
names and performance_schema instruments, ROCKSDB_DDL/INFORMATION_SCHEMA rows decoded, the
counters it answers for `top` and the exporter. (tests/test_myrocks.py checks the same against
a real MyRocks server under BPF.)"""
from __future__ import annotations

import pytest

from ioattr.collectors import abi
from ioattr.collectors.engine import EngineError
from ioattr.collectors.thread_roles import ThreadRoles, role_of_instrument
from ioattr.engines import registry
from ioattr.engines.myrocks import MyrocksAdapter, counters, files, names, roles, sst
from tests.helpers import varint

FC = abi.FileClass
D = "/var/lib/mysql/#rocksdb"


@pytest.mark.parametrize("name, fc", [
    ("000013.sst", FC.SST), ("1234567.sst", FC.SST), ("000013.ldb", FC.SST),
    ("000012.log", FC.WAL), ("MANIFEST-000004", FC.MANIFEST), ("CURRENT", FC.MANIFEST),
    ("IDENTITY", FC.MANIFEST), ("LOCK", FC.MANIFEST), ("OPTIONS-000011", FC.OPTIONS),
    ("LOG", FC.INFO_LOG), ("LOG.old.1795489900123456", FC.INFO_LOG), ("000013.sst.trash", FC.TRASH),
    ("000004.dbtmp", FC.TMP), ("OPTIONS-000015.dbtmp", FC.TMP),
    # collectors/names.py's label for one inode that carried several SSTs (or WALs) in one interval
    ("[2 .sst files reusing one inode]", FC.SST), ("[3 .log files reusing one inode]", FC.WAL),
])
def test_rocksdb_files_by_name(name: str, fc: FC) -> None:
    assert files.classify_path(f"{D}/{name}") == fc
    assert files.classify_path(f"{D}/{name} (deleted)") == fc  # open after a compaction deleted it
    assert registry.classify_path(f"{D}/{name}") == fc
    assert MyrocksAdapter().is_page_file(f"{D}/{name}") is False


@pytest.mark.parametrize("path", [
    "/var/lib/mysql/db/000013.sst",      # not in #rocksdb: not RocksDB's (MyRocks has one directory)
    "/var/lib/mysql/#rocksdb/archive/000001.log",
    f"{D}/notes.txt", f"{D}/LOGGER", f"{D}/MANIFEST", "/var/lib/mysql/LOG", "", None,
    f"{D}/[2 files reusing one inode]", f"{D}/[2 .txt files reusing one inode]",  # which files: unknown
])
def test_other_files_are_not_myrocks(path) -> None:
    assert files.classify_path(path) is None


def test_innodb_files_keep_their_classes_and_myrocks_names_sst_numbers() -> None:
    assert registry.file_class_name("/var/lib/mysql/db/t.ibd") == "tablespace"
    assert registry.file_class_name("/var/lib/mysql/mysql-bin.000003") == "binlog"
    assert registry.file_class_name(f"{D}/000003.log") == "wal"  # not a binlog, not 'other'
    assert registry.file_class_name(f"{D}/000013.sst") == "sst"
    assert files.sst_number(f"{D}/000013.sst (deleted)") == 13 and files.sst_number(f"{D}/LOG") is None


def test_roles_from_thread_names_as_ps_shows_them() -> None:
    # what `ps -T` shows for a private MariaDB 10.11 server with ha_rocksdb.so
    seen = {"rocksdb:high": "flush", "rocksdb:low": "compaction", "rocksdb:low0": "compaction",
            "rocksdb:bottom0": "compaction", "myrocks-bg": "myrocks_background", "myrocks-index": "drop_index",
            "myrocks-mc": "manual_compaction", "mariadbd": None, "iou-wrk-123": None}
    a = MyrocksAdapter()
    assert {c: a.role_of_comm(c) for c in seen} == seen
    # performance_schema names MyRocks' own threads (not RocksDB's pools): the same roles
    for instrument, role in roles.INSTRUMENT_ROLES.items():
        assert role_of_instrument(instrument, a.instrument_roles) == role
        assert role in seen.values()
    tr = ThreadRoles(a.instrument_roles, [a.role_of_comm])
    assert tr.lookup(7, "rocksdb:high") == "flush" and tr.lookup(8, "mariadbd") is None


def test_ddl_rows_name_indexes() -> None:
    n = names.IndexNames()
    # ROCKSDB_DDL rows as 10.11 returns them (schema, table, partition, index, cf id, index number)
    n.load_rows([("t", "a", None, "PRIMARY", 0, 256), ("t", "a", None, "kk", 0, 257),
                 ("t", "p", "p0", "PRIMARY", 0, 258), (b"t", b"b", None, b"k2", 2, 300)])
    assert n.lookup(256) == "t.a.PRIMARY" and n.lookup(257) == "t.a.kk"
    assert n.lookup(258) == "t.p#p0.PRIMARY" and n.lookup(300) == "t.b.k2" and n.cf_of[300] == 2
    assert n.lookup(2) == "myrocks.__system__.2"  # MyRocks' data dictionary
    assert n.lookup(999) is None

    class Broken:
        flavor = "mariadb"

        def query(self, sql: str) -> list[tuple]:
            raise EngineError("Unknown table 'ROCKSDB_DDL'")

    assert n.refresh(Broken()) is False and "ROCKSDB_DDL" in (n.error or "")


def test_counter_rows_decode() -> None:
    assert counters.perf_context_rows([("BLOCK_READ_COUNT", 5), ("BLOCK_READ_BYTE", 4096), ("X", None)]) == [
        ("BLOCK_READ_COUNT", 5.0, None), ("BLOCK_READ_BYTE", 4096.0, None)]
    assert counters.cfstats_rows([("default", "COMPACTION_PENDING", 0), (b"__system__", "NUM_LIVE_VERSIONS", 1)]) == [
        ("default:COMPACTION_PENDING", 0.0, None), ("__system__:NUM_LIVE_VERSIONS", 1.0, None)]
    assert counters.compaction_rows([("default", "L0", "NumFiles", 2.0)]) == [("default:L0:NumFiles", 2.0, None)]


class FakeServer:
    """A connection to a server with or without the ROCKSDB plugin."""

    flavor = "mariadb"

    def __init__(self, rocksdb: bool) -> None:
        self.rocksdb = rocksdb
        self.asked: list[str] = []

    def query(self, sql: str) -> list[tuple]:
        self.asked.append(sql)
        if "INFORMATION_SCHEMA.PLUGINS" in sql:
            return [("ACTIVE",)] if self.rocksdb else []
        if not self.rocksdb:
            raise EngineError("Unknown table")
        if "PERF_CONTEXT_GLOBAL" in sql:
            return [("BLOCK_READ_COUNT", 3)]
        return []


def test_claims_and_sources_on_servers_with_and_without_myrocks() -> None:
    a = MyrocksAdapter()
    assert a.claims(None)  # files are recognised without a connection
    assert a.claims(FakeServer(True)) and not a.claims(FakeServer(False))
    assert [e.name for e in registry.engines_for(FakeServer(False))] == ["innodb"]
    notes: list[str] = []
    for rocks in (True, False):
        srv = FakeServer(rocks)
        src = [s for s in a.counter_sources() if s.source == "rocksdb_perf_context"][0]
        src.first_sight(srv, {}, lambda key, text: notes.append(text))
        got = src.read(srv)
        assert got == ([("BLOCK_READ_COUNT", 3.0, None)] if rocks else [])
    assert notes == []  # a server without MyRocks is not an error
    assert [s.source for s in a.counter_sources()] == ["rocksdb_perf_context", "rocksdb_cfstats",
                                                       "rocksdb_compaction"]


def test_block_cache_answers_top_and_the_exporter() -> None:
    from ioattr.live import server_counters

    a = MyrocksAdapter()
    assert a.status_counters["cache_misses"].variables == ("Rocksdb_block_cache_miss",)
    assert a.status_counters["cache_requests"].variables == ("Rocksdb_block_cache_hit", "Rocksdb_block_cache_miss")

    class Conn:  # a server with both engines: InnoDB's and MyRocks' misses add up
        def query(self, sql: str) -> list[tuple]:
            assert "'Rocksdb_block_cache_hit'" in sql
            return [("Questions", "10"), ("Innodb_buffer_pool_reads", "2"), ("Innodb_buffer_pool_read_requests", "50"),
                    ("Rocksdb_block_cache_miss", "7"), ("Rocksdb_block_cache_hit", "93")]

    assert server_counters.read_status(Conn()) == {"questions": 10, "cache_misses": 9, "cache_requests": 150}


# -- the MANIFEST: which SST is at which level ------------------------------------------------------
def _lp(b: bytes) -> bytes:
    return varint(len(b)) + b


def _new_file4(level: int, number: int, size: int) -> bytes:
    return (varint(103) + varint(level) + varint(number) + varint(size) + _lp(b"k1" + b"\0" * 8)
            + _lp(b"k9" + b"\0" * 8) + varint(5) + varint(9)
            + varint(2) + _lp(b"\x01") + varint(1))  # a custom field (need-compaction), then kTerminate


def _log(records: list[bytes]) -> bytes:
    """RocksDB's log format: 7-byte headers (crc, length, type), records split across 32 KiB blocks."""
    import struct

    out = bytearray()
    for rec in records:
        first = True
        while True:
            left = sst.BLOCK - len(out) % sst.BLOCK
            if left < 7:
                out += b"\0" * left
                left = sst.BLOCK
            take = min(len(rec), left - 7)
            last = take == len(rec)
            rtype = (1 if last else 2) if first else (4 if last else 3)
            out += struct.pack("<IHB", 0, take, rtype) + rec[:take]
            rec, first = rec[take:], False
            if last:
                break
    return bytes(out)


def test_manifest_replay_gives_each_live_file_its_level() -> None:
    edits = [
        varint(1) + _lp(b"leveldb.BytewiseComparator") + varint(2) + varint(5) + varint(3) + varint(12),
        varint(201) + _lp(b"__system__") + varint(200) + varint(1),                       # cf 1 added
        _new_file4(0, 13, 3_000_000) + varint(4) + varint(100),                             # flush, cf 0
        varint(200) + varint(1) + _new_file4(0, 14, 1500),                                  # flush, cf 1
        _new_file4(0, 20, 1_000_000) + varint(8193) + _lp(b"db-id"),                         # a safe-to-ignore tag
        # the compaction: 13 and 20 out of L0, 22 into L1, in one edit
        varint(6) + varint(0) + varint(13) + varint(6) + varint(0) + varint(20) + _new_file4(1, 22, 3_100_000),
        b"\x7f" * 3 + b"\x01",                                                                 # not an edit: skipped
    ]
    live, bad = sst.parse_manifest(_log(edits))
    assert live == {14: (1, 0), 22: (0, 1)} and bad == 1
    # the same across block boundaries (records in fragments, block tails padded)
    big = [_new_file4(0, n, n) + varint(8194) + _lp(b"x" * 300) for n in range(100, 400)]
    live, bad = sst.parse_manifest(_log(big + [varint(6) + varint(0) + varint(150)]))
    assert bad == 0 and len(live) == 299 and 150 not in live and live[399] == (0, 0)
    # a torn tail (RocksDB appending right now) loses the torn record only
    data = _log(edits[:3])
    assert sst.parse_manifest(data[:-5])[0] == {}
    assert sst.parse_manifest(data)[0] == {13: (0, 0)}


def test_report_names_ssts_and_charges_one_index_files() -> None:
    from ioattr.analysis import grouping

    class Rec:
        meta = {"files": {
            f"{D}/000022.sst": {"level": 1, "indexes": [{"index": "t.a.PRIMARY", "rows": 9, "bytes": 90}]},
            f"{D}/000023.sst": {"level": 0, "indexes": [{"index": "t.a.kk", "rows": 9, "bytes": 50},
                                                       {"index": "t.b.PRIMARY", "rows": 1, "bytes": 5}]},
            f"{D}/000024.sst": "not an entry"}}

    rows = [{"file": f"{D}/000022.sst (deleted)"}, {"file": f"{D}/000023.sst"}, {"file": None},
            {"file": f"{D}/000024.sst"}]
    grouping._file_objects(Rec(), rows)  # type: ignore[arg-type]
    assert [(r["sst_level"], r["sst_indexes"]) for r in rows] == [
        (1, "t.a.PRIMARY"), (0, "t.a.kk, t.b.PRIMARY"), (None, None), (None, None)]
    # exact: one index per SST; an SST of several indexes is not split
    assert grouping._one_index_files(Rec()) == {f"{D}/000022.sst": "t.a.PRIMARY"}  # type: ignore[arg-type]

"""MyRocks under real BPF on a private server (ha_rocksdb.so, 8 MB block cache, direct reads,
no automatic compactions: the one compaction is the test's own, so nothing runs in the background).

One recording of five marked phases: load rows (WAL writes), a forced memtable flush (an SST
written by rocksdb:high), updates and a second flush (two L0 files overlapping), a manual
compaction of the default column family (rocksdb:low merges them), then point lookups by
primary key on a cold block cache. Ground truth, all from the server and the kernel, none timed:

* lookups: the SST bytes ioattr charges to the connection equal the server's /proc/PID/io
  read_bytes over the lookups (direct reads: every block-cache miss is one storage read), and
  its read count equals RocksDB's own Rocksdb_block_cache_miss;
* flush: bytes written by the flush role to #rocksdb files (SSTs and the MANIFEST edits the
  flush job makes) equal RocksDB's Rocksdb_flush_write_bytes over the recording;
* compaction: bytes written by the compaction role to SSTs equal Rocksdb_compact_write_bytes;
* every file under #rocksdb the recording names has a MyRocks file_class, the one its name
  gives; an inode that carried several RocksDB files in one interval (the filesystem reuses
  a deleted file's inode at once) is labelled so, and classed when the files share their kind;
* SSTs named (meta.json "files"): the level of every live SST per column family as
  ROCKSDB_COMPACTION_STATS counts them, its indexes as ROCKSDB_INDEX_FILE_MAP lists them; the
  compacted-away L0 files kept, marked deleted; the secondary index lives in its own column
  family, so the primary key's SST holds one index and the lookups' reads are charged to it
  (`--by index`), exactly.

Nothing waits on time: each phase starts when the recorder has named it; flush and compaction
requests return when done, and the lookups start once RocksDB says no flush is pending and no
manual compaction running.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import proc_read_bytes, record_marked_phases, report_json, rocksdb_idle, wait_until

ROWS = 60000
LOOKUPS = 2500
WATCHED = ("Rocksdb_block_cache_miss", "Rocksdb_flush_write_bytes", "Rocksdb_compact_write_bytes")
REUSED = re.compile(r"\[\d+ (\.\w+ )?files reusing one inode\]")


def _status(db) -> dict[str, int]:
    names = ", ".join(f"'{n}'" for n in WATCHED)
    return {str(k).capitalize(): int(v) for k, v in db.query(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")}


@pytest.fixture(scope="module")
def myrocks(tmp_path_factory):
    from tests.fixtures_mariadb import private_server

    need_plugin = Path("/usr/lib/mysql/plugin/ha_rocksdb.so")
    from tests.conftest import need
    need(need_plugin.exists(), "mariadb-plugin-rocksdb is not installed (make deps)")
    rec = tmp_path_factory.mktemp("myrocks") / "rec"
    with private_server("CREATE DATABASE t",
                        # the secondary index in a column family of its own: the primary key's SSTs
                        # then hold one index only
                        "CREATE TABLE t.a (id INT PRIMARY KEY, k INT NOT NULL, v VARCHAR(200), "
                        "KEY kk (k) COMMENT 'cf_kk') ENGINE=ROCKSDB",
                        rocksdb=True, rocksdb_block_cache="8M", rocksdb_direct_reads=True,
                        extra_options={"rocksdb_default_cf_options": "disable_auto_compactions=true"}) as db:
        def load(cur) -> None:
            cur.execute("INSERT INTO t.a SELECT seq, seq % 1000, CONCAT(MD5(seq), MD5(seq + 1), MD5(seq + 2)) "
                        f"FROM t.seq_1_to_{ROWS}")

        def flush(cur) -> None:
            cur.execute("SET GLOBAL rocksdb_force_flush_memtable_now = 1")  # returns when flushed

        def update(cur) -> None:
            cur.execute("UPDATE t.a SET v = CONCAT(MD5(id + 7), MD5(id + 8)) WHERE id % 5 = 0")
            cur.execute("SET GLOBAL rocksdb_force_flush_memtable_now = 1")

        def compact(cur) -> None:
            cur.execute("SET GLOBAL rocksdb_compact_cf = 'default'")  # returns when compacted
            wait_until(lambda: rocksdb_idle(db), 60, "RocksDB to have no flush pending and no compaction running",
                       interval=0.05)

        lookups: dict[str, int] = {}

        def lookup(cur) -> None:
            before, st = proc_read_bytes(db.pid), _status(db)
            for i in range(LOOKUPS):
                cur.execute(f"SELECT v FROM t.a WHERE id = {(i * 7919) % ROWS + 1}")
                cur.fetchall()
            lookups["read_bytes"] = proc_read_bytes(db.pid) - before
            lookups["misses"] = _status(db)["Rocksdb_block_cache_miss"] - st["Rocksdb_block_cache_miss"]

        start = _status(db)
        record_marked_phases(db, rec, [("load", load), ("flush", flush), ("update", update),
                                       ("compact", compact), ("lookup", lookup)], "--interval", "0.5")
        end = _status(db)
        # the server's own word on its SSTs now: files per (column family, level), indexes per SST
        per_level = {(cf, level): int(n) for cf, level, n in db.query(
            "SELECT CF_NAME, LEVEL, VALUE FROM INFORMATION_SCHEMA.ROCKSDB_COMPACTION_STATS "
            "WHERE TYPE = 'NumFiles' AND LEVEL <> 'Sum' AND VALUE > 0")}
        ddl = {int(n): f"{s}.{t}.{i}" for s, t, i, n in db.query(
            "SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, INDEX_NUMBER FROM INFORMATION_SCHEMA.ROCKSDB_DDL")}
        sst_indexes: dict[str, set] = {}
        for sst, number in db.query("SELECT SST_NAME, INDEX_NUMBER FROM INFORMATION_SCHEMA.ROCKSDB_INDEX_FILE_MAP"):
            sst_indexes.setdefault(sst, set()).add(ddl.get(int(number), f"myrocks.__system__.{number}"))
        yield {"rec": rec, "db": db, "status": {k: end[k] - start[k] for k in end}, "lookups": lookups,
               "rocksdb_dir": str(Path(db.datadir).resolve() / "#rocksdb"), "per_level": per_level,
               "sst_indexes": sst_indexes}


def _rows(rec: Path, by: str, *extra: str) -> list[dict]:
    return report_json(rec, "--by", by, "--layer", "syscall", *extra)["rows"]


def _in_rocksdb(row: dict, rocksdb_dir: str) -> bool:
    return (row.get("file") or "").startswith(rocksdb_dir + "/")


def test_point_lookups_read_what_the_kernel_and_rocksdb_counted(myrocks) -> None:
    rows = [r for r in _rows(myrocks["rec"], "file_class,role,op", "--phase", "lookup")
            if r["op"] == "read" and r["file_class"] == "sst"]
    lk = myrocks["lookups"]
    assert lk["misses"] > 500, lk  # the 8 MB cache did not hold the table: a real test
    assert {r["role"] for r in rows} == {"connection"}, rows
    assert sum(r["bytes"] for r in rows) == lk["read_bytes"], (rows, lk)
    assert sum(r["count"] for r in rows) == lk["misses"], (rows, lk)


def test_flush_writes_are_the_flush_role_and_rocksdbs_count(myrocks) -> None:
    d = myrocks["rocksdb_dir"]
    rows = [r for r in _rows(myrocks["rec"], "file,file_class,role,op") if _in_rocksdb(r, d) and r["op"] == "write"]
    flushed = sum(r["bytes"] for r in rows if r["role"] == "flush" and r["file_class"] != "info_log")
    assert myrocks["status"]["Rocksdb_flush_write_bytes"] > 1_000_000, myrocks["status"]
    # RocksDB counts the flush job's writes: the SST and its MANIFEST edit
    assert flushed == myrocks["status"]["Rocksdb_flush_write_bytes"], rows
    # SSTs are written only by flushes and compactions, never by a connection
    assert {r["role"] for r in rows if r["file_class"] == "sst"} <= {"flush", "compaction"}, rows
    assert any(r["role"] == "flush" and r["file_class"] == "sst" for r in rows), rows


def test_compaction_writes_are_the_compaction_role_and_rocksdbs_count(myrocks) -> None:
    d = myrocks["rocksdb_dir"]
    rows = [r for r in _rows(myrocks["rec"], "file,file_class,role,op") if _in_rocksdb(r, d) and r["op"] == "write"]
    compacted = sum(r["bytes"] for r in rows if r["role"] == "compaction"
                    and r["file_class"] not in ("info_log", "manifest"))
    assert myrocks["status"]["Rocksdb_compact_write_bytes"] > 1_000_000, myrocks["status"]
    assert compacted == myrocks["status"]["Rocksdb_compact_write_bytes"], rows
    # the WAL is written by the connections that commit
    wal = [r for r in rows if r["file_class"] == "wal"]
    assert wal and {r["role"] for r in wal} == {"connection"}, wal


def test_every_rocksdb_file_has_its_class(myrocks) -> None:
    d = myrocks["rocksdb_dir"]
    want = {".sst": "sst", ".log": "wal"}
    seen = set()
    for r in _rows(myrocks["rec"], "file,file_class"):
        if not _in_rocksdb(r, d):
            continue
        name = r["file"][len(d) + 1:].removesuffix(" (deleted)")
        seen.add(r["file_class"])
        if REUSED.fullmatch(name):  # several files on one inode: classed only if all of one kind
            ext = REUSED.fullmatch(name).group(1)
            assert r["file_class"] == (want.get(ext.strip()) if ext else "other"), r
        elif name.startswith("MANIFEST-") or name in ("CURRENT", "IDENTITY", "LOCK"):
            assert r["file_class"] == "manifest", r
        elif name.startswith("OPTIONS-"):
            assert r["file_class"] == "options", r
        elif name.startswith("LOG"):
            assert r["file_class"] == "info_log", r
        else:
            assert r["file_class"] == want[name[name.rindex("."):]], r
    assert {"sst", "wal", "manifest"} <= seen, seen


def _files(rec: Path) -> dict[str, dict]:
    import json

    return json.loads((rec / "meta.json").read_text())["files"]


def test_sst_levels_and_indexes_are_the_servers(myrocks) -> None:
    files = _files(myrocks["rec"])
    live = {p: f for p, f in files.items() if not f["deleted"]}
    counted: dict[tuple, int] = {}
    for f in live.values():
        key = (f["column_family"], f"L{f['level']}")
        counted[key] = counted.get(key, 0) + 1
    assert counted == myrocks["per_level"], (counted, myrocks["per_level"])
    assert ("default", "L1") in counted  # the compaction's output, one level down
    assert {p.rsplit("/", 1)[1]: {i["index"] for i in f["indexes"]} for p, f in live.items()} == myrocks["sst_indexes"]
    # the two flushes' L0 files of the default column family, compacted away, are still named
    gone = [f for f in files.values() if f["deleted"] and f["column_family"] == "default"]
    assert len(gone) == 2 and all(f["level"] == 0 and [i["index"] for i in f["indexes"]] == ["t.a.PRIMARY"]
                                  for f in gone), gone
    assert all(f["engine"] == "rocksdb" and f["ino"] > 0 and f["size"] > 0 for f in files.values())


def test_lookups_are_charged_to_the_one_index_of_their_sst(myrocks) -> None:
    d = myrocks["rocksdb_dir"]
    # --by file: which SSTs the lookups read, with their level and indexes
    by_file = [r for r in _rows(myrocks["rec"], "file", "--phase", "lookup")
               if _in_rocksdb(r, d) and r["op"] == "read" and r["file"].endswith(".sst")]
    assert sum(r["bytes"] for r in by_file) == myrocks["lookups"]["read_bytes"], by_file
    primary = [r for r in by_file if r["sst_indexes"] == "t.a.PRIMARY"]
    # the compaction's output, one level down, holds the primary key alone (a lookup may also
    # read a block of the __system__ column family's SST, which holds MyRocks' dictionary)
    assert len(primary) == 1 and primary[0]["sst_level"] == 1, by_file
    assert primary[0]["bytes"] > 0.9 * myrocks["lookups"]["read_bytes"], by_file
    # --by index charges exactly that SST's IO to t.a.PRIMARY
    rows = [r for r in _rows(myrocks["rec"], "index,role,op", "--phase", "lookup")
            if r["op"] == "read" and r["index"] == "t.a.PRIMARY"]
    assert [(r["role"], r["bytes"], r["count"]) for r in rows] == [
        ("connection", primary[0]["bytes"], primary[0]["count"])], rows


def test_roles_are_the_threads_rocksdb_named(myrocks) -> None:
    """Every row charged to an LSM role is IO of a thread whose name says so (the comm ps -T
    shows), and RocksDB's pool threads have no other role."""
    want = {"flush": "rocksdb:high", "compaction": "rocksdb:low"}
    rows = _rows(myrocks["rec"], "thread,role")
    seen = set()
    for r in rows:
        thread = r["thread"] or ""
        for role, prefix in want.items():
            if r["role"] == role:
                assert thread.startswith(prefix), r
                seen.add(role)
            if thread.startswith(prefix):
                assert r["role"] == role, r
    assert seen == set(want), seen


def test_counters_table_has_myrocks_sources(myrocks) -> None:
    """The recording keeps MyRocks' own counters beside ours: its status, perf context, column
    family and compaction statistics, and the block-cache misses moved by the lookups' count."""
    from ioattr.format.reader import Recording

    rec = Recording(myrocks["rec"])
    sources = {s for (s,) in rec.query("SELECT DISTINCT source FROM counters")}
    assert {"rocksdb_perf_context", "rocksdb_cfstats", "rocksdb_compaction"} <= sources, sources
    (span,) = rec.query("SELECT max(value) - min(value) FROM counters WHERE source = 'status' "
                        "AND name = 'Rocksdb_block_cache_miss'")
    assert span[0] >= myrocks["lookups"]["misses"], span
    names = {n for (n,) in rec.query("SELECT DISTINCT name FROM counters WHERE source = 'rocksdb_compaction'")}
    assert "default:L1:NumFiles" in names, sorted(names)[:20]

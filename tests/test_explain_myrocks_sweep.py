"""explain on a MyRocks block-cache sweep, read both ways: RocksDB's block cache is MyRocks'
buffer pool, and its working set is the first cause named either way, from RocksDB's own counters.

One private MariaDB with the RocksDB plugin (direct reads, automatic compactions off, so nothing
runs in the background) holds sysbench's table (its defaults but for the engine: 50K rows,
~11 MiB of SST, compacted into one file). sysbench oltp_point_select runs recorded with defaults
twice: with rocksdb_block_cache_size 1 MiB (SMALL: the data blocks do not fit, the index block
does) and, after SET GLOBAL to 64 MiB and a warming run, with everything cached (BIG). Ground
truth: Rocksdb_block_cache_miss / _hit and Com_select around each recorded run.

  - explain SMALL --against BIG (reads fall): "Working set now fits the block cache" supported and
    first, its miss rates RocksDB's; no InnoDB mechanism named (InnoDB read nothing: its findings
    are one n/a line), index/filter misses and compaction debt refuted.
  - explain BIG --against SMALL (reads rise): the same finding supported and first, as itself.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import need_root
from tests.helpers import assert_no_ioattr_programs, explain_json_and_text, record_marked_phases

ROWS = 50000
SECONDS = 2
STATUS = ("Com_select", "Rocksdb_block_cache_miss", "Rocksdb_block_cache_hit")
SYSBENCH = ("oltp_point_select", "--mysql-storage-engine=rocksdb")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, int]]]:
    from tests import fixtures_mariadb

    need_root()
    tmp = tmp_path_factory.mktemp("rocks-sweep")
    out = {}
    with fixtures_mariadb.private_server(rocksdb=True, rocksdb_block_cache="1M", rocksdb_direct_reads=True,
                                         extra_options={"rocksdb_default_cf_options":
                                                        "disable_auto_compactions=true"}) as db:
        db.sysbench(SYSBENCH[0], "prepare", *SYSBENCH[1:], table_size=ROWS)
        db.query("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
        db.query("SET GLOBAL rocksdb_compact_cf = 'default'")  # one file; returns when done

        def run(_cur: object = None) -> None:
            db.sysbench(SYSBENCH[0], "run", *SYSBENCH[1:], table_size=ROWS, time=SECONDS)

        def status() -> dict[str, int]:
            names = ", ".join(f"'{n}'" for n in STATUS)
            return {str(k).capitalize(): int(v)
                    for k, v in db.query(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")}

        for name, cache in (("small", 1), ("big", 64)):
            db.query(f"SET GLOBAL rocksdb_block_cache_size = {cache * 2**20}")
            run()  # warm: the big cache then holds the table
            truth = record_marked_phases(db, tmp / name, [("run", run)], measure=status)
            before, after = truth["run"]
            out[name] = (tmp / name, {k: after[k] - before[k] for k in before})
    assert_no_ioattr_programs()
    return out


def _miss_rate(truth: dict[str, int]) -> float:
    return truth["Rocksdb_block_cache_miss"] / (truth["Rocksdb_block_cache_miss"] + truth["Rocksdb_block_cache_hit"])


def _settled(res: dict, text: str) -> dict:
    """The block cache first and supported, nothing else supported, no InnoDB mechanism named."""
    from ioattr.engines.innodb.findings import FINDINGS as INNODB

    assert res["significant"], res.get("no_significant_change")
    supported = [f["id"] for f in res["findings"] if f["verdict"] == "supported"]
    assert supported == ["block_cache"], [(f["id"], f["verdict"], f["evidence"]["summary"]) for f in res["findings"]]
    assert res["findings"][0]["id"] == "block_cache"
    v = {f["id"]: f["verdict"] for f in res["findings"]}
    assert v["index_filter_misses"] == "refuted" and v["compaction_debt"] == "refuted", v
    innodb = {f.__name__ for f in INNODB}
    assert {v[i] for i in innodb} == {"not_applicable"}, v
    assert f"[n/a] {len(innodb)} InnoDB findings" in text, text
    titles = [f["title"] for f in res["findings"] if f["id"] in innodb]
    assert not [t for t in titles if t.split(" (")[0] in text], text
    assert "buffer pool" not in text, text
    return res["findings"][0]


def test_ground_truth(sweep: dict[str, tuple[Path, dict[str, int]]]) -> None:
    """RocksDB says the small cache misses and the big one does not."""
    assert _miss_rate(sweep["small"][1]) > 0.05, sweep["small"][1]
    assert _miss_rate(sweep["big"][1]) < 0.01, sweep["big"][1]


def _small_cache_side(res: dict, text: str, side: str, ts: dict[str, int], title: str) -> dict:
    """The small cache's run is explain's `side` (baseline or target): its reads per query and
    its miss rate are RocksDB's, and the block cache is the finding, titled `title`."""
    # reads per query as RocksDB counted its misses (direct reads: one read per miss)
    assert res[side]["value"] == pytest.approx(ts["Rocksdb_block_cache_miss"] / ts["Com_select"], rel=0.05)
    first = _settled(res, text)
    assert first["title"].startswith(title), first["title"]
    # a mirrored finding's numbers read target -> baseline, its evidence keys as the user named the sides
    assert first["evidence"][f"miss_rate_{side}"] == pytest.approx(_miss_rate(ts), rel=0.05), (first, ts)
    assert f"[SUPPORTED] {title}" in text, text
    return first


def test_fewer_reads_with_the_bigger_block_cache(sweep: dict[str, tuple[Path, dict[str, int]]]) -> None:
    (small, ts), (big, _) = sweep["small"], sweep["big"]
    res, text = explain_json_and_text(str(small), "--against", str(big))
    assert res["direction"] == "decrease", res
    ev = _small_cache_side(res, text, "baseline", ts, "Working set now fits the block cache")["evidence"]
    assert ev["miss_rate_target"] < 0.01, ev
    assert ev["setting_changed"] == "rocksdb_block_cache_size 64 MiB -> 1 MiB", ev


def test_more_reads_with_the_smaller_block_cache(sweep: dict[str, tuple[Path, dict[str, int]]]) -> None:
    (small, ts), (big, _) = sweep["small"], sweep["big"]
    res, text = explain_json_and_text(str(big), "--against", str(small))
    assert res["direction"] == "increase", res
    _small_cache_side(res, text, "target", ts, "Working set larger than the block cache")
    assert "try: raise rocksdb_block_cache_size (now 1 MiB)" in text, text

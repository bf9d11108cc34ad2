"""MyRocks' explain findings (ioattr/engines/myrocks/findings.py) on hand-made evidence: the
verdicts' edges without a server (the planted scenarios are tests/test_myrocks_explain_scenarios.py)."""
from __future__ import annotations

from types import SimpleNamespace

from ioattr.model.evidence import Evidence
from ioattr.engines.myrocks import findings as mf

SST = (None, None, None, "connection", "sst", "SELECT v FROM t WHERE id = ?")


class _Rec:
    """A recording's answers to the L0 query: foreground SST reads per file, levels in meta."""

    def __init__(self, rows: list[tuple[str, float]], levels: dict[str, int]) -> None:
        self.rows = rows
        self.meta = {"files": {p: {"level": lv} for p, lv in levels.items()}}

    def query(self, sql: str, params: list) -> list[tuple]:
        return self.rows


def _side(counters: dict[str, float], ops: float, reads: list[tuple[str, float]] | None = None,
          levels: dict[str, int] | None = None) -> SimpleNamespace:
    return SimpleNamespace(stats=SimpleNamespace(counters=counters), denominator=ops, unit="query",
                           rec=_Rec(reads or [], levels or {}), phase="p")


def _ev(base: SimpleNamespace, target: SimpleNamespace, bc: dict, tc: dict, op: str = "read",
        measure: str = "ops") -> Evidence:
    metric = SimpleNamespace(op=op, measure=measure, per="query" if op == "read" else "insert")
    change = sum(tc.values()) / target.denominator - sum(bc.values()) / base.denominator
    return Evidence(metric=metric, base=base, target=target, base_contrib=bc, target_contrib=tc, change=change,
                    gross=abs(change), settings_target={"rocksdb_block_cache_size": 65536})


def _misses(index: float, data: float) -> dict[str, float]:
    return {"status:Rocksdb_block_cache_index_miss": index, "status:Rocksdb_block_cache_filter_miss": 0.0,
            "status:Rocksdb_block_cache_data_miss": data, "status:Rocksdb_block_cache_miss": index + data}


def test_index_filter_misses_verdicts() -> None:
    base, target = _side(_misses(0, 1000), 1000), _side(_misses(1000, 1000), 1000)
    e = _ev(base, target, {SST: 1000.0}, {SST: 2000.0})
    f = mf.index_filter_misses(e)
    assert f["verdict"] == "supported" and f["evidence"]["share_of_change"] == 1.0, f
    # more data misses only: index blocks did not move, the cause is refuted
    f = mf.index_filter_misses(_ev(base, _side(_misses(0, 2000), 1000), {SST: 1000.0}, {SST: 2000.0}))
    assert f["verdict"] == "refuted", f
    # a bytes metric splits by the bytes the misses put in the cache
    bb = {**_misses(0, 1000), "status:Rocksdb_block_cache_index_bytes_insert": 0.0,
          "status:Rocksdb_block_cache_filter_bytes_insert": 0.0, "status:Rocksdb_block_cache_data_bytes_insert": 4e6}
    tb = {**_misses(1000, 1000), "status:Rocksdb_block_cache_index_bytes_insert": 156e6,
          "status:Rocksdb_block_cache_filter_bytes_insert": 0.0, "status:Rocksdb_block_cache_data_bytes_insert": 4e6}
    f = mf.index_filter_misses(_ev(_side(bb, 1000), _side(tb, 1000), {SST: 4e6}, {SST: 160e6}, measure="bytes"))
    assert f["verdict"] == "supported" and f["evidence"]["index_filter_fraction"] == 1.0, f
    # writes, and servers without MyRocks
    assert mf.index_filter_misses(_ev(base, target, {}, {SST: 1.0}, op="write"))["verdict"] == "not_applicable"
    none = _side({"status:Com_select": 1.0}, 1000)
    assert mf.index_filter_misses(_ev(none, none, {}, {SST: 1.0}))["verdict"] == "not_applicable"
    assert mf.compaction_debt(_ev(none, none, {}, {SST: 1.0}))["verdict"] == "not_applicable"


def test_compaction_debt_verdicts() -> None:
    calm = {"status:Rocksdb_block_cache_miss": 1.0, "rocksdb_compaction_max:default:L0:NumFiles": 0.0,
            "rocksdb_compaction_max:default:L0:Score": 0.0, "rocksdb_cfstats_max:default:COMPACTION_PENDING": 0.0}
    debt = {**calm, "rocksdb_compaction_max:default:L0:NumFiles": 6.0, "rocksdb_compaction_max:default:L0:Score": 1.5,
            "rocksdb_cfstats_max:default:COMPACTION_PENDING": 1.0}
    l1 = [("/d/#rocksdb/000010.sst", 1000.0)]
    l0 = l1 + [("/d/#rocksdb/000011.sst", 5000.0)]
    levels = {"/d/#rocksdb/000010.sst": 1, "/d/#rocksdb/000011.sst": 0}
    base = _side(calm, 1000, l1, levels)
    f = mf.compaction_debt(_ev(base, _side(debt, 1000, l0, levels), {SST: 1000.0}, {SST: 6000.0}))
    assert f["verdict"] == "supported" and f["evidence"]["l0_reads_per_op_target"] == 5.0, f
    # L0 reads without debt (below the trigger, nothing pending, no stalls): not the cause
    f = mf.compaction_debt(_ev(base, _side(calm, 1000, l0, levels), {SST: 1000.0}, {SST: 6000.0}))
    assert f["verdict"] == "inconclusive", f
    f = mf.compaction_debt(_ev(base, _side(calm, 1000, l1, levels), {SST: 1000.0}, {SST: 1000.0 + 1}))
    assert f["verdict"] == "refuted", f
    # a write metric: the flush and compaction writes' share, with stalls as the debt
    w = (None, None, None, "compaction", "sst", None)
    stalls = {**calm, "status:Rocksdb_stall_total_slowdowns": 3.0, "status:Rocksdb_stall_total_stops": 0.0}
    f = mf.compaction_debt(_ev(_side(calm, 100), _side(stalls, 100), {}, {w: 500.0}, op="write"))
    assert f["verdict"] == "supported" and f["evidence"]["write_stalls_target"] == 3.0, f

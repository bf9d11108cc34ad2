"""The explain findings only MyRocks can test (the MyRocks adapter's "findings"): an LSM's
causes of more IO per operation, each from our recording (SST reads by the connection, by the
file's LSM level from the SST catalog) beside RocksDB's own counters (Rocksdb_* status,
ROCKSDB_CFSTATS, ROCKSDB_COMPACTION_STATS as the recorder kept them).

  index_filter_misses  index and filter blocks that do not stay in the block cache: every
                       lookup reads its SST's index block (one per SST, often 100+ KiB: the
                       issue's 739 MiB of ~127 KiB reads) before the data block it wants
  compaction_debt      L0 files piling up (compaction behind: score >= 1, compaction pending,
                       write stalls): a point lookup checks every L0 file whose key range holds
                       its key, newest first, so reads per lookup grow with them
  block_cache          the working set no longer fits the block cache (RocksDB's own miss rate,
                       Rocksdb_block_cache_miss / (hit + miss), rose): the condition under which
                       lookups read SST blocks at all; its share is the foreground SST reads the
                       two mechanisms above do not claim, and a decrease is its mirror (the
                       working set now fits)

Not here yet: bloom filter misses. MyRocks' default column families have no filter
(FILTER_POLICY nullptr in ROCKSDB_CF_OPTIONS), and the reads a filter would save are the same
L0/level reads compaction_debt counts; telling them apart needs per-SST "key not found" counts
(ROCKSDB_PERF_CONTEXT BLOOM_SST_MISS_COUNT at rocksdb_perf_context_level >= 2).

On a server without MyRocks (no Rocksdb_* counters) each is not_applicable.
"""
from __future__ import annotations

from typing import Any, Callable

from ioattr.model.evidence import (I_CLASS, I_ROLE, SUPPORT_SHARE, Evidence, absent, by_share,
                                       finding, pct)
from ioattr.engines.base import AdviceField

NO_MYROCKS = "the server has no MyRocks (no Rocksdb_* counters recorded)"


def _has_rocksdb(e: Evidence) -> bool:
    return any(k.startswith("status:Rocksdb_") for k in e.target.stats.counters)


def _per_op(e: Evidence, side: str, *names: str) -> float | None:
    """The sum of status counters (Rocksdb_...) over the side's operations; None if none recorded."""
    s = e.base if side == "base" else e.target
    vals = [s.stats.counters.get(f"status:{n}") for n in names]
    if all(v is None for v in vals):
        return None
    return sum(v or 0.0 for v in vals) / s.denominator


def _share_of(e: Evidence, delta_per_op: float) -> float | None:
    """A change per op over the gross change, at most 100% (as Evidence.share)."""
    gross = e.gross or e.change
    if not gross:
        return None
    return max(min(delta_per_op / gross, 1.0), -1.0)


def _fg_sst(k: tuple) -> bool:
    """A contributor that is a foreground read of an SST (a block-cache miss of a statement)."""
    return k[I_CLASS] == "sst" and k[I_ROLE] in ("connection", None)


def _g(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def index_filter_misses(e: Evidence) -> dict[str, Any]:
    title = "Index and filter blocks do not fit the block cache (MyRocks)"
    if not _has_rocksdb(e):
        return finding("index_filter_misses", title, "not_applicable", NO_MYROCKS)
    if not e.reads:
        return finding("index_filter_misses", title, "not_applicable", "a read cause; this metric counts writes")
    kinds = ("Rocksdb_block_cache_index_miss", "Rocksdb_block_cache_filter_miss")
    if_b, if_t = _per_op(e, "base", *kinds), _per_op(e, "target", *kinds)
    all_b, all_t = _per_op(e, "base", "Rocksdb_block_cache_miss"), _per_op(e, "target", "Rocksdb_block_cache_miss")
    data_t = _per_op(e, "target", "Rocksdb_block_cache_data_miss")
    if if_b is None or if_t is None or all_b is None or all_t is None:
        return finding("index_filter_misses", title, "inconclusive", absent(e, "block-cache counters by block kind"))
    sst_share = e.share(_fg_sst)
    d_if, d_all = if_t - if_b, all_t - all_b
    # the SST reads' share of the change, split by block kind as RocksDB counted its misses (one
    # read per miss: RocksDB reads a block it does not have with one pread); for a bytes metric
    # by the bytes its misses put in the cache (uncompressed sizes: an index block's share of the
    # bytes read is what matters there, and one index block can weigh twenty data blocks)
    if e.metric.measure == "bytes":
        ins = ("Rocksdb_block_cache_index_bytes_insert", "Rocksdb_block_cache_filter_bytes_insert")
        ib, it = _per_op(e, "base", *ins), _per_op(e, "target", *ins)
        ab = _per_op(e, "base", *ins, "Rocksdb_block_cache_data_bytes_insert")
        at = _per_op(e, "target", *ins, "Rocksdb_block_cache_data_bytes_insert")
        split_if, split_all = ((it - ib), (at - ab)) if None not in (ib, it, ab, at) else (d_if, d_all)
    else:
        split_if, split_all = d_if, d_all
    frac = split_if / split_all if split_all > 0 else None
    share = None if sst_share is None or frac is None else sst_share * max(min(frac, 1.0), 0.0)
    if d_if <= 0 or if_t == 0:
        verdict = "refuted"
    else:
        verdict = by_share(share)
    # our read sizes: an index block of a large SST is one read of many KiB
    rb = e.per_op("target", _fg_sst)
    cache = e.setting("rocksdb_block_cache_size")
    parts = [f"index+filter block misses {_g(if_b)} -> {_g(if_t)} per {e.metric.per}, of all block-cache misses "
             f"{_g(all_b)} -> {_g(all_t)} (data {_g(data_t)} in the target; Rocksdb_block_cache_*_miss)",
             f"foreground SST reads explain {pct(sst_share)} of the gross change; index/filter blocks "
             f"{pct(frac if frac is None else max(min(frac, 1.0), 0.0))} of the change in misses, "
             f"so {pct(share)} of it"]
    if isinstance(cache, int):
        parts.append(f"rocksdb_block_cache_size={cache / 2**20:.3g} MiB, cache_index_and_filter_blocks="
                     f"{e.setting('rocksdb_cache_index_and_filter_blocks')}")
    cache_b = e.setting("rocksdb_block_cache_size", "base")
    changed = (f"rocksdb_block_cache_size {cache_b / 2**20:.3g} MiB -> {cache / 2**20:.3g} MiB"
               if isinstance(cache, int) and isinstance(cache_b, int) and cache != cache_b else None)
    return finding("index_filter_misses", title, verdict, "; ".join(parts),
                   mirror="Index and filter blocks now fit the block cache (MyRocks)", setting_changed=changed,
                   share_of_change=share, sst_share=sst_share, index_filter_fraction=frac,
                   index_filter_misses_per_op_baseline=if_b, index_filter_misses_per_op_target=if_t,
                   block_cache_misses_per_op_baseline=all_b, block_cache_misses_per_op_target=all_t,
                   data_misses_per_op_target=data_t, sst_reads_per_op_target=rb,
                   rocksdb_block_cache_size=cache)


def _sst_reads_by_level(side: Any, measure: str) -> dict[int | None, float]:
    """Foreground SST reads (count or bytes) of a phase by the file's LSM level (meta.json
    "files", the SST catalog; None: not catalogued, e.g. several SSTs on one reused inode)."""
    files = side.rec.meta.get("files") or {}
    col = "count" if measure == "ops" else "bytes"
    out: dict[int | None, float] = {}
    for path, n in side.rec.query(
            f"SELECT file, sum({col}) FROM io WHERE phase = ? AND layer = 'syscall' AND op = 'read' "
            "AND file_class = 'sst' AND role = 'connection' GROUP BY file", [side.phase]):
        f = files.get(str(path or "").removesuffix(" (deleted)")) if isinstance(files, dict) else None
        level = f.get("level") if isinstance(f, dict) else None
        out[level] = out.get(level, 0.0) + float(n or 0)
    return out


def _lsm_state(e: Evidence, side: str) -> dict[str, float | None]:
    c = (e.base if side == "base" else e.target).stats.counters

    def total(prefix: str, suffix: str, agg: Callable = sum) -> float | None:
        vals = [v for k, v in c.items() if k.startswith(prefix) and k.endswith(suffix)]
        return agg(vals) if vals else None

    stalls = [c.get(f"status:Rocksdb_stall_total_{k}") for k in ("stops", "slowdowns")]
    return {"l0_files_max": total("rocksdb_compaction_max:", ":L0:NumFiles"),
            "l0_files_end": total("rocksdb_compaction_last:", ":L0:NumFiles"),
            "score_max": total("rocksdb_compaction_max:", ":Score", max),
            "pending_max": total("rocksdb_cfstats_max:", ":COMPACTION_PENDING"),
            "stalls": None if all(s is None for s in stalls) else sum(s or 0.0 for s in stalls),
            "stall_micros": c.get("status:Rocksdb_stall_micros")}


def compaction_debt(e: Evidence) -> dict[str, Any]:
    title = "Compaction debt: L0 files pile up (reads per lookup by level), write stalls (MyRocks)"
    if not _has_rocksdb(e):
        return finding("compaction_debt", title, "not_applicable", NO_MYROCKS)
    b, t = _lsm_state(e, "base"), _lsm_state(e, "target")
    if t["score_max"] is None and t["l0_files_max"] is None:
        return finding("compaction_debt", title, "inconclusive", absent(e, "compaction statistics (ROCKSDB_COMPACTION_STATS)"))
    debt = bool((t["score_max"] or 0) >= 1 or (t["pending_max"] or 0) > 0 or (t["stalls"] or 0) > 0)
    gets = {lv: (_per_op(e, "base", f"Rocksdb_get_hit_{lv}"), _per_op(e, "target", f"Rocksdb_get_hit_{lv}"))
            for lv in ("l0", "l1", "l2_and_up")}
    if e.reads:
        lb, lt = _sst_reads_by_level(e.base, e.metric.measure), _sst_reads_by_level(e.target, e.metric.measure)
        l0_b, l0_t = lb.get(0, 0.0) / e.base.denominator, lt.get(0, 0.0) / e.target.denominator
        share = _share_of(e, l0_t - l0_b)
        what = (f"foreground reads of L0 SSTs {l0_b:.3g} -> {l0_t:.3g} per {e.metric.per}, "
                f"{pct(share)} of the gross change")
        extra: dict[str, Any] = {"l0_reads_per_op_baseline": l0_b, "l0_reads_per_op_target": l0_t}
    else:
        share = e.share(lambda k: k[I_ROLE] in ("flush", "compaction"))
        what = f"flush and compaction writes explain {pct(share)} of the gross change"
        extra = {}
    if not debt:
        verdict = "refuted" if share is None or share < SUPPORT_SHARE else "inconclusive"
    else:
        verdict = by_share(share)
    parts = [f"L0 files (peak) {_g(b['l0_files_max'])} -> {_g(t['l0_files_max'])}, highest compaction score "
             f"{_g(b['score_max'])} -> {_g(t['score_max'])} (>= 1: compaction behind), compactions pending "
             f"{_g(t['pending_max'])}, write stalls {_g(t['stalls'])} ({_g((t['stall_micros'] or 0) / 1e6)} s) "
             "in the target", what]
    if gets["l0"][1] is not None:
        parts.append("point gets found in L0/L1/L2+ per op " + " / ".join(
            f"{_g(gb)} -> {_g(gt)}" for gb, gt in gets.values()))
    return finding("compaction_debt", title, verdict, "; ".join(parts),
                   share_of_change=share, debt=debt,
                   l0_files_max_baseline=b["l0_files_max"], l0_files_max_target=t["l0_files_max"],
                   compaction_score_max_baseline=b["score_max"], compaction_score_max_target=t["score_max"],
                   compaction_pending_target=t["pending_max"], write_stalls_target=t["stalls"],
                   stall_micros_target=t["stall_micros"],
                   gets_l0_per_op_target=gets["l0"][1], gets_l1_per_op_target=gets["l1"][1],
                   gets_l2_and_up_per_op_target=gets["l2_and_up"][1], **extra)


#: a miss rate at or above this on both sides: the working set is larger than the block cache in
#: both (a cache that holds it still misses a little while it warms, or on the rows written since)
HOLDS_MISS_RATE = 0.01


def _miss_rate(e: Evidence, side: str) -> tuple[float | None, float | None, float | None]:
    """RocksDB's block-cache (misses, hits, miss rate) in one side's phase (status counters;
    None where not recorded or nothing was looked up)."""
    s = e.base if side == "base" else e.target
    miss = s.stats.counters.get("status:Rocksdb_block_cache_miss")
    hit = s.stats.counters.get("status:Rocksdb_block_cache_hit")
    rate = miss / (miss + hit) if miss is not None and hit is not None and miss + hit > 0 else None
    return miss, hit, rate


def block_cache(e: Evidence) -> dict[str, Any]:
    """The block cache's working set, MyRocks' counterpart of InnoDB's buffer pool working set:
    the verdict from RocksDB's own miss rate, the share (which ranks it) from the foreground SST
    reads that neither index/filter misses nor L0 reads claim."""
    title = "Working set larger than the block cache (MyRocks: block-cache miss rate)"
    mirror = "Working set now fits the block cache (MyRocks: block-cache miss rate fell)"
    if not _has_rocksdb(e):
        return finding("block_cache", title, "not_applicable", NO_MYROCKS)
    if not e.reads:
        return finding("block_cache", title, "not_applicable", "a read cause; this metric counts writes")
    mb, hb, rb = _miss_rate(e, "base")
    mt, ht, rt = _miss_rate(e, "target")
    if rb is None or rt is None:
        return finding("block_cache", title, "inconclusive",
                       absent(e, "block-cache counters (Rocksdb_block_cache_hit, _miss)"), mirror=mirror)
    ratio = rt / rb if rb else (float("inf") if rt else 1.0)
    sst_share = e.share(_fg_sst)
    claimed = [f(e)["evidence"].get("share_of_change") for f in (index_filter_misses, compaction_debt)]
    share = None if sst_share is None else sst_share - sum(max(c, 0.0) for c in claimed if isinstance(c, float))
    if rt >= 0.001 and ratio >= 2.0 and share is not None and share >= SUPPORT_SHARE:
        verdict = "supported"
    elif ratio < 1.25:
        verdict = "refuted"
    else:
        verdict = "inconclusive"
    holds = min(rb, rt) >= HOLDS_MISS_RATE
    cache, cache_b = e.setting("rocksdb_block_cache_size"), e.setting("rocksdb_block_cache_size", "base")
    changed = (f"rocksdb_block_cache_size {cache_b / 2**20:.3g} MiB -> {cache / 2**20:.3g} MiB"
               if isinstance(cache, int) and isinstance(cache_b, int) and cache != cache_b else None)
    how = f"{ratio:.1f}x" if ratio != float("inf") else "none missed in the baseline"
    size = f"the {cache / 2**20:.3g} MiB block cache" if isinstance(cache, int) else "the block cache"
    per = e.metric.per
    parts = [f"block-cache miss rate (Rocksdb_block_cache_miss / (hit + miss)) {rb:.5f} -> {rt:.5f} ({how}) "
             f"in {size}; misses per {per} {_g((mb or 0) / e.base.denominator)} -> "
             f"{_g((mt or 0) / e.target.denominator)}",
             f"foreground SST reads beyond index/filter misses and L0 reads are {pct(share)} of the gross change"]
    if changed:
        parts.insert(0, changed)
    return finding("block_cache", title, verdict, "; ".join(parts), mirror=mirror,
                   holds_in_both=holds, setting_changed=changed, share_of_change=share,
                   sst_share=sst_share, miss_rate_baseline=rb, miss_rate_target=rt,
                   ratio=ratio if ratio != float("inf") else None,
                   block_cache_misses_baseline=mb, block_cache_misses_target=mt,
                   block_cache_hits_baseline=hb, block_cache_hits_target=ht, rocksdb_block_cache_size=cache)


FINDINGS: tuple[Callable[[Evidence], dict[str, Any]], ...] = (index_filter_misses, compaction_debt, block_cache)

#: what each finding means and the one thing to try next (the adapter's `next_steps`)
NEXT_STEPS: dict[str, tuple[str, str]] = {
    "index_filter_misses": (
        "every lookup first needs its SST's index block (and filter block), one block per SST that "
        "can be hundreds of KiB; when they do not stay in the block cache each lookup reads them again "
        "before the data block it wants",
        "raise rocksdb_block_cache_size{cache} above the SSTs' index and filter sizes "
        "(INFORMATION_SCHEMA.ROCKSDB_SST_PROPS INDEX_BLOCKS_SIZE, FILTER_BLOCKS_SIZE), keep "
        "rocksdb_cache_index_and_filter_with_high_priority=ON with a high-priority pool "
        "(rocksdb_cache_high_pri_pool_ratio), or partition them (index_type=kTwoLevelIndexSearch)"),
    "compaction_debt": (
        "compaction is behind: L0 files pile up, and a point lookup checks each L0 file whose key "
        "range holds its key before the levels below, while writes slow down or stop at the L0 triggers",
        "give compaction more room (rocksdb_max_background_jobs{jobs}, larger write buffers so flushes make "
        "fewer L0 files) or lower the write rate; check ROCKSDB_COMPACTION_STATS' L0 files and score"),
    "block_cache": (
        "the SST blocks the statements look up no longer fit in RocksDB's block cache, so lookups that "
        "used to hit memory now read blocks from the SST files",
        "raise rocksdb_block_cache_size{cache} above the data the statements touch "
        "(INFORMATION_SCHEMA.ROCKSDB_SST_PROPS DATA_BLOCKS of the tables read), or shrink that working set"),
}

ADVICE_FIELDS: dict[str, AdviceField] = {
    "cache": AdviceField(("rocksdb_block_cache_size",), ("rocksdb_block_cache_size",), mib=True),
    "jobs": AdviceField((), ("rocksdb_max_background_jobs",)),
}

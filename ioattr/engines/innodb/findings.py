"""The explain findings only InnoDB can test (the InnoDB adapter's "findings"): clustered-index
lookups and MVCC, the change buffer, the buffer pool's working set, redo/binlog re-reads,
read-ahead, purge, InnoDB's background tasks, doublewrite, checkpoints. Each reads InnoDB's
counters and settings as the recorder kept them (innodb_status, innodb_metrics, Innodb_* status, innodb_* settings).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ioattr.collectors.file_classes import FILE_CLASSES
from ioattr.model.evidence import (I_CLASS, I_INDEX, I_QUERY, I_ROLE, I_STAGE, MINOR_SHARE, SUPPORT_SHARE, Evidence,
                                       absent, by_share, finding, is_write_statement, pct)
from ioattr.engines.base import AdviceField


def clustered_lookups(e: Evidence) -> dict[str, Any]:
    title = "Secondary-index queries read the clustered index (non-covering lookups, MVCC visibility)"
    if not e.reads:
        return finding("clustered_lookups", title, "not_applicable", "a read cause; this metric counts writes")
    pred, secondary_queries, through = _lookups(e)
    share = e.share(pred)
    if not e.has_queries:
        primary = e.share(lambda k: bool(k[I_INDEX] and k[I_INDEX].endswith(".PRIMARY")))
        return finding("clustered_lookups", title, "inconclusive",
                  "without statement attribution (stage probes off) PRIMARY reads can't be tied to "
                  f"secondary-index queries; PRIMARY pages explain {pct(primary)} of the gross change",
                  primary_share=primary)
    top = max(secondary_queries, key=lambda q: sum(v for k, v in e.target_contrib.items()
                                                   if k[I_QUERY] == q and pred(k)), default=None)
    return finding("clustered_lookups", title, by_share(share),
              f"PRIMARY pages read by statements that also read a secondary index explain "
              f"{pct(share)} of the gross change"
              + ("" if e.has_stages else " (per statement; stage not traced: --stages statement)")
              + (f"; rows of {', '.join(sorted(p[:-len('.PRIMARY')] for p in through))} were fetched through "
                 "secondary indexes (performance_schema), so their PRIMARY reads count too" if through else ""),
              mirror="Fewer clustered-index reads by secondary-index queries",
              share_of_change=share, baseline_per_op=e.per_op("base", pred),
              target_per_op=e.per_op("target", pred), top_query=top,
              reached_through_secondary=", ".join(sorted(through)) or None)


REACHED_THROUGH = 0.9   # share of a table's row fetches through secondary indexes to call its PRIMARY reads lookups


def _lookups(e: Evidence) -> tuple[Callable[[tuple], bool], set[str], set[str]]:
    """Which contributors are clustered lookups: (predicate, the queries that read a secondary
    index, the PRIMARY indexes reached through secondary ones by performance_schema). One
    definition, used by clustered_lookups and by what working_set leaves to the others."""
    # a statement that read a secondary index's pages in either phase (the index may be all cached
    # in one of them); writes read secondary pages to maintain them, not to look rows up
    secondary_queries = {k[I_QUERY] for c in (e.base_contrib, e.target_contrib) for k in c
                         if k[I_QUERY] and k[I_INDEX] and not k[I_INDEX].endswith(".PRIMARY")
                         and not k[I_INDEX].startswith(("[", "innodb_system.")) and not is_write_statement(k[I_QUERY])}
    # with --stages statement the stage inside a statement is null: PRIMARY reads are then
    # tied to the statement (its digest) rather than to its execute/optimize stage
    stages = ("execute", "optimize") if e.has_stages else (None,)
    # A secondary index that never missed leaves no page read to tie a query to it (an MVCC
    # check on a cached secondary index reads only PRIMARY pages). performance_schema says
    # which index each table's rows were fetched through: PRIMARY reads of a table whose rows
    # were (nearly) all reached through secondary indexes in the target phase are lookups too.
    through = _reached_through_secondary(e)

    def pred(k: tuple) -> bool:
        if not (k[I_INDEX] and k[I_INDEX].endswith(".PRIMARY") and k[I_STAGE] in stages and k[I_QUERY]):
            return False
        return k[I_QUERY] in secondary_queries or (k[I_INDEX] in through and not is_write_statement(k[I_QUERY]))

    return pred, secondary_queries, through


def _reached_through_secondary(e: Evidence) -> set[str]:
    """PRIMARY indexes ("db.t.PRIMARY") of the tables whose row fetches in the target phase went
    through secondary indexes at least REACHED_THROUGH of the time (performance_schema
    table_io_waits_summary_by_index_usage, recorded as ps_table "<db>.<t>.<index>:INDEX_FETCH";
    the table's COUNT_FETCH is the total, scans included)."""
    c = e.target.stats.counters
    per_table: dict[str, float] = {}
    for name, v in c.items():
        if not name.startswith("ps_table:") or not name.endswith(":INDEX_FETCH") or not v:
            continue
        index = name[len("ps_table:"):-len(":INDEX_FETCH")]
        table, _, idx = index.rpartition(".")
        if idx != "PRIMARY":
            per_table[table] = per_table.get(table, 0.0) + v
    out = set()
    for table, secondary in per_table.items():
        total = c.get(f"ps_table:{table}:COUNT_FETCH")
        if total and secondary >= REACHED_THROUGH * total:
            out.add(f"{table}.PRIMARY")
    return out


def change_buffer_merges(e: Evidence) -> dict[str, Any]:
    title = "Change-buffer merges"
    merges = ("innodb_status:ibuf_merges", "innodb_metrics:ibuf_merges")
    mb, mt = e.counter("base", *merges), e.counter("target", *merges)
    cb_share = e.share(lambda k: k[I_INDEX] == "innodb_system.change_buffer")
    bg_secondary = e.share(lambda k: bool(k[I_INDEX]) and not k[I_INDEX].endswith(".PRIMARY")
                           and k[I_ROLE] not in (None, "connection"))
    if mt is None:
        return finding("change_buffer_merges", title, "inconclusive",
                  absent(e, "change-buffer merge counters (INNODB_METRICS ibuf_merges)"),
                  change_buffer_tree_share=cb_share, background_secondary_share=bg_secondary)
    per_b = mb / e.base.denominator if mb is not None else None
    per_t = mt / e.target.denominator
    share = (cb_share or 0.0) + max(bg_secondary or 0.0, 0.0)
    if mt == 0 or (per_b is not None and per_t <= per_b * 1.2 and share < SUPPORT_SHARE):
        verdict = "refuted"
    elif share >= SUPPORT_SHARE and (per_b is None or per_t > per_b * 1.5):
        verdict = "supported"
    else:
        verdict = "inconclusive"
    return finding("change_buffer_merges", title, verdict,
              f"merges per op {per_b if per_b is None else round(per_b, 4)} -> {round(per_t, 4)}; change-"
              f"buffer tree and background secondary-index reads explain {pct(share)} of the gross change",
              merges_baseline=mb, merges_target=mt, merges_per_op_baseline=per_b, merges_per_op_target=per_t,
              share_of_change=share)


def change_buffer_memory(e: Evidence) -> dict[str, Any]:
    title = "Change-buffer memory crowds the buffer pool"
    c = e.target.stats.counters
    size_last = c.get("innodb_status_last:ibuf_size_pages")
    if size_last is None:
        size_last = c.get("innodb_metrics_last:ibuf_size")   # MariaDB omits "Ibuf: size" with buffering off
    if size_last is None:
        size_last = e.setting("change_buffer_size_pages")    # when the recorder first saw the server
    pool = c.get("innodb_status_last:buffer_pool_pages") or c.get("status_last:Innodb_buffer_pool_pages_total")
    pool_bytes, page = e.setting("innodb_buffer_pool_size"), e.setting("innodb_page_size")
    if not pool and isinstance(pool_bytes, int) and isinstance(page, int) and page:
        pool = pool_bytes / page
    buffering = e.setting("innodb_change_buffering")
    max_pct = e.setting("innodb_change_buffer_max_size")
    settings = {"innodb_change_buffering": buffering, "innodb_change_buffer_max_size_pct": max_pct,
                "buffer_pool_pages": pool}
    if size_last is None or not pool:
        if not e.connected:
            return finding("change_buffer_memory", title, "inconclusive",
                      "recorded without a server connection: change-buffer and buffer pool sizes unknown")
        if str(buffering).lower() == "none":
            return finding("change_buffer_memory", title, "refuted",
                      "change buffering is off (innodb_change_buffering=none) and the server reported no "
                      "change-buffer size", **settings)
        return finding("change_buffer_memory", title, "inconclusive",
                  "the server reported no change-buffer size (neither INNODB_METRICS ibuf_size nor "
                  f"'Ibuf: size'); innodb_change_buffering={buffering}, innodb_change_buffer_max_size={max_pct}%",
                  **settings)
    frac = size_last / pool
    # A big change buffer is the condition, not the evidence: crowding shows as other indexes'
    # pages missing more (the pool no longer holds them). Reads of the change buffer's own pages
    # are merges and buffering reading it back (change_buffer_merges, write_statement_reads); a
    # change made of those alone is not crowding, however big the change buffer is.
    other = e.share(_other_index_page) if e.reads else None
    own = e.share(lambda k: k[I_INDEX] == "innodb_system.change_buffer") if e.reads else None
    verdict = "supported" if frac >= 0.10 and e.change > 0 else ("refuted" if frac < 0.02 else "inconclusive")
    if e.reads and frac >= 0.02:
        if other is None:
            verdict = "inconclusive"
        elif other < MINOR_SHARE or (other < SUPPORT_SHARE and (own or 0.0) >= SUPPORT_SHARE):
            verdict = "refuted"   # the change is not in other pages, or it is the change buffer's own
        elif other < SUPPORT_SHARE:
            verdict = "inconclusive"
    bound = f" (bounded at {max_pct}% by innodb_change_buffer_max_size)" if max_pct is not None else ""
    crowded = (f"; other indexes' page reads (what crowding evicts) explain {pct(other)} of the gross change, "
               f"the change buffer's own pages {pct(own)}" if e.reads else "")
    return finding("change_buffer_memory", title, verdict,
              f"the change buffer holds {int(size_last)} of {int(pool)} buffer pool pages ({pct(frac)}) at the end "
              f"of the target phase{bound}; innodb_change_buffering={buffering}{crowded}",
              ibuf_pages=size_last, fraction=frac, other_index_share=other, change_buffer_share=own, **settings)


def _other_index_page(k: tuple) -> bool:
    """Reads of index pages other than the change buffer's: what a crowded pool misses."""
    index = k[I_INDEX]
    return bool(index) and not index.startswith("[") and index != "innodb_system.change_buffer"


def _demand_miss(e: Evidence) -> Callable[[tuple], bool]:
    """Page reads the statements needed for their own rows: index pages of tablespaces read by
    connections, less what a more specific cause claims (reads by write statements, clustered
    lookups of secondary-index queries, the optimizer's reads: stages estimate and optimize, the
    change-buffer tree). With a buffer pool that holds the data these are ~0."""
    lookup = _lookups(e)[0]

    def pred(k: tuple) -> bool:
        index = k[I_INDEX]
        if k[I_CLASS] not in ("tablespace", "system_tablespace") or not index or index.startswith("["):
            return False
        if index == "innodb_system.change_buffer" or k[I_ROLE] not in ("connection", None):
            return False
        if is_write_statement(k[I_QUERY]) or k[I_STAGE] in ("optimize", "estimate"):
            return False
        return not lookup(k)

    return pred


def _tables_read(e: Evidence) -> tuple[list[str], int | None]:
    """Tables whose index pages the target phase read from storage (most read first), and their
    tablespace files' size at the end of the target's recording (meta.json "tablespace_sizes";
    None when the recording has none of them)."""
    per_table: dict[str, float] = {}
    for k, v in e.target_contrib.items():
        index = k[I_INDEX]
        if v and index and not index.startswith("[") and index != "innodb_system.change_buffer":
            table = index.rsplit(".", 1)[0]
            per_table[table] = per_table.get(table, 0.0) + v
    tables = sorted(per_table, key=per_table.__getitem__, reverse=True)
    sizes: dict[str, int] = {}
    for by_table in (e.target.rec.meta.get("tablespace_sizes") or {}).values():
        if isinstance(by_table, dict):
            sizes.update({t: n for t, n in by_table.items() if isinstance(n, int)})
    known = [sizes[t] for t in tables if t in sizes]
    return tables, (sum(known) if known else None)


def working_set(e: Evidence) -> dict[str, Any]:
    title = "Working set larger than the buffer pool (miss rate, evictions, young/not young)"
    num, den = ("status:Innodb_buffer_pool_reads",), ("status:Innodb_buffer_pool_read_requests",)
    rb, rt = e.rate("base", num, den), e.rate("target", num, den)
    if rb is None or rt is None:
        return finding("working_set", title, "inconclusive", absent(e, "buffer pool counters"))
    young = e.counter("target", "status:Innodb_buffer_pool_pages_made_young")
    not_young = e.counter("target", "status:Innodb_buffer_pool_pages_made_not_young")
    ratio = rt / rb if rb else (float("inf") if rt else 1.0)
    pool = e.setting("innodb_buffer_pool_size")
    pool_text = f"the {pool / 2**20:.0f} MiB buffer pool" if isinstance(pool, int) else "the buffer pool"
    how = f"{ratio:.1f}x" if ratio != float("inf") else "none missed in the baseline"
    freed = e.counter("target", "status:Innodb_buffer_pool_pages_lru_freed")
    evicted_per_op = freed / e.target.denominator if freed is not None and e.target.unit != "second" else None
    # The verdict is the miss rate's: whether pages stopped staying cached. The working set is
    # the condition under which the specific mechanisms (index dives, read before write,
    # clustered lookups) turn into storage reads, so its share, which ranks it, is what none of
    # them claims: the statements' own execution reads that missed.
    pred = _demand_miss(e)
    share = e.share(pred) if e.reads else None
    indexes: dict[str, float] = {}
    for k, v in e.target_contrib.items():
        if e.reads and pred(k):
            indexes[k[I_INDEX]] = indexes.get(k[I_INDEX], 0.0) + v
    top = sorted(indexes, key=indexes.__getitem__, reverse=True)[:3]
    if rt >= 0.001 and ratio >= 2.0:
        verdict = "supported"
    elif ratio < 1.25:
        verdict = "refuted"
    else:
        verdict = "inconclusive"
    # pages miss on both sides: the working set is larger than the pool in both (not a change)
    holds = min(rb, rt) >= 0.001
    pool_base = e.setting("innodb_buffer_pool_size", "base")
    changed = (f"innodb_buffer_pool_size {_mib_text(pool_base)} -> {_mib_text(pool)}"
               if isinstance(pool, int) and isinstance(pool_base, int) and pool != pool_base else None)
    tables, data = _tables_read(e)
    parts = [f"miss rate (Innodb_buffer_pool_reads / read requests) {rb:.5f} -> {rt:.5f} ({how}) in {pool_text}"
             + (f", {evicted_per_op:.3g} pages evicted per {e.target.unit}" if evicted_per_op is not None else "")]
    if data is not None:
        times = f", {data / pool:.1f}x the buffer pool" if isinstance(pool, int) and pool else ""
        parts.append(f"the tables read take {data / 2**20:.0f} MiB on disk{times} ({', '.join(tables[:3])}"
                     + (", ..." if len(tables) > 3 else "") + ")")
    if share is not None:
        parts.append("the condition that turns the mechanisms found (index dives, read before write, clustered "
                     f"lookups) into storage reads; beyond them, the statements' own execution misses are "
                     f"{pct(share)} of the gross change" + (f" ({', '.join(top)})" if top else ""))
    if changed:
        parts.insert(0, changed)
    return finding("working_set", title, verdict, "; ".join(parts),
              mirror="Working set now fits the buffer pool (miss rate fell)",
              holds_in_both=holds, setting_changed=changed, share_of_change=share, indexes=", ".join(top) or None,
              miss_rate_baseline=rb, miss_rate_target=rt, ratio=ratio if ratio != float("inf") else None,
              evicted_per_op_target=evicted_per_op, tables_read=", ".join(tables) or None, data_bytes=data,
              pages_made_young=young, pages_made_not_young=not_young, innodb_buffer_pool_size=pool)


def _mib_text(v: Any) -> str:
    return f"{v / 2**20:.0f} MiB" if isinstance(v, (int, float)) else "unknown"


def log_rereads(e: Evidence) -> dict[str, Any]:
    title = "Redo log or binlog re-reads"
    if not e.reads:
        return finding("log_rereads", title, "not_applicable", "a read cause; this metric counts writes")

    def pred(k: tuple) -> bool:
        return k[I_CLASS] in ("redo_log", "binlog", "relay_log")

    t = e.per_op("target", pred)
    share = e.share(pred)
    verdict = "refuted" if t == 0 else by_share(share)
    return finding("log_rereads", title, verdict,
              f"reads of redo/binlog files: {e.per_op('base', pred):.4f} -> {t:.4f} per op, "
              f"{pct(share)} of the gross change", share_of_change=share, baseline_per_op=e.per_op("base", pred),
              target_per_op=t)


def _readahead(e: Evidence, side: str) -> tuple[float, float]:
    """InnoDB's read-ahead in one side's phase, per operation: (pages read ahead, of them evicted
    before any access), from Innodb_buffer_pool_read_ahead and _read_ahead_evicted."""
    s = e.base if side == "base" else e.target
    ra = e.counter(side, "status:Innodb_buffer_pool_read_ahead") or 0.0
    ev = e.counter(side, "status:Innodb_buffer_pool_read_ahead_evicted") or 0.0
    return ra / s.denominator, min(ev, ra) / s.denominator


def readahead_waste(e: Evidence) -> dict[str, Any]:
    """Read-ahead, told as used (moved) and wasted (added), as the index dives are
    (ioattr.analysis.dives): a page read ahead that a statement then accesses would have been read
    by that statement anyway, one synchronous read later; read-ahead only added the pages evicted
    unused. Supported only for the wasted part's share of the change; InnoDB reads one page per
    read-ahead IO, so for a bytes metric the pages count innodb_page_size each."""
    title = "Read-ahead waste (pages read ahead and evicted unused)"
    mirror = "Less read-ahead waste (fewer pages read ahead and evicted unused)"
    ra = e.counter("target", "status:Innodb_buffer_pool_read_ahead")
    ev = e.counter("target", "status:Innodb_buffer_pool_read_ahead_evicted")
    if ra is None or ev is None or e.counter("base", "status:Innodb_buffer_pool_read_ahead") is None:
        return finding("readahead_waste", title, "inconclusive", absent(e, "read-ahead counters"), mirror=mirror)
    waste = ev / ra if ra else 0.0
    (ra_b, ev_b), (ra_t, ev_t) = _readahead(e, "base"), _readahead(e, "target")
    used_b, used_t = ra_b - ev_b, ra_t - ev_t
    page = e.setting("innodb_page_size") if e.metric.measure == "bytes" else 1
    unit = page if isinstance(page, int) and page > 0 else None
    gross = e.gross or e.change
    added = (ev_t - ev_b) * unit / gross if unit and gross else None
    moved = (used_t - used_b) * unit / gross if unit and gross else None
    added = None if added is None else max(-1.0, min(1.0, added))
    moved = None if moved is None else max(-1.0, min(1.0, moved))
    if ra == 0 or waste < 0.05:
        verdict = "refuted"
    else:
        verdict = by_share(added)
    # ioattr's own view: the pages it saw read asynchronously (read-ahead's io_uring/libaio reads)
    own_b, own_t = async_page_reads(e.base), async_page_reads(e.target)
    per = e.metric.per if e.target.unit != "second" else "second"
    parts = [f"{int(ev)} of {int(ra)} read-ahead pages evicted unused ({pct(waste)})" if ra
             else "no read-ahead in the target phase",
             f"wasted (added: read ahead and evicted unused) {ev_b:.4g} -> {ev_t:.4g} pages per {per}, "
             f"{pct(added)} of the gross change; used (moved: pages the statements then read, which they "
             f"would have read one by one anyway) {used_b:.4g} -> {used_t:.4g}, {pct(moved)} "
             "(Innodb_buffer_pool_read_ahead, _read_ahead_evicted)"]
    if own_t is not None:
        parts.append(f"ioattr saw {own_b or 0:.4g} -> {own_t:.4g} pages per {per} read asynchronously")
    if verdict != "supported" and (moved or 0.0) >= SUPPORT_SHARE:
        parts.append("read-ahead moved IO, not extra: the statements used the pages it read")
    return finding("readahead_waste", title, verdict, "; ".join(parts), mirror=mirror,
                   share_of_change=added, moved_share=moved, read_ahead=ra, read_ahead_evicted=ev, waste=waste,
                   read_ahead_per_op_baseline=ra_b, read_ahead_per_op_target=ra_t,
                   wasted_per_op_baseline=ev_b, wasted_per_op_target=ev_t,
                   used_per_op_baseline=used_b, used_per_op_target=used_t,
                   async_pages_per_op_baseline=own_b, async_pages_per_op_target=own_t,
                   innodb_read_ahead_threshold=e.setting("innodb_read_ahead_threshold"),
                   innodb_random_read_ahead=e.setting("innodb_random_read_ahead"))


def async_page_reads(side: Any) -> float | None:
    """Pages ioattr saw read asynchronously (io_uring or libaio: InnoDB's read-ahead) in a phase,
    per operation of the side; None when it classified no page reads there."""
    rows = side.rec.query("SELECT api, sum(pages) FROM pages WHERE phase = ? AND op = 'read' "
                          "AND file_class IS DISTINCT FROM 'sst' GROUP BY api", [side.phase])
    if not sum(float(n or 0) for _, n in rows):
        return None
    return sum(float(n or 0) for api, n in rows if api in ("io_uring", "libaio")) / side.denominator


def purge_reads(e: Evidence) -> dict[str, Any]:
    title = "Purge and undo reads"

    def pred(k: tuple) -> bool:
        return k[I_ROLE] == "purge" or k[I_CLASS] == "undo"

    share = e.share(pred)
    hll_b = e.base.stats.counters.get("innodb_status_last:history_list_length")
    hll_t = e.target.stats.counters.get("innodb_status_last:history_list_length")
    present = e.has_queries or any(k[I_CLASS] == "undo" for k in e.target_contrib)
    return finding("purge_reads", title, by_share(share, evidence_present=present),
              f"purge threads and undo tablespaces explain {pct(share)} of the gross change"
              + ("" if present else " (purge can't be told apart without the stage probes)"),
              share_of_change=share, history_list_length_baseline=hll_b, history_list_length_target=hll_t)


#: the tables InnoDB's persistent statistics are kept in: a recalculation writes its results there
STATS_TABLES = ("mysql.innodb_table_stats", "mysql.innodb_index_stats")


def _background_task(k: tuple) -> bool:
    """IO by InnoDB's own thread pool (role innodb_worker): statistics recalculation, buffer
    pool load, and InnoDB's other tasks; purge and the page cleaner have roles of their own."""
    return k[I_ROLE] == "innodb_worker"


def background_tasks(e: Evidence) -> dict[str, Any]:
    """IO of InnoDB's thread-pool tasks, the background statistics recalculation first among
    them: once a tenth of a table's rows changed since its last one (innodb_stats_auto_recalc,
    at most every 10 s), a worker samples each of its indexes (innodb_stats_persistent_sample_
    pages leaves) and writes the results to mysql.innodb_*_stats. The same workload run twice
    differs by it when it lands in one phase only; in a small buffer pool its reads also evict
    pages the statements then read again (those misses are the statements', not counted here).
    Which indexes the tasks touched say which tables, and a stats table among them says a
    recalculation ran."""
    title = "InnoDB background tasks did the IO (statistics recalculation, ...)"
    fid = "background_tasks"
    share = e.share(_background_task)
    base_po, target_po = e.per_op("base", _background_task), e.per_op("target", _background_task)
    top = e.by_object(_background_task)
    recalc = any(v and k[I_INDEX] and k[I_INDEX].startswith(STATS_TABLES) and k[I_ROLE] in ("innodb_worker", "purge")
                 for k, v in e.target_contrib.items())
    what = "reads" if e.metric.op == "read" else "writes"
    unit = e.target.unit
    parts = [f"InnoDB's thread-pool tasks' {what}: {base_po:.4g} -> {target_po:.4g} per {unit}, "
             f"{pct(share)} of the gross change"]
    user = [(n, v) for n, v in top if not n.startswith(STATS_TABLES)]
    if user:
        parts.append("of " + ", ".join(f"{n} ({v:.3g}/{unit})" for n, v in user[:4]))
    if recalc:
        parts.append("InnoDB's statistics tables were touched in the target phase: a statistics "
                     "recalculation ran there")
    auto = e.setting("innodb_stats_auto_recalc")
    if auto is not None:
        parts.append(f"innodb_stats_auto_recalc={auto}")
    return finding(fid, title, by_share(share, evidence_present=e.has_roles), "; ".join(parts),
                   mirror="Less IO by InnoDB background tasks (statistics recalculation, ...)",
                   share_of_change=share, baseline_per_op=base_po, target_per_op=target_po,
                   indexes=", ".join(n for n, _ in top) or None, statistics_recalculated=recalc,
                   innodb_stats_auto_recalc=auto)


def write_amplification(e: Evidence) -> dict[str, Any]:
    title = "Doublewrite and binlog write amplification"
    if e.reads:
        return finding("write_amplification", title, "not_applicable", "a write cause; this metric counts reads")

    def pred(k: tuple) -> bool:
        return k[I_CLASS] in ("doublewrite", "binlog")

    share = e.share(pred)
    frac = e.per_op("target", pred) / (sum(e.target_contrib.values()) / e.target.denominator or 1)
    verdict = "supported" if (share or 0) >= SUPPORT_SHARE or frac >= 0.3 else by_share(share)
    return finding("write_amplification", title, verdict,
              f"doublewrite and binlog writes are {pct(frac)} of the target's writes and "
              f"{pct(share)} of the gross change", moves="write",
              mirror="Less doublewrite and binlog write amplification", share_of_change=share, fraction_of_target=frac,
              innodb_doublewrite=e.setting("innodb_doublewrite"), log_bin=e.setting("log_bin"))


def _checkpoint_fraction(e: Evidence, side: str) -> tuple[float | None, float | None]:
    """(the phase's highest checkpoint age, the redo capacity) of one side, as recorded."""
    s = e.base if side == "base" else e.target
    age = s.stats.counters.get("innodb_status_max:checkpoint_age")
    cap = s.stats.counters.get("status_last:Innodb_checkpoint_max_age")
    if not cap:  # the redo capacity the server was started with
        size = e.setting("innodb_redo_log_capacity", side) or e.setting("innodb_log_file_size", side)
        files = e.setting("innodb_log_files_in_group", side) if not e.setting("innodb_redo_log_capacity", side) else 1
        cap = size * (files if isinstance(files, int) and files > 0 else 1) if isinstance(size, int) else None
    return age, cap


def flush_storms(e: Evidence) -> dict[str, Any]:
    """A write mechanism: the checkpoint age nearing the redo capacity makes the page cleaner
    flush in bursts. Supported only when it got there in the target and not in the baseline."""
    title = "Checkpoint and flush storms"
    mirror = "Checkpoint and flush storms eased"
    age, cap = _checkpoint_fraction(e, "target")
    age_b, cap_b = _checkpoint_fraction(e, "base")
    bg = e.share(lambda k: k[I_ROLE] in ("page_cleaner",))
    if age is None or not cap:
        why = ("checkpoint age not reported by the server" if e.connected
               else "recorded without a server connection: checkpoint age and redo capacity unknown")
        return finding("flush_storms", title, "inconclusive", why, moves="write", mirror=mirror,
                       page_cleaner_share=bg, log_capacity=cap)
    frac = age / cap
    frac_b = age_b / cap_b if age_b is not None and cap_b else None
    holds = frac >= 0.75 and frac_b is not None and frac_b >= 0.75
    if frac < 0.25 or holds:
        verdict = "refuted"
    elif frac >= 0.75 and (frac_b is None or frac_b < 0.5):
        verdict = "supported"
    else:
        verdict = "inconclusive"
    base_text = f" ({pct(frac_b)} in the baseline phase)" if frac_b is not None else ""
    return finding("flush_storms", title, verdict,
              f"the checkpoint age reached {pct(frac)} of the redo capacity in the target phase{base_text}",
              moves="write", mirror=mirror, holds_in_both=holds,
              checkpoint_age_max=age, checkpoint_age_max_baseline=age_b, log_capacity=cap, fraction=frac,
              fraction_baseline=frac_b, page_cleaner_share=bg)


def write_statement_reads(e: Evidence) -> dict[str, Any]:
    """Reads done by the writes: an insert reads the leaf page of every secondary index it
    changes unless the change buffer takes the change. A per-query metric counts those reads
    too, so more inserts per query raise reads per query without any query reading more."""
    title = "Reads by inserts, updates and deletes maintaining indexes (read before write)"
    if not e.reads:
        return finding("write_statement_reads", title, "not_applicable", "a read cause; this metric counts writes")
    if not e.has_queries:
        return finding("write_statement_reads", title, "inconclusive",
                  "no statement attribution (stage probes off): reads can't be tied to write statements")

    def pred(k: tuple) -> bool:
        return is_write_statement(k[I_QUERY])

    def secondary(k: tuple) -> bool:
        return pred(k) and bool(k[I_INDEX]) and not k[I_INDEX].endswith(".PRIMARY")

    share = e.share(pred)
    sec_share = e.share(secondary)
    indexes = sorted({k[I_INDEX] for k, v in e.target_contrib.items() if secondary(k) and v})
    ins_b, ins_t = e.base.stats.inserts, e.target.stats.inserts
    q_b, q_t = e.base.stats.queries, e.target.stats.queries
    ipq_b = ins_b / q_b if ins_b is not None and q_b else None
    ipq_t = ins_t / q_t if ins_t is not None and q_t else None
    buffering = e.setting("innodb_change_buffering")
    parts = [f"reads by write statements explain {pct(share)} of the gross change "
             f"(secondary-index pages: {pct(sec_share)}"
             + (f", {', '.join(indexes[:4])}" if indexes else "") + ")"]
    if e.metric.per == "query" and ipq_b is not None and ipq_t is not None:
        parts.append(f"rows inserted per query {ipq_b:.3g} -> {ipq_t:.3g}")
    if buffering is not None:
        parts.append(f"innodb_change_buffering={buffering}"
                     + (": every insert reads the secondary-index leaves it changes" if str(buffering).lower()
                        == "none" else ""))
    return finding("write_statement_reads", title, by_share(share), "; ".join(parts),
              mirror="Fewer reads by inserts, updates and deletes maintaining indexes",
              share_of_change=share, secondary_index_share=sec_share, indexes=", ".join(indexes) or None,
              baseline_per_op=e.per_op("base", pred), target_per_op=e.per_op("target", pred),
              inserts_per_query_baseline=ipq_b, inserts_per_query_target=ipq_t,
              innodb_change_buffering=buffering)


def random_access(e: Evidence) -> dict[str, Any]:
    title = "Sequential access became random (fragmentation, lost read-ahead)"
    if not e.reads:
        return finding("random_access", title, "not_applicable", "a read cause; this metric counts writes")
    fb = async_read_fraction(e.base)
    ft = async_read_fraction(e.target)
    if fb is None and ft is None:
        return finding("random_access", title, "inconclusive", "no page reads classified in either phase")
    if fb is None or ft is None:
        # one side read no pages: there is no access pattern to compare against, so the
        # question does not apply (it is not missing evidence, which would be inconclusive)
        side = "baseline" if fb is None else "target"
        return finding("random_access", title, "not_applicable", f"no page reads in the {side} phase")
    if fb >= 0.2 and ft <= fb * 0.5 and e.change > 0:
        verdict = "supported"
    elif ft >= fb * 0.8:
        verdict = "refuted"
    else:
        verdict = "inconclusive"
    return finding("random_access", title, verdict,
              f"pages read ahead asynchronously: {pct(fb)} -> {pct(ft)} of page reads",
              mirror="Random access became sequential (read-ahead regained)", async_fraction_baseline=fb, async_fraction_target=ft)


def async_read_fraction(side: Any) -> float | None:
    # page reads only: a MyRocks SST read (file_class sst) is a block read, never read ahead by
    # InnoDB, and would dilute the fraction on a server running both engines
    rows = side.rec.query("SELECT api, sum(pages) FROM pages WHERE phase = ? AND op = 'read' "
                          "AND file_class IS DISTINCT FROM 'sst' GROUP BY api", [side.phase])
    total = sum(float(n or 0) for _, n in rows)
    if not total:
        return None
    return sum(float(n or 0) for api, n in rows if api in ("io_uring", "libaio")) / total


#: InnoDB's own files, and the storage files of the other engines a MySQL/MariaDB server can hold
#: (collectors/file_classes.py; the server's logs and temporary files are anyone's)
INNODB_FILE_CLASSES = frozenset(c.name for c in FILE_CLASSES if c.engine == "InnoDB")
OTHER_ENGINE_FILE_CLASSES = frozenset(c.name for c in FILE_CLASSES if c.storage and c.engine in
                                      ("MyRocks", "the Archive engine"))


def other_engine_only(e: Evidence) -> frozenset[str]:
    """The other engines' file classes the comparison's storage IO (of the metric's kind) went to,
    when none of it, on either side, went to InnoDB's files; empty otherwise. A MyRocks run on a
    server that also has InnoDB (every MariaDB does) then names no InnoDB mechanism as a candidate."""
    classes = {k[I_CLASS] for c in (e.base_contrib, e.target_contrib) for k, v in c.items() if v}
    if classes & INNODB_FILE_CLASSES:
        return frozenset()
    return frozenset(classes & OTHER_ENGINE_FILE_CLASSES)


def _of_innodb(f: Callable[[Evidence], dict[str, Any]]) -> Callable[[Evidence], dict[str, Any]]:
    """An InnoDB finding that is not_applicable when InnoDB did none of the IO compared."""
    @functools.wraps(f)
    def judged(e: Evidence) -> dict[str, Any]:
        out = f(e)
        other = other_engine_only(e)
        if other:
            out["verdict"] = "not_applicable"
            out.pop("moves", None)
            out["evidence"]["summary"] = (f"InnoDB did no storage {e.metric.op}s in either phase: they went to "
                                          f"another engine's files ({', '.join(sorted(other))})")
            out["evidence"]["engine_idle"] = "InnoDB"  # the text folds these into one line
        return out
    return judged


FINDINGS: tuple[Callable[[Evidence], dict[str, Any]], ...] = tuple(_of_innodb(f) for f in (
    clustered_lookups, change_buffer_merges, change_buffer_memory, working_set, log_rereads,
    readahead_waste, purge_reads, background_tasks, write_amplification, flush_storms, random_access,
    write_statement_reads,
))

#: what each finding means in a benchmarker's terms and the one thing to try next (the adapter's
#: `next_steps`; explain_text.NEXT_STEPS documents the form and fills the {name} fields)
NEXT_STEPS: dict[str, tuple[str, str]] = {
    "write_statement_reads": (
        "every insert reads the leaf page of each secondary index it changes (read before write) "
        "unless the change buffer takes the change, so more rows inserted means more reads",
        "compare innodb_change_buffering{buffering} with 'inserts' or 'all' (MariaDB 10.11 defaults to "
        "none; the change buffer is gone from 11.0 on), or drop the secondary indexes the queries do not use"),
    "random_access": (
        "reads that were sequential (read ahead in large asynchronous batches) became random "
        "single-page reads: fragmented indexes or lost read-ahead",
        "rebuild the fragmented table (OPTIMIZE TABLE / ALTER TABLE ... FORCE) and check "
        "innodb_read_ahead_threshold"),
    "working_set": (
        "the tables and indexes the statements touch no longer fit in the buffer pool, so index "
        "lookups that used to hit memory now wait for storage reads",
        "raise innodb_buffer_pool_size{pool} above {data}, or shrink that working set (fewer or "
        "narrower secondary indexes, older rows partitioned away)"),
    "clustered_lookups": (
        "queries on a secondary index also read the clustered (PRIMARY) index: for columns the index "
        "does not hold, or to check row visibility (MVCC) on pages changed after the reader's snapshot",
        "make the index covering (add the selected columns to it) so the query never visits PRIMARY, "
        "and keep transactions short so visibility checks stay in the secondary index"),
    "change_buffer_merges": (
        "buffered secondary-index changes are merged into their leaf pages, which first have to be "
        "read, by background threads and by the queries that need those pages",
        "try innodb_change_buffering=none{buffering_was} and compare reads per query and per insert"),
    "change_buffer_memory": (
        "the change buffer occupies buffer pool pages that the secondary indexes then miss",
        "lower innodb_change_buffer_max_size{max_size} (percent of the buffer pool), or turn "
        "innodb_change_buffering off"),
    "log_rereads": (
        "the redo log or binlog is read back from storage (buffered log IO whose pages the page "
        "cache dropped, or binlog readers)",
        "write the redo log with O_DIRECT: innodb_log_file_buffering=OFF (MariaDB 10.11), or "
        "innodb_flush_method=O_DIRECT; check what reads the binlog"),
    "readahead_waste": (
        "read-ahead brings in pages that are evicted before anyone uses them",
        "raise innodb_read_ahead_threshold{threshold} (fewer linear read-aheads) and keep "
        "innodb_random_read_ahead=OFF"),
    "purge_reads": (
        "purge reads undo logs and the index pages of deleted or updated rows; the larger the "
        "history list, the more it has to read back",
        "keep transactions short so the history list stays small, and give purge more threads "
        "(innodb_purge_threads) if it lags behind"),
    "background_tasks": (
        "InnoDB's own thread pool did the IO; chiefly the background statistics recalculation, "
        "which samples every index of a table once a tenth of its rows changed and writes "
        "mysql.innodb_table_stats and innodb_index_stats, so a phase it lands in reads more "
        "(and, in a small buffer pool, evicts pages the statements then read again)",
        "let the recalculation finish before the measured phases (it runs up to 10 s after the load; "
        "mysql.innodb_table_stats.last_update says when), or run with innodb_stats_auto_recalc=OFF"
        "{auto_recalc} and ANALYZE TABLE after loading"),
    "write_amplification": (
        "each page write is written twice (doublewrite buffer) and every commit writes the binlog",
        "measure with innodb_doublewrite=OFF on a test run (only where the storage has atomic page "
        "writes), and check sync_binlog / binlog_format"),
    "flush_storms": (
        "the checkpoint age nears the redo capacity, so the page cleaner flushes in bursts and "
        "statements wait for it",
        "raise the redo capacity (innodb_log_file_size{log_size}) and innodb_io_capacity to what the "
        "storage sustains"),
}

#: the {name} fields of the explain texts filled from InnoDB's settings (the adapter's
#: `advice_fields`): these texts' and the server's (write_statement_reads names the change buffer)
ADVICE_FIELDS: dict[str, AdviceField] = {
    "pool": AdviceField(("innodb_buffer_pool_size",), ("innodb_buffer_pool_size",), mib=True),
    "buffering": AdviceField(("innodb_change_buffering",), ("innodb_change_buffering",)),
    "buffering_was": AdviceField(("innodb_change_buffering",), ("innodb_change_buffering",), " (it is ", ")"),
    "max_size": AdviceField(("innodb_change_buffer_max_size_pct",), ("innodb_change_buffer_max_size",),
                            " (now ", "%)"),
    "threshold": AdviceField(("innodb_read_ahead_threshold",), ("innodb_read_ahead_threshold",)),
    "log_size": AdviceField((), ("innodb_redo_log_capacity", "innodb_log_file_size"), mib=True),
    "auto_recalc": AdviceField(("innodb_stats_auto_recalc",), ("innodb_stats_auto_recalc",), " (it is ", ")"),
}

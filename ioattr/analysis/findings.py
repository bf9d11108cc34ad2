"""The known causes of an IO change, each tested against the evidence.

Every finding computes its verdict from numbers it can show:
  supported       the cause accounts for a real part of the change, and the
                  engine's counters (where they exist) agree
  refuted         the evidence is there and says no
  inconclusive    the evidence needed is missing or points both ways
  not_applicable  the cause can't move this metric (e.g. write amplification
                  for a read metric)
Contributor keys are (index, level, stage, role, file_class, query).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ioattr.analysis import explain_math as em
from ioattr.model.dimensions import stage_mode

SUPPORT_SHARE = 0.15   # share of the change a cause must explain to be supported
MINOR_SHARE = 0.03     # below this (with evidence present) a cause is refuted

I_INDEX, I_LEVEL, I_STAGE, I_ROLE, I_CLASS, I_QUERY = range(6)
FINE_STAGES = ("parse", "optimize", "execute", "commit")


@dataclass
class Evidence:
    metric: Any            # explain.Metric
    base: Any              # explain.Side
    target: Any
    base_contrib: dict[tuple, float]
    target_contrib: dict[tuple, float]
    change: float
    gross: float = 0.0     # the gross change shares are over (explain_math.gross_change); 0: use change
    settings_base: dict[str, Any] = field(default_factory=dict)    # the server's settings (meta.json)
    settings_target: dict[str, Any] = field(default_factory=dict)

    # -- contributor arithmetic ------------------------------------------------
    def per_op(self, side: str, pred: Callable[[tuple], bool]) -> float:
        s = self.base if side == "base" else self.target
        c = self.base_contrib if side == "base" else self.target_contrib
        return sum(v for k, v in c.items() if pred(k)) / s.denominator

    def share(self, pred: Callable[[tuple], bool]) -> float | None:
        """The matching contributors' change over the gross change: at most 100% (explain_math)."""
        gross = self.gross or self.change
        if not gross:
            return None
        return em.share(self.per_op("target", pred) - self.per_op("base", pred), gross)

    def setting(self, name: str, side: str = "target") -> Any:
        """A server setting as recorded (None when not recorded)."""
        return (self.settings_target if side == "target" else self.settings_base).get(name)

    @property
    def connected(self) -> bool:
        """Whether the recorder was connected to the target's server (it recorded its settings)."""
        return bool(self.settings_target)

    @property
    def stage_modes(self) -> set[str | None]:
        return {stage_mode(self.base.rec.meta), stage_mode(self.target.rec.meta)}

    @property
    def has_queries(self) -> bool:
        """Whether the stage probes attributed IO to statements (and purge) at all."""
        return any(k[I_STAGE] is not None for c in (self.base_contrib, self.target_contrib) for k in c) \
            or any(m is not None for m in self.stage_modes)

    @property
    def has_stages(self) -> bool:
        """Whether parse/optimize/execute/commit were traced (--stages full) on both sides."""
        modes = self.stage_modes
        if "statement" in modes:
            return False
        return modes == {"full"} or any(k[I_STAGE] in FINE_STAGES
                                        for c in (self.base_contrib, self.target_contrib) for k in c)

    @property
    def has_roles(self) -> bool:
        return any(k[I_ROLE] for k in self.target_contrib)

    # -- counters -----------------------------------------------------------------
    def counter(self, side: str, *names: str) -> float | None:
        s = self.base if side == "base" else self.target
        return s.stats.counter(*names)

    def rate(self, side: str, num: tuple[str, ...], den: tuple[str, ...]) -> float | None:
        n, d = self.counter(side, *num), self.counter(side, *den)
        if n is None or not d:
            return None
        return n / d

    @property
    def reads(self) -> bool:
        return self.metric.op == "read"


def _f(id_: str, title: str, verdict: str, summary: str, **numbers: Any) -> dict[str, Any]:
    ev = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in numbers.items()}
    ev["summary"] = summary
    return {"id": id_, "title": title, "verdict": verdict, "evidence": ev}


def _by_share(share: float | None, *, evidence_present: bool = True) -> str:
    if share is None or not evidence_present:
        return "inconclusive"
    if share >= SUPPORT_SHARE:
        return "supported"
    if share < MINOR_SHARE:
        return "refuted"
    return "inconclusive"


def _absent(e: Evidence, what: str) -> str:
    """Why evidence is missing: the server was not connected, or it did not report it."""
    if not e.connected:
        return f"{what} unknown: recorded without a server connection"
    return f"the connected server reported no {what} in one of the phases"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"


# -- the findings ------------------------------------------------------------------

def clustered_lookups(e: Evidence) -> dict[str, Any]:
    title = "Secondary-index queries read the clustered index (non-covering lookups, MVCC visibility)"
    if not e.reads:
        return _f("clustered_lookups", title, "not_applicable", "a read cause; this metric counts writes")
    pred, secondary_queries, through = _lookups(e)
    share = e.share(pred)
    if not e.has_queries:
        primary = e.share(lambda k: bool(k[I_INDEX] and k[I_INDEX].endswith(".PRIMARY")))
        return _f("clustered_lookups", title, "inconclusive",
                  "without statement attribution (stage probes off) PRIMARY reads can't be tied to "
                  f"secondary-index queries; PRIMARY pages explain {_pct(primary)} of the gross change",
                  primary_share=primary)
    top = max(secondary_queries, key=lambda q: sum(v for k, v in e.target_contrib.items()
                                                   if k[I_QUERY] == q and pred(k)), default=None)
    return _f("clustered_lookups", title, _by_share(share),
              f"PRIMARY pages read by statements that also read a secondary index explain "
              f"{_pct(share)} of the gross change"
              + ("" if e.has_stages else " (per statement; stage not traced: --stages statement)")
              + (f"; rows of {', '.join(sorted(p[:-len('.PRIMARY')] for p in through))} were fetched through "
                 "secondary indexes (performance_schema), so their PRIMARY reads count too" if through else ""),
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
                         and not k[I_INDEX].startswith(("[", "innodb_system.")) and not _is_write_statement(k[I_QUERY])}
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
        return k[I_QUERY] in secondary_queries or (k[I_INDEX] in through and not _is_write_statement(k[I_QUERY]))

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
        return _f("change_buffer_merges", title, "inconclusive",
                  _absent(e, "change-buffer merge counters (INNODB_METRICS ibuf_merges)"),
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
    return _f("change_buffer_merges", title, verdict,
              f"merges per op {per_b if per_b is None else round(per_b, 4)} -> {round(per_t, 4)}; change-"
              f"buffer tree and background secondary-index reads explain {_pct(share)} of the gross change",
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
            return _f("change_buffer_memory", title, "inconclusive",
                      "recorded without a server connection: change-buffer and buffer pool sizes unknown")
        if str(buffering).lower() == "none":
            return _f("change_buffer_memory", title, "refuted",
                      "change buffering is off (innodb_change_buffering=none) and the server reported no "
                      "change-buffer size", **settings)
        return _f("change_buffer_memory", title, "inconclusive",
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
    crowded = (f"; other indexes' page reads (what crowding evicts) explain {_pct(other)} of the gross change, "
               f"the change buffer's own pages {_pct(own)}" if e.reads else "")
    return _f("change_buffer_memory", title, verdict,
              f"the change buffer holds {int(size_last)} of {int(pool)} buffer pool pages ({_pct(frac)}) at the end "
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
        if _is_write_statement(k[I_QUERY]) or k[I_STAGE] in ("optimize", "estimate"):
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
        return _f("working_set", title, "inconclusive", _absent(e, "buffer pool counters"))
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
                     f"{_pct(share)} of the gross change" + (f" ({', '.join(top)})" if top else ""))
    return _f("working_set", title, verdict, "; ".join(parts),
              share_of_change=share, indexes=", ".join(top) or None,
              miss_rate_baseline=rb, miss_rate_target=rt, ratio=ratio if ratio != float("inf") else None,
              evicted_per_op_target=evicted_per_op, tables_read=", ".join(tables) or None, data_bytes=data,
              pages_made_young=young, pages_made_not_young=not_young, innodb_buffer_pool_size=pool)


def log_rereads(e: Evidence) -> dict[str, Any]:
    title = "Redo log or binlog re-reads"
    if not e.reads:
        return _f("log_rereads", title, "not_applicable", "a read cause; this metric counts writes")

    def pred(k: tuple) -> bool:
        return k[I_CLASS] in ("redo_log", "binlog", "relay_log")

    t = e.per_op("target", pred)
    share = e.share(pred)
    verdict = "refuted" if t == 0 else _by_share(share)
    return _f("log_rereads", title, verdict,
              f"reads of redo/binlog files: {e.per_op('base', pred):.4f} -> {t:.4f} per op, "
              f"{_pct(share)} of the gross change", share_of_change=share, baseline_per_op=e.per_op("base", pred),
              target_per_op=t)


def readahead_waste(e: Evidence) -> dict[str, Any]:
    title = "Read-ahead waste (pages read ahead and evicted unused)"
    ra = e.counter("target", "status:Innodb_buffer_pool_read_ahead")
    ev = e.counter("target", "status:Innodb_buffer_pool_read_ahead_evicted")
    if ra is None or ev is None:
        return _f("readahead_waste", title, "inconclusive", _absent(e, "read-ahead counters"))
    waste = ev / ra if ra else 0.0
    ra_per_b = (e.counter("base", "status:Innodb_buffer_pool_read_ahead") or 0) / e.base.denominator
    ra_per_t = ra / e.target.denominator
    if ra == 0 or waste < 0.05:
        verdict = "refuted"
    elif waste >= 0.2 and ra_per_t > ra_per_b:
        verdict = "supported"
    else:
        verdict = "inconclusive"
    summary = (f"{int(ev)} of {int(ra)} read-ahead pages evicted unused ({_pct(waste)})" if ra
               else "no read-ahead in the target phase")
    return _f("readahead_waste", title, verdict, summary,
              read_ahead=ra, read_ahead_evicted=ev, waste=waste, read_ahead_per_op_baseline=ra_per_b,
              read_ahead_per_op_target=ra_per_t, innodb_read_ahead_threshold=e.setting("innodb_read_ahead_threshold"),
              innodb_random_read_ahead=e.setting("innodb_random_read_ahead"))


def purge_reads(e: Evidence) -> dict[str, Any]:
    title = "Purge and undo reads"

    def pred(k: tuple) -> bool:
        return k[I_ROLE] == "purge" or k[I_CLASS] == "undo"

    share = e.share(pred)
    hll_b = e.base.stats.counters.get("innodb_status_last:history_list_length")
    hll_t = e.target.stats.counters.get("innodb_status_last:history_list_length")
    present = e.has_queries or any(k[I_CLASS] == "undo" for k in e.target_contrib)
    return _f("purge_reads", title, _by_share(share, evidence_present=present),
              f"purge threads and undo tablespaces explain {_pct(share)} of the gross change"
              + ("" if present else " (purge can't be told apart without the stage probes)"),
              share_of_change=share, history_list_length_baseline=hll_b, history_list_length_target=hll_t)


def write_amplification(e: Evidence) -> dict[str, Any]:
    title = "Doublewrite and binlog write amplification"
    if e.reads:
        return _f("write_amplification", title, "not_applicable", "a write cause; this metric counts reads")

    def pred(k: tuple) -> bool:
        return k[I_CLASS] in ("doublewrite", "binlog")

    share = e.share(pred)
    frac = e.per_op("target", pred) / (sum(e.target_contrib.values()) / e.target.denominator or 1)
    verdict = "supported" if (share or 0) >= SUPPORT_SHARE or frac >= 0.3 else _by_share(share)
    return _f("write_amplification", title, verdict,
              f"doublewrite and binlog writes are {_pct(frac)} of the target's writes and "
              f"{_pct(share)} of the gross change", share_of_change=share, fraction_of_target=frac,
              innodb_doublewrite=e.setting("innodb_doublewrite"), log_bin=e.setting("log_bin"))


def flush_storms(e: Evidence) -> dict[str, Any]:
    title = "Checkpoint and flush storms"
    age = e.target.stats.counters.get("innodb_status_max:checkpoint_age")
    cap = e.target.stats.counters.get("status_last:Innodb_checkpoint_max_age")
    if not cap:  # the redo capacity the server was started with
        size = e.setting("innodb_redo_log_capacity") or e.setting("innodb_log_file_size")
        files = e.setting("innodb_log_files_in_group") if not e.setting("innodb_redo_log_capacity") else 1
        cap = size * (files if isinstance(files, int) and files > 0 else 1) if isinstance(size, int) else None
    bg = e.share(lambda k: k[I_ROLE] in ("page_cleaner",))
    if age is None or not cap:
        why = ("checkpoint age not reported by the server" if e.connected
               else "recorded without a server connection: checkpoint age and redo capacity unknown")
        return _f("flush_storms", title, "inconclusive", why, page_cleaner_share=bg, log_capacity=cap)
    frac = age / cap
    verdict = "supported" if frac >= 0.75 else ("refuted" if frac < 0.25 else "inconclusive")
    return _f("flush_storms", title, verdict,
              f"the checkpoint age reached {_pct(frac)} of the redo capacity in the target phase",
              checkpoint_age_max=age, log_capacity=cap, fraction=frac, page_cleaner_share=bg)


def estimate_traced(meta: dict) -> bool:
    """Whether a recording traced the optimizer's index dives as stage `estimate` (meta.json
    "estimate_stage", written since the dive probes exist; older recordings lack it)."""
    return bool(meta.get("estimate_stage"))


def estimate_calls(side: Any) -> float | None:
    """Index range estimates the optimizer made in a phase (the statements table's `estimates`:
    entries of the estimate stage, one per index whose ranges a statement estimated); None
    when the recording did not count them."""
    rec = side.rec
    if not estimate_traced(rec.meta) or not rec.has_table("statements"):
        return None
    if "estimates" not in {r[0] for r in rec.query("DESCRIBE statements")}:
        return None
    (n,), = rec.query("SELECT coalesce(sum(estimates), 0) FROM statements WHERE phase = ?", [side.phase])
    return float(n)


def optimizer_reads(e: Evidence) -> dict[str, Any]:
    """Reads the optimizer does before a query executes: index dives (records_in_range per
    range, under handler::multi_range_read_info_const), traced by default as stage `estimate`.
    With --stages full the rest of JOIN::optimize (stage `optimize`) counts too."""
    title = "Reads issued while queries are optimized (index dives estimating ranges)"
    if not e.reads:
        return _f("optimizer_reads", title, "not_applicable", "a read cause; this metric counts writes")
    if not e.has_queries:
        return _f("optimizer_reads", title, "inconclusive", "no stage attribution (stage probes off)")
    traced = [estimate_traced(s.rec.meta) for s in (e.base, e.target)]
    full = e.has_stages
    if not all(traced) and not full:
        which = " and ".join(n for n, t in (("baseline", traced[0]), ("target", traced[1])) if not t)
        return _f("optimizer_reads", title, "inconclusive",
                  f"the {which} recording has no estimate stage (recorded before ioattr traced the optimizer's "
                  "index dives by default, with --stages statement): record again, or with --stages full")
    stages = ("optimize", "estimate") if full else ("estimate",)

    def pred(k: tuple) -> bool:
        return k[I_STAGE] in stages

    def dive(k: tuple) -> bool:
        return k[I_STAGE] == "estimate"

    share = e.share(pred)
    base_po, target_po = e.per_op("base", pred), e.per_op("target", pred)
    # which indexes the dives read, in the target phase, most first (pages of no index, e.g. the
    # change-buffer bitmap InnoDB reads with a secondary-index page, are in the share, not named)
    by_index: dict[str, float] = {}
    for k, v in e.target_contrib.items():
        if dive(k) and v and k[I_INDEX] and not k[I_INDEX].startswith("["):
            by_index[k[I_INDEX]] = by_index.get(k[I_INDEX], 0.0) + v / e.target.denominator
    indexes = sorted(by_index.items(), key=lambda kv: -kv[1])
    # index estimates per query and reads per estimate, per side
    per: dict[str, dict[str, float | None]] = {}
    for side_name, side in (("baseline", e.base), ("target", e.target)):
        calls = estimate_calls(side) if all(traced) else None
        queries = side.stats.queries if e.metric.per != "query" else side.ops
        reads = sum(v for k, v in (e.base_contrib if side is e.base else e.target_contrib).items() if dive(k))
        per[side_name] = {"estimates": calls,
                          "per_query": calls / queries if calls is not None and queries else None,
                          "reads_per": reads / calls if calls else None}
    limit = e.setting("eq_range_index_dive_limit")
    unit = "reads" if e.metric.measure == "ops" else "bytes read"
    what = "index dives" + (" and the rest of JOIN::optimize" if full else "")
    parts = [f"{what} read {base_po:.4g} -> {target_po:.4g} per {e.metric.per}, "
             f"{_pct(share)} of the gross change"]
    if indexes:
        parts.append("dived into " + ", ".join(f"{n} ({v:.3g} {unit}/{e.metric.per})" for n, v in indexes[:4]))
    b, t = per["baseline"], per["target"]
    if t["per_query"] is not None:
        def _g(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.3g}"
        parts.append(f"index estimates (one per index a query's ranges were estimated in; each dives "
                     f"once per range) per query {_g(b['per_query'])} -> {_g(t['per_query'])}, "
                     f"{unit} per estimate {_g(b['reads_per'])} -> {_g(t['reads_per'])}")
    if limit is not None:
        parts.append(f"eq_range_index_dive_limit={limit}"
                     + (" (no limit: every equality range is dived)" if limit == 0 else
                        f" (IN lists of {limit}+ values use index statistics instead of dives)"))
    return _f("optimizer_reads", title, _by_share(share), "; ".join(parts),
              share_of_change=share, baseline_per_op=base_po, target_per_op=target_po,
              stages=", ".join(stages), indexes=", ".join(n for n, _ in indexes) or None,
              estimates_baseline=b["estimates"], estimates_target=t["estimates"],
              estimates_per_query_baseline=b["per_query"], estimates_per_query_target=t["per_query"],
              reads_per_estimate_baseline=b["reads_per"], reads_per_estimate_target=t["reads_per"],
              eq_range_index_dive_limit=limit, optimizer_switch=e.setting("optimizer_switch"))


WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def _is_write_statement(q: str | None) -> bool:
    return bool(q) and q.lstrip("( ").split(None, 1)[0].upper() in WRITE_VERBS


def write_statement_reads(e: Evidence) -> dict[str, Any]:
    """Reads done by the writes: an insert reads the leaf page of every secondary index it
    changes unless the change buffer takes the change. A per-query metric counts those reads
    too, so more inserts per query raise reads per query without any query reading more."""
    title = "Reads by inserts, updates and deletes maintaining indexes (read before write)"
    if not e.reads:
        return _f("write_statement_reads", title, "not_applicable", "a read cause; this metric counts writes")
    if not e.has_queries:
        return _f("write_statement_reads", title, "inconclusive",
                  "no statement attribution (stage probes off): reads can't be tied to write statements")

    def pred(k: tuple) -> bool:
        return _is_write_statement(k[I_QUERY])

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
    parts = [f"reads by write statements explain {_pct(share)} of the gross change "
             f"(secondary-index pages: {_pct(sec_share)}"
             + (f", {', '.join(indexes[:4])}" if indexes else "") + ")"]
    if e.metric.per == "query" and ipq_b is not None and ipq_t is not None:
        parts.append(f"rows inserted per query {ipq_b:.3g} -> {ipq_t:.3g}")
    if buffering is not None:
        parts.append(f"innodb_change_buffering={buffering}"
                     + (": every insert reads the secondary-index leaves it changes" if str(buffering).lower()
                        == "none" else ""))
    return _f("write_statement_reads", title, _by_share(share), "; ".join(parts),
              share_of_change=share, secondary_index_share=sec_share, indexes=", ".join(indexes) or None,
              baseline_per_op=e.per_op("base", pred), target_per_op=e.per_op("target", pred),
              inserts_per_query_baseline=ipq_b, inserts_per_query_target=ipq_t,
              innodb_change_buffering=buffering)


def random_access(e: Evidence) -> dict[str, Any]:
    title = "Sequential access became random (fragmentation, lost read-ahead)"
    if not e.reads:
        return _f("random_access", title, "not_applicable", "a read cause; this metric counts writes")
    fb = async_read_fraction(e.base)
    ft = async_read_fraction(e.target)
    if fb is None or ft is None:
        return _f("random_access", title, "inconclusive", "no page reads in one of the phases")
    if fb >= 0.2 and ft <= fb * 0.5 and e.change > 0:
        verdict = "supported"
    elif ft >= fb * 0.8:
        verdict = "refuted"
    else:
        verdict = "inconclusive"
    return _f("random_access", title, verdict,
              f"pages read ahead asynchronously: {_pct(fb)} -> {_pct(ft)} of page reads",
              async_fraction_baseline=fb, async_fraction_target=ft)


def async_read_fraction(side: Any) -> float | None:
    rows = side.rec.query("SELECT api, sum(pages) FROM pages WHERE phase = ? AND op = 'read' GROUP BY api",
                          [side.phase])
    total = sum(float(n or 0) for _, n in rows)
    if not total:
        return None
    return sum(float(n or 0) for api, n in rows if api in ("io_uring", "libaio")) / total


FINDINGS: tuple[Callable[[Evidence], dict[str, Any]], ...] = (
    clustered_lookups, change_buffer_merges, change_buffer_memory, working_set, log_rereads,
    readahead_waste, purge_reads, write_amplification, flush_storms, optimizer_reads, random_access,
    write_statement_reads,
)


def explained_share(f: dict[str, Any]) -> float | None:
    """The share of the change a finding accounts for, as its evidence says (None: not a share)."""
    ev = f.get("evidence") or {}
    for k in ("share_of_change", "primary_share"):
        if isinstance(ev.get(k), (int, float)):
            return float(ev[k])
    return None


def run_findings(e: Evidence, noise: str | None = None) -> list[dict[str, Any]]:
    """Every finding, ranked: by verdict, then by the share of the change each explains.

    noise: why the change is within noise (explain_math.noise_reason); then no finding is
    supported or refuted by it: each is inconclusive with that reason (not_applicable stays)."""
    out = []
    for f in FINDINGS:
        try:
            out.append(f(e))
        except Exception as ex:  # a finding that can't be computed is inconclusive, never a crash
            out.append({"id": f.__name__, "title": f.__name__.replace("_", " "), "verdict": "inconclusive",
                        "evidence": {"summary": f"could not be computed: {type(ex).__name__}: {ex}"}})
    if noise:
        for f in out:
            if f["verdict"] != "not_applicable":
                f["verdict"] = "inconclusive"
                f["evidence"]["summary"] = f"{noise} ({f['evidence'].get('summary', '')})"
    order = {"supported": 0, "inconclusive": 1, "refuted": 2, "not_applicable": 3}

    def rank(x: dict[str, Any]) -> tuple:
        sh = explained_share(x)
        return order[x["verdict"]], sh is None, -(sh or 0.0)

    return sorted(out, key=rank)

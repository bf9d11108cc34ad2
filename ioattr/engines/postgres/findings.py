"""The explain findings only PostgreSQL can test (the PostgreSQL adapter's "findings").

working_set         the blocks the statements use no longer fit in shared_buffers: pg_stat_database's
                    blks_read / (blks_read + blks_hit) rose, and our relation reads by the connections
                    explain the change; shared_buffers of each side named (a sweep changes it).
checkpoint_writes   a checkpoint wrote the dirty shared buffers: the checkpointer's writes (our
                    role, exact per process) explain the change, and PostgreSQL's own
                    pg_stat_bgwriter buffers_checkpoint (the counters table) moved with them.
full_page_writes    after a checkpoint the first change to each page logs the whole page (a
                    full-page image, FPI) into WAL, so WAL bytes per row jump: our WAL-class
                    writes explain the change, and pg_stat_wal's wal_fpi per row rose with them.
heap_fetches        index-only scans that read the heap: a page whose visibility-map bit is not
                    set (rows changed since the last VACUUM) must be visited to check each
                    tuple's visibility. Our heap-relation reads by statements that also read an
                    index explain the change, and pg_statio heap_blks_read+hit per query rose (the
                    evidence of index-only scans: plain index scans visit the heap alike on both sides).
autovacuum          vacuum's IO explains the change: autovacuum workers' (their role) and VACUUM /
                    ANALYZE statements', per relation.
planning_reads      reads while queries are planned (stage optimize) that the execution would not
                    have done: index-end probes for constants outside the histogram, catalog
                    lookups (planning.py).

explain runs them on recordings of a PostgreSQL server only (EngineAdapter.recorded_in); each is
still not_applicable where PostgreSQL's counters are missing (a recording listing no servers).
"""
from __future__ import annotations

from typing import Any, Callable

from ioattr.model.evidence import (I_CLASS, I_INDEX, I_QUERY, I_ROLE, I_STAGE, MINOR_SHARE, Evidence,
                                       by_share, finding, is_write_statement, pct)
from ioattr.engines.base import AdviceField
from ioattr.engines.postgres.planning import NEXT_STEP as PLANNING_NEXT_STEP, planning_reads, relation_kinds

BUFFERS_CHECKPOINT = "pg_stat_bgwriter:buffers_checkpoint"
CHECKPOINTS = ("pg_stat_bgwriter:checkpoints_timed", "pg_stat_bgwriter:checkpoints_req")


def _per(e: Evidence, side: str, name: str) -> float | None:
    s = e.base if side == "base" else e.target
    v = s.stats.counter(name)
    return None if v is None or not s.denominator else v / s.denominator


def _write_cause_not_applicable(e: Evidence, fid: str, title: str, counter: str) -> dict[str, Any] | None:
    """The finding of a write cause tested against a PostgreSQL counter ("view:column") where it
    cannot apply: neither side recorded the counter's view, or the metric counts reads."""
    if e.target.stats.counter(counter) is None and e.base.stats.counter(counter) is None:
        view = counter.split(":", 1)[0]
        return finding(fid, title, "not_applicable", f"no PostgreSQL server's {view} in this recording")
    if e.reads:
        return finding(fid, title, "not_applicable", "a write cause; this metric counts reads")
    return None


def checkpoint_writes(e: Evidence) -> dict[str, Any]:
    title = "Checkpoints wrote the dirty shared buffers (PostgreSQL)"
    fid = "checkpoint_writes"
    if (na := _write_cause_not_applicable(e, fid, title, BUFFERS_CHECKPOINT)) is not None:
        return na
    share = e.share(lambda k: k[I_ROLE] == "checkpointer")
    base, target = _per(e, "base", BUFFERS_CHECKPOINT), _per(e, "target", BUFFERS_CHECKPOINT)
    checkpoints = sum(e.target.stats.counter(n) or 0.0 for n in CHECKPOINTS)
    verdict = by_share(share, evidence_present=e.has_roles)
    counters_rose = base is not None and target is not None and target > base
    if verdict == "supported" and not counters_rose:
        verdict = "inconclusive"  # our checkpointer role and PostgreSQL's own count disagree
    unit = e.target.unit
    return finding(fid, title, verdict,
                   f"the checkpointer's writes explain {pct(share)} of the gross change; PostgreSQL's "
                   f"buffers_checkpoint went from {_g(base)} to {_g(target)} per {unit} "
                   f"({checkpoints:g} checkpoint(s) completed in the target phase)",
                   share_of_change=share, baseline_per_op=e.per_op("base", lambda k: k[I_ROLE] == "checkpointer"),
                   target_per_op=e.per_op("target", lambda k: k[I_ROLE] == "checkpointer"),
                   buffers_checkpoint_base=base, buffers_checkpoint_target=target,
                   checkpoints_target=checkpoints)


def _g(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4g}"


WAL_FPI, WAL_BYTES, WAL_RECORDS = "pg_stat_wal:wal_fpi", "pg_stat_wal:wal_bytes", "pg_stat_wal:wal_records"
FPI_RISE = 1.5   # wal_fpi per op must rise by this factor (and from nothing counts) to back the WAL's share
FPI_PART_MIN = 0.1   # below this share of the WAL's growth, page images are not its cause
PAGE = 8192


def _wal_write_bytes(side: Any) -> float | None:
    """Our syscall-layer writes to WAL segments in a phase, in bytes (file class `wal`)."""
    rows = side.rec.query("SELECT coalesce(sum(bytes), 0) FROM io WHERE phase = ? AND layer = 'syscall' "
                          "AND op = 'write' AND file_class = 'wal'", [side.phase])
    return float(rows[0][0]) if rows else None


def _pg_setting(e: Evidence, name: str) -> Any:
    """A PostgreSQL cluster's setting in the target's recording (meta.json servers[].settings,
    server.PostgresServer; Evidence.setting reads a MySQL server's), else the server settings."""
    for srv in e.target.rec.meta.get("servers") or []:
        if isinstance(srv, dict) and isinstance(srv.get("settings"), dict) and name in srv["settings"]:
            return srv["settings"][name]
    return e.setting(name)


def _checkpoints_between(e: Evidence) -> float | None:
    """Checkpoints PostgreSQL completed after the baseline phase ended, up to the end of the
    target (pg_stat_bgwriter's cumulative counts at each phase's last snapshot), when both phases
    are of one recording and the target comes later; None otherwise."""
    if e.base.rec is not e.target.rec:  # run vs run (--against): no "between"
        return None
    has_table = getattr(e.target.rec, "has_table", None)
    if has_table is not None and not has_table("counters"):
        return None
    rows = e.target.rec.query(
        "SELECT phase, coalesce(pid, 0), name, max(value) FROM counters WHERE source = 'pg_stat_bgwriter' "
        "AND name IN ('checkpoints_timed', 'checkpoints_req') AND phase IN (?, ?) GROUP BY ALL",
        [e.base.phase, e.target.phase])
    last = {(ph, pid, n): float(v) for ph, pid, n, v in rows if v is not None}
    keys = {(pid, n) for _, pid, n in last}
    if not keys or any((e.base.phase, *k) not in last or (e.target.phase, *k) not in last for k in keys):
        return None
    between = sum(last[(e.target.phase, *k)] - last[(e.base.phase, *k)] for k in keys)
    return between if between >= 0 else None


def full_page_writes(e: Evidence) -> dict[str, Any]:
    """More WAL per row because pages were first changed after a checkpoint: each logs a full
    page image (full_page_writes=on, the default, protects against torn pages), so a phase that
    follows a checkpoint writes up to 8 KiB more WAL per page it touches than one whose pages
    were already changed since the last checkpoint."""
    title = "Full-page writes after a checkpoint inflate WAL (PostgreSQL)"
    fid = "full_page_writes"
    if (na := _write_cause_not_applicable(e, fid, title, WAL_FPI)) is not None:
        return na

    def wal(k: tuple) -> bool:
        return k[I_CLASS] == "wal"

    wal_share = e.share(wal)
    fpi_b, fpi_t = _per(e, "base", WAL_FPI), _per(e, "target", WAL_FPI)
    wb_b, wb_t = _per(e, "base", WAL_BYTES), _per(e, "target", WAL_BYTES)
    rec_b, rec_t = _per(e, "base", WAL_RECORDS), _per(e, "target", WAL_RECORDS)
    ours = {side: _wal_write_bytes(s) for side, s in (("base", e.base), ("target", e.target))}
    ours_b = None if ours["base"] is None or not e.base.denominator else ours["base"] / e.base.denominator
    ours_t = None if ours["target"] is None or not e.target.denominator else ours["target"] / e.target.denominator
    between = _checkpoints_between(e)
    fpw = _pg_setting(e, "full_page_writes")
    # how much of the growth in WAL bytes inserted (pg_stat_wal's own) the extra page images can
    # be: at most a page each (the hole in the middle of a page is left out of its image)
    fpi_part = None
    if None not in (fpi_b, fpi_t, wb_b, wb_t) and wb_t > wb_b:
        fpi_part = max(min((fpi_t - fpi_b) * PAGE / (wb_t - wb_b), 1.0), 0.0)
    share = None if wal_share is None else wal_share * (fpi_part if fpi_part is not None else 1.0)
    if fpi_b is None or fpi_t is None:
        verdict = "inconclusive"  # one phase has no pg_stat_wal (an older server on one side)
    elif str(fpw).lower() == "off" or fpi_t <= fpi_b * 1.1 or fpi_t == 0:
        verdict = "refuted"        # FPIs per row flat: no checkpoint fell before the target's changes
    elif fpi_part is not None and fpi_part < FPI_PART_MIN:
        verdict = "refuted"        # WAL grew, by more than page images can be (wider rows, more records)
    else:
        verdict = by_share(share)
        if verdict == "supported" and not fpi_t >= max(fpi_b * FPI_RISE, 1e-12):
            verdict = "inconclusive"
    unit = e.target.unit
    fpi_bytes = None if fpi_t is None or not wb_t else min(fpi_t * PAGE / wb_t, 1.0)
    return finding(fid, title, verdict,
                   f"WAL writes explain {pct(wal_share)} of the gross change, page images at most "
                   f"{pct(fpi_part)} of the WAL's growth, so {pct(share)} of it; full-page images (pg_stat_wal "
                   f"wal_fpi) {_g(fpi_b)} -> {_g(fpi_t)} per {unit}, WAL bytes inserted {_g(wb_b)} -> {_g(wb_t)} "
                   f"per {unit} (FPIs at most {pct(fpi_bytes)} of them in the target), our WAL bytes written "
                   f"{_g(ours_b)} -> {_g(ours_t)} per {unit}; {_g(between)} checkpoint(s) completed after the "
                   f"baseline, by the target's end; full_page_writes={fpw if fpw is not None else 'n/a'}",
                   share_of_change=share, wal_share=wal_share, fpi_part_of_wal_growth=fpi_part,
                   baseline_per_op=e.per_op("base", wal), target_per_op=e.per_op("target", wal),
                   wal_fpi_per_op_baseline=fpi_b, wal_fpi_per_op_target=fpi_t,
                   wal_bytes_per_op_baseline=wb_b, wal_bytes_per_op_target=wb_t,
                   wal_records_per_op_baseline=rec_b, wal_records_per_op_target=rec_t,
                   wal_write_bytes_per_op_baseline=ours_b, wal_write_bytes_per_op_target=ours_t,
                   checkpoints_between=between, full_page_writes=fpw)


def _statio_sum(e: Evidence, side: str, tables: set[str], columns: tuple[str, ...]) -> float | None:
    """pg_statio columns summed over tables, per op of the side; None when none was recorded."""
    s = e.base if side == "base" else e.target
    vals = [s.stats.counter(f"pg_statio:{t}:{c}") for t in tables for c in columns]
    if not s.denominator or all(v is None for v in vals):
        return None
    return sum(v or 0.0 for v in vals) / s.denominator


VISITS_RISE = 1.25   # heap blocks visited per op must rise by this factor to show index-only scans' heap visits
VISITS_FLAT = 1.1    # at most this factor: the same heap visits (no index-only scan started visiting the heap)


def heap_fetches(e: Evidence) -> dict[str, Any]:
    """Index-only scans that read the heap: a tuple on a page not marked all-visible in the
    visibility map must be checked in the heap, so an index-only scan over rows changed since the
    last VACUUM reads heap pages it would otherwise skip (EXPLAIN ANALYZE's "Heap Fetches")."""
    title = "Index-only scans read the heap (visibility map not set since the last VACUUM; PostgreSQL)"
    fid = "heap_fetches"
    if not any(k.startswith(("pg_statio:", "pg_stat_database:")) for s in (e.base, e.target)
               for k in s.stats.counters):
        return finding(fid, title, "not_applicable", "no PostgreSQL server's counters in this recording")
    if not e.reads:
        return finding(fid, title, "not_applicable", "a read cause; this metric counts writes")
    # PostgreSQL's statements come from the wire with no stage (Evidence.has_queries asks for stages)
    if not any(k[I_QUERY] for c in (e.base_contrib, e.target_contrib) for k in c):
        return finding(fid, title, "inconclusive",
                       "no statement attribution: heap reads can't be tied to the queries that read an index")
    # system catalogs are looked up by plain index scans (the syscache), never index-only ones:
    # their heap reads are no visibility-map miss
    kinds = {r: k for r, k in relation_kinds(e).items() if r.split(".")[1:2] not in (["pg_catalog"], ["pg_toast"])
             and not r.startswith("pg_global.")}
    # read statements that read some index's pages in either phase (an index-only scan's index
    # reads may all be cached in one of them)
    idx_queries = {k[I_QUERY] for c in (e.base_contrib, e.target_contrib) for k in c
                   if k[I_QUERY] and kinds.get(k[I_INDEX] or "") == "index" and not is_write_statement(k[I_QUERY])}

    # reads while planning (stage optimize) are the planner's index-end probes, no scan's (planning_reads)
    def heap(k: tuple) -> bool:
        return (k[I_QUERY] in idx_queries and kinds.get(k[I_INDEX] or "") == "table" and k[I_CLASS] == "relation"
                and k[I_STAGE] != "optimize")

    def index(k: tuple) -> bool:
        return k[I_QUERY] in idx_queries and kinds.get(k[I_INDEX] or "") == "index" and k[I_STAGE] != "optimize"

    share = e.share(heap)
    heap_b, heap_t = e.per_op("base", heap), e.per_op("target", heap)
    idx_b, idx_t = e.per_op("base", index), e.per_op("target", index)
    tables = {k[I_INDEX] for c in (e.base_contrib, e.target_contrib) for k in c if heap(k)}
    by_table = sorted(((t, sum(v for k, v in e.target_contrib.items() if heap(k) and k[I_INDEX] == t))
                       for t in tables), key=lambda tv: -tv[1])
    cols = ("heap_blks_read", "heap_blks_hit")
    sr_b, sr_t = _statio_sum(e, "base", tables, cols[:1]), _statio_sum(e, "target", tables, cols[:1])
    sa_b, sa_t = _statio_sum(e, "base", tables, cols), _statio_sum(e, "target", tables, cols)
    # The evidence of index-only scans losing the visibility map: the heap blocks the queries visit
    # (pg_statio heap_blks_read + hit per op) rise. A plain index scan (pgbench -S selects a column
    # no index holds) visits the heap once per row on both sides: its heap reads rise only because
    # fewer heap blocks stay in shared buffers (working_set), at the same visits.
    visits_rose = sa_b is not None and sa_t is not None and sa_t > max(sa_b * VISITS_RISE, 1e-9)
    visits_flat = bool(sa_b) and sa_t is not None and sa_t <= sa_b * VISITS_FLAT
    if heap_t <= heap_b or (share is not None and share < MINOR_SHARE):
        verdict = "refuted"   # the heap reads of index-reading queries did not rise
    elif visits_flat:
        verdict = "refuted"   # as many heap visits per op: no index-only scan started visiting the heap
    else:
        verdict = by_share(share)
        if verdict == "supported" and not visits_rose:
            verdict = "inconclusive"   # PostgreSQL's own heap block count per query disagrees
    unit = e.target.unit
    what = "reads" if e.metric.measure == "ops" else "bytes read"
    parts = [f"heap pages read by queries that also read an index: {_g(heap_b)} -> {_g(heap_t)} {what} per {unit}, "
             f"{pct(share)} of the gross change (their index pages: {_g(idx_b)} -> {_g(idx_t)})"]
    if by_table:
        parts.append("tables " + ", ".join(f"{t} ({v / e.target.denominator:.3g})" for t, v in by_table[:4]))
    parts.append(f"pg_statio heap_blks_read {_g(sr_b)} -> {_g(sr_t)}, heap_blks_read+hit {_g(sa_b)} -> {_g(sa_t)} "
                 f"per {unit}")
    if visits_flat and not heap_t <= heap_b:
        parts.append("the queries visit as many heap blocks per op on both sides (plain index scans, or index-only "
                     "scans whose visibility did not change): more of those visits missed shared buffers")
    else:
        parts.append("VACUUM (or autovacuum) sets the visibility map: until then an index-only scan visits the heap "
                     "for every tuple on a page changed since")
    return finding(fid, title, verdict, "; ".join(parts),
                   share_of_change=share, baseline_per_op=heap_b, target_per_op=heap_t,
                   index_per_op_baseline=idx_b, index_per_op_target=idx_t,
                   tables=", ".join(t for t, _ in by_table) or None,
                   heap_blks_read_per_op_baseline=sr_b, heap_blks_read_per_op_target=sr_t,
                   heap_blks_per_op_baseline=sa_b, heap_blks_per_op_target=sa_t)


MISS_RISE = 1.25     # the shared-buffer miss ratio must rise by this factor (and MISS_STEP) for a working set
MISS_STEP = 0.005
MISS_FLAT = 1.1      # at most this factor: the blocks stay cached as much as before
MISSES_BOTH = 0.1    # a miss ratio at least this on both sides: the working set is larger on both


def _server_setting(side: Any, name: str) -> Any:
    """A PostgreSQL cluster's setting in one side's recording (meta.json servers[].settings)."""
    for srv in side.rec.meta.get("servers") or []:
        if isinstance(srv, dict) and isinstance(srv.get("settings"), dict) and name in srv["settings"]:
            return srv["settings"][name]
    return None


def _mib(v: Any) -> str:
    return f"{v / 2**20:.0f} MiB" if isinstance(v, (int, float)) else "n/a"


def working_set(e: Evidence) -> dict[str, Any]:
    """The blocks the statements use no longer fit in shared_buffers: as many blocks are asked
    for per op (pg_stat_database blks_hit + blks_read), a larger part of them misses (blks_read),
    and each miss is a pread of an 8 KiB block (from the page cache, or storage)."""
    title = "Working set larger than shared_buffers (PostgreSQL: blks_read against blks_hit)"
    fid = "working_set"
    reads = {side: e.counter(side, "pg_stat_database:blks_read") for side in ("base", "target")}
    hits = {side: e.counter(side, "pg_stat_database:blks_hit") for side in ("base", "target")}
    if all(v is None for v in (*reads.values(), *hits.values())):
        return finding(fid, title, "not_applicable", "no PostgreSQL server's pg_stat_database in this recording")
    if not e.reads:
        return finding(fid, title, "not_applicable", "a read cause; this metric counts writes")
    sb = {side: _server_setting(s, "shared_buffers") for side, s in (("base", e.base), ("target", e.target))}
    changed = sb["base"] is not None and sb["target"] is not None and sb["base"] != sb["target"]
    settings = {"shared_buffers_baseline": sb["base"], "shared_buffers_target": sb["target"],
                "shared_buffers": sb["target"], "setting_changed": changed}
    if any(reads[s] is None or hits[s] is None for s in reads):
        return finding(fid, title, "inconclusive", "pg_stat_database blks_read/blks_hit missing in one of the phases",
                       **settings)
    asked = {s: reads[s] + hits[s] for s in reads}
    miss = {s: reads[s] / asked[s] if asked[s] else None for s in reads}
    per = {s: (e.base if s == "base" else e.target).denominator for s in reads}
    read_po = {s: reads[s] / per[s] if per[s] else None for s in reads}
    asked_po = {s: asked[s] / per[s] if per[s] else None for s in reads}

    def demand(k: tuple) -> bool:  # relation blocks the statements' own backends read (not while
        # planning: the planner's reads are planning_reads')
        return k[I_CLASS] == "relation" and k[I_ROLE] in ("connection", None) and k[I_STAGE] != "optimize"

    share = e.share(demand)
    mb, mt = miss["base"], miss["target"]
    both = mb is not None and mt is not None and mb >= MISSES_BOTH and mt >= MISSES_BOTH
    if mb is None or mt is None:
        verdict = "inconclusive"   # a phase asked shared buffers for nothing
    elif mt <= mb * MISS_FLAT or mt - mb < MISS_STEP:
        verdict = "refuted"        # the blocks stay cached as much as before
    elif mt >= mb * MISS_RISE:
        verdict = by_share(share)
    else:
        verdict = "inconclusive"
    by_rel: dict[str, float] = {}
    for k, v in e.target_contrib.items():
        if demand(k) and v and k[I_INDEX]:
            by_rel[k[I_INDEX]] = by_rel.get(k[I_INDEX], 0.0) + v / e.target.denominator
    rels = sorted(by_rel.items(), key=lambda kv: -kv[1])
    unit = e.target.unit
    parts = [f"shared buffers missed {pct(mb)} -> {pct(mt)} of the blocks asked for (pg_stat_database "
             f"blks_read / (blks_read + blks_hit)): {_g(read_po['base'])} -> {_g(read_po['target'])} blocks read "
             f"of {_g(asked_po['base'])} -> {_g(asked_po['target'])} asked for per {unit}",
             f"shared_buffers {_mib(sb['base'])} -> {_mib(sb['target'])}"
             + (" (changed)" if changed else ""),
             f"relation reads by the connections explain {pct(share)} of the gross change"]
    if rels:
        parts.append("read most: " + ", ".join(f"{r} ({v:.3g}/{unit})" for r, v in rels[:4]))
    if both and verdict == "refuted":
        parts.append("the working set is larger than shared_buffers on both sides")
    return finding(fid, title, verdict, "; ".join(parts),
                   mirror="The working set fits shared_buffers better (PostgreSQL: fewer blks_read per blks_hit)",
                   share_of_change=share, baseline_per_op=e.per_op("base", demand),
                   target_per_op=e.per_op("target", demand), miss_ratio_baseline=mb, miss_ratio_target=mt,
                   blks_read_per_op_baseline=read_po["base"], blks_read_per_op_target=read_po["target"],
                   blks_asked_per_op_baseline=asked_po["base"], blks_asked_per_op_target=asked_po["target"],
                   relations=", ".join(r for r, _ in rels) or None, holds_in_both=both, **settings)


#: the statements that vacuum or analyze: their IO is vacuum's as an autovacuum worker's is
VACUUM_VERBS = ("VACUUM", "ANALYZE", "ANALYSE")


def is_vacuum(k: tuple) -> bool:
    """A contributor that is vacuum's: an autovacuum worker's IO (role autovacuum_worker, from
    its process title), or a VACUUM or ANALYZE statement's."""
    if k[I_ROLE] == "autovacuum_worker":
        return True
    words = k[I_QUERY].lstrip("( ").split(None, 1) if isinstance(k[I_QUERY], str) else []
    return bool(words) and words[0].rstrip(";").upper() in VACUUM_VERBS


def autovacuum(e: Evidence) -> dict[str, Any]:
    """Vacuum's IO: autovacuum workers (role autovacuum_worker, from their process titles) and
    VACUUM / ANALYZE statements read and write the relations they vacuum or analyze (the heap,
    its indexes, the visibility map and free space map), beside the benchmark's statements: a
    phase they fall in does more IO per op without any other statement doing more. Per relation:
    which ones vacuum read and wrote."""
    title = "Vacuum did the IO: autovacuum workers and VACUUM (PostgreSQL)"
    fid = "autovacuum"
    if not any(k.startswith(("pg_statio:", "pg_stat_database:")) for s in (e.base, e.target)
               for k in s.stats.counters):
        return finding(fid, title, "not_applicable", "no PostgreSQL server's counters in this recording")

    worker = is_vacuum

    share = e.share(worker)
    top = e.by_object(worker)
    unit = e.target.unit
    base_po, target_po = e.per_op("base", worker), e.per_op("target", worker)
    verdict = by_share(share, evidence_present=e.has_roles)
    what = "reads" if e.metric.op == "read" else "writes"
    by_role = {"autovacuum workers": 0.0, "VACUUM/ANALYZE statements": 0.0}
    for k, v in e.target_contrib.items():
        if worker(k) and v:
            by_role["autovacuum workers" if k[I_ROLE] == "autovacuum_worker" else "VACUUM/ANALYZE statements"] += v
    who = [w for w, v in by_role.items() if v] or ["autovacuum workers", "VACUUM/ANALYZE statements"]
    parts = [f"{' and '.join(who)}' {what}: {_g(base_po)} -> {_g(target_po)} per {unit}, "
             f"{pct(share)} of the gross change"]
    if top:
        parts.append("of " + ", ".join(f"{r} ({v:.3g}/{unit})" for r, v in top[:4]))
    av = _pg_setting(e, "autovacuum")
    if av is not None:
        parts.append(f"autovacuum={av}")
    return finding(fid, title, verdict, "; ".join(parts),
                   mirror="Less vacuum IO (PostgreSQL)",
                   share_of_change=share, baseline_per_op=base_po, target_per_op=target_po,
                   relations=", ".join(r for r, _ in top) or None, autovacuum_setting=av,
                   per_relation={r: float(f"{v:.4g}") for r, v in top},
                   autovacuum_workers_share=_part(by_role["autovacuum workers"], by_role),
                   vacuum_statements_share=_part(by_role["VACUUM/ANALYZE statements"], by_role))


def _part(v: float, parts: dict[str, float]) -> float | None:
    """v's share of the parts' total (None: nothing)."""
    total = sum(parts.values())
    return round(v / total, 4) if total else None


FINDINGS: tuple[Callable[[Evidence], dict[str, Any]], ...] = (
    working_set, checkpoint_writes, full_page_writes, heap_fetches, autovacuum, planning_reads)

#: what each finding means and the one thing to try next (the adapter's next_steps)
NEXT_STEPS: dict[str, tuple[str, str]] = {
    "planning_reads": PLANNING_NEXT_STEP,
    "working_set": (
        "the tables and indexes the statements touch no longer fit in shared_buffers, so blocks that "
        "stayed in shared buffers are read again (an 8 KiB pread each, from the page cache or storage)",
        "raise shared_buffers{shared_buffers} above {data} (a restart), or shrink that working set; "
        "pg_prewarm loads it after a restart"),
    "autovacuum": (
        "autovacuum workers vacuum and analyze the tables whose changed rows passed their thresholds, "
        "reading and writing those relations beside the benchmark's statements",
        "VACUUM (ANALYZE) the tables before the measured phase, or compare phases that autovacuum "
        "falls in alike; autovacuum_vacuum_cost_limit and autovacuum_naptime pace it"),
    "checkpoint_writes": (
        "a checkpoint (every checkpoint_timeout, when max_wal_size worth of WAL was written, or "
        "a CHECKPOINT) writes every dirty shared buffer, so the phase it falls in writes far more",
        "spread checkpoints out: raise max_wal_size and checkpoint_timeout, keep "
        "checkpoint_completion_target near 0.9, and compare phases that each contain whole checkpoints"),
    "full_page_writes": (
        "after each checkpoint the first change to a page writes the whole 8 KiB page into WAL "
        "(full_page_writes protects against torn pages), so WAL per row is highest right after a checkpoint "
        "and for changes spread over many pages",
        "checkpoint less often (raise max_wal_size and checkpoint_timeout), set wal_compression to "
        "compress the page images, or touch fewer distinct pages per row (fewer random-key indexes)"),
    "heap_fetches": (
        "an index-only scan skips the heap only for pages the visibility map marks all-visible; "
        "VACUUM (or autovacuum) sets the visibility map, and every change to a page clears its bit",
        "VACUUM the table (or make autovacuum visit it sooner: lower autovacuum_vacuum_scale_factor "
        "and autovacuum_vacuum_insert_scale_factor for it); EXPLAIN (ANALYZE) shows the Heap Fetches"),
}

#: the {name} fields of PostgreSQL's texts (the adapter's advice_fields)
ADVICE_FIELDS: dict[str, AdviceField] = {
    "shared_buffers": AdviceField(("shared_buffers",), ("shared_buffers",), mib=True),
}

"""The known causes of an IO change, each tested against the evidence (ioattr.model.evidence).

The MySQL/MariaDB server's findings are here (the optimizer's index dives); each engine adapter
brings the ones only it can test (EngineAdapter.findings, e.g. ioattr/engines/innodb/findings.py),
run first, in its order. A comparison runs the findings of the engines its recordings traced
(EngineAdapter.recorded_in): a PostgreSQL recording never gets InnoDB's.
"""
from __future__ import annotations

from typing import Any, Callable

from ioattr.analysis import direction, dives
from ioattr.analysis.direction import explained_share
from ioattr.model.evidence import I_INDEX, I_STAGE, Evidence, by_share, finding, pct
from ioattr.engines import registry
from ioattr.model.dimensions import engine_label, native_engine
from ioattr.engines.base import EngineAdapter

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
        return finding("optimizer_reads", title, "not_applicable", "a read cause; this metric counts writes")
    if not e.has_queries:
        return finding("optimizer_reads", title, "inconclusive", "no stage attribution (stage probes off)")
    # an engine's own server (PostgreSQL) has no index dives to trace: its side counts none
    engines = {n: native_engine(s.rec.meta) for n, s in (("baseline", e.base), ("target", e.target))}
    traced = [estimate_traced(s.rec.meta) or engines[n] is not None for n, s in (("baseline", e.base),
                                                                               ("target", e.target))]
    full = e.has_stages
    if not any(estimate_traced(s.rec.meta) for s in (e.base, e.target)) and all(engines.values()):
        return finding("optimizer_reads", title, "not_applicable",
                       f"{' and '.join(sorted({engine_label(s.rec.meta) for s in (e.base, e.target)}))} "
                       "has no index-dive stage (the optimizer's range estimates of MySQL/MariaDB)")
    if not all(traced) and not full:
        which = " and ".join(n for n, t in (("baseline", traced[0]), ("target", traced[1])) if not t)
        return finding("optimizer_reads", title, "inconclusive",
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
    # extra IO, not moved IO (ioattr.analysis.dives): only the pages the execution did not need count
    sp = dives.split(e.base_contrib, e.target_contrib, e.base.denominator, e.target.denominator, e.gross or e.change)
    parts = [f"{what} read {base_po:.4g} -> {target_po:.4g} per {e.metric.per}, "
             f"{pct(share)} of the gross change"]
    parts += [f"the {n} is {engine_label(s.rec.meta)}, which has no index-dive stage: it counts none"
              for n, s in (("baseline", e.base), ("target", e.target)) if engines[n] is not None]
    why_added = [x for x in (
        f"into indexes the statements' execution did not read: {', '.join(sp.unused[:4])}" if sp.unused else "",
        f"LIMIT range ends not scanned: {', '.join(sp.limited[:4])}" if sp.limited else "") if x]
    parts.append(f"added (pages the execution did not need{': ' + '; '.join(why_added) if why_added else ''}) "
                 f"{sp.added_base:.4g} -> {sp.added_target:.4g}, {pct(sp.added_share)}; moved (pages of the "
                 f"plan's index the execution then read from the engine's cache) {sp.moved_base:.4g} -> "
                 f"{sp.moved_target:.4g}, {pct(sp.moved_share)} (told per statement and index: no page numbers "
                 f"per stage are recorded)")
    if by_share(share) == "supported" and by_share(sp.added_share) != "supported":
        parts.append("moved IO, not extra: without the dives the execution would read the same pages")
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
    return finding("optimizer_reads", title, by_share(sp.added_share), "; ".join(parts),
              mirror="Fewer reads while queries are optimized (index dives)",
              share_of_change=sp.added_share, dives_share=share, added_baseline_per_op=sp.added_base,
              added_target_per_op=sp.added_target, moved_baseline_per_op=sp.moved_base,
              moved_target_per_op=sp.moved_target, moved_share=sp.moved_share,
              unused_indexes=", ".join(sp.unused) or None, limit_indexes=", ".join(sp.limited) or None,
              baseline_per_op=base_po, target_per_op=target_po,
              stages=", ".join(stages), indexes=", ".join(n for n, _ in indexes) or None,
              estimates_baseline=b["estimates"], estimates_target=t["estimates"],
              estimates_per_query_baseline=b["per_query"], estimates_per_query_target=t["per_query"],
              reads_per_estimate_baseline=b["reads_per"], reads_per_estimate_target=t["reads_per"],
              eq_range_index_dive_limit=limit, optimizer_switch=e.setting("optimizer_switch"))


#: the MySQL/MariaDB server's own findings (its optimizer), for recordings of a server whose
#: engines live inside one (EngineAdapter.own_server None: InnoDB, MyRocks)
SERVER_FINDINGS: tuple[Callable[[Evidence], dict[str, Any]], ...] = (optimizer_reads,)

#: every finding ioattr has: each engine's, then the server's (what a recording of every engine would get)
FINDINGS: tuple[Callable[[Evidence], dict[str, Any]], ...] = tuple(
    f for engine in registry.ENGINES for f in engine.findings) + SERVER_FINDINGS


def findings_for(engines: tuple[EngineAdapter, ...]) -> list[tuple[str | None, Callable[[Evidence], dict[str, Any]]]]:
    """The findings a comparison of recordings of these engines runs, each with the engine it is
    from (None: the MySQL/MariaDB server's): the engines' own in registry order, then the server's
    when one of them lives inside a MySQL/MariaDB server. A PostgreSQL recording gets PostgreSQL's only."""
    out: list[tuple[str | None, Callable[[Evidence], dict[str, Any]]]] = [
        (engine.name, f) for engine in engines for f in engine.findings]
    if any(engine.own_server is None for engine in engines):
        out += [(None, f) for f in SERVER_FINDINGS]
    return out


def run_findings(e: Evidence, noise: str | None = None) -> list[dict[str, Any]]:
    """Every finding, judged for the change's direction (ioattr.analysis.direction: a decrease
    is tested as the mirror of each mechanism) and ranked: by verdict, a supported finding whose
    governing setting differs between the sides first, then by the share of the change.

    noise: why the change is within noise (explain_math.noise_reason); then no finding is
    supported or refuted by it: each is inconclusive with that reason (not_applicable stays)."""
    decrease = (e.gross or e.change) < 0
    judged = e.mirrored() if decrease else e
    out = []
    for engine, f in findings_for(registry.recorded_in(e.base.rec.meta, e.target.rec.meta)):
        try:
            one = f(judged)
        except Exception as ex:  # a finding that can't be computed is inconclusive, never a crash
            one = {"id": f.__name__, "title": f.__name__.replace("_", " "), "verdict": "inconclusive",
                   "evidence": {"summary": f"could not be computed: {type(ex).__name__}: {ex}"}}
        if engine is not None:
            one["engine"] = engine  # whose advice it gets (explain_text.advice)
        out.append(one)
    for f in out:
        direction.judge(f, e.metric.op, decrease)
    if noise:
        for f in out:
            # a condition present on both sides stays "holds in both; not the cause": true either way
            if f["verdict"] != "not_applicable" and direction.words(f) != direction.HOLDS_IN_BOTH:
                f["verdict"] = "inconclusive"
                f["evidence"]["summary"] = f"{noise} ({f['evidence'].get('summary', '')})"
                f["verdict_words"] = direction.words(f)
    order = {"supported": 0, "inconclusive": 1, "refuted": 2, "not_applicable": 3}

    def rank(x: dict[str, Any]) -> tuple:
        sh = explained_share(x)
        root = x["verdict"] == "supported" and bool(x["evidence"].get("setting_changed"))
        return order[x["verdict"]], not root, sh is None, -(sh or 0.0)

    return sorted(out, key=rank)

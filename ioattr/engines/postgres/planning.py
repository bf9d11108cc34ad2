"""The planning-reads finding: reads a PostgreSQL query does while it is planned (stage optimize,
bpf/pg_stage.bpf.h), and which of them the execution would not have done.

What the planner reads, beside what the execution reads later:
  index-end probes  for a range whose constant lies outside the column's histogram (or on its
                    first or last bucket), get_actual_variable_range() asks an index on that
                    column for the actual minimum or maximum: it descends to the index's end and
                    walks its entries until one is visible, visiting the heap pages of those not
                    all-visible. After deletes at that end (a queue, rows moved away) the walk
                    reads many dead entries and their heap pages, on every planning until VACUUM
  catalog reads     pg_statistic, pg_class, pg_index... rows missing from the backend's caches
                    (a new connection, an invalidation after ANALYZE or DDL)
  metapages         each btree's metapage, once per relcache entry (its tree height)

Extra IO, not moved IO (as for the optimizer's index dives on MySQL: ioattr.analysis.dives): the
recording holds reads per statement, relation and stage, no page numbers per stage. So per
(statement, relation):
  added   reads of an index the statement's execution read nothing of (in either phase): the
          execution did not need those pages. A table's heap pages read while planning are the
          probes' visibility checks: added when no index whose tree pages (not its metapage)
          the statement read while planning was executed, moved when one was (a scan of that
          index's end walks the same entries and heap pages). Catalog reads while planning are added (the
          execution looks up what it needs in the caches the planning filled, or never).
  moved   the rest: pages of an index the execution read, which the planning only read earlier.
"""
from __future__ import annotations

from typing import Any

from ioattr.model.evidence import I_INDEX, I_LEVEL, I_QUERY, I_STAGE, Evidence, by_share, finding, pct

PLAN = "optimize"       # PostgreSQL's planning, in ioattr's stage vocabulary
EXECUTE = ("execute",)  # where a statement's execution reads (ExecutorStart, ProcessUtility on)
CATALOG_SCHEMAS = ("pg_catalog", "pg_toast")


def relation_kinds(e: Evidence) -> dict[str, str]:
    """relation name -> kind (table, index, ...) from both recordings' meta.json "relations"."""
    out: dict[str, str] = {}
    for s in (e.base, e.target):
        rels = s.rec.meta.get("relations") or {}
        for d in (rels.values() if isinstance(rels, dict) else ()):
            if isinstance(d, dict) and d.get("relation") and d.get("kind"):
                out[str(d["relation"])] = str(d["kind"])
    return out


def is_catalog(relation: str | None) -> bool:
    """A system catalog (database.schema.relation, pg_global.* for the shared ones)."""
    if not relation:
        return False
    parts = relation.split(".")
    return relation.startswith("pg_global.") or (len(parts) >= 3 and parts[1] in CATALOG_SCHEMAS)


def classify(e: Evidence) -> dict[tuple[Any, Any], str]:
    """(statement, relation) of every read while planning -> "catalog", "added" or "moved"."""
    kinds = relation_kinds(e)
    planned: dict[Any, set[Any]] = {}
    probed: dict[Any, set[Any]] = {}  # user indexes whose tree pages (not the metapage) were read
    executed: set[tuple[Any, Any]] = set()
    for c in (e.base_contrib, e.target_contrib):
        for k, v in c.items():
            if not v:
                continue
            if k[I_STAGE] == PLAN:
                planned.setdefault(k[I_QUERY], set()).add(k[I_INDEX])
                if k[I_LEVEL] is not None and kinds.get(k[I_INDEX] or "") == "index" and not is_catalog(k[I_INDEX]):
                    probed.setdefault(k[I_QUERY], set()).add(k[I_INDEX])
            elif k[I_STAGE] in EXECUTE:
                executed.add((k[I_QUERY], k[I_INDEX]))
    out: dict[tuple[Any, Any], str] = {}
    for q, rels in planned.items():
        indexes = probed.get(q, set())
        probes_executed = any((q, i) in executed for i in indexes)
        for r in rels:
            if is_catalog(r):
                out[(q, r)] = "catalog"
            elif kinds.get(r or "") == "index":
                out[(q, r)] = "moved" if (q, r) in executed else "added"
            elif kinds.get(r or "") == "table" and indexes:
                out[(q, r)] = "moved" if probes_executed else "added"
            else:
                out[(q, r)] = "moved"  # nothing shows it was extra
    return out


def _g(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4g}"


def planning_reads(e: Evidence) -> dict[str, Any]:
    """Reads while queries are planned that their execution would not have done."""
    title = "Reads while queries are planned (PostgreSQL: index-end probes, catalog lookups)"
    fid = "planning_reads"
    mirror = "Fewer reads while queries are planned (PostgreSQL)"
    if not e.reads:
        return finding(fid, title, "not_applicable", "a read cause; this metric counts writes")
    if not any(k[I_STAGE] in (PLAN,) + EXECUTE for c in (e.base_contrib, e.target_contrib) for k in c):
        return finding(fid, title, "inconclusive",
                       "no stages inside statements in this recording (recorded with --stages statement, "
                       "or before ioattr traced PostgreSQL's planner): record again with the defaults")
    kind = classify(e)

    def part(which: str):  # noqa: ANN202 - a predicate over contributor keys
        return lambda k: k[I_STAGE] == PLAN and kind.get((k[I_QUERY], k[I_INDEX])) == which

    def plan(k: tuple) -> bool:
        return k[I_STAGE] == PLAN

    def extra(k: tuple) -> bool:
        return plan(k) and kind.get((k[I_QUERY], k[I_INDEX])) in ("added", "catalog")

    share, added_share = e.share(plan), e.share(extra)
    probes_share, catalog_share = e.share(part("added")), e.share(part("catalog"))
    unit = e.target.unit
    by_rel: dict[str, float] = {}
    for k, v in e.target_contrib.items():
        if extra(k) and v:
            name = k[I_INDEX] or "[no relation]"
            by_rel[name] = by_rel.get(name, 0.0) + v / e.target.denominator
    rels = sorted(by_rel.items(), key=lambda kv: -kv[1])
    kinds = relation_kinds(e)
    probed = sorted({r for (q, r), w in kind.items() if w == "added" and kinds.get(r or "") == "index"})
    parts = [f"reads while planning {_g(e.per_op('base', plan))} -> {_g(e.per_op('target', plan))} per {unit}, "
             f"{pct(share)} of the gross change",
             f"added (the execution did not need them) {_g(e.per_op('base', extra))} -> "
             f"{_g(e.per_op('target', extra))}, {pct(added_share)}: index-end probes and their heap visits "
             f"{pct(probes_share)}, catalog lookups {pct(catalog_share)}; moved (pages of an index the "
             f"execution then read) {_g(e.per_op('base', part('moved')))} -> {_g(e.per_op('target', part('moved')))}"]
    if probed:
        parts.append("probed while planning, not executed: " + ", ".join(probed[:4])
                     + " (get_actual_variable_range: a range constant outside the histogram walks the "
                       "index's end, dead entries and their heap pages included)")
    if rels:
        parts.append("read most: " + ", ".join(f"{r} ({v:.3g}/{unit})" for r, v in rels[:4]))
    if by_share(share) == "supported" and by_share(added_share) != "supported":
        parts.append("moved IO, not extra: the execution would read the same pages")
    return finding(fid, title, by_share(added_share), "; ".join(parts), mirror=mirror,
                   share_of_change=added_share, planning_share=share, added_share=added_share,
                   probes_share=probes_share, catalog_share=catalog_share,
                   baseline_per_op=e.per_op("base", plan), target_per_op=e.per_op("target", plan),
                   added_baseline_per_op=e.per_op("base", extra), added_target_per_op=e.per_op("target", extra),
                   probed_indexes=", ".join(probed) or None, relations=", ".join(r for r, _ in rels) or None)


NEXT_STEP = (
    "the planner reads before the query runs: for a range constant outside a column's histogram "
    "it finds the column's actual minimum or maximum in an index (get_actual_variable_range), walking "
    "dead entries at the index's end and their heap pages; and it looks up catalog rows a new or "
    "invalidated backend cache lacks",
    "VACUUM the table (removes the dead entries at the index's end), ANALYZE it more often so its "
    "histogram covers the constants queried, use prepared statements (a generic plan is not planned "
    "again), or keep connections open (warm catalog caches); EXPLAIN (BUFFERS) shows the planning's "
    "buffers (PostgreSQL 13+)")

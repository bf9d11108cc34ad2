"""`ioattr compare`: N benchmark runs side by side, one row per run x phase.

What a benchmark report builds by hand from iostat/vmstat and the server's counters: per run the
engine and the settings that matter (from meta.json: never guessed, "-" when not recorded), and
per phase the rates and the per-operation IO terms, runs aligned by phase name.

Every number comes from a definition that already exists, so compare says what `report --by
phase` and `explain` say for the same phase:
- storage reads and writes, queries, rows inserted: ioattr/analysis/phase_stats.py over
  ioattr/model/storage.py (syscall layer, the engines' storage files);
- the other layers as `report` has them: `block` (requests that reached the device for the
  targets, every file and pseudo-file of theirs) and `pagecache` (pages brought into the page
  cache by read misses: count = pages);
- the engine's own cache misses: the adapters' status_counters "cache_misses"
  (Innodb_buffer_pool_reads, Rocksdb_block_cache_miss), beside ours;
- server CPU: /proc/PID/stat of the recording's servers only (a wrapped client's CPU is not
  the server's);
- transactions: Com_commit + Com_rollback (explicit transactions; autocommit statements are not
  counted there, so a phase without them is rated per query, else per row inserted).

`--by index|file_class|role|stage` adds the storage terms split one level down (the rows of
`report --by phase,DIM,file_class --layer syscall` that are storage IO), top N per run and phase.

Changes: for each phase two runs or more have, each later run's reads per query against the first
run's, judged by explain's noise model (ioattr/model/explain_math.noise_reason, the phases' own
interval variation included) and said in explain's words (ioattr/analysis/direction.py): "no
significant change" with the noise figure, or "a significant change" with the explain command
that tells why. compare names no causes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ioattr.analysis.direction import change_words
from ioattr.analysis.explain import read_intervals
from ioattr.analysis.phase_stats import PhaseStats, counter_deltas, phase_stats
from ioattr.analysis.explain import server_settings
from ioattr.analysis.phase_stats import last_data_time
from ioattr.analysis.rec_state import recording_state
from ioattr.analysis.report import ReportRequest, build_report
from ioattr.engines import registry
from ioattr.errors import UsageError
from ioattr.format.reader import Recording
from ioattr.model import explain_math as em
from ioattr.model import per as units, storage

BY_DIMS = ("index", "file_class", "role", "stage")
TRANSACTIONS = units.TRANSACTIONS
KB = 1024.0

# the per-phase columns: (key, table header, what it is and at which layer). One table for the
# terminal legend, the JSON's "columns", the CSV and the HTML page.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("seconds", "s", "phase duration in seconds"),
    ("qps", "qps", units.RATES["qps"]),
    ("statements_per_s", "stmt/s", units.RATES["statements_per_s"]),
    ("tps", "tps", units.RATES["tps"]),
    ("ops_per_s", "ops/s", units.RATES["ops_per_s"]),
    ("rows_per_s", "rows/s", "rows inserted per second (counter in rows_source)"),
    ("reads_per_query", "r/q", "storage reads per query (per SELECT) [syscall layer, storage files]"),
    ("kb_read_per_query", "KB r/q", "KB read from storage per query (per SELECT) [syscall layer, storage files]"),
    ("kb_read_per_op", "KB r/op", "KB read from storage per benchmark operation [syscall layer, storage files]"),
    ("kb_written_per_op", "KB w/op", "KB written to storage per benchmark operation [syscall layer, storage files]"),
    ("writes_per_unit", "w/txn", "storage writes per transaction, else per query (/q) or per row inserted "
                                 "(/row), whichever the phase did more of, else the phase's total (/phase) "
                                 "[syscall layer, storage files]"),
    ("kb_written_per_unit", "KB w/txn", "KB written to storage per write unit [syscall layer, storage files]"),
    ("block_reads_per_query", "blk r/q", "block-layer read requests per query [block layer, every file]"),
    ("block_kb_read_per_query", "blk KB r/q", "KB read from the device per query [block layer, every file]"),
    ("block_kb_written_per_unit", "blk KB w/txn", "KB written to the device per write unit "
                                                  "[block layer, every file]"),
    ("pagecache_pages_per_query", "pc pg/q", "pages brought into the page cache by read misses per query "
                                             "[pagecache layer]"),
    ("engine_cache_misses_per_query", "eng miss/q", "the engine's own cache misses per query "
                                                    "(Innodb_buffer_pool_reads, Rocksdb_block_cache_miss, "
                                                    "PostgreSQL's blks_read)"),
    ("server_cpu_us_per_query", "CPU µs/q", "server CPU (user+sys, the servers' /proc/PID/stat; a PostgreSQL "
                                              "server's backends and auxiliary processes too) per query"),
)
BY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("reads_per_query", "r/q", "storage reads per query [syscall layer]"),
    ("kb_read_per_query", "KB r/q", "KB read from storage per query [syscall layer]"),
    ("writes_per_unit", "w/txn", "storage writes per write unit of the phase [syscall layer]"),
    ("kb_written_per_unit", "KB w/txn", "KB written to storage per write unit [syscall layer]"),
)


def _r(v: float | None) -> float | None:
    """Per-operation terms keep 4 significant digits (as report --by phase's JSON)."""
    return storage.sig(v, 4)


def _rate(v: float | None, seconds: float) -> float | None:
    return None if v is None else round(v / seconds, 2)


@dataclass
class Run:
    """One recording as a compare column: its label and what meta.json says of it."""

    rec: Recording
    label: str
    info: dict[str, Any] = field(default_factory=dict)


def labels_for(paths: list[str], given: list[str] | None) -> list[str]:
    """--label values (one per recording), else each run directory's name; names that collide
    (run1/rec, run2/rec) take their parent directory too, then a number."""
    if given:
        if len(given) != len(paths):
            raise UsageError(f"--label given {len(given)} times for {len(paths)} recordings: "
                             "give one per recording, in the same order")
        if len(set(given)) != len(given):
            raise UsageError("--label values must differ")
        return list(given)
    norm = [os.path.normpath(os.path.abspath(p)) for p in paths]
    base = [os.path.basename(p) or p for p in norm]
    out = [os.path.join(os.path.basename(os.path.dirname(n)), lab) if base.count(lab) > 1 else lab
           for n, lab in zip(norm, base)]
    seen: dict[str, int] = {}
    final = []
    for lab in out:
        if out.count(lab) > 1:
            seen[lab] = seen.get(lab, 0) + 1
            lab = f"{lab}#{seen[lab]}"
        final.append(lab)
    return final


# -- run-level facts --------------------------------------------------------------------------

def _servers(rec: Recording) -> list[dict[str, Any]]:
    return [s for s in rec.meta.get("servers") or [] if isinstance(s, dict)]


def server_pids(rec: Recording) -> list[int]:
    """The traced servers' pids (meta.json "servers"), for the servers' own CPU (a forking
    server's counter cpu:tree_* holds its backends' and auxiliary processes' CPU too)."""
    return [int(s["pid"]) for s in _servers(rec) if isinstance(s.get("pid"), int) and not isinstance(s["pid"], bool)]


def run_settings(rec: Recording) -> dict[str, Any]:
    """The server's settings as recorded: meta.json "settings" (MySQL/MariaDB servers, by pid:
    the connected one first, as explain reads them) and a native server's own (PostgreSQL:
    servers[].settings). Nothing recorded: {}."""

    out: dict[str, Any] = {}
    for s in _servers(rec):
        if isinstance(s.get("settings"), dict):
            for k, v in s["settings"].items():
                out.setdefault(str(k), v)
    out.update(server_settings(rec))
    return out


def engine_settings(settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """engine -> {"cache", "io", "page"} (EngineAdapter.run_settings), for the engines whose
    cache setting the recording has (a server without the RocksDB plugin has no rocksdb_*
    variables); a setting not recorded is None. Empty when nothing was recorded."""

    out = {}
    for e in registry.ENGINES:
        if e.run_settings.get("cache") is not None and settings.get(e.run_settings["cache"]) is not None:
            out[e.name] = {role: settings.get(var) for role, var in e.run_settings.items()}
    return out


def setting_names() -> list[str]:
    """Every engine's run_settings names (the JSON's and CSV's per-run settings)."""

    return list(dict.fromkeys(v for e in registry.ENGINES for v in e.run_settings.values()))


def data_bytes(rec: Recording) -> int | None:
    """Bytes on disk of the engines' data as the recording measured it at its end: InnoDB's
    tablespace files (meta.json "tablespace_sizes", every table; PostgreSQL: every user table's
    pg_total_relation_size) plus MyRocks' live SST files
    (meta.json "files", those not deleted). None when neither was recorded."""
    total, known = 0, False
    sizes = rec.meta.get("tablespace_sizes")
    if isinstance(sizes, dict):
        for per_server in sizes.values():
            if isinstance(per_server, dict):
                for v in per_server.values():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        total += int(v)
                        known = True
    files = rec.meta.get("files")
    if isinstance(files, dict):
        for f in files.values():
            if isinstance(f, dict) and not f.get("deleted") and isinstance(f.get("size"), int):
                total += f["size"]
                known = True
    return total if known else None


def recording_seconds(rec: Recording) -> float | None:
    """The recording's duration: its first phase's start to its last phase's end (an open last
    phase: to the last data recorded)."""

    phases = rec.phases()
    start, end = phases[0]["start"], phases[-1]["end"]
    if end is None:
        end = last_data_time(rec) or rec.meta.get("ended")
    if end is None:
        return None
    return round(max(float(end) - float(start), 0.0), 3)


def run_info(run: Run) -> dict[str, Any]:

    rec = run.rec
    settings = run_settings(rec)
    versions = [str(s["version"]) for s in _servers(rec) if s.get("version")]
    engines = engine_settings(settings)
    info: dict[str, Any] = {
        "label": run.label,
        "recording": str(rec.path),
        "engines": list(engines),
        "version": settings.get("version") or (versions[0] if versions else None),
        "engine_settings": engines,
        "settings": {k: settings.get(k) for k in setting_names()},
        "data_bytes": data_bytes(rec),
        "seconds": recording_seconds(rec),
        "phases": rec.phase_names(),
    }
    state = recording_state(rec)
    if state is not None:
        info["recording_state"] = state
    return info


# -- per-phase rows ------------------------------------------------------------------------------

def _layer_totals(rec: Recording) -> dict[tuple[str, str, str], tuple[float, float]]:
    """(phase, layer, op) -> (count, bytes) of the block and pagecache layers, every file."""
    out = {}
    for phase, layer, op, n, b in rec.query(
            f"SELECT phase, layer, op, sum(count), sum(bytes) FROM {rec.totals('io')} io "
            "WHERE layer IN ('block', 'pagecache') AND op IN ('read', 'write') GROUP BY ALL"):
        out[(phase, layer, op)] = (float(n or 0), float(b or 0))
    return out


def transactions(st: PhaseStats) -> float | None:
    """Explicit transactions ended in the phase (COMMIT and ROLLBACK statements); None without
    the server's counters (PostgreSQL: its xact_commit + xact_rollback, PhaseStats.transactions)."""
    return st.transactions


def engine_cache_misses(counters: dict[str, float]) -> float | None:
    """The engines' own cache misses (their status_counters "cache_misses", summed over the
    engines a server has): a MySQL/MariaDB server's SHOW GLOBAL STATUS variable ("status:NAME"),
    or for an engine that is its own server the same name under one of its counter sources
    (PostgreSQL's cluster-wide "pg_stat_database:blks_read"); None when none was recorded."""

    have = []
    for e in registry.ENGINES:
        c = e.status_counters.get("cache_misses")
        if c is None:
            continue
        sources = ["status"] + [type(src).source for src in e.counter_sources()]
        for v in c.variables:
            key = next((f"{src}:{v}" for src in sources if f"{src}:{v}" in counters), None)
            if key is not None:
                have.append(counters[key])
    return sum(have) if have else None


def write_unit(queries: float | None, txns: float | None, rows: float | None) -> tuple[str | None, float | None]:
    """What writes are counted per: transactions when the phase had some, else the more numerous
    of queries and rows inserted (a load phase's few SELECTs -- its phase marker, a check -- are
    not its unit; a read phase's stray insert is not either); the whole phase ("phase", 1) when
    the counters are there and it had none of them (an ALTER TABLE, a flush: its writes are
    still worth comparing, as totals); (None, None) without counters. The unit is always said
    next to the number."""
    if txns:
        return "txn", txns
    for unit, n in sorted((("query", queries or 0.0), ("row", rows or 0.0)), key=lambda x: -x[1]):
        if n:
            return unit, n
    if queries is None and txns is None and rows is None:
        return None, None
    return "phase", 1.0


def phase_row(run: Run, st: PhaseStats, layers: dict, cpu_seconds: float | None) -> dict[str, Any]:
    """One run x phase row (the keys of COLUMNS, plus the counts they come from)."""
    q, rows = st.queries, st.inserts
    txns = transactions(st)
    unit, per_unit = write_unit(q, txns, rows)
    s = st.seconds
    blk_r_n, blk_r_b = layers.get((st.name, "block", "read"), (0.0, 0.0))
    _, blk_w_b = layers.get((st.name, "block", "write"), (0.0, 0.0))
    pc_n, _ = layers.get((st.name, "pagecache", "read"), (0.0, 0.0))
    misses = engine_cache_misses(st.counters)
    return {
        "run": run.label,
        "phase": st.name,
        "open": st.open,
        "seconds": round(s, 3),
        "qps": _rate(q, s),
        "statements_per_s": _rate(st.statements, s),
        "tps": _rate(txns, s),
        "ops_per_s": _rate(st.ops, s),
        "kb_read_per_op": _r(st.per(st.read_bytes / KB, st.ops)),
        "kb_written_per_op": _r(st.per(st.write_bytes / KB, st.ops)),
        "rows_per_s": _rate(rows, s),
        "rows_source": storage.rows_inserted(st.counters, registry.rows_inserted_keys())[1],
        "reads_per_query": _r(st.per(st.reads, q)),
        "kb_read_per_query": _r(st.per(st.read_bytes / KB, q)),
        "write_unit": unit,
        "writes_per_unit": _r(st.per(st.writes, per_unit)),
        "kb_written_per_unit": _r(st.per(st.write_bytes / KB, per_unit)),
        "block_reads_per_query": _r(st.per(blk_r_n, q)),
        "block_kb_read_per_query": _r(st.per(blk_r_b / KB, q)),
        "block_kb_written_per_unit": _r(st.per(blk_w_b / KB, per_unit)),
        "pagecache_pages_per_query": _r(st.per(pc_n, q)),
        "engine_cache_misses_per_query": _r(st.per(misses, q)),
        "server_cpu_us_per_query": _r(st.per(None if cpu_seconds is None else cpu_seconds * 1e6, q)),
        # the counts behind the ratios (null: no counter)
        "queries": None if q is None else int(q),
        "statements": None if st.statements is None else int(st.statements),
        "ops": None if st.ops is None else int(st.ops),
        "transactions": None if txns is None else int(txns),
        "rows_inserted": None if rows is None else int(rows),
        "storage_reads": int(st.reads),
        "storage_read_bytes": int(st.read_bytes),
        "storage_writes": int(st.writes),
        "storage_write_bytes": int(st.write_bytes),
        "engine_cache_misses": None if misses is None else int(misses),
    }


def server_cpu_seconds(rec: Recording, phase: str, pids: list[int]) -> float | None:
    """The servers' CPU seconds (user + sys) in the phase; None when not recorded."""
    if not pids:
        return None
    d = counter_deltas(rec, phase, pids=pids)
    if d.get("proc:cpu:tree_user") is not None:
        # a forking server (PostgreSQL): its backends' and auxiliary processes' too, in one sum
        return d["proc:cpu:tree_user"] + d.get("proc:cpu:tree_sys", 0.0)
    user = d.get("proc:cpu:user")
    return None if user is None else user + d.get("proc:cpu:sys", 0.0)


def breakdown(run: Run, dim: str, phases: list[str],
              units: dict[str, tuple[float | None, str | None, float | None]], top: int) -> list[dict[str, Any]]:
    """Storage reads and writes per phase split by `dim`, per query and per write unit: the
    storage rows of `report --by phase,DIM,file_class --layer syscall` (so they add up to the
    phase's storage reads and writes exactly), the top `top` per phase (most reads, then writes)."""

    # query: to leave ioattr's own statements' IO out, as the phase totals do (model/storage.py)
    by = ["phase", dim] + (["file_class"] if dim != "file_class" else []) + ["query"]
    rep = build_report(run.rec, ReportRequest(by=by, layer="syscall"))
    acc: dict[tuple[str, Any], list[float]] = {}
    for r in rep["rows"]:
        if r["phase"] not in units or r["op"] not in ("read", "write") or \
                not storage.is_storage(r["layer"], r["file_class"]) or r["query"] == storage.INTERNAL_QUERY_LABEL:
            continue
        a = acc.setdefault((r["phase"], r[dim]), [0.0, 0.0, 0.0, 0.0])
        i = 0 if r["op"] == "read" else 2
        a[i] += float(r["count"])
        a[i + 1] += float(r["bytes"])
    out = []
    for phase in phases:
        q, unit, per_unit = units[phase]
        rows = [(k[1], v) for k, v in acc.items() if k[0] == phase]
        rows.sort(key=lambda kv: (-kv[1][0], -kv[1][2], kv[0] is None, str(kv[0])))
        for value, (rn, rb, wn, wb) in rows[:top]:
            out.append({"run": run.label, "phase": phase, dim: value,
                        "write_unit": unit,
                        "reads_per_query": _r(storage.per(rn, q)),
                        "kb_read_per_query": _r(storage.per(rb / KB, q)),
                        "writes_per_unit": _r(storage.per(wn, per_unit)),
                        "kb_written_per_unit": _r(storage.per(wb / KB, per_unit)),
                        "storage_reads": int(rn), "storage_read_bytes": int(rb),
                        "storage_writes": int(wn), "storage_write_bytes": int(wb)})
    return out


CHANGE_METRIC = "reads_per_query"


def change(phase: str, base: tuple[Run, PhaseStats, tuple], target: tuple[Run, PhaseStats, tuple]) -> dict[str, Any] | None:
    """One run's reads per query in a phase against another run's, in explain's words: the noise
    model's verdict (explain_math.noise_reason) and, for a significant change, the explain command
    that tells why. None when a side counted no queries. base/target: (run, stats, intervals)."""
    (rb, sb, ib), (rt, stt, it) = base, target
    vb, vt = sb.per(sb.reads, sb.queries), stt.per(stt.reads, stt.queries)
    if vb is None or vt is None:
        return None
    sides = [em.SideCounts(phase, s.queries, s.reads, s.seconds, i) for s, i in ((sb, ib), (stt, it))]
    noise = em.noise_reason(sides[0], sides[1], vb, vt, metric=CHANGE_METRIC, per="query", per_second=False)
    words = change_words(noise)
    if noise:
        summary = noise
    else:
        rel = f" ({100 * (vt - vb) / vb:+.0f}%)" if vb else ""
        summary = (f"{words}: {CHANGE_METRIC} {vb:.4g} -> {vt:.4g}{rel}; why: ioattr explain {rb.rec.path} "
                   f"--against {rt.rec.path} --baseline {phase} --target {phase}")
    return {"phase": phase, "metric": CHANGE_METRIC, "baseline_run": rb.label, "target_run": rt.label,
            "baseline_value": _r(vb), "target_value": _r(vt), "significant": noise is None, "words": words,
            "summary": summary}


def _phase_order(runs: list[Run]) -> list[str]:
    """Every phase name, in the order the runs first have them (runs aligned by name)."""
    out: list[str] = []
    for run in runs:
        for name in run.rec.phase_names():
            if name not in out:
                out.append(name)
    return out


def pick_phases(runs: list[Run], wanted: list[str] | None) -> tuple[list[str], list[str]]:
    """The phases to show (--phase, else every phase) and notes on runs that lack one."""
    names = _phase_order(runs)
    notes = []
    if wanted:
        unknown = [w for w in wanted if w not in names]
        if unknown:
            raise UsageError(f"unknown phase {unknown[0]!r}: no recording has it; they have: {', '.join(names)}")
        names = [n for n in names if n in wanted]
    for run in runs:
        missing = [n for n in names if n not in run.rec.phase_names()]
        if missing and len(runs) > 1:
            notes.append(f"{run.label} has no phase {', '.join(missing)}")
    # a shown phase that two runs or more have lines them up; without one, say so
    shared = [n for n in names if sum(n in r.rec.phase_names() for r in runs) > 1]
    if len(runs) > 1 and not shared:
        notes.append("the runs have no phase name in common: each run's phases are shown as they are")
    return names, notes


def compare(recs: list[Recording], labels: list[str] | None = None, *, phases: list[str] | None = None,
            by: str | None = None, top: int = 10) -> dict[str, Any]:
    """The comparison as one JSON-able object: {"runs", "phases", "rows", "columns", "notes"}
    (+ "by" and "breakdown" with `by`)."""
    if not recs:
        raise UsageError("give at least one recording")
    if by is not None and by not in BY_DIMS:
        raise UsageError(f"unknown --by {by!r}; choose one of {', '.join(BY_DIMS)}")
    if top < 1:
        raise UsageError("--top must be at least 1")
    runs = [Run(r, lab) for r, lab in zip(recs, labels_for([str(r.path) for r in recs], labels))]
    names, notes = pick_phases(runs, phases)
    rows: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    per_run: dict[str, list[dict[str, Any]]] = {}
    sides: dict[str, list[tuple[Run, PhaseStats, tuple]]] = {}
    for run in runs:
        run.info = run_info(run)
        layers = _layer_totals(run.rec)
        pids = server_pids(run.rec)
        mine = [n for n in names if n in run.rec.phase_names()]
        units: dict[str, tuple[float | None, str | None, float | None]] = {}
        per_run[run.label] = []
        for name in mine:
            st = phase_stats(run.rec, name)
            sides.setdefault(name, []).append((run, st, read_intervals(run.rec, name)))
            row = phase_row(run, st, layers, server_cpu_seconds(run.rec, name, pids))
            per_run[run.label].append(row)
            units[name] = (st.queries, *write_unit(st.queries, transactions(st), st.inserts))
        if by is not None and mine:
            parts.extend(breakdown(run, by, mine, units, top))
    # runs aligned by phase: each phase's rows together, in run order
    for name in names:
        for run in runs:
            rows.extend(r for r in per_run[run.label] if r["phase"] == name)
    out: dict[str, Any] = {
        "runs": [r.info for r in runs],
        "phases": names,
        "rows": rows,
        "columns": {k: what for k, _, what in COLUMNS},
        "changes": [c for name in names for t in sides.get(name, [])[1:]
                    if (c := change(name, sides[name][0], t)) is not None],
        "notes": notes,
    }
    if by is not None:
        out["by"] = by
        out["breakdown"] = [p for name in names for run in runs for p in parts
                            if p["phase"] == name and p["run"] == run.label]
        out["breakdown_columns"] = {k: what for k, _, what in BY_COLUMNS}
    return out

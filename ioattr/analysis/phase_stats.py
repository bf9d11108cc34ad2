"""Per-phase numbers of a recording: engine-counter deltas, attributed IO,
and the insert benchmark's per-operation metrics.

Counter deltas use the snapshots taken at each interval (the recorder also
snapshots at every phase switch), so a phase's delta is its last snapshot
minus the one at its start. Attributed reads and writes are storage reads
and writes as ioattr/model/storage.py defines them (the one definition top,
explain, the HTML report and the dashboards share). A phase still open (a
recording being written, or one whose recorder died) is rated by its
elapsed time up to the last data recorded in it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ioattr.analysis import phase_sums
from ioattr.analysis.phase_sums import io_sums, statement_counts
from ioattr.analysis.grouping import ReportRequest, report_rows
from ioattr.analysis.rec_state import last_data_time
from ioattr.engines import registry
from ioattr.errors import UsageError
from ioattr.format.reader import Recording
from ioattr.model import per as units, storage

EPS = 1e-3

#: the statements that insert rows in bulk, by the server's Com_ counter, as a phase line names them
BULK_STATEMENTS = (("status:Com_load", "LOAD DATA"), ("status:Com_insert", "INSERT"),
                   ("status:Com_insert_select", "INSERT ... SELECT"), ("status:Com_replace", "REPLACE"),
                   ("status:Com_replace_select", "REPLACE ... SELECT"))

#: A phase is a load when it inserts at least one row per this many statements the clients sent.
#: Why: every OLTP mix inserts a little (sysbench oltp_read_write: 1 row in 18 statements,
#: oltp_write_only: 1 in 6, pgbench TPC-B: 1 in 7), and a "bulk:" line would rate such a phase
#: in rows. A load, even one row per autocommit INSERT, or BEGIN; INSERT; COMMIT, stays under it.
BULK_STATEMENTS_PER_ROW = 3


@dataclass
class PhaseStats:
    name: str
    start: float
    end: float
    counters: dict[str, float] = field(default_factory=dict)   # "source:name" -> delta
    reads: float = 0.0          # storage read operations (pages + non-page file reads)
    read_bytes: float = 0.0
    writes: float = 0.0         # storage write operations (pages incl. doublewrite + non-page writes)
    write_bytes: float = 0.0
    io_ops: float = 0.0         # every syscall-layer op of the targets, for "has this phase any IO"
    open: bool = False          # the phase had not ended when the recording was read
    ops: float | None = None    # the benchmark's own operations (meta.json phase "ops"; per.OP)

    @property
    def seconds(self) -> float:
        return max(self.end - self.start, EPS)

    def counter(self, *names: str) -> float | None:
        """The first of names present (e.g. 'status:Com_select'), else None."""
        for n in names:
            if n in self.counters:
                return self.counters[n]
        return None

    statement_counts: dict[str, float] = field(default_factory=dict)  # kind -> statements (stage probes)
    #: schema.table -> {"bytes", "allocated", "bytes_change", "allocated_change"} for the tables whose
    #: files changed size in the phase (counter source table_files: ioattr/engines/innodb/table_files.py)
    table_sizes: dict[str, dict[str, int]] = field(default_factory=dict)
    #: engine name -> its own per-phase terms (EngineAdapter.phase_terms: MyRocks' flush, compaction,
    #: WAL per transaction, write amplification), only for engines that have some
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def queries(self) -> float | None:
        """The workload's SELECTs (storage.queries)."""
        return storage.queries(self.counters, self.statement_counts)

    @property
    def statements(self) -> float | None:
        """Statements the clients sent (per.STATEMENT: Questions less ioattr's own); an engine that
        is its own server counts them itself (PostgreSQL: the wire reader's Simple Query and
        Execute messages, its phase_terms)."""
        return self._server_or_engines(units.statements(self.counters), "statements")

    @property
    def transactions(self) -> float | None:
        """Transactions ended by COMMIT or ROLLBACK (per.TRANSACTION); an engine that is its own
        server counts them itself (PostgreSQL: xact_commit + xact_rollback, its phase_terms)."""
        return self._server_or_engines(units.transactions(self.counters), "transactions")

    def _server_or_engines(self, have: float | None, term: str) -> float | None:
        """The server's count of a unit, else the sum of the engines' own phase terms of that name
        (an engine that is its own server), else None."""
        if have is not None:
            return have
        own = [t[term] for t in self.engines.values() if isinstance(t.get(term), (int, float))]
        return sum(own) if own else None

    @property
    def inserts(self) -> float | None:
        """Rows inserted (storage.rows_inserted): the benchmark's unit for inserts."""
        return storage.rows_inserted(self.counters, registry.rows_inserted_keys())[0]

    @property
    def insert_statements(self) -> float | None:
        return storage.insert_statements(self.counters, self.statement_counts)

    def per(self, numerator: float | None, denominator: float | None) -> float | None:
        return storage.per(numerator, denominator)

    def bulk(self) -> dict[str, Any] | None:
        """A phase that inserted rows, in a bulk-load benchmark's units: rows (the engine's or
        the server's row counter, storage.rows_inserted), the statements that inserted them by
        kind (LOAD DATA, multi-row INSERT, INSERT ... SELECT: the server's Com_ counters), rows
        per statement, rows/s, and storage writes, KB written, storage reads and KB read per
        row (reads: a load into a table bigger than the buffer pool reads pages back). None
        when no row was inserted, rows are not counted (no server counters), or the inserts are
        a side of a mixed workload (BULK_STATEMENTS_PER_ROW)."""
        rows, source = storage.rows_inserted(self.counters, registry.rows_inserted_keys())
        if not rows:
            return None
        sent = self.statements
        if sent is not None and sent > rows * BULK_STATEMENTS_PER_ROW:
            return None
        kinds = {label: int(self.counters[key]) for key, label in BULK_STATEMENTS if self.counters.get(key)}
        statements = sum(kinds.values())
        return {
            "rows": int(rows),
            "rows_source": source,
            "statements": kinds,
            "rows_per_statement": round(rows / statements, 1) if statements else None,
            "rows_per_s": round(rows / self.seconds, 1),
            "writes_per_row": _r(self.writes / rows),
            "kb_written_per_row": _r(self.write_bytes / 1024 / rows),
            "reads_per_row": _r(self.reads / rows),
            "kb_read_per_row": _r(self.read_bytes / 1024 / rows),
        }

    def summary(self) -> dict[str, Any]:
        """The insert benchmark's terms for this phase (null where a counter is missing)."""
        q, i = self.queries, self.inserts
        stmts = self.insert_statements
        cpu_user, cpu_sys = self.counter("proc:cpu:user"), self.counter("proc:cpu:sys")
        cpu = None if cpu_user is None else cpu_user + (cpu_sys or 0.0)
        cs = self.counter("proc:ctxt")
        reads_keys = [k for k in registry.storage_reads_keys() if k in self.counters]
        engine_reads = self.counters[reads_keys[0]] if reads_keys else None  # the engine's own count
        out = {
            "phase": self.name,
            "seconds": round(self.seconds, 3),
            "open": self.open,
            "qps": None if q is None else round(q / self.seconds, 2),
            "qps_source": units.selects_source(self.counters, self.statement_counts),
            "ips": None if i is None else round(i / self.seconds, 2),   # rows inserted per second
            "ips_source": storage.rows_inserted(self.counters, registry.rows_inserted_keys())[1],
            "insert_stmts_ps": None if stmts is None else round(stmts / self.seconds, 2),
            # the denominators (ioattr/model/per.py) and their rates
            "selects": None if q is None else int(q),
            "statements": None if self.statements is None else int(self.statements),
            "statements_per_s": None if self.statements is None else round(self.statements / self.seconds, 2),
            "transactions": None if self.transactions is None else int(self.transactions),
            "tps": None if self.transactions is None else round(self.transactions / self.seconds, 2),
            "ops": None if self.ops is None else int(self.ops),
            "ops_per_s": None if self.ops is None else round(self.ops / self.seconds, 2),
            "reads_per_op": _r(self.per(self.reads, self.ops)),
            "kb_read_per_op": _r(self.per(self.read_bytes / 1024, self.ops)),
            "writes_per_op": _r(self.per(self.writes, self.ops)),
            "kb_written_per_op": _r(self.per(self.write_bytes / 1024, self.ops)),
            "reads_per_query": _r(self.per(self.reads, q)),
            "engine_reads_per_query": _r(self.per(engine_reads, q)),
            "engine_reads_source": _counter_label(reads_keys[0]) if reads_keys else None,
            "kb_read_per_query": _r(self.per(self.read_bytes / 1024, q)),
            "writes_per_insert": _r(self.per(self.writes, i)),
            "kb_written_per_insert": _r(self.per(self.write_bytes / 1024, i)),
            "cpu_us_per_query": _r(self.per(None if cpu is None else cpu * 1e6, q)),
            "context_switches_per_query": _r(self.per(cs, q)),
            "rows_inserted": None if i is None else int(i),
            "insert_statements": None if stmts is None else int(stmts),
            "storage_reads": int(self.reads),
            "storage_writes": int(self.writes),
            # rows/s, KB written, reads per row and rows per statement (null: no rows inserted)
            "bulk": self.bulk(),
            # the tables whose files changed size in the phase: size at its end, and the change
            "table_sizes": self.table_sizes,
        }
        out.update(self.engines)  # e.g. "rocksdb": {...} (ioattr/engines/myrocks/lsm.py)
        return out


def bulk_line(bulk: dict[str, Any] | None) -> str | None:
    """PhaseStats.bulk as one line of report's and explain's text (None: nothing inserted)."""
    if not bulk:
        return None
    kinds = ", ".join(f"{label} {n:,}" for label, n in bulk["statements"].items())
    n = sum(bulk["statements"].values())
    stmts = (f" by {n:,} statement{'' if n == 1 else 's'} ({kinds}), {bulk['rows_per_statement']:,.1f} "
             "rows/statement") if kinds else ""
    return (f"bulk: {bulk['rows']:,} rows ({bulk['rows_source']}){stmts}; {bulk['rows_per_s']:,.1f} rows/s, "
            f"{storage.fmt_sig(bulk['kb_written_per_row'])} KB written/row, "
            f"{storage.fmt_sig(bulk['writes_per_row'])} writes/row, {storage.fmt_sig(bulk['reads_per_row'])} reads/row")


def _counter_label(key: str) -> str:
    """A counter's "source:name" as a legend says it: a MySQL/MariaDB status variable by its
    name (Innodb_data_reads), another source's with it (pg_stat_database blks_read)."""
    source, _, name = key.partition(":")
    return name if source == "status" else f"{source} {name}"


def _r(v: float | None) -> float | None:
    """Per-operation terms keep 4 significant digits in JSON (tables show 3)."""
    return storage.sig(v, 4)


def counter_deltas(rec: Recording, phase: str, pids: list[int] | None = None) -> dict[str, float]:
    """Per counter: its last value in the phase minus its last value before the phase.

    The recorder snapshots at every phase switch (tagged with the phase that
    ends) and every interval, so this is exact at phase boundaries. For the
    first phase the baseline is its first snapshot. Gauges also get
    `<source>_last:<name>` (value at the phase's end) and `<source>_max:<name>`.
    Servers and host keys are summed (one benchmark, one server is the norm); `pids` keeps only
    those processes' rows (e.g. the servers' own CPU, without a wrapped client's)."""
    # every phase's in one scan of the counters table, kept for the command (phase_sums.py)
    return phase_sums.counter_deltas(rec, phase, pids)


def table_sizes(rec: Recording, phase: str) -> dict[str, dict[str, int]]:
    """The tables whose files changed size in `phase`: their size (and allocated size) at its end
    and the change over it. The `table_files` source lists a table only when its size changed
    (at the first read, every table), so a table's size before the phase is its last row before
    it; a table that first shows up after the first read is new: it grew from 0."""
    if not rec.has_table("counters"):
        return {}
    rows = phase_sums.table_size_rows(rec, phase)   # from the same one scan as counter_deltas
    out: dict[str, dict[str, int]] = {}
    for name, last, change in rows:  # every table known by the phase's end: its size then
        table, _, what = str(name).rpartition(":")
        if what not in ("bytes", "allocated") or not table:
            continue
        entry = out.setdefault(table, {"bytes": 0, "allocated": 0, "bytes_change": 0, "allocated_change": 0})
        entry[what] = int(last or 0)
        entry[f"{what}_change"] = int(change or 0)
    return {t: e for t, e in sorted(out.items()) if e["bytes_change"] or e["allocated_change"]}


def sizes_line(sizes: dict[str, dict[str, int]] | None) -> str | None:
    """PhaseStats.table_sizes as one line of report's text (None: no table changed size)."""
    if not sizes:
        return None

    def mib(n: int) -> str:
        return f"{n / 1048576:,.1f} MiB"
    def change(n: int) -> str:
        return ("+" if n >= 0 else "-") + mib(abs(n))
    parts = [f"{t} {mib(e['bytes'])} ({change(e['bytes_change'])}"
             + (f"; {mib(e['allocated'])} allocated, {change(e['allocated_change'])}"
                if abs(e["allocated"] - e["bytes"]) > 0.05 * e["bytes"] else "") + ")"  # sparse files
             for t, e in sizes.items()]
    return "on disk at its end: " + ", ".join(parts)


def phase_stats(rec: Recording, phase: str) -> PhaseStats:
    rec.require_phase(phase)
    p = next(x for x in rec.phases() if x["name"] == phase)
    start = float(p["start"])
    is_open = p["end"] is None
    if not is_open:
        end = float(p["end"])
    else:
        # still open (being recorded, or the recorder died): rated by its elapsed time up to
        # the last data seen, never by a zero-length span
        last = last_data_time(rec, phase)
        end = max(start, last if last is not None else float(rec.meta.get("ended") or start))
    st = PhaseStats(phase, start, end, counter_deltas(rec, phase))
    st.table_sizes = table_sizes(rec, phase)
    st.open = is_open
    ops = next((m.get("ops") for m in rec.meta.get("phases") or [] if m.get("name") == phase), None)
    if isinstance(ops, (int, float)):
        st.ops = float(ops)
    # every phase's sums in one scan of io (and of statements), kept for the command
    io = io_sums(rec, phase)
    st.reads, st.read_bytes, st.writes, st.write_bytes = io.reads, io.read_bytes, io.writes, io.write_bytes
    counted = rec.has_table("statements")
    if counted:
        st.statement_counts = statement_counts(rec, phase)
    st.io_ops = io.io_ops

    def io_rows() -> list[dict[str, Any]]:
        return report_rows(rec, ReportRequest(by=["file_class", "role"], phase=phase, layer="syscall"))[0]

    for engine in registry.ENGINES:
        terms = engine.phase_terms(st.counters, io_rows, st.statement_counts if counted else None)
        if terms is not None:
            st.engines[engine.name] = terms
    return st


def all_phase_summaries(rec: Recording) -> list[dict[str, Any]]:
    return [phase_stats(rec, name).summary() for name in rec.phase_names()]


def pick_phase(rec: Recording, name: str | None, default_index: int) -> str:
    names = rec.phase_names()
    if name is None:
        return names[default_index]
    if name not in names:
        raise UsageError(f"unknown phase {name!r} in {rec.path}; it has: {', '.join(names)}")
    return name

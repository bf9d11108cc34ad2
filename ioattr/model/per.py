"""What every "per X" figure divides by: one definition of each denominator and its name.

A benchmark prints its own rate (sysbench: queries/s counting BEGIN and COMMIT; LinkBench:
requests/s) and ioattr puts its IO next to it, so the denominator has to be said wherever a
ratio or a rate is shown. Every consumer -- `report --by phase`, `compare`, `explain`, `top`, the
HTML page and the exporter's dashboards -- takes the unit, its short name for a column header
and its legend line from here; storage.py defines the numerators (storage reads and writes).

The units, each counted from the server's own counters over the phase (counters table, source
`status`), less the statements ioattr itself sent:

- statement: the server's Questions -- every statement a client sent, BEGIN and COMMIT
  included, each execution of a prepared statement (COM_STMT_EXECUTE) and each statement of a
  multi-statement packet, and one COM_QUIT per disconnect; not COM_STMT_PREPARE/CLOSE/RESET,
  COM_PING. sysbench's "queries" are these less its connections' COM_QUITs (measured: 6,000
  queries printed, Questions less ioattr's own 6,001 with one sysbench connection).
  PostgreSQL: the Simple Query and Execute messages the clients sent, counted by the wire reader
  (a Simple Query holding several statements is one; BEGIN and END count; ioattr's own are left
  out), its engine's phase_terms: pgbench's TPC-B script is 7 per transaction.
- select: Com_select, a prepared SELECT's executions included. "per query" (r/q, reads_per_query,
  KB r/q, explain's default metric) means per SELECT: the insert benchmark's queries are its
  SELECTs, and a write-heavy phase's writes are rated per transaction or per row instead.
- transaction: Com_commit + Com_rollback (explicit transactions; autocommit statements are none).
  PostgreSQL: pg_stat_database xact_commit + xact_rollback (every transaction, an autocommitted
  statement's too) less ioattr's own (its engine's phase_terms).
- op: the benchmark's own operations (a sysbench event, a LinkBench request), as the benchmark
  counted them: `record --ops-pattern` over the wrapped command's output, or `ioattr mark --ops N`.
  Stored per phase in meta.json ("ops"); absent (null in reports) where neither gave any.

Rates (qps, stmt/s, tps, ops/s) are per second of the phase, from its start to its end: a phase
that also holds ioattr's start-up or idle seconds rates lower than the benchmark's own timer.
"""
from __future__ import annotations

from dataclasses import dataclass

QUESTIONS = "status:Questions"
#: statements ioattr itself sent to the server (collectors/counters.py OWN_STATEMENTS)
OWN_STATEMENTS = "status:ioattr:Questions"
SELECTS = "status:Com_select"
#: ioattr's own SELECTs (its session's Com_select; collectors/counters.py OWN_SELECTS)
OWN_SELECTS = "status:ioattr:Com_select"
TRANSACTIONS = ("status:Com_commit", "status:Com_rollback")


@dataclass(frozen=True)
class Unit:
    """A denominator: its JSON suffix, its short name in column headers, what it counts."""

    key: str
    short: str
    meaning: str


STATEMENT = Unit("statement", "stmt", "statements the clients sent: Questions less ioattr's own (BEGIN, COMMIT, "
                                      "each prepared execution and each statement of a multi-statement packet "
                                      "count; sysbench's queries; PostgreSQL: Simple Query and Execute "
                                      "messages less ioattr's own)")
#: selects()' sources, as a legend names them: one engine's recording names its own
#: (legend(selects_from=)), several engines' side by side (compare) both
SELECTS_FROM_SERVER = "Com_select less ioattr's own, prepared executions included"
_WIRE_SELECTS = "SELECT statements the clients sent, counted by the wire reader"
SELECTS_FROM_WIRE = f"{_WIRE_SELECTS} (PostgreSQL has no Com_select)"
SELECTS_FROM_EITHER = f"{SELECTS_FROM_SERVER}; PostgreSQL: {_WIRE_SELECTS}"
SELECT = Unit("select", "q", f"per query = per SELECT: {SELECTS_FROM_EITHER}")
TRANSACTION = Unit("transaction", "txn", "transactions: Com_commit + Com_rollback (PostgreSQL: xact_commit + "
                                          "xact_rollback less ioattr's own)")
OP = Unit("op", "op", "the benchmark's own operations (record --ops-pattern, ioattr mark --ops)")
UNITS = (STATEMENT, SELECT, TRANSACTION, OP)

#: the rates' legend: what "qps" and its neighbours count
RATES = {
    "qps": f"SELECTs per second ({SELECTS_FROM_EITHER})",
    "statements_per_s": "statements per second (Questions less ioattr's own; what sysbench calls queries/s; "
                        "PostgreSQL: Simple Query and Execute messages less ioattr's own)",
    "tps": "transactions per second (Com_commit + Com_rollback; PostgreSQL: pg_stat_database xact_commit + "
           "xact_rollback less ioattr's own)",
    "ops_per_s": "the benchmark's operations per second (record --ops-pattern, ioattr mark --ops)",
}


def statements(counters: dict[str, float]) -> float | None:
    """Statements the clients sent (STATEMENT), or None without the server's Questions."""
    v = counters.get(QUESTIONS)
    if v is None:
        return None
    return max(v - counters.get(OWN_STATEMENTS, 0.0), 0.0)


def selects(counters: dict[str, float], statement_counts: dict[str, float] | None = None) -> float | None:
    """SELECTs (SELECT): Com_select less ioattr's own, else SELECTs seen by the stage probes."""
    v = counters.get(SELECTS)
    if v is not None:
        return v - counters.get(OWN_SELECTS, 0.0)
    if statement_counts:
        return statement_counts.get("select", 0.0)
    return None


def transactions(counters: dict[str, float]) -> float | None:
    """Explicit transactions ended (TRANSACTION); None without the server's counters."""
    have = [counters[k] for k in TRANSACTIONS if k in counters]
    return sum(have) if have else None


def selects_source(counters: dict[str, float], statement_counts: dict[str, float] | None = None) -> str | None:
    """What selects() counted for these counters, in a legend's words (None: nothing)."""
    if SELECTS in counters:
        return SELECTS_FROM_SERVER
    if statement_counts:
        return SELECTS_FROM_WIRE
    return None


def legend(rates: list[tuple[str, str]], per: list[Unit], selects_from: str | None = None) -> str:
    """One legend line: what each rate counts ((column header, RATES key) pairs), then what
    each unit in `per` divides by. selects_from: where the SELECTs came from when not from
    Com_select (selects_source), so a PostgreSQL table names its own count."""
    def said(text: str) -> str:
        return text.replace(SELECTS_FROM_EITHER, selects_from) if selects_from else text
    parts = [f"{header}: {said(RATES[key])}" for header, key in rates if key in RATES]
    parts += [f"/{u.short}: {said(u.meaning)}" for u in per]
    return "; ".join(parts)

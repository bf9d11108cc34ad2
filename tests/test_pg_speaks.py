"""A PostgreSQL recording speaks PostgreSQL: explain's findings, rates, names and the engine's own
counters on pgbench with its defaults, checked against the server's own counters read directly
around each phase, on PostgreSQL 15 and 18.

One private cluster per version (tests/fixtures_postgres.py; pg_stat_statements preloaded and
installed), `pgbench -i -s 3` (~45 MB of tables and indexes), recorded by default (`record --pid
<postmaster>`) with shared_buffers 32 MB and, on 15 only (explain's findings do not change with the
version; the suite's time is shared), 96 MB, each after pg_prewarm filled shared buffers with the
two pgbench_accounts relations: a select-only phase (`pgbench -S -t`) and a TPC-B phase (`pgbench
-t`) that ends with a CHECKPOINT; the 32 MB recording then creates and drops a table. Ground truth: one query of
pg_stat_database (blks_read, blks_hit, xact_commit, summed over the databases and the shared
catalogs' row, as the recorder sums them), the checkpointer's counters, pg_stat_statements and
(16+) pg_stat_io, read around each phase once the phase's backends are gone, and pgbench's own
counts. The same recordings settle the rates (transactions from xact_commit, the backends' CPU,
data on disk), the relation names of `--by file` (a dropped table's too) and that ioattr's own
statements are not the workload's; the module ends with the slips (`-p` on a backend, a
postmaster restarted under a recording).
"""
from __future__ import annotations

import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from ioattr.host.pg_sandbox import PG_BINDIR, PrivatePostgres
from tests.fixtures_postgres import ON_15, ON_15_AND_18, started_cluster
from tests.helpers import Background, assert_rate, exporter_port, ioattr, wait_phase, wait_until

SELECTS = 2000      # pgbench -S transactions (one SELECT each)
TPCB = 100          # pgbench TPC-B transactions (BEGIN, 3 UPDATEs, SELECT, INSERT, END each)
PER_TPCB = 7        # the statements of one TPC-B transaction
#: transactions published after a phase boundary (a pgbench backend finishing after pgbench returned);
#: ioattr's own are published before each reading (0-1 apart seen on 15 and 18)
OWN_LAG = 30
INNODB_WORDS = ("innodb", "change buffer", "change-buffer", "purge", "redo", "binlog", "--stages full",
                "buffer pool")
#: the ground truth, one statement (so one call of pg_stat_statements per reading)
TRUTH = {
    "blks_read": "(SELECT sum(blks_read) FROM pg_stat_database)",
    "blks_hit": "(SELECT sum(blks_hit) FROM pg_stat_database)",
    "xact_commit": "(SELECT sum(xact_commit) FROM pg_stat_database)",
    "pss_calls": "(SELECT sum(calls) FROM pg_stat_statements WHERE query NOT LIKE '%/* ioattr-internal */%')",
    "pss_shared_blks_read": "(SELECT sum(shared_blks_read) FROM pg_stat_statements "
                            "WHERE query NOT LIKE '%/* ioattr-internal */%')",
    "pss_shared_blks_dirtied": "(SELECT sum(shared_blks_dirtied) FROM pg_stat_statements "
                               "WHERE query NOT LIKE '%/* ioattr-internal */%')",
}
CHECKPOINTER = {15: {"checkpoints_req": "(SELECT checkpoints_req FROM pg_stat_bgwriter)",
                     "buffers_checkpoint": "(SELECT buffers_checkpoint FROM pg_stat_bgwriter)"},
                18: {"checkpoints_req": "(SELECT num_requested FROM pg_stat_checkpointer)",
                     "buffers_checkpoint": "(SELECT buffers_written FROM pg_stat_checkpointer)"}}
STAT_IO = {"io_reads": "(SELECT sum(reads) FROM pg_stat_io)",
           "io_read_bytes": "(SELECT sum(read_bytes) FROM pg_stat_io)",
           "io_extends": "(SELECT sum(extends) FROM pg_stat_io)"}


@dataclass
class Run:
    rec: Path
    shared_buffers: int
    version: int
    truth: dict[str, dict[str, float]] = field(default_factory=dict)   # phase -> TRUTH delta
    direct: dict[str, int] = field(default_factory=dict)   # phase -> statements the ground truth sent


class Counted:
    """The ground truth's own connection, counting its statements (each a SELECT the phase saw)."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.n = conn, 0

    def execute(self, sql: str) -> Any:
        self.n += 1
        return self.conn.execute(sql)


@pytest.fixture(scope="module")
def cluster(pg_version: int) -> Iterator[PrivatePostgres]:
    """The module's cluster of that version, pg_stat_statements preloaded."""
    yield from started_cluster(pg_version, extra_options={"shared_preload_libraries": "'pg_stat_statements'"})


def _truth_sql(version: int) -> tuple[list[str], str]:
    parts = {**TRUTH, **CHECKPOINTER[version], **(STAT_IO if version >= 16 else {})}
    return list(parts), "SELECT " + ", ".join(parts.values())


def _pgbench(pg: PrivatePostgres, *args: str) -> str:
    res = subprocess.run([str(PG_BINDIR / "pgbench"), "-h", str(pg.socket_dir), "-p", str(pg.port), "-U", "postgres",
                          *args, "postgres"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PGSSLMODE": "disable"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def _mark(rec: Path, name: str) -> None:
    r = ioattr("mark", name, "--recording", str(rec))
    assert r.returncode == 0, r.stderr
    wait_phase(rec, name)


def _others_gone(direct: Any) -> None:
    """Wait for the phase's client backends to exit: each flushes its statistics as it goes."""
    sql = ("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
           "AND pid <> pg_backend_pid() AND application_name <> 'ioattr'")
    wait_until(lambda: direct.execute(sql).fetchone()[0] == 0, 30, "pgbench's backend to exit")


def _record(pg: PrivatePostgres, rec: Path, shared_buffers: int, version: int, drop: bool) -> Run:
    pg.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers >> 20}MB'")
    pg.restart()
    pg.execute("SELECT pg_prewarm('pgbench_accounts_pkey'), pg_prewarm('pgbench_accounts')")
    run = Run(rec, shared_buffers, version)
    names, sql = _truth_sql(version)
    recorder = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "0.5", "--phase", "idle")
    try:
        recorder.wait_recording()
        with pg.connect() as conn:
            direct = Counted(conn)
            for phase, args in (("select", ("-S", "-t", str(SELECTS))), ("tpcb", ("-t", str(TPCB)))):
                _mark(rec, phase)
                direct.n = 0
                before = direct.execute(sql).fetchone()
                _pgbench(pg, "-n", *args)
                _others_gone(direct)
                if phase == "tpcb":
                    # the checkpointer's counters: one requested checkpoint writing what TPC-B dirtied
                    direct.execute("CHECKPOINT")
                    wait_until(lambda: direct.execute(sql).fetchone()[names.index("checkpoints_req")]
                               > before[names.index("checkpoints_req")], 30, "the checkpoint to be counted")
                after = direct.execute(sql).fetchone()
                run.truth[phase] = {n: float((a or 0) - (b or 0)) for n, a, b in zip(names, after, before)}
                run.direct[phase] = direct.n
            if drop:
                # a table that is gone by the recording's end keeps the name its files had
                _mark(rec, "drop")
                direct.execute("CREATE TABLE speaks_gone AS SELECT g AS id, repeat('x', 200) AS v "
                               "FROM generate_series(1, 20000) g")
                node = direct.execute("SELECT pg_relation_filepath('speaks_gone')").fetchone()[0]
                wait_until(lambda: _named(rec, node), 30, "the recorder to name the new table's file")
                direct.execute("DROP TABLE speaks_gone")
            _mark(rec, "end")
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        recorder.stop()
    return run


def _named(rec: Path, relpath: str) -> bool:
    meta = json.loads((rec / "meta.json").read_text())
    return any(p.endswith("/" + relpath) and (r or {}).get("relation")
               for p, r in (meta.get("relations") or {}).items())


@pytest.fixture(scope="module")
def sweep(cluster: PrivatePostgres, pg_version: int, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    pg = cluster
    _pgbench(pg, "-i", "-q", "-s", "3")
    pg.execute("CREATE EXTENSION pg_prewarm")
    pg.execute("CREATE EXTENSION pg_stat_statements")
    out = tmp_path_factory.mktemp(f"sweep{pg_version}")
    runs = {"small": _record(pg, out / "sb32", 32 << 20, pg_version, drop=True)}
    if pg_version == 15:
        # the sweep's other side on one version (explain's findings do not change with it)
        runs["big"] = _record(pg, out / "sb96", 96 << 20, pg_version, drop=False)
    return runs


def _explain(base: Path, target: Path, fmt: str = "json") -> dict | str:
    r = ioattr("explain", str(base), "--against", str(target), "--baseline", "select", "--target", "select",
               "--metric", "reads_per_query", "--format", fmt)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout) if fmt == "json" else r.stdout


def _finding(out: dict, fid: str) -> dict:
    return next(f for f in out["findings"] if f["id"] == fid)


def _summary(rec: Path) -> dict[str, dict]:
    out = json.loads(ioattr("report", str(rec), "--by", "phase", "--format", "json", check=True).stdout)
    return {s["phase"]: s for s in out["summary"]}


@ON_15
def test_working_set_against_shared_buffers_both_ways(sweep: dict[str, Run]) -> None:
    small, big = sweep["small"], sweep["big"]
    # ground truth: the smaller shared_buffers missed more of the same blocks asked for
    miss = {k: r.truth["select"]["blks_read"] / (r.truth["select"]["blks_read"] + r.truth["select"]["blks_hit"])
            for k, r in sweep.items()}
    assert miss["small"] > 2 * miss["big"] + 0.01, (miss, small.truth, big.truth)

    out = _explain(big.rec, small.rec)
    # pgbench's SELECTs, its two start-up ones (scale, partitions) and the ground truth's own
    assert (out["baseline"]["ops"], out["target"]["ops"]) == (SELECTS + 2 + big.direct["select"],
                                                              SELECTS + 2 + small.direct["select"])
    f = _finding(out, "working_set")
    ev = f["evidence"]
    assert f["verdict"] == "supported" and f["engine"] == "postgres", f
    assert f["title"].startswith("Working set larger than shared_buffers"), f
    assert (ev["shared_buffers_baseline"], ev["shared_buffers_target"]) == (96 << 20, 32 << 20)
    assert ev["setting_changed"] and "shared_buffers 96 MiB -> 32 MiB" in ev["summary"]
    for side, run in (("baseline", big), ("target", small)):
        t = run.truth["select"]
        # pg_stat_database per SELECT, as read directly around pgbench: the misses exactly (ioattr's
        # own snapshot queries hit cached catalogs: they add hits, also in the phase's moments
        # before and after pgbench that the direct reading leaves out)
        ops = out[side]["ops"]
        assert ev[f"blks_read_per_op_{side}"] == pytest.approx(t["blks_read"] / ops, rel=0.03, abs=0.002), side
        assert ev[f"blks_asked_per_op_{side}"] >= 0.97 * (t["blks_read"] + t["blks_hit"]) / ops, side
    assert "raise shared_buffers (now 32 MiB)" in f["next_step"], f

    # the reverse: the bigger shared_buffers' fewer reads, supported as the mirror
    back = _explain(small.rec, big.rec)
    f = _finding(back, "working_set")
    assert f["verdict"] == "supported" and f["mirrored"] and f["direction"] == "decrease", f
    assert f["title"].startswith("The working set fits shared_buffers better"), f
    assert "shared_buffers" in f["evidence"]["summary"]


@ON_15
def test_no_innodb_findings_and_plain_index_scans(sweep: dict[str, Run]) -> None:
    small, big = sweep["small"], sweep["big"]
    out = _explain(big.rec, small.rec)
    assert {f["id"] for f in out["findings"]} == {"working_set", "checkpoint_writes", "full_page_writes",
                                                  "heap_fetches", "autovacuum", "planning_reads"}, out["findings"]
    assert all(f.get("engine") == "postgres" for f in out["findings"])
    assert out["settings"]["target"]["shared_buffers"] == 32 << 20  # connected: its settings, not "no connection"
    # pgbench -S selects abalance, which no index holds: plain index scans, one heap visit per SELECT
    f = _finding(out, "heap_fetches")
    assert f["verdict"] == "refuted", f
    assert f["evidence"]["heap_blks_per_op_target"] == pytest.approx(1.0, abs=0.05), f
    # the working set is what changed, not the planner's reads
    assert _finding(out, "planning_reads")["verdict"] != "supported", _finding(out, "planning_reads")
    # the autovacuum is off in this cluster: none of the change is its workers'
    assert _finding(out, "autovacuum")["verdict"] == "refuted"
    # ioattr's own catalog and counter queries are not the workload's: no contributor
    assert not [c for c in out["contributors"] if c["dims"].get("role") == "ioattr"], out["contributors"]
    text = _explain(big.rec, small.rec, "text").lower()
    assert not [w for w in INNODB_WORDS if w in text], text
    assert "without a server connection" not in text


@ON_15_AND_18
def test_relation_names_and_no_own_queries(sweep: dict[str, Run]) -> None:
    small = sweep["small"]
    # ioattr's own catalog and counter queries are not the workload's queries
    by_query = json.loads(ioattr("report", str(small.rec), "--by", "query", "--phase", "select", "--format", "json",
                                 check=True).stdout)["rows"]
    assert not [r for r in by_query if "pg_statio_user_tables" in (r.get("query") or "")], by_query
    # pgbench's deltas are signed literals: "abalance + -4321" is the same statement as "+ 4321"
    meta = json.loads((small.rec / "meta.json").read_text())
    updates = [d for d, q in meta["queries"].items() if q.startswith("UPDATE pgbench_accounts")]
    assert len(updates) == 1, [meta["queries"][d] for d in updates]
    assert _statements(small.rec, "tpcb").get(int(updates[0], 16)) == TPCB, updates
    # --by file names the relation each file holds, a table dropped before the recording's end too
    by_file = json.loads(ioattr("report", str(small.rec), "--by", "file", "--format", "json",
                                check=True).stdout)["rows"]
    named = {r["relation"] for r in by_file if r["layer"] == "syscall" and r.get("relation")}
    assert {"postgres.public.pgbench_accounts", "postgres.public.pgbench_accounts_pkey",
            "postgres.public.speaks_gone"} <= named, by_file


@ON_15_AND_18
def test_transactions_cpu_and_data_on_disk_in_compare(sweep: dict[str, Run], cluster: PrivatePostgres) -> None:
    r = ioattr("compare", *[str(run.rec) for run in sweep.values()], "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    rows = {(row["run"], row["phase"]): row for row in out["rows"]}
    for run in sweep.values():
        row = rows[(run.rec.name, "tpcb")]
        # pgbench's transactions, its two start-up SELECTs, the ground truth's two readings and
        # the CHECKPOINT, each a transaction (the truth's own polls too: counted in the truth);
        # ioattr's own snapshot transactions taken off as it counted them, while PostgreSQL adds
        # a backend's counts at most once a second: within that second's worth of ioattr's own
        truth = run.truth["tpcb"]["xact_commit"]
        assert TPCB + 2 <= truth <= TPCB + 40, truth
        assert abs(row["transactions"] - truth) <= OWN_LAG, (row, run.truth)
        assert_rate(row["tps"], row["transactions"], row["seconds"], row)
        # the backends' CPU, not the postmaster's alone (which does ~nothing per query): pgbench's
        # one backend lives less than the phase, read at ioattr's interval or reaped by the postmaster
        assert row["server_cpu_us_per_query"] is not None and row["server_cpu_us_per_query"] > 20, row
    # data on disk: every user table's pg_total_relation_size at the recording's end
    sizes = cluster.query("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
                          "ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'")[0][0]
    last = list(sweep.values())[-1].rec.name   # its table sizes are the cluster's now (pgbench only inserts
    runs = {x["label"]: x for x in out["runs"]}   # into pgbench_history: within 2%)
    assert runs[last]["data_bytes"] == pytest.approx(int(sizes), rel=0.02), (runs[last], sizes)
    # the phase's transactions in report's phase summary too, with their source named
    small = sweep["small"]
    summary = _summary(small.rec)["tpcb"]
    assert summary["transactions"] == rows[(small.rec.name, "tpcb")]["transactions"]
    assert summary["postgres"]["transactions_source"].startswith("pg_stat_database xact_commit")
    # TPC-B inserts 1 row in 7 statements: an OLTP mix, not a load (no "bulk:" line)
    assert summary["bulk"] is None, summary
    assert "tpcb: bulk:" not in " ".join(ioattr("report", str(small.rec), "--by", "phase", check=True).stdout.split())


@ON_15_AND_18
def test_statement_rate_is_pgbenchs_statements(sweep: dict[str, Run]) -> None:
    """stmt/s on a PostgreSQL phase: the statements the clients sent (Simple Query messages here:
    pgbench's default protocol), as pgbench sent them: 1 per select-only transaction, 7 per TPC-B
    one (BEGIN, 3 UPDATEs, SELECT, INSERT, END), its two start-up SELECTs, and the ground
    truth's own statements; in report --by phase, its table and compare alike."""
    r = ioattr("compare", *[str(run.rec) for run in sweep.values()], "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = {(row["run"], row["phase"]): row for row in json.loads(r.stdout)["rows"]}
    for run in sweep.values():
        summary = _summary(run.rec)
        for phase, per_txn, txns in (("select", 1, SELECTS), ("tpcb", PER_TPCB, TPCB)):
            want = per_txn * txns + 2 + run.direct[phase]
            s = summary[phase]
            assert s["statements"] == want, (run.version, phase, s, run.direct)
            assert s["postgres"]["statements"] == want
            assert s["postgres"]["statements_source"].startswith("Simple Query and Execute messages"), s
            assert_rate(s["statements_per_s"], want, s["seconds"], s)
            row = rows[(run.rec.name, phase)]
            assert row["statements_per_s"] == s["statements_per_s"], (row, s)
    # the table's stmt/s column (it printed "-" on PostgreSQL before)
    rate = _summary(sweep["small"].rec)["tpcb"]["statements_per_s"]
    table = ioattr("report", str(sweep["small"].rec), "--by", "phase", check=True).stdout
    assert "stmt/s" in table and f"{rate:,.1f}" in table, table


@ON_15_AND_18
def test_phase_table_names_postgresqls_own_counts(sweep: dict[str, Run]) -> None:
    """report --by phase on a PostgreSQL recording: `rpq engine` is the server's blks_read per
    SELECT (it was "-"), beside ours, and the legend names what each column counted here
    (SELECTs from the wire, blks_read), not Com_select or Innodb_data_reads."""
    for run in sweep.values():
        s = _summary(run.rec)["select"]
        t = run.truth["select"]
        assert s["engine_reads_source"] == "pg_stat_database blks_read", s
        assert s["qps_source"].startswith("SELECT statements the clients sent"), s
        # the server's own count over the phase (its reading brackets the recorder's, a few of
        # ioattr's catalog reads apart), per SELECT the clients sent
        assert s["selects"] >= SELECTS, s
        assert s["engine_reads_per_query"] == pytest.approx(t["blks_read"] / s["selects"], rel=0.02, abs=0.01), (s, t)
        # and ours beside it: the same blocks, read by the backends as pread()s of 8 KiB pages
        assert s["reads_per_query"] == pytest.approx(s["engine_reads_per_query"], rel=0.05, abs=0.02), s
    flat = " ".join(ioattr("report", str(sweep["small"].rec), "--by", "phase", check=True).stdout.split())
    assert "the engine's own reads (pg_stat_database blks_read)" in flat, flat
    assert "counted by the wire reader" in flat and "Innodb_data_reads" not in flat, flat
    assert "Com_select less ioattr's own" not in flat, flat


@ON_15_AND_18
def test_engine_counters_per_phase_against_the_server(sweep: dict[str, Run]) -> None:
    """pg_stat_statements' block counters, the checkpointer's (pg_stat_checkpointer on 17+) and
    pg_stat_io (16+) per phase, each against the server's read around the phase."""
    wrong: list[tuple] = []

    def same(what: str, got: float | None, want: float, tol: float = 0) -> None:
        if got is None or abs(got - want) > tol:
            wrong.append((what, got, want))

    for run in sweep.values():
        for phase in ("select", "tpcb"):
            t = run.truth[phase]
            d = _counter_deltas(run.rec, phase)
            at = f"{run.version} {run.rec.name} {phase}"
            # pg_stat_statements updates at each statement's end, in shared memory: exact, but for
            # the ground truth's closing reading (in the phase, after its own result)
            same(f"{at} shared_blks_read", d.get("pg_stat_statements:shared_blks_read"), t["pss_shared_blks_read"])
            same(f"{at} shared_blks_dirtied", d.get("pg_stat_statements:shared_blks_dirtied"),
                 t["pss_shared_blks_dirtied"])
            same(f"{at} calls", d.get("pg_stat_statements:calls"), t["pss_calls"] + 1)
            if run.version >= 16:
                # pg_stat_io's as the whole cluster counted them (ioattr's own backends hit cached
                # catalogs); 18's bytes columns
                same(f"{at} io reads", d.get("pg_stat_io:reads"), t["io_reads"], 2)
                same(f"{at} io read_bytes", d.get("pg_stat_io:read_bytes"), t["io_read_bytes"], 2 * 8192)
                same(f"{at} io extends", d.get("pg_stat_io:extends"), t["io_extends"], 2)
            else:
                assert not [k for k in d if k.startswith("pg_stat_io:")], d
        t = run.truth["tpcb"]
        d = _counter_deltas(run.rec, "tpcb")
        # the CHECKPOINT: counted, and its writes as the checkpointer counted them (17+: pg_stat_checkpointer)
        assert t["checkpoints_req"] >= 1 and t["buffers_checkpoint"] > 0, t
        same(f"{run.version} checkpoints_req", d.get("pg_stat_bgwriter:checkpoints_req"), t["checkpoints_req"])
        same(f"{run.version} buffers_checkpoint", d.get("pg_stat_bgwriter:buffers_checkpoint"), t["buffers_checkpoint"])
    assert not wrong, wrong


@ON_15_AND_18
def test_tops_files_view_names_relations(cluster: PrivatePostgres, sweep: dict[str, Run]) -> None:
    """top's files view names a relation's file as report --by file does: a sequential scan of
    pgbench_accounts (its filler column is in no index; larger than a quarter of shared_buffers:
    read through a small ring, so every scan after the restart reads the table again; no parallel
    workers) is the busiest row, named by its relation."""
    pg = cluster
    # shared buffers empty, and smaller than the table: every scan reads (96 MB on 15 came to hold
    # all of pgbench_accounts after a few scans: the second top saw no IO)
    pg.execute("ALTER SYSTEM SET shared_buffers = '16MB'")
    pg.restart()
    done, stop, errors = [0], threading.Event(), []

    def scan() -> None:
        try:
            with pg.connect() as c:
                c.execute("SET max_parallel_workers_per_gather = 0")
                while not stop.is_set():
                    c.execute("SELECT sum(length(filler)) FROM pgbench_accounts").fetchone()
                    done[0] += 1
        except Exception as e:  # noqa: BLE001 - said by the test
            errors.append(e)

    t = threading.Thread(target=scan, daemon=True)
    t.start()
    try:
        wait_until(lambda: done[0] >= 1 or errors, 60, "the first scan")
        base = ("top", "--pid", str(pg.pid), "--batch", "-n", "2", "--interval", "0.7", "--by", "file", "--rows", "4")
        text = ioattr(*base[:-4], "--by", "file,index", "--rows", "4", "--width", "160", timeout=60)
        js = ioattr(*base, "--format", "json", timeout=60)
    finally:
        stop.set()
        t.join(60)
    assert not errors, errors
    assert text.returncode == 0 and js.returncode == 0, text.stderr + js.stderr
    tables = [[line.split() for line in block.split("\n\n")[0].splitlines()[1:]]
              for block in text.stdout.split("\nFILE ")[1:]]
    assert len(tables) == 2 and all(rows and rows[0][0] == "postgres.public.pgbench_accounts" for rows in tables), \
        text.stdout
    # the index view, whose pages are PostgreSQL's blocks here, says pages, not InnoDB's
    assert "indexes  pages  sorted by PG/s" in text.stdout and "InnoDB" not in text.stdout, text.stdout
    node = pg.query("SELECT pg_relation_filepath('pgbench_accounts')")[0][0]
    # JSON: the same row, the path as its name and the relation beside it (a snapshot whose short
    # first interval drained no IO yet has no rows)
    snaps = [json.loads(line) for line in js.stdout.splitlines()]
    tops = [snap["views"]["files"][0] for snap in snaps if snap["views"]["files"]]
    # the server line's rates: no Questions on PostgreSQL, so the statements the wire reader
    # counted, said as such (the scans' statement was prepared by psycopg before top attached:
    # counted as executions, not known to be SELECTs)
    rates = [s["per_query"] for s in snaps if s["per_query"]]
    assert rates and all(r["from_wire"] for r in rates) and any(r["statements_ps"] > 0 for r in rates), snaps
    assert tops, js.stdout
    for top in tops:
        assert top["relation"] == "postgres.public.pgbench_accounts" and top["name"].endswith("/" + node), top
        assert top["r"] > 0, top


STATIO_READ = ("SELECT coalesce(heap_blks_read, 0) FROM pg_statio_user_tables WHERE relname = %s")


def _html_file_rows(page: str, name: str | None) -> list[list[str]]:
    """The cells of the HTML report's table rows (the file table's, the requested breakdown's)
    whose first cell is `name` (every row: None), markup stripped."""
    import html
    import re

    out = []
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells and (name is None or cells[0] == name):
            out.append(cells)
    return out


@ON_15_AND_18
def test_exporter_and_html_name_relations(cluster: PrivatePostgres, pg_version: int, tmp_path: Path) -> None:
    """Every file view names a relation's file by its relation (labels.file_label/relation_label),
    as report --by file and top do: a cold sequential scan of a planted table, watched by the
    exporter and a recording at once. The exporter's `file` label and the HTML report's file
    table carry "postgres.public.names_t" (not base/5/...), with the bytes read equal to the
    table's pg_statio heap_blks_read (every fork) times 8 KiB; report --by file's JSON and CSV
    the same, with the path beside it."""
    from ioattr.output.html_svg import fmt_bytes
    from tests.test_exporter import samples, scrape

    pg = cluster
    name = "postgres.public.names_t"
    pg.execute("CREATE TABLE IF NOT EXISTS names_t AS SELECT g AS id, repeat('x', 200) AS v "
               "FROM generate_series(1, 40000) g")
    pg.execute("VACUUM (FREEZE, ANALYZE) names_t")   # hint bits set: the scan dirties nothing
    pg.execute("CHECKPOINT")
    pg.restart()   # cold shared buffers: the scan reads the whole table
    before = int(pg.query(STATIO_READ, ("names_t",))[0][0])
    node = pg.query("SELECT pg_relation_filepath('names_t')")[0][0]
    rec = tmp_path / "names"
    # --top-n: room for every file the cluster touches. Its restart and each new connection (the
    # recorder's, to every database) read some 50 catalog files before the scan; with the default
    # 50 the `file` label was full of them, none 30 s in (TopN's min_dwell), and the table's whole
    # scan went to file="other" (seen once under stress-ng: other 9650688 of 9641984 + catalogs)
    exp = Background("exporter", "--pid", str(pg.pid), "--listen", "127.0.0.1:0", "--interval", "0.3",
                     "--top-n", "1000")
    recorder = None

    def exported() -> int:
        return int(sum(v for labels, v in samples(scrape(port), "ioattr_read_bytes_total")
                       if labels["layer"] == "syscall" and labels["file"].startswith(name)))

    try:
        port = exporter_port(exp)
        recorder = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "0.5")
        recorder.wait_recording()
        with pg.connect() as scanner:
            scanner.execute("SET max_parallel_workers_per_gather = 0")
            scanner.execute("SELECT sum(length(v)) FROM names_t").fetchone()
        # the scanner's statistics are flushed at its exit
        blocks = int(pg.query("SELECT pg_relation_size('names_t') / 8192")[0][0])
        wait_until(lambda: int(pg.query(STATIO_READ, ("names_t",))[0][0]) - before >= blocks, 30,
                   "the scanner's statistics to be flushed")
        truth = (int(pg.query(STATIO_READ, ("names_t",))[0][0]) - before) * 8192
        def seen() -> str:
            by_file: dict[str, float] = {}
            for labels, v in samples(scrape(port), "ioattr_read_bytes_total"):
                if labels["layer"] == "syscall":
                    by_file[labels["file"]] = by_file.get(labels["file"], 0) + v
            return f"the exporter to count {truth} bytes of {name} (syscall read bytes by file: {by_file})"

        wait_until(lambda: exported() >= truth, 60, seen)
        text = scrape(port)
        code, err = recorder.stop()
        recorder = None
        assert code == 0, err
    finally:
        if recorder is not None:
            recorder.stop()
        code, err = exp.stop()
    assert code == 0, err
    files = {labels["file"] for labels, _ in samples(text, "ioattr_read_bytes_total")}
    assert name in files and not [f for f in files if f.endswith("/" + node)], sorted(files)
    got = sum(v for labels, v in samples(text, "ioattr_read_bytes_total")
              if labels["layer"] == "syscall" and labels["file"].startswith(name))
    assert got == truth, (got, truth, sorted(files))

    # the recording: report --by file (JSON, CSV) names it beside its path, with the same bytes
    rows = json.loads(ioattr("report", str(rec), "--by", "file", "--layer", "syscall", "--format", "json",
                             check=True).stdout)["rows"]
    mine = [r for r in rows if r["op"] == "read" and (r.get("relation") or "").startswith(name)]
    assert sum(r["bytes"] for r in mine) == truth, mine
    assert any(r["relation"] == name and r["file"].endswith("/" + node) for r in mine), mine
    csv_text = ioattr("report", str(rec), "--by", "file", "--layer", "syscall", "--format", "csv",
                      check=True).stdout
    assert "relation" in csv_text.splitlines()[0].split(",") and f",{name}," in csv_text, csv_text[:2000]
    # the HTML report: its file table (and the breakdown asked for) name the relation, not the path
    page = tmp_path / "names.html"
    ioattr("report", str(rec), "--format", "html", "--by", "file", "--layer", "syscall", "-o", str(page), check=True)
    markup = page.read_text()
    table = [c for c in _html_file_rows(markup, name) if c[1] == "relation" and c[2] == "read"]
    assert len(table) == 1 and table[0][4] == fmt_bytes(next(r["bytes"] for r in mine if r["relation"] == name)), \
        _html_file_rows(markup, name)
    requested = [c for c in _html_file_rows(markup, name) if c[1] == "syscall" and c[2] == "read"]
    assert requested, _html_file_rows(markup, name)
    shown = [c[0] for c in _html_file_rows(markup, None)]
    assert not [c for c in shown if c.endswith("/" + node)], shown


@ON_15_AND_18
def test_exporter_names_a_relation_created_while_it_runs(cluster: PrivatePostgres, tmp_path: Path) -> None:
    """A table created while the exporter runs: its file shows up before the catalogs the
    exporter read at its start hold it (re-read at most every 5 s), and a counter keeps its
    labels, so its rows wait for the name (metrics_state.ExporterState._hold_unnamed) instead of
    being counted under the path for good (what it did before: all 19 MB of a CREATE TABLE AS
    and CHECKPOINT under base/5/NNNN). The exporter's syscall write bytes of the table's main
    fork equal a recording's of it (report --by file, named at the end), none under the path."""
    from tests.test_exporter import samples, scrape

    pg = cluster
    name = "postgres.public.late_t"
    pg.execute("DROP TABLE IF EXISTS late_t")
    rec = tmp_path / "late"
    exp = Background("exporter", "--pid", str(pg.pid), "--listen", "127.0.0.1:0", "--interval", "0.3",
                     "--top-n", "1000")   # room for every file (see test_exporter_and_html_name_relations)
    recorder = None

    def written() -> dict[str, float]:
        by_file: dict[str, float] = {}
        for labels, v in samples(scrape(port), "ioattr_write_bytes_total"):
            if labels["layer"] == "syscall":
                by_file[labels["file"]] = by_file.get(labels["file"], 0) + v
        return by_file

    try:
        port = exporter_port(exp)
        recorder = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "0.5")
        recorder.wait_recording()
        # no autovacuum: nothing writes the table after the checkpoint
        pg.execute("CREATE TABLE late_t WITH (autovacuum_enabled = off) AS SELECT g AS id, repeat('x', 200) AS v "
                   "FROM generate_series(1, 40000) g")
        node = pg.query("SELECT pg_relation_filepath('late_t')")[0][0]
        pg.execute("CHECKPOINT")   # every page of it written when this returns
        code, err = recorder.stop()
        recorder = None
        assert code == 0, err
        rows = json.loads(ioattr("report", str(rec), "--by", "file", "--layer", "syscall", "--format", "json",
                                 check=True).stdout)["rows"]
        truth = sum(r["bytes"] for r in rows if r["op"] == "write" and r.get("relation") == name)
        size = int(pg.query("SELECT pg_relation_size('late_t')")[0][0])
        assert truth >= size, (truth, size, [r for r in rows if (r.get("relation") or "").startswith(name)])
        wait_until(lambda: written().get(name, 0) >= truth, 60,
                   lambda: f"the exporter to count {truth} bytes written to {name} ({written()})")
        got = written()
    finally:
        if recorder is not None:
            recorder.stop()
        code, err = exp.stop()
    assert code == 0, err
    assert got[name] == truth, (got[name], truth)
    assert not [f for f in got if f.endswith("/" + node) or "/" + node + "." in f], got


#: the file classes of a relation's forks: what pg_stat_io's object "relation" counts
RELATION_FORKS = ("relation", "fsm", "vm", "init_fork")
BACKEND_IO = ("SELECT coalesce(sum(read_bytes), 0), coalesce(sum(reads), 0) FROM pg_stat_get_backend_io(%s) "
              "WHERE object = 'relation'")


@ON_15_AND_18
def test_per_backend_io_against_ours(cluster: PrivatePostgres, sweep: dict[str, Run], pg_version: int,
                                     tmp_path: Path) -> None:
    """pg_stat_get_backend_io() (18) recorded per phase and per backend (counters source
    pg_stat_backend_io): a backend born in the phase, a cold sequential scan (after a restart)
    and its catalog reads: its recorded relation read_bytes equal the server's for it, and our
    syscall-layer reads by that backend on relation files (every fork) equal them. On 15: one
    line says there is none, and nothing is recorded."""
    pg = cluster
    pg.execute("CREATE TABLE IF NOT EXISTS backend_io_t AS SELECT g AS id, repeat('x', 200) AS v "
               "FROM generate_series(1, 40000) g")
    pg.execute("VACUUM (FREEZE, ANALYZE) backend_io_t")   # hint bits set: the scan dirties nothing
    pg.execute("CHECKPOINT")
    pg.restart()   # cold shared buffers: the scan and the new backend's catalog lookups read
    rec = tmp_path / "backend_io"
    recorder = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "0.5", "--phase", "idle")
    try:
        recorder.wait_recording()
        _mark(rec, "scan")
        with pg.connect() as scanner, pg.connect() as watch:
            pid = int(scanner.execute("SELECT pg_backend_pid()").fetchone()[0])
            scanner.execute("SELECT sum(length(v)) FROM backend_io_t").fetchone()
            if pg_version >= 18:
                scanner.execute("SELECT pg_stat_force_next_flush()").fetchone()   # flushed once idle
                table = int(watch.execute("SELECT pg_relation_size('backend_io_t')").fetchone()[0])
                wait_until(lambda: watch.execute(BACKEND_IO, (pid,)).fetchone()[0] >= table, 30,
                           "the scanning backend's statistics to be flushed")
                truth = [int(v) for v in watch.execute(BACKEND_IO, (pid,)).fetchone()]
            _mark(rec, "end")
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        recorder.stop()
    d = _counter_deltas(rec, "scan")
    backend = {k.split(":", 2)[2]: v for k, v in d.items() if k.startswith(f"pg_stat_backend_io:{pid}:")}
    if pg_version < 18:
        said = [line for line in err.splitlines() if "pg_stat_get_backend_io" in line]
        assert len(said) == 1 and "PostgreSQL 18's; this server is 15" in said[0], err
        assert not [k for k in d if k.startswith("pg_stat_backend_io")], d
        return
    # the recorder's reading: the server's for that backend (born in the phase: from 0)
    assert (backend.get("relation:read_bytes"), backend.get("relation:reads")) == tuple(truth), (backend, truth)
    # ours: that backend's syscall-layer reads of relation files (io workers' charged to it)
    rows = json.loads(ioattr("report", str(rec), "--by", "process,file_class", "--phase", "scan", "--layer",
                             "syscall", "--format", "json", check=True).stdout)["rows"]
    ours = sum(r["bytes"] for r in rows if r["op"] == "read" and r["file_class"] in RELATION_FORKS
               and (r.get("process") or "").endswith(f"[{pid}]"))
    assert ours == pytest.approx(truth[0], abs=2 * 8192), (ours, truth, rows)
    assert truth[0] >= table


STAT_IO_BACKENDS = ("SELECT coalesce(sum(read_bytes), 0) FROM pg_stat_io WHERE object = 'relation' AND backend_type "
                    "IN ('client backend', 'autovacuum worker', 'walsender', 'background worker')")


@ON_15_AND_18
def test_exited_backend_in_its_own_row(cluster: PrivatePostgres, pg_version: int, tmp_path: Path) -> None:
    """A backend's own counters vanish at its exit: a connection opened inside a phase does a cold
    sequential scan and closes before the phase ends (the recorder's interval longer than the
    phase: no reading but the phase's boundaries lists it). Its reads are the phase's
    `[exited backends]` row (pg_stat_io's client backends less the backends read), equal to its
    pg_stat_get_backend_io() read just before it closed; the rows sum to pg_stat_io's delta, as
    recorded and as read directly around the phase. On 15: no per-backend rows."""
    pg = cluster
    pg.execute("CREATE TABLE IF NOT EXISTS exit_t AS SELECT g AS id, repeat('x', 200) AS v "
               "FROM generate_series(1, 40000) g")
    pg.execute("VACUUM (FREEZE, ANALYZE) exit_t")
    pg.execute("CHECKPOINT")
    pg.restart()   # cold shared buffers: the scan reads the whole table
    rec = tmp_path / "exited"
    recorder = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "300", "--chunk-seconds", "300",
                          "--phase", "idle")
    try:
        recorder.wait_recording()
        with pg.connect() as watch:
            if pg_version >= 18:
                # the watcher's own catalog look-ups done and flushed before the phase
                for sql in (STAT_IO_BACKENDS, BACKEND_IO % "pg_backend_pid()", "SELECT pg_stat_force_next_flush()"):
                    watch.execute(sql).fetchone()
                watch.execute("SELECT 1").fetchone()
            _mark(rec, "scan")
            if pg_version >= 18:
                direct_before = int(watch.execute(STAT_IO_BACKENDS).fetchone()[0])
            with pg.connect() as scanner:
                pid = int(scanner.execute("SELECT pg_backend_pid()").fetchone()[0])
                scanner.execute("SET max_parallel_workers_per_gather = 0")
                scanner.execute("SELECT sum(length(v)) FROM exit_t").fetchone()
                if pg_version >= 18:
                    scanner.execute("SELECT pg_stat_force_next_flush()").fetchone()
                    table = int(watch.execute("SELECT pg_relation_size('exit_t')").fetchone()[0])
                    wait_until(lambda: watch.execute(BACKEND_IO, (pid,)).fetchone()[0] >= table, 30,
                               "the scanning backend's statistics to be flushed")
                    truth = int(watch.execute(BACKEND_IO, (pid,)).fetchone()[0])
            wait_until(lambda: not watch.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchall(),
                       30, "the scanning backend to exit")
            if pg_version >= 18:
                watch.execute("SELECT pg_stat_force_next_flush()").fetchone()
                direct = int(watch.execute(STAT_IO_BACKENDS).fetchone()[0]) - direct_before
            _mark(rec, "end")
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        recorder.stop()
    scan = _summary(rec)["scan"]
    text = ioattr("report", str(rec), "--by", "phase", check=True).stdout
    if pg_version < 18:
        assert "backend_io" not in (scan.get("postgres") or {}), scan
        assert "per backend" not in text, text
        return
    terms = scan["postgres"]["backend_io"]
    rows = {r["backend"]: r for r in terms["rows"]}
    assert str(pid) not in rows, rows   # never read while it lived
    exited = rows["[exited backends]"]
    assert truth >= table and exited["read_bytes"] == pytest.approx(truth, abs=2 * 8192), (truth, rows)
    # the rows are pg_stat_io's split: as recorded, and as read directly around the phase
    recorded = _counter_deltas(rec, "scan")
    stat_io = sum(v for k, v in recorded.items() if k.startswith("pg_stat_io:") and k.count(":") == 4
                  and k.split(":")[1] in ("client backend", "autovacuum worker", "walsender", "background worker")
                  and k.split(":")[2] == "relation" and k.endswith(":read_bytes"))
    assert sum(r["read_bytes"] for r in terms["rows"]) == terms["pg_stat_io"]["read_bytes"] == stat_io, terms
    # (ioattr's own reads at the phase's first reading, cold catalogs after the restart, may be
    # flushed before or after the direct reading: in the [ioattr] row)
    assert stat_io == pytest.approx(direct, abs=2 * 8192 + rows.get("[ioattr]", {}).get("read_bytes", 0)), \
        (stat_io, direct, terms)
    assert "[exited backends]" in text and "pg_stat_get_backend_io" in text, text


def _statements(rec: Path, phase: str) -> dict[int, int]:
    """The recording's statements table in one phase: digest -> count."""
    import duckdb

    rows = duckdb.connect().execute(
        "SELECT digest, sum(count) FROM read_parquet(?, union_by_name = true) WHERE phase = ? GROUP BY ALL",
        [str(rec / "statements" / "*.parquet"), phase]).fetchall()
    return {int(d) & 0xFFFFFFFFFFFFFFFF: int(n) for d, n in rows}


def _counter_deltas(rec: Path, phase: str) -> dict[str, float]:
    from ioattr.analysis.phase_stats import counter_deltas
    from ioattr.format.reader import Recording

    return counter_deltas(Recording(rec), phase)


@ON_15_AND_18
def test_slips_a_backend_pid_and_a_restarted_postmaster(cluster: PrivatePostgres, sweep: dict[str, Run],
                                                        tmp_path: Path) -> None:
    pg = cluster
    with pg.connect() as c:
        backend = int(c.execute("SELECT pg_backend_pid()").fetchone()[0])
        r = ioattr("record", "-o", str(tmp_path / "backend"), "--pid", str(backend), "--duration", "0.5")
    assert r.returncode == 0, r.stderr   # recorded as asked, as before
    said = [line for line in r.stderr.splitlines() if line.startswith(f"ioattr: pid {backend} ")]
    assert said == [f"ioattr: pid {backend} is a postgres backend, not its server: record --pid {pg.pid} "
                    "(the postmaster) for relation names, roles and queries"], r.stderr

    # the postmaster restarts under a -p recording: its counters stop with one line, not one per source
    recorder = Background("record", "-o", str(tmp_path / "restart"), "--pid", str(pg.pid), "--interval", "0.2")
    try:
        recorder.wait_recording()
        pg.restart()
        wait_until(lambda: recorder.proc.poll() is not None or "connection lost" in recorder.stderr, 60,
                   lambda: recorder.stderr)
    finally:
        code, err = recorder.stop()
    assert "cannot read 'pg_" not in err, err
    assert err.count("connection lost") <= 1, err

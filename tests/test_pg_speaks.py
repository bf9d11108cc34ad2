"""A PostgreSQL recording speaks PostgreSQL: explain's findings, rates and names on pgbench with
its defaults, checked against the server's own counters read directly around each phase.

One private cluster (tests/fixtures_postgres.py), `pgbench -i -s 3` (~45 MB of tables and
indexes), recorded twice by default (`record --pid <postmaster>`): with shared_buffers 32 MB and
96 MB, each after pg_prewarm filled shared buffers with the two pgbench_accounts relations, a
select-only phase (`pgbench -S -t`) and a TPC-B phase (`pgbench -t`). Ground truth:
pg_stat_database (blks_read, blks_hit, xact_commit, summed over the databases and the shared
catalogs' row, as the recorder sums them) read around each phase, and pgbench's own counts.
The same recordings settle the rates (transactions from xact_commit, the backends' CPU), the
relation names of `--by file` and that ioattr's own statements are not the workload's; the
module ends with the slips (`-p` on a backend, a postmaster restarted under a recording).
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ioattr.host.pg_sandbox import PG_BINDIR, PrivatePostgres
from tests.helpers import Background, ioattr, wait_phase, wait_until

SELECTS = 4000      # pgbench -S transactions (one SELECT each)
TPCB = 150          # pgbench TPC-B transactions (BEGIN, 3 UPDATEs, SELECT, INSERT, END each)
BLOCKS = ("SELECT sum(blks_read), sum(blks_hit), sum(xact_commit) FROM pg_stat_database")
OWN_LAG = 30        # ioattr's own transactions PostgreSQL may not have counted yet at a phase boundary
INNODB_WORDS = ("innodb", "change buffer", "change-buffer", "purge", "redo", "binlog", "--stages full",
                "buffer pool")


@dataclass
class Run:
    rec: Path
    shared_buffers: int
    truth: dict[str, tuple[float, ...]] = field(default_factory=dict)   # phase -> BLOCKS delta


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


def _record(pg: PrivatePostgres, rec: Path, shared_buffers: int) -> Run:
    pg.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers >> 20}MB'")
    pg.restart()
    pg.execute("SELECT pg_prewarm('pgbench_accounts_pkey'), pg_prewarm('pgbench_accounts')")
    run = Run(rec, shared_buffers)
    recorder = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "0.5", "--phase", "idle")
    try:
        recorder.wait_recording()
        with pg.connect() as direct:
            for phase, args in (("select", ("-S", "-t", str(SELECTS))), ("tpcb", ("-t", str(TPCB)))):
                _mark(rec, phase)
                before = direct.execute(BLOCKS).fetchone()
                _pgbench(pg, "-n", *args)   # its backend flushes its counters when it exits
                after = direct.execute(BLOCKS).fetchone()
                run.truth[phase] = tuple(float(a - b) for a, b in zip(after, before))
            _mark(rec, "end")
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        recorder.stop()
    return run


@pytest.fixture(scope="module")
def sweep(postgres: PrivatePostgres, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    pg = postgres
    _pgbench(pg, "-i", "-q", "-s", "3")
    pg.execute("CREATE EXTENSION pg_prewarm")
    out = tmp_path_factory.mktemp("sweep")
    return {"small": _record(pg, out / "sb32", 32 << 20), "big": _record(pg, out / "sb96", 96 << 20)}


def _explain(base: Path, target: Path, fmt: str = "json") -> dict | str:
    r = ioattr("explain", str(base), "--against", str(target), "--baseline", "select", "--target", "select",
               "--metric", "reads_per_query", "--format", fmt)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout) if fmt == "json" else r.stdout


def _finding(out: dict, fid: str) -> dict:
    return next(f for f in out["findings"] if f["id"] == fid)


def test_working_set_against_shared_buffers_both_ways(sweep: dict[str, Run]) -> None:
    small, big = sweep["small"], sweep["big"]
    # ground truth: the smaller shared_buffers missed more of the same blocks asked for
    miss = {k: r.truth["select"][0] / (r.truth["select"][0] + r.truth["select"][1]) for k, r in sweep.items()}
    assert miss["small"] > 2 * miss["big"] + 0.01, (miss, small.truth, big.truth)

    out = _explain(big.rec, small.rec)
    # pgbench's SELECTs, its two start-up ones (scale, partitions) and the ground truth's own two
    assert out["baseline"]["ops"] == out["target"]["ops"] == SELECTS + 4, (out["baseline"], out["target"])
    f = _finding(out, "working_set")
    ev = f["evidence"]
    assert f["verdict"] == "supported" and f["engine"] == "postgres", f
    assert f["title"].startswith("Working set larger than shared_buffers"), f
    assert (ev["shared_buffers_baseline"], ev["shared_buffers_target"]) == (96 << 20, 32 << 20)
    assert ev["setting_changed"] and "shared_buffers 96 MiB -> 32 MiB" in ev["summary"]
    for side, run in (("baseline", big), ("target", small)):
        read, hit, _ = run.truth["select"]
        # pg_stat_database per SELECT, as read directly around pgbench: the misses exactly (ioattr's
        # own snapshot queries hit cached catalogs: they add hits, ~200 a second, also in the phase's
        # moments before and after pgbench that the direct reading leaves out)
        ops = out[side]["ops"]
        assert ev[f"blks_read_per_op_{side}"] == pytest.approx(read / ops, rel=0.03, abs=0.002), side
        assert ev[f"blks_asked_per_op_{side}"] >= 0.97 * (read + hit) / ops, side
    assert "raise shared_buffers (now 32 MiB)" in f["next_step"], f

    # the reverse: the bigger shared_buffers' fewer reads, supported as the mirror
    back = _explain(small.rec, big.rec)
    f = _finding(back, "working_set")
    assert f["verdict"] == "supported" and f["mirrored"] and f["direction"] == "decrease", f
    assert f["title"].startswith("The working set fits shared_buffers better"), f
    assert "shared_buffers" in f["evidence"]["summary"]


def test_no_innodb_findings_and_plain_index_scans(sweep: dict[str, Run]) -> None:
    small, big = sweep["small"], sweep["big"]
    out = _explain(big.rec, small.rec)
    assert {f["id"] for f in out["findings"]} == {"working_set", "checkpoint_writes", "full_page_writes",
                                                  "heap_fetches", "autovacuum"}, out["findings"]
    assert all(f.get("engine") == "postgres" for f in out["findings"])
    assert out["settings"]["target"]["shared_buffers"] == 32 << 20  # connected: its settings, not "no connection"
    # pgbench -S selects abalance, which no index holds: plain index scans, one heap visit per SELECT
    f = _finding(out, "heap_fetches")
    assert f["verdict"] == "refuted", f
    assert f["evidence"]["heap_blks_per_op_target"] == pytest.approx(1.0, abs=0.05), f
    # the autovacuum is off in this cluster: none of the change is its workers'
    assert _finding(out, "autovacuum")["verdict"] == "refuted"
    # ioattr's own catalog and counter queries are not the workload's: no contributor, no query
    assert not [c for c in out["contributors"] if c["dims"].get("role") == "ioattr"], out["contributors"]
    by_query = json.loads(ioattr("report", str(small.rec), "--by", "query", "--phase", "select", "--format", "json",
                                 check=True).stdout)["rows"]
    assert not [r for r in by_query if "pg_statio_user_tables" in (r.get("query") or "")], by_query
    # --by file names the relation each file holds
    by_file = json.loads(ioattr("report", str(small.rec), "--by", "file", "--phase", "select", "--format", "json",
                                check=True).stdout)["rows"]
    named = {r["relation"] for r in by_file if r["layer"] == "syscall" and r["op"] == "read" and r.get("relation")}
    assert {"postgres.public.pgbench_accounts", "postgres.public.pgbench_accounts_pkey"} <= named, by_file
    text = _explain(big.rec, small.rec, "text").lower()
    assert not [w for w in INNODB_WORDS if w in text], text
    assert "without a server connection" not in text


def test_transactions_from_xact_commit_and_the_backends_cpu(sweep: dict[str, Run]) -> None:
    small, big = sweep["small"], sweep["big"]
    r = ioattr("compare", str(small.rec), str(big.rec), "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = {(row["run"], row["phase"]): row for row in json.loads(r.stdout)["rows"]}
    for run in (small, big):
        row = rows[(run.rec.name, "tpcb")]
        # pgbench's transactions, its two start-up SELECTs and the ground truth's own two, each a
        # transaction; ioattr's own snapshot transactions taken off as it counted them, while
        # PostgreSQL adds a backend's counts at most once a second: within that second's worth
        # (~20 at this interval) of ioattr's own, either way
        assert abs(row["transactions"] - (TPCB + 4)) <= OWN_LAG, (row, run.truth)
        assert row["tps"] == pytest.approx(row["transactions"] / row["seconds"], rel=0.01), row
        # the backends' CPU, not the postmaster's alone (which does ~nothing per query)
        assert row["server_cpu_us_per_query"] is not None and row["server_cpu_us_per_query"] > 20, row
    # the phase's transactions in report's phase summary too, with their source named
    out = json.loads(ioattr("report", str(small.rec), "--by", "phase", "--format", "json", check=True).stdout)
    summary = next(s for s in out["summary"] if s["phase"] == "tpcb")
    pg = summary["postgres"]
    assert pg["transactions"] == rows[(small.rec.name, "tpcb")]["transactions"]
    assert pg["transactions_source"].startswith("pg_stat_database xact_commit")


def test_slips_a_backend_pid_and_a_restarted_postmaster(postgres: PrivatePostgres, sweep: dict[str, Run],
                                                        tmp_path: Path) -> None:
    pg = postgres
    with pg.connect() as c:
        backend = int(c.execute("SELECT pg_backend_pid()").fetchone()[0])
        r = ioattr("record", "-o", str(tmp_path / "backend"), "--pid", str(backend), "--duration", "0.5")
    assert r.returncode == 0, r.stderr   # recorded as asked, as before
    said = [line for line in r.stderr.splitlines() if f"pid {backend} " in line and "backend" in line]
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

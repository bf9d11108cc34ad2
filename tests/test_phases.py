"""Benchmark phases: --phase, `ioattr mark`, --phase-pattern and SQL markers.

The exactness tests run back-to-back phases of a fraction of a second each
under a 5 s interval (so the interval can't hide a misplaced boundary) and
hold each phase's page reads and reads per query against the engine's own
counters: snapshotted by the test's connection at its own boundaries (the
ground truth: the workload is serial), and by the recorder at the phase starts
it saw (what a report compares ours with).
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import need_root
from tests.helpers import IOATTR, Background, ioattr, report_json, wait_until


def _phase_bytes(rec: Path, path: str) -> dict[str, int]:
    rep = report_json(rec, "--by", "phase,file", "--layer", "syscall")
    out: dict[str, int] = {}
    for r in rep["rows"]:
        if r["file"] == path and r["op"] == "write":
            out[r["phase"]] = out.get(r["phase"], 0) + r["bytes"]
    return out


def test_phase_pattern_over_command_output(tmp_path: Path) -> None:
    need_root()
    f = tmp_path / "data"
    # made before the recording: a file created during it could get the inode of a meta.json the
    # recorder replaced, which grep (a target) had open: its rows would then say "[2 files reusing...]"
    f.write_bytes(b"")
    rec = tmp_path / "rec"
    meta = rec / "meta.json"

    # after printing its phase line, the command waits until the recorder has started the phase
    # (it is in meta.json), so its IO is the phase's: waiting for the event, not for a time
    def phase(name: str) -> str:
        return f"echo 'PHASE {name}'; until grep -q '\"{name}\"' {meta}; do sleep 0.01; done; "
    script = (phase("loadp") + f"dd if=/dev/zero of={f} bs=4096 count=10 conv=notrunc status=none; "
              + phase("queryp") + f"dd if=/dev/zero of={f} bs=4096 count=3 conv=notrunc status=none")
    r = subprocess.run([IOATTR, "record", "-o", str(rec), "--only-command", "--interval", "5", "--phase", "setup",
                        "--phase-pattern", r"PHASE (\w+)", "--", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "PHASE loadp" in r.stdout  # the command's output is passed through
    meta = json.loads((rec / "meta.json").read_text())
    assert [p["name"] for p in meta["phases"]] == ["setup", "loadp", "queryp"]
    assert meta["phases"][1]["source"] == "output"
    # one 5 s interval holds all of it: the rows are split by the phase their IO was issued in
    assert _phase_bytes(rec, str(f)) == {"loadp": 40960, "queryp": 12288}
    assert report_json(rec, "--phase", "queryp", "--by", "file")["rows"]


def test_mark_starts_a_phase_in_a_running_recording(tmp_path: Path, monkeypatch) -> None:
    need_root()
    # a registry of our own, so other recordings running on this host can't make "the only one" ambiguous
    monkeypatch.setenv("IOATTR_RUN_DIR", str(tmp_path / "run"))
    f = tmp_path / "w"
    writer = subprocess.Popen([sys.executable, "-c", f"""
import os, sys, time
fd = os.open({str(f)!r}, os.O_CREAT | os.O_WRONLY, 0o600)
for line in sys.stdin:
    os.pwrite(fd, b"x" * 4096 * int(line), 0)
    print("ok", flush=True)
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rec = tmp_path / "rec"
    # one interval for the whole run: only the phase numbers in the keys can split it
    bg = Background("record", "-o", str(rec), "--pid", str(writer.pid), "--interval", "10")
    try:
        bg.wait_recording()

        def write(n: int) -> None:  # returns once the pwrite is done
            writer.stdin.write(f"{n}\n")
            writer.stdin.flush()
            writer.stdout.readline()

        write(2)
        # `mark` returns once the recorder has started the phase: no wait needed after it
        r = ioattr("mark", "second", "--recording", str(rec))
        assert r.returncode == 0, r.stderr
        write(5)
        r = ioattr("mark", "third")  # the only recording running: found without --recording
        assert r.returncode == 0, r.stderr
        write(1)
    finally:
        code, err = bg.stop()
        writer.kill()
        writer.wait()
    assert code == 0, err
    meta = json.loads((rec / "meta.json").read_text())
    assert [p["name"] for p in meta["phases"]] == ["main", "second", "third"]
    assert _phase_bytes(rec, str(f)) == {"main": 8192, "second": 20480, "third": 4096}


def test_mark_errors(tmp_path: Path) -> None:
    r = ioattr("mark", "x", "--recording", str(tmp_path))
    assert r.returncode == 2 and "not an ioattr recording" in r.stderr
    r = ioattr("mark", "bad name!", "--recording", str(tmp_path))
    assert r.returncode == 2
    r = ioattr("mark")
    assert r.returncode == 2 and "PHASE" in r.stderr


def test_sql_marker_starts_a_phase(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="8M")
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.2")
    try:
        bg.wait_recording()
        db.query("SELECT 1 /* ioattr:phase=load */")
        _wait_phase(rec, "load")
        db.query("SELECT 'ioattr:phase=query' AS marker")
        _wait_phase(rec, "query")
    finally:
        code, err = bg.stop()
    assert code == 0, err
    meta = json.loads((rec / "meta.json").read_text())
    names = [p["name"] for p in meta["phases"]]
    assert names == ["main", "load", "query"], (names, err)
    assert meta["phases"][1]["source"] == "sql"


def _wait_phase(rec: Path, name: str) -> None:
    """Until the recorder has started phase `name` (it is in meta.json)."""
    def started() -> bool:
        try:
            return name in [p["name"] for p in json.loads((rec / "meta.json").read_text())["phases"]]
        except (OSError, ValueError):
            return False
    wait_until(started, 30, f"phase {name} in {rec}/meta.json")


def test_auto_phases_follow_the_statement_mix(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="16M")
    db.query("CREATE DATABASE ib")
    db.query("CREATE TABLE ib.t (id INT AUTO_INCREMENT PRIMARY KEY, a INT, b CHAR(100)) ENGINE=InnoDB")
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.5", "--auto-phases")
    try:
        bg.wait_recording()
        conn = db.connect()

        def auto_phase(label: str) -> bool:
            try:
                phases = json.loads((rec / "meta.json").read_text())["phases"]
            except (OSError, ValueError):
                return False
            return any(p["name"].split(".", 1)[-1] == label for p in phases[1:])

        def until_phase(label: str, step) -> None:  # type: ignore[no-untyped-def]
            """Go on with one part of the workload until the recorder has named its phase
            (waiting for the event, not for a time: a fast machine is done in one interval)."""
            i = 0
            while not auto_phase(label):
                assert i < 200_000, f"no auto phase {label!r} after {i} statements"
                step(i)
                i += 1
        with conn.cursor() as cur:
            # load: inserts only
            until_phase("load", lambda i: cur.execute(
                "INSERT INTO ib.t (a, b) SELECT seq * %s, 'x' FROM ib.seq_1_to_50", (i % 600,)))
            cur.execute("CREATE INDEX a ON ib.t (a, b)")  # ddl

            def mixed(i: int) -> None:
                cur.execute("SELECT COUNT(*) FROM ib.t WHERE a BETWEEN %s AND %s", (i % 800, i % 800 + 1000))
                cur.execute("INSERT INTO ib.t (a, b) VALUES (%s, 'y')", (i,))
            until_phase("mixed", mixed)
        conn.close()
    finally:
        code, err = bg.stop()
    assert code == 0, err
    meta = json.loads((rec / "meta.json").read_text())
    labels = [p["name"].split(".", 1)[1] for p in meta["phases"][1:]]
    assert [p["source"] for p in meta["phases"][1:]] == ["auto"] * len(labels)
    # the three parts of the workload, in order (short transitions may add a phase between)
    order = [lab for lab in labels if lab in ("load", "ddl", "mixed")]
    assert order[:1] == ["load"] and "mixed" in order and order.index("mixed") > 0, labels


# -- exact boundaries -------------------------------------------------------------------------
# Page reads are held against Innodb_pages_read: every page read from disk, read-ahead included
# (Innodb_buffer_pool_reads leaves read-ahead out; the range scans below trigger some), as ours.
ROWS = 60000
GROUND = ("Innodb_pages_read", "Innodb_buffer_pool_reads", "Com_select")


@dataclass
class PhaseTruth:
    """What the test's own connection saw of one phase: statements issued, engine deltas."""

    name: str
    queries: int = 0
    engine: dict[str, int] = field(default_factory=dict)


def _status(cur) -> dict[str, int]:
    names = ", ".join(f"'{n}'" for n in GROUND)
    cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")
    return {str(n): int(v) for n, v in cur.fetchall()}


def _phase_server(mariadb_factory):
    """A server whose table is ~10x its buffer pool, loaded, purged and with a warm hot set."""
    # no background reads to blur the ground truth: statistics are not recalculated behind our back
    db = mariadb_factory(buffer_pool="8M", flush_method="O_DIRECT",
                         extra_options={"innodb_stats_auto_recalc": "OFF"})
    conn = db.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE ph")
        cur.execute("CREATE TABLE ph.t (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR(200) NOT NULL, KEY ka (k)) "
                    "ENGINE=InnoDB")
        cur.execute(f"INSERT INTO ph.t SELECT seq, (seq * 7919) % {ROWS}, REPEAT('x', 200) "
                    f"FROM ph.seq_1_to_{ROWS}")
        cur.execute("ANALYZE TABLE ph.t")
        cur.fetchall()
        cur.execute("SET GLOBAL innodb_max_purge_lag_wait = 0")  # returns once purge is done
    conn.close()
    return db


def _workload(cur, name: str, rng: random.Random) -> int:
    """One phase's statements (a count, not a time: ~0.2-1 s each here); returns how many."""
    if name.startswith("cached"):  # a hot set of ~50 rows: ~no reads
        for i in range(400):
            cur.execute("SELECT pad FROM ph.t WHERE id = %s", (1 + i % 50,))
            cur.fetchall()
        return 400
    if name.startswith("cold"):  # random rows of a table 10x the pool: ~1 read each
        for _ in range(400):
            cur.execute("SELECT pad FROM ph.t WHERE id = %s", (rng.randint(1, ROWS),))
            cur.fetchall()
        return 400
    if name == "secondary":  # index-only lookups on ka
        for _ in range(400):
            cur.execute("SELECT id FROM ph.t FORCE INDEX (ka) WHERE k = %s", (rng.randint(0, ROWS - 1),))
            cur.fetchall()
        return 400
    assert name == "clustered"  # range scans of the clustered index: several reads each
    # (enough of them that one SELECT more or less -- ioattr's own, say -- is well under 1%)
    for _ in range(150):
        lo = rng.randint(1, ROWS - 400)
        cur.execute("SELECT SUM(LENGTH(pad)) FROM ph.t WHERE id BETWEEN %s AND %s", (lo, lo + 400))
        cur.fetchall()
    return 150


PHASES = ("cold", "cached", "clustered", "secondary", "cold2", "cached2")


def _run_phases(db, rec: Path, how: str) -> dict[str, PhaseTruth]:
    """Back-to-back phases started by `ioattr mark` or by SQL markers, with ground truth."""
    rng = random.Random(7)
    truth: dict[str, PhaseTruth] = {}
    conn = db.connect()
    try:
        with conn.cursor() as cur:
            for i in range(50):  # the hot set is in the pool before the recording starts
                cur.execute("SELECT pad FROM ph.t WHERE id = %s", (1 + i,))
                cur.fetchall()
            bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "5")
            try:
                bg.wait_recording()
                before: dict[str, int] = {}
                for name in PHASES:
                    # the phase's window: from the end of the previous phase's statements to the end
                    # of its own, so it holds what the recorder does at the boundary (its snapshot,
                    # its lookups of new index names: IO of the server after the phase started)
                    start = _status(cur)
                    if how == "mark":
                        r = ioattr("mark", name, "--recording", str(rec))  # returns once started
                        assert r.returncode == 0, r.stderr
                    else:
                        cur.execute(f"SELECT 'ioattr:phase={name}'")  # returns once the recorder has its snapshot
                        cur.fetchall()
                    if truth:
                        last = truth[list(truth)[-1]]
                        last.engine = {k: start[k] - before[k] for k in GROUND}
                    truth[name] = PhaseTruth(name, _workload(cur, name, rng))
                    before = start
                end = _status(cur)
                truth[PHASES[-1]].engine = {k: end[k] - before[k] for k in GROUND}
            finally:
                code, err = bg.stop()
            assert code == 0, err
    finally:
        conn.close()
    return truth


def _recorded(rec: Path):
    """Per phase: our page reads and SELECTs, and the recorder's engine-counter deltas."""
    from ioattr.format.reader import Recording

    r = Recording(rec)
    pages = dict(r.query("SELECT phase, sum(pages) FROM pages WHERE op = 'read' GROUP BY phase"))
    selects = dict(r.query("SELECT phase, sum(count) FROM statements WHERE kind = 'select' GROUP BY phase"))
    names = r.phase_names()
    engine: dict[str, dict[str, float]] = {}
    for i, p in enumerate(names):
        # as the report takes them: last value in the phase minus last value before it
        rows = r.query(
            "SELECT name, arg_max(value, ts) FILTER (WHERE phase = ?), "
            "       arg_max(value, ts) FILTER (WHERE list_contains(?, phase)) "
            "FROM counters WHERE source = 'status' AND value IS NOT NULL GROUP BY name", [p, names[:i]])
        engine[p] = {n: (a - b) for n, a, b in rows if a is not None and b is not None}
    return r.meta, pages, selects, engine


@pytest.mark.parametrize("how", ["mark", "sql"])
def test_short_phases_are_exact_whatever_the_interval(mariadb_factory, tmp_path: Path, monkeypatch,
                                                      how: str) -> None:
    monkeypatch.setenv("IOATTR_RUN_DIR", str(tmp_path / "run"))
    db = _phase_server(mariadb_factory)
    rec = tmp_path / "rec"
    truth = _run_phases(db, rec, how)
    meta, pages, selects, engine = _recorded(rec)
    assert [p["name"] for p in meta["phases"]] == ["main", *PHASES]
    assert {p["source"] for p in meta["phases"][1:]} == {how}
    lines = []
    for name in PHASES:
        t, e = truth[name], engine[name]
        ours = pages.get(name, 0)
        # our SELECTs: the phase's statements plus the marker itself (a SELECT too, under SQL markers)
        q = selects.get(name, 0)
        e_q = e["Com_select"] - e.get("ioattr:Com_select", 0)
        lines.append(f"{name}: ours {ours} truth {t.engine['Innodb_pages_read']} rec {e.get('Innodb_pages_read')} "
                     f"q {q}/{t.queries}/{e_q} rpq {ours / max(q, 1):.4f} "
                     f"engine {e['Innodb_pages_read'] / max(e_q, 1):.4f}")
    lines = "\n".join(lines)
    print(lines)  # shown with -s, and in the assertion messages below
    for name in PHASES:
        t, e = truth[name], engine[name]
        ours = pages.get(name, 0)
        want = t.engine["Innodb_pages_read"]
        # >= 98% of the phase's page reads are in it, and no more than 2% more come from elsewhere
        assert abs(ours - want) <= 0.02 * want + 2, lines
        q = selects.get(name, 0)
        assert t.queries <= q <= t.queries + 1, lines
        e_q = e["Com_select"] - e.get("ioattr:Com_select", 0)
        ours_rpq, engine_rpq = ours / q, e["Innodb_pages_read"] / e_q
        assert abs(ours_rpq - engine_rpq) <= 0.02 * engine_rpq + 0.005, lines

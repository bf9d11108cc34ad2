"""examples/: the miniature insert benchmark under `ioattr record`, and the scripts.

The benchmark marks its phases with `ioattr:phase=NAME` statements; the
recording must end up with exactly those phases, IO in each, the benchmark's
own inserts and queries in the q phases, and the secondary-index pages of its
table named in the page report.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need, need_root, need_tool
from tests.helpers import IOATTR, ROOT, report_json

EXAMPLES = ROOT / "examples"
BENCH = EXAMPLES / "insert_benchmark.py"
PHASES = ["main", "l.i0", "l.x", "l.i1", "q100", "q500", "q1000"]
Q_RATES = {"q100": 100, "q500": 500, "q1000": 1000}
SECONDARY = ("ib.t.ix_price", "ib.t.ix_register", "ib.t.ix_customer")

# Reduced size for the suite: 30k + 10k rows (about 8 MiB of data and indexes) against
# an 8M buffer pool, so the q phases read and write index pages; 3 s per q phase.
ROWS, ROWS_L_I1, PHASE_SECONDS = 30000, 10000, 3


def bench(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def record_bench(rec: Path, targets: list[str], *bench_args: str) -> subprocess.CompletedProcess:
    return subprocess.run([IOATTR, "record", "-o", str(rec), *targets, "--",
                           sys.executable, str(BENCH), *bench_args],
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)


def phases_of(rec: Path) -> list[dict]:
    return json.loads((rec / "meta.json").read_text())["phases"]


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.sh")))
def test_scripts_parse(script: str) -> None:
    r = subprocess.run(["bash", "-n", str(EXAMPLES / script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_example_scripts_exist() -> None:
    names = {p.name for p in EXAMPLES.iterdir()}
    assert {"insert_benchmark.py", "run_insert_benchmark.sh", "sysbench_example.sh", "README.md"} <= names


@pytest.mark.parametrize("args, words", [
    ([], "say which server"),
    (["--private", "--socket", "/nonexistent.sock"], "don't combine"),
    (["--socket", "/nonexistent/mysqld.sock"], "no such socket"),
    (["--private", "--rows", "0"], "must be positive"),
    (["--private", "--size", "huge"], "invalid choice"),
    (["--private", "--rates", "100,x"], "comma-separated"),
    (["--socket", "/nonexistent.sock", "--server-option", "a=b"], "no such socket"),
    (["--private", "--json", "/nonexistent-dir/out.json"], "no such directory"),
])
def test_benchmark_bad_usage(args: list[str], words: str) -> None:
    r = bench(*args, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("insert_benchmark: error:") and words in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_benchmark_cannot_connect(tmp_path: Path) -> None:
    # a socket path that exists but nobody listens on: a runtime failure, one line, status 1
    import socket as _socket
    path = tmp_path / "dead.sock"
    s = _socket.socket(_socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    r = bench("--socket", str(path), "--wait-recorder", "0", timeout=30)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "cannot connect" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_insert_benchmark_under_record(mariadb_factory, tmp_path: Path) -> None:
    need_root()
    db = mariadb_factory(buffer_pool="8M", extra_options={"innodb_lru_scan_depth": "100"})
    rec, out = tmp_path / "rec", tmp_path / "ib.json"
    r = record_bench(rec, ["--pid", str(db.pid), "--mysql-defaults-file", str(db.client_defaults_file)],
                     "--socket", str(db.socket), "--rows", str(ROWS), "--rows-l-i1", str(ROWS_L_I1),
                     "--phase-seconds", str(PHASE_SECONDS), "--json", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "insert_benchmark: warning" not in r.stderr, r.stderr[-3000:]

    # The recording's phases: exactly the benchmark's, in order, from its SQL markers.
    phases = phases_of(rec)
    assert [p["name"] for p in phases] == PHASES, r.stderr[-3000:]
    assert all(p["source"] == "sql" for p in phases[1:]), phases

    # The benchmark's own numbers.
    res = json.loads(out.read_text())
    by_name = {p["name"]: p for p in res["phases"]}
    assert list(by_name) == PHASES[1:]
    assert by_name["l.i0"]["rows_inserted"] == ROWS
    assert by_name["l.x"]["rows_inserted"] == 0
    assert by_name["l.i1"]["rows_inserted"] == ROWS_L_I1
    for name, rate in Q_RATES.items():
        p = by_name[name]
        assert p["target_ips"] == rate
        # the inserter ran, never faster than its rate (how close it gets depends on the
        # machine's load: 1380 of 1500 rows in a q1000 phase at load average 16), and the
        # server saw its INSERTs
        assert 0 < p["rows_inserted"] <= 1.1 * rate * PHASE_SECONDS + 10, p
        assert p["server"]["Com_insert"] >= p["insert_statements"] > 0, p
        assert p["server"]["Handler_write"] >= p["rows_inserted"], p
        assert p["queries"] > 0 and 0 < p["rows_returned"] <= 10 * p["queries"], p
    inserted = ROWS + ROWS_L_I1 + sum(by_name[n]["rows_inserted"] for n in Q_RATES)
    assert res["table"]["rows"] == inserted
    assert db.query("SELECT count(*) FROM ib.t")[0][0] == inserted

    # ioattr's bytes on the benchmark's table agree with the server's own count
    # (performance_schema.file_summary_by_instance, snapshotted by the recorder) at every
    # snapshot, bracketed by what is exact on both sides: see _check_against_engine.
    table_file = str(db.datadir / "ib" / "t.ibd")
    rep = report_json(rec, "--by", "phase,file,role,op", "--layer", "syscall")
    ours: dict[tuple[str, str, bool], int] = {}
    for row in rep["rows"]:
        if row["file"] == table_file and row["op"] in ("read", "write"):
            key = (row["phase"], row["op"], row["role"] == "connection")
            ours[key] = ours.get(key, 0) + row["bytes"]
    _check_against_engine(ours, _ours_by_interval(rec, table_file), _ps_file_series(rec, table_file), phases)

    # The secondary indexes' pages, named, in the q phases (reads and page-cleaner writes).
    pages = report_json(rec, "--by", "phase,index", "--layer", "syscall")
    seen = {(row["phase"], row["index"]) for row in pages["rows"] if row["pages"] > 0}
    for ix in SECONDARY:
        assert any((q, ix) in seen for q in Q_RATES), (ix, sorted(seen, key=str))
    assert any(ix == "ib.t.PRIMARY" for _, ix in seen), sorted(seen, key=str)


def test_insert_benchmark_private_server_under_record(tmp_path: Path) -> None:
    """The README's way: `ioattr record -- insert_benchmark.py --private`.

    The server is a child of the wrapped command; the recorder must attach to
    it (statement probes, index names) for the SQL phase markers to count.
    """
    need_root()
    need_tool("mariadbd")
    rec, out = tmp_path / "rec", tmp_path / "ib.json"
    r = record_bench(rec, [], "--private", "--buffer-pool", "8M", "--rows", "20000", "--rows-l-i1", "5000",
                     "--phase-seconds", "2", "--json", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert [p["name"] for p in res["phases"]] == PHASES[1:]
    # the private server is gone with the benchmark
    pid = res["server_pid"]
    assert pid and _gone(pid), pid
    # the markers only count if the recorder attached to the server the command started
    assert [p["name"] for p in phases_of(rec)] == PHASES, r.stderr[-3000:]
    assert "insert_benchmark: warning" not in r.stderr, r.stderr[-3000:]
    pages = report_json(rec, "--by", "index", "--layer", "syscall")
    assert {row["index"] for row in pages["rows"]} >= {"ib.t.PRIMARY"}, pages["rows"][:20]


# bpf/stage.bpf.c MARKER_WAIT_NS: a SQL marker's statement waits at most this long for the
# recorder's boundary snapshot
MARKER_WAIT_S = 2.0


def _ps_file_series(rec: Path, path: str) -> dict[str, list[tuple[float, str, float]]]:
    """{read|write: [(ts, phase tag, bytes since the recorder's first snapshot)]} of one file
    by performance_schema, from the recording's counters, oldest first. The tag is the
    recorder's phase when it took the snapshot (a boundary snapshot carries the phase that
    ended); a file absent from the first snapshot had no IO yet (0)."""
    import pyarrow.parquet as pq

    rows = []
    for f in sorted((rec / "counters").glob("*.parquet")):
        rows += pq.read_table(f, columns=["ts", "phase", "source", "name", "value"]).to_pylist()
    ps = [r for r in rows if r["source"] == "ps_file"]
    assert ps, "no ps_file counters in the recording"
    first_ts = min(r["ts"] for r in ps)
    out: dict[str, list[tuple[float, str, float]]] = {}
    for op, column in (("read", "SUM_NUMBER_OF_BYTES_READ"), ("write", "SUM_NUMBER_OF_BYTES_WRITE")):
        series = sorted((r["ts"], r["phase"], r["value"]) for r in ps if r["name"] == f"{path}:{column}")
        base = series[0][2] if series and series[0][0] == first_ts else 0.0
        out[op] = [(ts, tag, v - base) for ts, tag, v in series]
    return out


def _ours_by_interval(rec: Path, path: str) -> list[tuple[float, float, str, str, bool, int]]:
    """[(interval start, interval end, phase, read|write, by a client connection, bytes)] of
    one file at the syscall layer, straight from the recording's io rows."""
    import pyarrow.parquet as pq

    out = []
    cols = ["ts_start", "ts_end", "phase", "layer", "op", "role", "file", "bytes"]
    for f in sorted((rec / "io").glob("*.parquet")):
        for r in pq.read_table(f, columns=cols).to_pylist():
            if r["layer"] == "syscall" and r["file"] == path and r["op"] in ("read", "write"):
                out.append((r["ts_start"], r["ts_end"], r["phase"], r["op"], r["role"] == "connection",
                            r["bytes"]))
    return out


def _check_against_engine(ours: dict[tuple[str, str, bool], int],
                          rows: list[tuple[float, float, str, str, bool, int]],
                          ps: dict[str, list[tuple[float, str, float]]], phases: list[dict]) -> None:
    """ioattr's syscall bytes on the table's file against performance_schema's, snapshot by
    snapshot. ours: {(phase, read|write, by a client connection): bytes} from the report;
    rows: the same per drain interval (_ours_by_interval).

    Our phases are cut exactly in the kernel, when the marker statement starts; the server's
    counters can only be read a little later, once the recorder has woken up and queried
    them. The marker statement waits for that snapshot, so the benchmark's connections do
    nothing in between, but the server's background threads (page cleaner, the IO workers
    writing pages after the doublewrite) go on: their IO in that gap is ours in the new
    phase and the server's in the old one. On a loaded machine the gap holds megabytes of
    page-cleaner writes after the index build, so per-phase deltas cannot be compared within
    a fixed tolerance. What is exact is a bracket, for a snapshot at T in kernel phase j:
      - at least everything we charged to the phases before j (it was issued before j
        started), and everything we drained before T;
      - at most everything we drained in intervals that began before T, and, while j's
        marker still waited (its boundary snapshot), at most the phases before j plus j's
        background IO in those intervals; after that, at most the phases up to j.
    A byte charged to the wrong file, missed, or charged to a phase before or after the one
    it was issued in falls outside it, unless it is background IO in the drain interval
    around a boundary. The recorder's last snapshot comes after its final drain, so the
    server's background threads (purge, stats, page cleaner) may have done IO that no
    interval of ours covers: seen as 20 pages read after a q1000 phase. It has the lower
    bound only: everything we counted, the server counted too."""
    names = [p["name"] for p in phases]
    starts = [float(p["start"]) for p in phases]
    slack = 4 * 16384  # IO in flight (issued, not yet completed) across a snapshot
    for op in ("read", "write"):
        per = [(ours.get((ph, op, True), 0), ours.get((ph, op, False), 0)) for ph in names]
        cum = [sum(fg + bg for fg, bg in per[: i + 1]) for i in range(len(per))]
        mine = [r for r in rows if r[3] == op]
        # the report and the raw rows agree, phase by phase
        assert [sum(r[5] for r in mine if r[2] == ph) for ph in names] == [fg + bg for fg, bg in per], op
        # and no IO is charged to a phase before it started
        early = [r for r in mine if r[5] and r[1] < starts[names.index(r[2])]]
        assert not early, (op, early[:5], starts)
        series = ps[op]
        for n, (ts, tag, value) in enumerate(series):
            k = names.index(tag)
            in_force = max([i for i, s in enumerate(starts) if s <= ts], default=0)
            j = max(k, in_force)  # the phase in force in the kernel when the snapshot was taken
            drained = sum(r[5] for r in mine if r[1] <= ts)
            begun = sum(r[5] for r in mine if r[0] < ts)
            lo = max(cum[j - 1] if j else 0, drained)
            if j == k + 1 and ts - starts[j] < MARKER_WAIT_S and phases[j].get("source") == "sql":
                # the boundary snapshot of j: its marker still waited, only background IO ran
                window = sum(r[5] for r in mine if r[0] < ts and r[2] == names[j] and not r[4])
                hi = min(begun, cum[j - 1] + window)
            else:
                hi = min(begun, cum[j])
            if n == len(series) - 1:  # the final snapshot: after the final drain
                hi = float("inf")
            where = (op, tag, names[j], value, lo, hi, dict(zip(names, per)))
            assert lo - slack <= value <= hi + slack, where
        # the whole recording: everything we counted, the server counted too
        assert series and cum[-1] <= series[-1][2] + slack, (op, cum[-1], series[-1])
    # the comparison is not vacuous: the benchmark wrote its table (which phases did IO
    # depends on the page cleaner; the brackets above hold either way)
    assert ps["write"][-1][2] > 0, ps["write"][-1]


def _gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its parent counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


# ---------------------------------------------------------------- the seed comparisons
# examples/engine_scans.sh, memory_sweep.sh, bulk_load.sh at --size tiny: each writes its
# recordings and OUT/compare.json (`ioattr compare --format json`); the checks are the runs and
# phases compare aligned and exact relations that hold whatever the machine's speed.

def run_seed_script(name: str, out: Path, timeout: float = 400) -> dict:
    """Run examples/NAME --size tiny --out OUT; return its compare JSON."""
    need_root()
    r = subprocess.run(["bash", str(EXAMPLES / name), "--size", "tiny", "--out", str(out)],
                       capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return json.loads((out / "compare.json").read_text())


def storage_rows(rec: Path, phase: str) -> list[dict]:
    """report's syscall rows of one phase by file_class, op (what compare's storage terms sum):
    split by query too, to leave out ioattr's own statements' IO, which is never storage IO
    (ioattr/model/storage.py INTERNAL_QUERY_LABEL), then summed back per file_class and op."""
    from ioattr.model import storage

    rows: dict[tuple, dict] = {}
    for x in report_json(rec, "--by", "file_class,query", "--phase", phase, "--layer", "syscall")["rows"]:
        if x["query"] == storage.INTERNAL_QUERY_LABEL:
            continue
        r = rows.setdefault((x["file_class"], x["op"], x["layer"]),
                            {"file_class": x["file_class"], "op": x["op"], "layer": x["layer"], "count": 0, "bytes": 0})
        r["count"] += x["count"]
        r["bytes"] += x["bytes"]
    return list(rows.values())


def test_engine_scans_example(tmp_path: Path) -> None:
    """InnoDB vs MyRocks full scans (40 primary-key ranges per pass) before and after 10,000
    random row-growing updates (50 transactions of 200 rows)."""
    from ioattr.model import storage
    from tests.helpers import assert_no_ioattr_programs

    need(Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(), "mariadb-plugin-rocksdb is not installed")
    out = tmp_path / "scans"
    result = run_seed_script("engine_scans.sh", out)
    assert [x["label"] for x in result["runs"]] == ["innodb", "myrocks"]
    assert result["runs"][0]["engines"] == ["innodb"]
    assert result["runs"][1]["engines"] == ["innodb", "rocksdb"]
    assert result["runs"][1]["engine_settings"]["rocksdb"]["io"] == "ON"  # direct reads
    rows = {(x["run"], x["phase"]): x for x in result["rows"]}
    assert set(rows) == {(run, ph) for run in ("innodb", "myrocks") for ph in ("scan.fresh", "update", "scan.frag")}
    for (run, phase), row in rows.items():
        if phase.startswith("scan"):
            assert row["queries"] == 40, row          # the scan's range queries, nothing else
            assert row["write_unit"] != "txn" or row["transactions"] == 0, row
        else:
            assert row["transactions"] == 50, row     # 10,000 updated rows, 200 per transaction
        # compare's storage reads are report's, exactly
        mine = [x for x in storage_rows(out / run, phase)
                if x["op"] == "read" and storage.is_storage(x["layer"], x["file_class"])]
        assert row["storage_reads"] == sum(x["count"] for x in mine), (run, phase)
        assert row["storage_read_bytes"] == sum(x["bytes"] for x in mine), (run, phase)
    # each engine's scans read its own files: InnoDB's tablespace, MyRocks' SSTs
    for phase in ("scan.fresh", "scan.frag"):
        inno = {x["file_class"]: x["count"] for x in storage_rows(out / "innodb", phase) if x["op"] == "read"}
        rocks = {x["file_class"]: x["count"] for x in storage_rows(out / "myrocks", phase) if x["op"] == "read"}
        assert inno.get("tablespace", 0) > 0 and rocks.get("sst", 0) > 0, (phase, inno, rocks)
        assert rows[("myrocks", phase)]["engine_cache_misses"] > 0   # Rocksdb_block_cache_miss
    assert (out / "compare.html").read_text().count("<svg") > 0
    assert_no_ioattr_programs()


def test_memory_sweep_example(tmp_path: Path) -> None:
    """oltp_read_write (one thread at tiny: every transaction commits) on InnoDB and MyRocks at
    6M/16M/64M caches: six runs, the cache each server had, 14 SELECTs and one inserted row per
    transaction exactly, and the SSTs read under MyRocks."""
    from tests.helpers import assert_no_ioattr_programs

    need(Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(), "mariadb-plugin-rocksdb is not installed")
    need_tool("sysbench")
    out = tmp_path / "sweep"
    result = run_seed_script("memory_sweep.sh", out)
    labels = [f"{e}-{c}" for e in ("innodb", "myrocks") for c in ("6m", "16m", "64m")]
    assert [x["label"] for x in result["runs"]] == labels
    sizes = {"6m": 6 << 20, "16m": 16 << 20, "64m": 64 << 20}
    for run in result["runs"]:
        engine, cache = run["label"].split("-")
        key = "innodb" if engine == "innodb" else "rocksdb"
        assert run["engine_settings"][key]["cache"] == sizes[cache], run
    rows = {x["run"]: x for x in result["rows"]}
    assert set(rows) == set(labels) and {x["phase"] for x in result["rows"]} == {"rw"}
    for label, row in rows.items():
        assert row["transactions"] > 0 and row["write_unit"] == "txn", row
        assert row["queries"] == 14 * row["transactions"], row          # oltp_read_write's SELECTs
        assert row["rows_inserted"] == row["transactions"], row         # one INSERT each
        assert row["storage_writes"] > 0, row                           # at least the log's
    for label in labels[3:]:  # MyRocks: its reads are of SSTs
        reads = {x["file_class"]: x["count"] for x in storage_rows(out / label, "rw") if x["op"] == "read"}
        assert reads.get("sst", 0) > 0, (label, reads)
        assert rows[label]["engine_cache_misses"] > 0, rows[label]
    # the smallest InnoDB pool reads more per query than the largest
    assert rows["innodb-6m"]["storage_reads"] / rows["innodb-6m"]["queries"] > \
        rows["innodb-64m"]["storage_reads"] / rows["innodb-64m"]["queries"]
    assert_no_ioattr_programs()


def test_bulk_load_example(tmp_path: Path) -> None:
    """LOAD DATA of 40,000 rows into InnoDB, compressed InnoDB, Archive and MyRocks, each on its
    own server: every load phase inserted exactly the file's rows by one LOAD DATA, the index
    builds (no rows, no transactions) are rated per phase, and each engine wrote its own files."""
    from tests.helpers import assert_no_ioattr_programs

    need(Path("/usr/lib/mysql/plugin/ha_rocksdb.so").exists(), "mariadb-plugin-rocksdb is not installed")
    need(Path("/usr/lib/mysql/plugin/ha_archive.so").exists(), "the Archive plugin is not installed")
    n = 40_000
    out = tmp_path / "bulk"
    result = run_seed_script("bulk_load.sh", out)
    labels = ["innodb", "innodb_kbs8", "archive", "myrocks"]
    assert [x["label"] for x in result["runs"]] == labels
    rows = {(x["run"], x["phase"]): x for x in result["rows"]}
    want = {(r, p) for r in labels for p in ("load", "add_index", "load_ix") if r != "archive" or p == "load"}
    assert set(rows) == want
    for (run, phase), row in rows.items():
        if phase == "add_index":
            assert row["rows_inserted"] == 0 and row["write_unit"] == "phase", row
        else:
            assert row["rows_inserted"] == n and row["write_unit"] == "row", row
            assert row["kb_written_per_unit"] == storage_round(row["storage_write_bytes"] / 1024 / n), row
    for run in labels:  # report's bulk line: the file's rows, by one LOAD DATA
        summary = {s["phase"]: s for s in report_json(out / run, "--by", "phase")["summary"]}
        for phase in ("load", "load_ix") if run != "archive" else ("load",):
            b = summary[phase]["bulk"]
            assert b["rows"] == n and b["statements"] == {"LOAD DATA": 1}, (run, phase, b)
    writes = {run: {x["file_class"] for x in storage_rows(out / run, "load") if x["op"] == "write" and x["bytes"]}
              for run in labels}
    assert "archive" in writes["archive"], writes
    assert "wal" in writes["myrocks"], writes
    assert "tablespace" in writes["innodb_kbs8"] or "redo_log" in writes["innodb_kbs8"], writes
    assert_no_ioattr_programs()


def storage_round(v: float) -> float:
    """compare's rounding of a per-unit term (4 significant digits)."""
    from ioattr.model import storage
    return storage.sig(v, 4)


def test_pg_vs_innodb_example(tmp_path: Path) -> None:
    """The miniature insert benchmark's shape on InnoDB and PostgreSQL: both runs have the four
    phases, InnoDB's loads inserted exactly their rows, PostgreSQL's (pg_stat_database's
    tup_inserted, flushed at each boundary) at least theirs and at most a catalog's worth more
    (CREATE INDEX, autoanalyze insert catalog rows too), and each engine wrote its files."""
    from tests.helpers import assert_no_ioattr_programs

    need(Path("/usr/lib/postgresql/15/bin/postgres").exists(), "postgresql-15 is not installed")
    out = tmp_path / "pg"
    result = run_seed_script("pg_vs_innodb.sh", out)
    assert [x["label"] for x in result["runs"]] == ["innodb", "postgres"]
    assert result["runs"][1]["engines"] == ["postgres"]
    rows = {(x["run"], x["phase"]): x for x in result["rows"]}
    assert set(rows) == {(r, p) for r in ("innodb", "postgres") for p in ("l.i0", "l.x", "l.i1", "q")}
    for phase, n in (("l.i0", 20_000), ("l.i1", 5_000)):
        assert rows[("innodb", phase)]["rows_inserted"] == n, rows[("innodb", phase)]
        assert n <= rows[("postgres", phase)]["rows_inserted"] <= n + 200, rows[("postgres", phase)]
    assert rows[("innodb", "l.x")]["rows_inserted"] == 0
    for run in ("innodb", "postgres"):
        assert rows[(run, "l.i0")]["storage_writes"] > 0, rows[(run, "l.i0")]
        assert rows[(run, "q")]["rows_inserted"] > 0 and rows[(run, "q")]["storage_reads"] >= 0
    # the range queries on InnoDB: ten per 10-row INSERT, so queries == rows inserted exactly
    q = rows[("innodb", "q")]
    assert q["queries"] == q["rows_inserted"] > 0, q
    assert_no_ioattr_programs()


@pytest.mark.parametrize("script", ["engine_scans.sh", "memory_sweep.sh", "bulk_load.sh", "pg_vs_innodb.sh"])
@pytest.mark.parametrize("args, words", [
    (["--size", "huge"], "must be tiny or small"),
    (["--bogus"], "unknown argument"),
    (["--out", "/nonexistent-dir/x"], "no such directory"),
])
def test_seed_scripts_bad_usage(script: str, args: list[str], words: str) -> None:
    need_root()
    r = subprocess.run(["bash", str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and words in lines[0], (r.returncode, r.stderr)


def test_seed_runs_bad_usage() -> None:
    r = subprocess.run([sys.executable, str(EXAMPLES / "seed_runs.py"), "nope", "--out", "/tmp/x"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [r.stderr.strip()], r.stderr
    assert "invalid choice" in r.stderr and "Traceback" not in r.stderr

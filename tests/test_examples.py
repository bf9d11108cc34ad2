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

from tests.conftest import need_root, need_tool
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
        # the inserter ran at (about) its rate, and the server saw its INSERTs
        assert p["rows_inserted"] >= 0.5 * rate * PHASE_SECONDS, p
        assert p["rows_inserted"] <= 1.1 * rate * PHASE_SECONDS + 10, p
        assert p["server"]["Com_insert"] >= p["insert_statements"] > 0, p
        assert p["server"]["Handler_write"] >= p["rows_inserted"], p
        assert p["queries"] > 0 and 0 < p["rows_returned"] <= 10 * p["queries"], p
    inserted = ROWS + ROWS_L_I1 + sum(by_name[n]["rows_inserted"] for n in Q_RATES)
    assert res["table"]["rows"] == inserted
    assert db.query("SELECT count(*) FROM ib.t")[0][0] == inserted

    # Every phase of the benchmark did IO on its table, and ioattr's bytes per phase agree with
    # the server's own count (performance_schema.file_summary_by_instance, which the recorder
    # snapshots at every phase switch right after draining, so its per-phase deltas line up)
    table_file = str(db.datadir / "ib" / "t.ibd")
    ps = _ps_file_deltas(rec, table_file)
    rep = report_json(rec, "--by", "phase,file", "--layer", "syscall")
    ours = {(row["phase"], row["op"]): row["bytes"] for row in rep["rows"] if row["file"] == table_file}
    _check_against_engine(ours, ps)

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


def _ps_file_deltas(rec: Path, path: str) -> dict[tuple[str, str], float]:
    """{(phase, read|write): bytes} of one file by performance_schema, from the recording's
    counters snapshots: a phase's last value minus the last value before it. The first
    phase starts from the recorder's first snapshot; a file absent from a snapshot had no
    IO yet (0)."""
    import pyarrow.parquet as pq

    rows = []
    for f in sorted((rec / "counters").glob("*.parquet")):
        rows += pq.read_table(f, columns=["ts", "phase", "source", "name", "value"]).to_pylist()
    ps = [r for r in rows if r["source"] == "ps_file"]
    assert ps, "no ps_file counters in the recording"
    first_ts = min(r["ts"] for r in ps)
    order = [p["name"] for p in phases_of(rec)]
    out: dict[tuple[str, str], float] = {}
    for op, column in (("read", "SUM_NUMBER_OF_BYTES_READ"), ("write", "SUM_NUMBER_OF_BYTES_WRITE")):
        series = sorted((r["ts"], r["phase"], r["value"]) for r in ps if r["name"] == f"{path}:{column}")
        base = series[0][2] if series and series[0][0] == first_ts else 0.0
        for phase in order:
            vals = [v for _, ph, v in series if ph == phase]
            last = vals[-1] if vals else base
            out[(phase, op)] = last - base
            base = last
    return out


def _check_against_engine(ours: dict[tuple[str, str], int], ps: dict[tuple[str, str], float]) -> None:
    """ioattr's syscall bytes on the table's file against the server's, phase by phase.

    Both sides cut the phases at the same drain and usually agree to the byte. IO in the
    milliseconds between the drain and the server's snapshot (a page-cleaner batch) lands on
    the other side of that boundary, though: seen as 22 pages of ibdata1 on this 2-core VM.
    So the whole recording must agree within 1% (plus 4 pages), and each phase within 5% plus
    1 MiB: IO charged to the wrong file or the wrong phase, or missed (io_uring writes), is
    far outside that."""
    table = {(ph, op): (ours.get((ph, op), 0), ps.get((ph, op))) for ph in PHASES for op in ("read", "write")}
    for op in ("read", "write"):
        got = sum(ours.get((ph, op), 0) for ph in PHASES)
        want = sum(ps[(ph, op)] for ph in PHASES)
        assert abs(got - want) <= 0.01 * want + 4 * 16384, (op, got, want, table)
    for (ph, op), (got, want) in table.items():
        assert want is not None, (ph, op, table)
        assert abs(got - want) <= 0.05 * want + 1024 * 1024, (ph, op, got, want, table)
    # from the index build on, every phase of the benchmark did IO on its table (the server says so)
    for ph in PHASES[PHASES.index("l.x"):]:
        assert ps[(ph, "read")] + ps[(ph, "write")] > 0, (ph, table)


def _gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its parent counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"

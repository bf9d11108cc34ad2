"""A long, wide run: sysbench with many client threads for hours, recorded with defaults.

What a benchmarker's real run does to ioattr, and what the suite (runs of seconds, a few
threads) cannot show:

- the recorder's CPU (% of one core, utime+stime of all its threads) and RSS, sampled every
  --sample seconds over the whole run: flat, or growing;
- drops (meta.json "dropped"; 0, or counted and said) and the name tables' sizes
  (meta.json "name_tables");
- totals over the whole run against the engine's own counters: ioattr's storage reads and
  writes (operations and bytes) in the marked phase `run` against the Innodb_data_* deltas
  the recorder snapshot at the phase's boundaries (phase_stats);
- the time and peak RSS of `report --by phase`, `explain` and `compare` on the recording.

A private MariaDB (ioattr.host.sandbox.PrivateMariaDB, O_DIRECT, a buffer pool smaller than
the tables), sysbench oltp_read_write with its defaults (server-side prepared statements)
prepared before the recording; `ioattr record -p PID` with defaults; the run is a phase
started and ended by SQL markers.

    sudo .venv/bin/python benchmarks/bench_long_run.py                           # 64 threads, 2 h
    sudo .venv/bin/python benchmarks/bench_long_run.py --seconds 300 --json out.json  # a trial
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from ioattr.host.sandbox import PrivateMariaDB  # noqa: E402
from verdict import bench_parser  # noqa: E402

IOATTR = str(Path(sys.executable).parent / "ioattr")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait_phase(rec: Path, name: str, timeout: float = 60) -> None:
    """Until the recorder lists phase `name` last in meta.json (written once the previous
    phase is drained and its counters snapshot taken)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            phases = [p["name"] for p in json.loads((rec / "meta.json").read_text()).get("phases", [])]
        except (OSError, ValueError):
            phases = []
        if phases[-1:] == [name]:
            return
        time.sleep(0.1)
    raise TimeoutError(f"the recorder did not start phase {name}")


def timed(*args: str) -> dict:
    """Run an ioattr command; its wall time and its own peak RSS (wait4's rusage of that child)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([IOATTR, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"command": "ioattr " + " ".join(args), "rc": proc.returncode,
            "seconds": round(time.monotonic() - t0, 2), "max_rss_kib": usage.ru_maxrss,
            "stderr_tail": err.strip().splitlines()[-3:]}


# InnoDB's file classes whose IO its Innodb_data_* counters count (the redo log has its own)
DATA_CLASSES = ("tablespace", "system_tablespace", "doublewrite", "undo_tablespace")
PAGE_CLASSES = ("tablespace", "system_tablespace", "undo_tablespace")


REDO_START = 12288  # ib_logfile0: the header and two checkpoint blocks, then the log (10.8+ format)


def increases(rec: Path, source: str, name: str, phase: str = "run") -> float | None:
    """What a cumulative counter added in a phase, summing its snapshots' increases from the
    last one before the phase: a fall is the counter starting again from 0 (MariaDB 10.11's
    INNODB_METRICS log_checkpoints fell from 254 to 0 once in a 64-thread run, which a
    last-minus-first delta turns into a loss)."""
    from ioattr.format.reader import Recording

    r = Recording(rec)
    rows = r.query("SELECT ts, value, phase FROM counters WHERE source = ? AND name = ? ORDER BY ts",
                   [source, name])
    inside = [i for i, (_, _, p) in enumerate(rows) if p == phase]
    if not inside:
        return None
    first = max(inside[0] - 1, 0)  # the boundary snapshot that closed the phase before
    total, prev = 0.0, rows[first][1]
    for _, value, _ in rows[first + 1: inside[-1] + 1]:
        total += value - prev if value >= prev else value
        prev = value
    return total


def totals_vs_engine(rec: Path, st, log_file_size: int | None = None) -> dict:  # type: ignore[no-untyped-def]
    """ioattr's syscall-layer totals of the phase by file class against the counters InnoDB
    keeps for the same IO, over the same phase (the recorder's boundary snapshots):
    data reads and bytes (Innodb_data_reads/_read), data bytes written with the doublewrite
    (Innodb_data_written), pages written (Innodb_pages_written, 16 KiB pages), doublewrite
    pages (Innodb_dblwr_pages_written) and redo log writes (Innodb_log_writes)."""
    r = subprocess.run([IOATTR, "report", str(rec), "--by", "phase,file_class,op", "--layer", "syscall",
                        "--format", "json"], capture_output=True, text=True, check=True)
    cls: dict[tuple[str, str], dict[str, float]] = {}
    for row in json.loads(r.stdout)["rows"]:
        if row["phase"] == "run":
            slot = cls.setdefault((row["file_class"], row["op"]), {"count": 0, "bytes": 0})
            slot["count"] += row["count"]
            slot["bytes"] += row["bytes"]

    def ours(classes: tuple[str, ...], op: str, what: str) -> float:
        return sum(cls.get((c, op), {}).get(what, 0) for c in classes)

    pairs = {
        "Innodb_data_reads": ours(DATA_CLASSES, "read", "count"),
        "Innodb_data_read": ours(DATA_CLASSES, "read", "bytes"),
        "Innodb_data_written": ours(DATA_CLASSES, "write", "bytes"),
        "Innodb_pages_written": ours(PAGE_CLASSES, "write", "bytes") / 16384,
        "Innodb_dblwr_pages_written": ours(("doublewrite",), "write", "bytes") / 16384,
        "Innodb_log_writes": ours(("redo_log",), "write", "count"),
    }
    out = {}
    for counter, mine in pairs.items():
        engine = st.counter(f"status:{counter}")
        out[counter] = {"ioattr": mine, "engine": engine,
                        "diff_pct": round(100 * (mine - engine) / engine, 4) if engine else None}
    # the redo log like for like: Innodb_log_writes counts the log's data writes, not the write of
    # a checkpoint block that each checkpoint makes (INNODB_METRICS log_checkpoints, which the
    # recorder switches on); and where a write runs past the file's end InnoDB splits it in two
    # pwrites, counted once: at most one a pass over the file (LSN growth / the log's capacity)
    writes, checkpoints = st.counter("status:Innodb_log_writes"), increases(rec, "innodb_metrics", "log_checkpoints")
    lsn = st.counter("status:Innodb_lsn_current")
    if writes is not None and checkpoints is not None:
        engine = writes + checkpoints
        mine = pairs["Innodb_log_writes"]
        passes = lsn / (log_file_size - REDO_START) if lsn is not None and log_file_size else None
        out["Innodb_log_writes+log_checkpoints"] = {
            "ioattr": mine, "engine": engine, "diff_pct": round(100 * (mine - engine) / engine, 4) if engine else None,
            "checkpoints": checkpoints, "log_passes": round(passes, 1) if passes is not None else None}
    return out


def main() -> int:
    ap = bench_parser(__doc__, raw=True)
    ap.add_argument("--seconds", type=int, default=7200, help="sysbench run time (default 7200)")
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=200_000)
    ap.add_argument("--buffer-pool", default="64M")
    ap.add_argument("--sample", type=float, default=10.0, help="seconds between recorder CPU/RSS samples")
    ap.add_argument("--workdir", type=Path, default=None, help="keep the server and recording here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_long_run: needs root (BPF)", file=sys.stderr)
        return 2
    work = args.workdir or Path(tempfile.mkdtemp(prefix="ioattr-long-"))
    work.mkdir(parents=True, exist_ok=True)
    rec = work / "rec"
    out: dict = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                 "git": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True).stdout.strip()}
    opts = {"max_connections": str(args.threads + 50)}
    with PrivateMariaDB(basedir=work / "server", buffer_pool=args.buffer_pool, extra_options=opts) as db:
        log(f"prepare: {args.tables} x {args.table_size} rows")
        db.sysbench("oltp_read_write", "prepare", tables=args.tables, table_size=args.table_size, threads=4)
        log_file_size = int(db.query("SELECT @@innodb_log_file_size")[0][0])
        # its messages go to a file: a pipe nobody reads for hours would fill and stop it
        rec_log = open(work / "recorder.log", "w")
        recorder = subprocess.Popen([IOATTR, "record", "-o", str(rec), "-p", str(db.pid)],
                                    stdout=subprocess.DEVNULL, stderr=rec_log, text=True, start_new_session=True)
        samples: list[dict] = []
        try:
            deadline = time.monotonic() + 120
            while "recording " not in (work / "recorder.log").read_text():
                if recorder.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the recorder did not start: {(work / 'recorder.log').read_text()[-2000:]}")
                time.sleep(0.2)
            conn = db.connect()
            cur = conn.cursor()
            cur.execute("SELECT 'ioattr:phase=run'")
            wait_phase(rec, "run")
            log(f"run: oltp_read_write, {args.threads} threads, {args.seconds} s")
            bench = subprocess.Popen(
                ["sysbench", "oltp_read_write", "--db-driver=mysql", f"--mysql-socket={db.socket}",
                 "--mysql-user=root", "--mysql-db=sbtest", f"--tables={args.tables}",
                 f"--table-size={args.table_size}", f"--threads={args.threads}", f"--time={args.seconds}",
                 "--report-interval=0", "run"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=db.basedir)
            t0, cpu0 = time.monotonic(), proc_cpu_seconds(recorder.pid)
            last_t, last_cpu = t0, cpu0
            while bench.poll() is None:
                time.sleep(args.sample)
                now, cpu = time.monotonic(), proc_cpu_seconds(recorder.pid)
                samples.append({"t": round(now - t0, 1), "cpu_pct": round(100 * (cpu - last_cpu) / (now - last_t), 2),
                                "rss_kib": proc_rss_kib(recorder.pid)})
                last_t, last_cpu = now, cpu
            sb_out = bench.stdout.read() if bench.stdout else ""
            out["sysbench_rc"] = bench.returncode
            out["sysbench_tail"] = sb_out.strip().splitlines()[-25:]
            cur.execute("SELECT 'ioattr:phase=end'")
            wait_phase(rec, "end")
            conn.close()
            out["recorder_cpu_pct_whole_run"] = round(100 * (proc_cpu_seconds(recorder.pid) - cpu0)
                                                      / (time.monotonic() - t0), 2)
        finally:
            if recorder.poll() is None:
                os.kill(recorder.pid, signal.SIGINT)
            try:
                recorder.wait(timeout=300)
            except subprocess.TimeoutExpired:
                os.kill(recorder.pid, signal.SIGKILL)
                recorder.wait()
            rec_log.close()
        out["recorder_rc"] = recorder.returncode
        out["recorder_log_tail"] = (work / "recorder.log").read_text().strip().splitlines()[-5:]
    out["samples"] = samples
    rss = [s["rss_kib"] for s in samples]
    cpu = [s["cpu_pct"] for s in samples]
    if samples:
        q = max(1, len(samples) // 4)
        out["rss_kib_first_quarter_max"], out["rss_kib_last_quarter_max"] = max(rss[:q]), max(rss[-q:])
        out["cpu_pct_first_quarter_mean"] = round(sum(cpu[:q]) / q, 2)
        out["cpu_pct_last_quarter_mean"] = round(sum(cpu[-q:]) / q, 2)

    from ioattr.analysis.phase_stats import phase_stats
    from ioattr.format.reader import Recording

    meta = json.loads((rec / "meta.json").read_text())
    out["dropped"] = meta.get("dropped")
    out["block_untimed"] = meta.get("block_untimed")
    out["name_tables"] = meta.get("name_tables")
    out["max_entries"] = meta.get("max_entries")
    st = phase_stats(Recording(rec), "run")
    out["totals_vs_engine"] = totals_vs_engine(rec, st, log_file_size)
    out["rec_bytes"] = sum(f.stat().st_size for f in rec.rglob("*") if f.is_file())
    out["analysis"] = [timed("report", str(rec), "--by", "phase"), timed("explain", str(rec)),
                       timed("compare", str(rec), str(rec))]
    text = json.dumps(out, indent=1)
    if args.json:
        args.json.write_text(text)
    print(json.dumps({k: v for k, v in out.items() if k != "samples"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

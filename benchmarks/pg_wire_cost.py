"""What the PostgreSQL branch of the wire reader costs per statement (issue 16).

A private cluster (ioattr.host.pg_sandbox), `pgbench -i -s SCALE`, then `ioattr record --pid
<postmaster>` and, per protocol mode (simple, extended, prepared), `pgbench -S -n -t N` over
the unix socket. The kernel's BPF run-time statistics (kernel.bpf_stats_enabled, turned on for
the run and restored after) of the recorder's ioattr_wire_recv program give, per pgbench
statement: program runs and ns. The program runs at every recvfrom of every process on the host
(pgbench's own included: non-targets leave at once), so the figure is the host's per statement.

    .venv/bin/python benchmarks/pg_wire_cost.py [--transactions N] [--rounds R] [--json OUT]
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ioattr.host.pg_sandbox import PG_BINDIR, PrivatePostgres  # noqa: E402
from verdict import bench_parser  # noqa: E402

PROGRAM = "ioattr_wire_recv"
STATS = "/proc/sys/kernel/bpf_stats_enabled"


def prog_stats(recorder_pid: int) -> tuple[int, int] | None:
    """(run_cnt, run_time_ns) of the recorder's ioattr_wire_recv (its program fds' fdinfo give
    the ids: this bpftool lists no pids), None until it is loaded."""
    ids = set()
    fd_dir = Path(f"/proc/{recorder_pid}/fdinfo")
    for info in fd_dir.iterdir() if fd_dir.exists() else ():
        try:
            text = info.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("prog_id:"):
                ids.add(int(line.split()[1]))
    for pid in sorted(ids):
        res = subprocess.run(["bpftool", "prog", "show", "id", str(pid), "--json"], capture_output=True, text=True)
        if res.returncode:
            continue
        p = json.loads(res.stdout)
        if p.get("name") in (PROGRAM, PROGRAM[:15]):
            return int(p.get("run_cnt", 0)), int(p.get("run_time_ns", 0))
    return None


def pgbench(pg: PrivatePostgres, *args: str) -> None:
    cmd = [str(PG_BINDIR / "pgbench"), "-h", str(pg.socket_dir), "-p", str(pg.port), "-U", "postgres", *args,
           "postgres"]
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PGSSLMODE": "disable"})
    if res.returncode != 0:
        raise SystemExit(f"pgbench failed: {res.stderr.strip().splitlines()[-1:]}")


def main() -> int:
    ap = bench_parser(__doc__.splitlines()[0], rounds=3)
    ap.add_argument("--transactions", type=int, default=20000)
    ap.add_argument("--scale", type=int, default=1)
    a = ap.parse_args()
    results: dict[str, list[dict]] = {}
    old_stats = Path(STATS).read_text().strip()
    with PrivatePostgres() as pg:
        pgbench(pg, "-i", "-q", "-s", str(a.scale))
        rec = Path(f"/tmp/pg_wire_cost_rec_{os.getpid()}")
        recorder = subprocess.Popen([str(Path(sys.executable).parent / "ioattr"), "record", "-o", str(rec), "--pid", str(pg.pid),
                                     "--interval", "1"], stderr=subprocess.DEVNULL)
        try:
            Path(STATS).write_text("1")
            deadline = time.time() + 60
            while prog_stats(recorder.pid) is None:
                if recorder.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"the recorder did not load {PROGRAM}")
                time.sleep(0.2)
            for _ in range(a.rounds):
                for mode in ("simple", "extended", "prepared"):
                    before = prog_stats(recorder.pid)
                    pgbench(pg, "-S", "-n", "-M", mode, "-t", str(a.transactions))
                    after = prog_stats(recorder.pid)
                    assert before and after
                    runs, ns = after[0] - before[0], after[1] - before[1]
                    results.setdefault(mode, []).append({
                        "statements": a.transactions, "runs": runs, "run_time_ns": ns,
                        "runs_per_statement": runs / a.transactions, "ns_per_run": ns / max(runs, 1),
                        "ns_per_statement": ns / a.transactions})
        finally:
            Path(STATS).write_text(old_stats)
            recorder.send_signal(signal.SIGINT)
            recorder.wait(timeout=60)
            subprocess.run(["rm", "-rf", str(rec)], check=False)
    summary = {}
    for mode, rounds in results.items():
        per = sorted(r["ns_per_statement"] for r in rounds)
        runs = sorted(r["runs_per_statement"] for r in rounds)
        summary[mode] = {"ns_per_statement_median": per[len(per) // 2], "min": per[0], "max": per[-1],
                         "runs_per_statement_median": runs[len(runs) // 2]}
        print(f"{mode:9s} {per[len(per) // 2]:7.0f} ns/statement (min {per[0]:.0f}, max {per[-1]:.0f}), "
              f"{runs[len(runs) // 2]:.2f} runs/statement")
    if a.json:
        a.json.write_text(json.dumps({"rounds": results, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

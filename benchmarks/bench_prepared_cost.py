#!/usr/bin/env python3
"""BPF ns per statement of the wire reader: sysbench point selects as text (COM_QUERY) and as
server-side prepared statements (sysbench's default: COM_STMT_EXECUTE), on a private MariaDB.

Why: a prepared statement's execution is read by two programs (the receive side, and the send
side that learns statement ids from COM_STMT_PREPARE_OK, bpf/mysql_wire.bpf.h), a text
statement by the receive side's digest; the send program also runs at every send of every
process. This measures both per statement, with the kernel's BPF run-time statistics of the
recorder's own program fds (/proc/PID/fdinfo: run_time_ns, run_cnt), over whole sysbench runs
(connect, prepare, execute, close), against another ioattr (e.g. the main branch's checkout)
recording the same text statements.

    sudo .venv/bin/python benchmarks/bench_prepared_cost.py --ioattr before=/work/main/.venv/bin/ioattr

Per variant and mode: ns per statement (statements: the growth of the server's Questions)
of each ioattr_wire_* program and of all the stage programs, and runs per statement.
Figures include the run-time statistics' own clock reads (~65-70 ns a run here).
"""
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from ioattr.collectors import libbpf  # noqa: E402
from ioattr.host.sandbox import PrivateMariaDB  # noqa: E402
from verdict import bench_parser  # noqa: E402

TREE_IOATTR = str(HERE.parent / ".venv" / "bin" / "ioattr")
WIRE = ("ioattr_wire_recv", "ioattr_wire_send")  # bpftool's names are cut to 15 characters


def prog_stats(pid: int) -> dict[str, tuple[int, int]]:
    """name -> (run_time_ns, run_cnt) of process pid's BPF program fds (ids named by bpftool)."""
    out: dict[str, tuple[int, int]] = {}
    names = {p["id"]: p.get("name", "") for p in json.loads(subprocess.run(
        ["bpftool", "-j", "prog", "show"], check=True, capture_output=True, text=True).stdout)}
    seen = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        f = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if "prog_id" not in f:
            continue
        pid_ = int(f["prog_id"])
        if pid_ in seen:
            continue
        seen.add(pid_)
        name = names.get(pid_, str(pid_))
        t, n = out.get(name, (0, 0))
        out[name] = (t + int(f.get("run_time_ns", 0)), n + int(f.get("run_cnt", 0)))
    return out


def one_run(db: PrivateMariaDB, rec_pid: int, mode: str, events: int, threads: int) -> dict:
    extra = ["--db-ps-mode=disable"] if mode == "text" else []
    before, q0 = prog_stats(rec_pid), db.status("Questions")
    db.sysbench("oltp_point_select", *extra, "run", table_size=10000, threads=threads, events=events)
    after, q1 = prog_stats(rec_pid), db.status("Questions")
    stmts = q1 - q0
    per = {}
    for name, (t, n) in after.items():
        t0, n0 = before.get(name, (0, 0))
        if n - n0:
            per[name] = {"ns_per_statement": (t - t0) / stmts, "runs_per_statement": (n - n0) / stmts}
    stage = [k for k in per if k.startswith("ioattr_wire")]
    return {"statements": stmts, "programs": per,
            "wire_ns_per_statement": sum(per[k]["ns_per_statement"] for k in stage)}


def main() -> int:
    ap = bench_parser(__doc__.split("\n")[0], rounds=3)
    ap.add_argument("--ioattr", action="append", default=[], metavar="NAME=PATH",
                    help="another ioattr command to compare (text statements only: it may not digest "
                         "prepared ones); this tree's is always measured")
    ap.add_argument("--events", type=int, default=2000, help="sysbench events a run (10 point selects each)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    variants = [("tree", TREE_IOATTR, ("text", "prepared"))] + [
        (n, p, ("text",)) for n, _, p in (s.partition("=") for s in args.ioattr)]
    stats_fd = libbpf.enable_run_time_stats()
    if stats_fd is None:
        print("cannot enable BPF run-time statistics (BPF_ENABLE_STATS)", file=sys.stderr)
        return 1
    results: dict[str, list[dict]] = {}
    try:
        with PrivateMariaDB(buffer_pool="64M") as db, tempfile.TemporaryDirectory() as tmp:
            db.sysbench("oltp_point_select", "prepare", table_size=10000)
            db.sysbench("oltp_point_select", "run", table_size=10000, events=2000)  # warm the pool
            for r in range(args.rounds):
                for name, exe, modes in variants:  # interleaved: each round runs every variant
                    rec = subprocess.Popen([exe, "record", "-o", f"{tmp}/{name}{r}", "--pid", str(db.pid),
                                            "--interval", "1"], stderr=subprocess.PIPE, text=True)
                    try:
                        assert rec.stderr is not None
                        for line in rec.stderr:
                            if "recording " in line:
                                break
                        time.sleep(1)  # its first interval's own statements done
                        for mode in modes:
                            got = one_run(db, rec.pid, mode, args.events, args.threads)
                            results.setdefault(f"{name} {mode}", []).append(got)
                            print(f"round {r} {name:>8} {mode:>8}: wire {got['wire_ns_per_statement']:6.0f} ns "
                                  f"a statement ({got['statements']} statements)", flush=True)
                    finally:
                        rec.send_signal(signal.SIGINT)
                        rec.wait(60)
    finally:
        os.close(stats_fd)
    print("\nmedian over rounds, ns per statement (runs per statement):")
    summary = {}
    for key, runs in results.items():
        progs = sorted({p for r in runs for p in r["programs"] if p.startswith("ioattr_wire")})
        cells = []
        for p in progs:
            ns = statistics.median(r["programs"].get(p, {}).get("ns_per_statement", 0) for r in runs)
            rn = statistics.median(r["programs"].get(p, {}).get("runs_per_statement", 0) for r in runs)
            cells.append(f"{p} {ns:.0f} ({rn:.2f})")
        total = statistics.median(r["wire_ns_per_statement"] for r in runs)
        summary[key] = total
        print(f"  {key:>16}: wire total {total:.0f} ns   " + ", ".join(cells))
    if args.json:
        import hashlib

        head = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        obj = HERE.parent / "bpf" / "stage.bpf.o"
        Path(args.json).write_text(json.dumps({
            "git_head": head, "stage_bpf_o_sha256": hashlib.sha256(obj.read_bytes()).hexdigest(),
            "args": vars(args), "results": results, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

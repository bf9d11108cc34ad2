#!/usr/bin/env python3
"""The insert benchmark's q100 phase with `ioattr record` attached vs detached (issue 13).

Issue 13 asks that the default recording keep the insert benchmark's q100 phase at
>= 0.99 of its detached query rate. q100 is one connection inserting 100 rows/s (10 per
INSERT) while another runs covering range queries on the secondary indexes as fast as
it can: the phase a benchmarker watches for read IO under a light write load.

One private MariaDB (the miniature insert benchmark's server: ioattr.host.sandbox with
examples/insert_benchmark.py's PRIVATE_OPTIONS, a small buffer pool) is loaded once with
the benchmark's own l.i0, l.x and l.i1 phases (--rows, --rows-l-i1: the table several
times the pool, so the range queries read from storage). Then each round runs q100 once
detached and once under `ioattr record --pid <mariadbd>` with default options, in an
order that alternates every round, each for --seconds. The q100 phase is the example's
own code (Bench.query_phase), phase marker included: attached, the marker starts an
ioattr phase as it would in a real run.

Reported per round and as the median over rounds: queries/s attached / detached (the
issue's figure), inserts/s (held at 100 in both), server CPU per query, and buffer-pool
reads per query (to show the phase really read from storage). Every attached run is
checked: the recording must hold the server's reads in a phase named q100, else the
benchmark stops rather than report a number for probes that were not running.

    sudo .venv/bin/python benchmarks/bench_insert_q100.py --rounds 5 --seconds 15

Needs root and mariadbd.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

import insert_benchmark as ib  # noqa: E402
from bench_sysbench_qps import (Recorder, _report, ioattr_prog_stats, proc_cpu_s,  # noqa: E402
                                prog_stats_per_query, snapshot_ioattr)
from ioattr.host.sandbox import PrivateMariaDB  # noqa: E402
from verdict import bench_parser, write_json  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def recorded_q100_reads(rec: Path) -> int:
    """Syscall-layer read calls of the phase q100 in the recording (0 if none)."""
    rows = _report(rec, "--by", "phase", "--layer", "syscall").get("rows", [])
    return sum(int(r.get("count") or 0) for r in rows if r.get("phase") == "q100" and r.get("op") == "read")


def main() -> int:
    ap = bench_parser(__doc__.split("\n\n")[0], rounds=3, rounds_help='rounds, each running q100 detached and attached (3)', results='insert_q100.json')
    ap.add_argument("--seconds", type=float, default=15.0, help="seconds per q100 run (15)")
    ap.add_argument("--rows", type=int, default=300_000, help="rows loaded in l.i0 (300000)")
    ap.add_argument("--rows-l-i1", type=int, default=30_000, help="rows inserted in l.i1 (30000)")
    ap.add_argument("--buffer-pool", default="16M", help="innodb_buffer_pool_size (16M)")
    ap.add_argument("--record-arg", action="append", default=[], metavar="OPT",
                    help="extra `ioattr record` option for the attached runs (default: none, the defaults)")
    ap.add_argument("--bpf-dir", type=Path, metavar="DIR",
                    help="the attached runs load their BPF objects from DIR (e.g. an older commit's bpf/, "
                         "built) instead of this tree's")
    ap.add_argument("--prog-stats", action="store_true",
                    help="BPF run-time statistics on in every run (they cost ~70 ns a program run, in "
                         "the attached figures): the attached runs' BPF ns per query, by program")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_insert_q100: needs root", file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="ioattr-q100-"))
    code = snapshot_ioattr(work)
    runs: list[dict[str, object]] = []
    stats_fd = None
    if args.prog_stats:
        from ioattr.collectors import libbpf

        stats_fd = libbpf.enable_run_time_stats()  # on while we hold the fd
        if stats_fd is None:
            log("cannot enable BPF run-time stats (BPF_ENABLE_STATS); --prog-stats ignored")
    with PrivateMariaDB(buffer_pool=args.buffer_pool, extra_options=dict(ib.PRIVATE_OPTIONS)) as db:
        bargs = ib.parse_args(["--socket", str(db.socket), "--rows", str(args.rows),
                               "--rows-l-i1", str(args.rows_l_i1), "--phase-seconds", str(args.seconds),
                               "--rates", "100", "--wait-recorder", "0"])
        bench = ib.Bench(ib._connector(bargs, str(db.socket)), bargs, lambda m: log(f"  {m}"))
        log(f"mariadbd pid {db.pid}, buffer pool {args.buffer_pool}; loading {args.rows} + {args.rows_l_i1} rows")
        bench.setup()
        bench.load()
        bench.create_indexes()
        bench.insert_more()
        bench.query_phase(100)  # warm-up: the pool holds what q100 keeps reading
        for rnd in range(args.rounds):
            order = ["detached", "attached"] if rnd % 2 == 0 else ["attached", "detached"]
            for cfg in order:
                rec = None
                if cfg == "attached":
                    rec = Recorder(db.pid, work / f"rec-{rnd}", list(args.record_arg),  # type: ignore[arg-type]
                                   bpf_dir=args.bpf_dir)
                try:
                    reads0 = db.status("Innodb_buffer_pool_reads")
                    stats0 = ioattr_prog_stats(rec.proc.pid) if rec and stats_fd is not None else {}
                    cpu0 = proc_cpu_s(db.pid)  # type: ignore[arg-type]
                    bench.query_phase(100)
                    cpu = proc_cpu_s(db.pid) - cpu0  # type: ignore[arg-type]
                    stats1 = ioattr_prog_stats(rec.proc.pid) if rec and stats_fd is not None else {}
                    reads = db.status("Innodb_buffer_pool_reads") - reads0
                finally:
                    rc = rec.stop() if rec else 0
                res = bench.results[-1].as_dict()
                q = max(1, int(res["queries"]))
                run = {"round": rnd + 1, "config": cfg, "qps": res["qps"], "ips": res["ips"],
                       "queries": q, "server_cpu_us_per_query": cpu / q * 1e6,
                       "pool_reads_per_query": reads / q}
                if stats1:
                    run["prog_stats"] = prog_stats_per_query(stats0, stats1, q)
                if rec:
                    if rc != 0:
                        raise SystemExit(f"ioattr record exited {rc}: {''.join(rec.lines)[-500:]}")
                    got = recorded_q100_reads(rec.outdir)
                    if got <= 0:
                        raise SystemExit(f"round {rnd + 1}: the recording has no q100 reads: probes not running?")
                    run["recorded_q100_reads"] = got
                runs.append(run)
                log(f"  round {rnd + 1}/{args.rounds} {cfg:9s} {run['qps']:8.1f} queries/s, {run['ips']:6.1f} "
                    f"inserts/s, {run['pool_reads_per_query']:.2f} pool reads/query, server "
                    f"{run['server_cpu_us_per_query']:.1f} us/query")

    ratios = []
    for rnd in range(1, args.rounds + 1):
        by = {r["config"]: r for r in runs if r["round"] == rnd}
        ratios.append(by["attached"]["qps"] / by["detached"]["qps"])  # type: ignore[operator]

    def med(cfg: str, key: str) -> float:
        return statistics.median(float(r[key]) for r in runs if r["config"] == cfg)  # type: ignore[arg-type]

    summary = {
        "qps_ratio_median": statistics.median(ratios), "qps_ratio_min": min(ratios), "qps_ratio_max": max(ratios),
        "detached_qps_median": med("detached", "qps"), "attached_qps_median": med("attached", "qps"),
        "server_cpu_us_per_query_added": med("attached", "server_cpu_us_per_query")
        - med("detached", "server_cpu_us_per_query"),
        "pool_reads_per_query": med("detached", "pool_reads_per_query"),
        "ips_median": {c: med(c, "ips") for c in ("detached", "attached")},
    }
    if stats_fd is not None:
        names = sorted({n for r in runs for n in r.get("prog_stats", {})})  # type: ignore[union-attr]
        summary["prog_stats_median"] = {
            n: {k: statistics.median(float(r["prog_stats"][n][k]) for r in runs  # type: ignore[index]
                                     if n in r.get("prog_stats", {}))  # type: ignore[operator]
                for k in ("runs_per_query", "ns_per_run", "bpf_ns_per_query")} for n in names}
        print("BPF ns/query, attached runs' median: " + ", ".join(
            f"{n.removeprefix('ioattr_')} {v['bpf_ns_per_query']:.0f} ({v['runs_per_query']:.2f} runs)"
            for n, v in sorted(summary["prog_stats_median"].items(), key=lambda kv: -kv[1]["bpf_ns_per_query"])))
    print(f"q100: detached {summary['detached_qps_median']:.1f} queries/s median, "
          f"{summary['pool_reads_per_query']:.2f} pool reads/query")
    print("  round  attached/detached")
    for i, r in enumerate(ratios, 1):
        print(f"  {i:5d}  {r:.4f}")
    print(f"  median {summary['qps_ratio_median']:.4f} (min {summary['qps_ratio_min']:.4f}, max "
          f"{summary['qps_ratio_max']:.4f}); server CPU added {summary['server_cpu_us_per_query_added']:.1f} "
          f"us/query; target >= 0.99: {'MET' if summary['qps_ratio_median'] >= 0.99 else 'no'}")
    doc = {"benchmark": "insert_q100", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "command": " ".join([sys.executable, *sys.argv]), "ioattr": code,
           "params": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "runs": runs, "ratios": ratios, "summary": summary}
    write_json(args.json, doc)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

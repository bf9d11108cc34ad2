#!/usr/bin/env python3
"""What one counters snapshot costs the server and the recorder, by source.

Why: the recorder takes a snapshot of the engine's counters every interval
(default 1 s), with SQL against the traced server. Issue 13 asks where an
attached recording's cost goes; this says how much of it the snapshots can be:
the server's CPU per snapshot (mariadbd's utime+stime across --snapshots
snapshots, what the benchmark under study loses) and the recorder's
(time.process_time), with each source's wall time (CounterCollector.cost_ms).
performance_schema sources are read every ps_every-th snapshot, as in a
recording. One private MariaDB (4 x 100k sysbench rows, idle meanwhile: a
loaded server's figures carry its load's noise).

    sudo .venv/bin/python benchmarks/bench_counters_snapshot.py [--snapshots 300] [--rounds 3]
        [--json benchmarks/results/counters_snapshot.json]
"""
from __future__ import annotations

import datetime
import json
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sysbench_qps import proc_cpu_s  # noqa: E402
from ioattr.collectors.counters import CounterCollector  # noqa: E402
from ioattr.collectors.engine import EngineConnection, EngineOptions  # noqa: E402
from ioattr.engines.registry import engines_for  # noqa: E402
from ioattr.host.sandbox import PrivateMariaDB  # noqa: E402
from verdict import bench_parser  # noqa: E402


def main() -> int:
    ap = bench_parser(__doc__.splitlines()[0], rounds=3, json_help='write the rounds and medians here')
    ap.add_argument("--snapshots", type=int, default=300, help="snapshots per round (default 300)")
    args = ap.parse_args()
    if args.snapshots < 10 or args.rounds < 1:
        ap.error("--snapshots >= 10 and --rounds >= 1")
    rounds = []
    with PrivateMariaDB(buffer_pool="32M") as db:
        db.sysbench("oltp_point_select", "prepare", tables=4, table_size=100_000, threads=2)
        eng = EngineConnection(EngineOptions(socket=str(db.socket)), target_pid=db.pid)
        eng.connect()
        try:
            ctx = SimpleNamespace(engine=eng, engine_error=None, engines=engines_for(eng))
            c = CounterCollector()
            c.collect({db.pid: ctx}, [db.pid], "p", force=True)  # first sight: settings, modules
            for r in range(args.rounds):
                costs: dict[str, float] = {}
                server0, own0 = proc_cpu_s(db.pid), time.process_time()
                for _ in range(args.snapshots):
                    c.collect({db.pid: ctx}, [db.pid], "p")
                    for k, v in c.cost_ms.items():
                        costs[k] = costs.get(k, 0.0) + v
                server1, own1 = proc_cpu_s(db.pid), time.process_time()
                n = args.snapshots
                rounds.append({"server_cpu_ms": (server1 - server0) * 1e3 / n,
                               "recorder_cpu_ms": (own1 - own0) * 1e3 / n,
                               "wall_ms_by_source": {k: v / n for k, v in costs.items()}})
                print(f"round {r + 1}: server CPU {rounds[-1]['server_cpu_ms']:.2f} ms, recorder CPU "
                      f"{rounds[-1]['recorder_cpu_ms']:.2f} ms a snapshot", flush=True)
            ps_every = c.ps_every
        finally:
            eng.close()
    med = {k: statistics.median(r[k] for r in rounds) for k in ("server_cpu_ms", "recorder_cpu_ms")}
    sources = sorted(rounds[0]["wall_ms_by_source"], key=lambda s: -rounds[0]["wall_ms_by_source"][s])
    by_source = {s: statistics.median(r["wall_ms_by_source"].get(s, 0.0) for r in rounds) for s in sources}
    print(f"median of {args.rounds} rounds x {args.snapshots} snapshots (performance_schema every "
          f"{ps_every}th): server CPU {med['server_cpu_ms']:.2f} ms, recorder CPU "
          f"{med['recorder_cpu_ms']:.2f} ms a snapshot")
    print("wall ms a snapshot by source: " + ", ".join(f"{s} {v:.2f}" for s, v in by_source.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "benchmark": "counters_snapshot", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "command": " ".join(sys.argv), "ps_every": ps_every, "rounds": rounds,
            "median": {**med, "wall_ms_by_source": by_source}}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

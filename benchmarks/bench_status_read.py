#!/usr/bin/env python3
"""Recorder CPU per global-status read: SHOW GLOBAL STATUS decoded row by row vs the packed read.

Why: the counters snapshot runs every interval of every recording, and reading
the ~560-700 status variables through pymysql row by row was most of it.
collectors/counters.py's _status now reads SHOW once (to learn the names'
spelling) and then the same table as one GROUP_CONCAT value. Both ways run
here against one private MariaDB in the same process, checked equal (names,
numbers, texts), and timed by process CPU (time.process_time: what the
recorder pays), best of --rounds x --reads.

    sudo .venv/bin/python benchmarks/bench_status_read.py [--rounds 5] [--reads 40]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ioattr.collectors.counters import CounterCollector, _Server  # noqa: E402
from ioattr.collectors.engine import EngineConnection, EngineOptions  # noqa: E402
from ioattr.host.sandbox import PrivateMariaDB  # noqa: E402
from verdict import bench_parser  # noqa: E402


def main() -> int:
    ap = bench_parser(__doc__.splitlines()[0], rounds=5, json=False)
    ap.add_argument("--reads", type=int, default=40)
    args = ap.parse_args()
    with PrivateMariaDB(buffer_pool="32M") as db:
        eng = EngineConnection(EngineOptions(socket=str(db.socket), user="root"), target_pid=db.pid)
        eng.connect()
        try:
            show, packed = _Server(pid=db.pid, status_names=None), _Server(pid=db.pid)
            CounterCollector._status(packed, eng)  # the first read is SHOW: it learns the names
            a = {n: (v is None, t) for n, v, t in CounterCollector._status(show, eng)}
            b = {n: (v is None, t) for n, v, t in CounterCollector._status(packed, eng)}
            if not packed.status_names or set(a) != set(b) or any(a[n] != b[n] for n in a if not n.startswith("Uptime")):
                print("bench_status_read: the packed read differs from SHOW", file=sys.stderr)
                return 1
            print(f"{len(a)} status variables, the same both ways")
            for name, st in (("SHOW GLOBAL STATUS", show), ("packed", packed)):
                best = float("inf")
                for _ in range(args.rounds):
                    t0 = time.process_time()
                    for _ in range(args.reads):
                        CounterCollector._status(st, eng)
                    best = min(best, (time.process_time() - t0) / args.reads)
                print(f"{name}: {best * 1e3:.2f} ms recorder CPU per read (best of {args.rounds} x {args.reads})")
        finally:
            eng.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

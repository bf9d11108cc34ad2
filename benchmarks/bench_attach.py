#!/usr/bin/env python3
"""How long `ioattr record -p` takes to attach to a server whose benchmark keeps every core busy.

A private PostgreSQL 15 (`pgbench -i -s 10`, 16 MB shared_buffers) runs `pgbench -S` with
`--clients` connections (default 8: more runnable processes than this VM's 2 vCPUs); each round
times `ioattr record -p POSTMASTER --duration 1` from its start to its "recording" line, twice,
in alternating order:

- `boost`: as shipped: the recorder lowers its nice value while the kernel verifies its
  programs (collectors/probes.py verifier_priority);
- `plain`: the same command under `setpriv --bounding-set -sys_nice --inh-caps -sys_nice`,
  which leaves it no CAP_SYS_NICE, so the verifier runs at the default priority (what ioattr
  did before).

    sudo .venv/bin/python benchmarks/bench_attach.py --rounds 3 [--clients 8] [--json PATH]

Prints each way's seconds per round and the medians; docs/cost.md ("Attaching") has the figures.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ioattr.host.pg_sandbox import PG_BINDIR, PrivatePostgres  # noqa: E402
from verdict import bench_parser, write_json  # noqa: E402

IOATTR = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "ioattr")
NO_SYS_NICE = ["setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice"]


def attach_seconds(pm: int, out: Path, plain: bool) -> float:
    """Seconds from `ioattr record` starting to its "recording" line (the recording then runs 1 s)."""
    cmd = (NO_SYS_NICE if plain else []) + [IOATTR, "record", "-p", str(pm), "-o", str(out), "--duration", "1"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = None
    assert p.stderr is not None
    for line in p.stderr:
        if took is None and "recording pid" in line:
            took = time.monotonic() - t0
    if p.wait() != 0 or took is None:
        raise SystemExit(f"bench_attach: ioattr record failed (exit {p.returncode})")
    return took


def main() -> int:
    ap = bench_parser(__doc__.splitlines()[0], rounds=3)
    ap.add_argument("--clients", type=int, default=8, help="pgbench -S connections (default 8)")
    args = ap.parse_args()
    pgbench = str(PG_BINDIR / "pgbench")
    times: dict[str, list[float]] = {"boost": [], "plain": []}
    with PrivatePostgres() as pg, tempfile.TemporaryDirectory(prefix="ioattr-bench-attach-") as tmp:
        conn = ["-h", str(pg.socket_dir), "-p", str(pg.port), "-U", pg.user]
        subprocess.run([pgbench, *conn, "-i", "-s", "10", "postgres"], check=True, capture_output=True)
        for r in range(args.rounds):
            for way in (("boost", "plain") if r % 2 == 0 else ("plain", "boost")):
                load = subprocess.Popen([pgbench, *conn, "-S", "-c", str(args.clients), "-j", "2", "-T", "600",
                                         "postgres"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    time.sleep(3)  # every client connected and busy
                    times[way].append(attach_seconds(int(pg.pid), Path(tmp) / f"{way}-{r}", way == "plain"))
                finally:
                    load.terminate()
                    load.wait()
                print(f"round {r + 1} {way}: attached in {times[way][-1]:.2f} s", flush=True)
    med = {way: statistics.median(v) for way, v in times.items()}
    print(f"median: boost {med['boost']:.2f} s, plain {med['plain']:.2f} s "
          f"({args.clients} pgbench -S clients)")
    if args.json:
        write_json(args.json, {"clients": args.clients, "seconds": times, "median": med})
    return 0


if __name__ == "__main__":
    sys.exit(main())

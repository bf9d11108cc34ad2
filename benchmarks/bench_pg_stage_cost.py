#!/usr/bin/env python3
"""What PostgreSQL's stage uprobes (bpf/pg_stage.bpf.h) and io-worker uprobes (bpf/pg_aio.bpf.h)
cost, on private clusters, with the kernel's BPF run-time statistics (meta.json self_cost).

stages: pgbench -S (1 client, simple protocol) on PostgreSQL 15, interleaved rounds of no
recording, `record --stages statement` (no stage uprobes) and the default (the stage uprobes):
tps of each, and per statement the runs and ns of ioattr_pg_plan / ioattr_pg_execute.
aio: PostgreSQL 18 with io_method=worker, a cold sequential scan (restart, 4 MB shared_buffers,
a ~7 MB table): per IO handle the runs and ns of ioattr_pg_aio_stage/_perform/_done.

    sudo .venv/bin/python benchmarks/bench_pg_stage_cost.py [--rounds 2] [--seconds 8]

Run-time figures include the statistics' own clock reads; the traps themselves (the uprobe's
breakpoint, ~1-2 us each here) are outside them: the tps difference shows them.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.helpers, as `python benchmarks/...`

from ioattr.host.pg_sandbox import PG18_BINDIR, PG_BINDIR, PrivatePostgres  # noqa: E402
from tests.helpers import Background  # noqa: E402
from verdict import bench_parser  # noqa: E402

PROGS = ("ioattr_pg_plan", "ioattr_pg_execute", "ioattr_pg_aio_stage", "ioattr_pg_aio_perform", "ioattr_pg_aio_done")


def _programs(rec: Path) -> dict[str, tuple[int, int]]:
    progs = json.loads((rec / "meta.json").read_text())["self_cost"]["programs"]
    return {k: (v["run_cnt"], v["run_time_ns"]) for k, v in progs.items() if k in PROGS}


def stages(out: Path, rounds: int, seconds: int) -> None:
    pg = PrivatePostgres(bindir=PG_BINDIR, shared_buffers="64MB")
    pg.start()
    try:
        def pgbench(*a: str) -> str:
            r = subprocess.run([str(PG_BINDIR / "pgbench"), "-h", str(pg.socket_dir), "-p", str(pg.port),
                                "-U", "postgres", *a, "postgres"], capture_output=True, text=True, check=True)
            return r.stdout
        pgbench("-i", "-s", "2", "-q")
        pgbench("-S", "-T", "3", "-n")
        for rnd in range(rounds):
            for mode in ("none", "statement", "auto"):
                rec = out / f"{mode}{rnd}"
                bg = None
                if mode != "none":
                    bg = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "1",
                                    "--stages", mode)
                    bg.wait_recording()
                got = pgbench("-S", "-T", str(seconds), "-n", "-c", "1")
                tps = float(re.search(r"tps = ([\d.]+)", got).group(1))  # type: ignore[union-attr]
                line = f"stages round {rnd} {mode:9s} tps {tps:8.1f}"
                if bg is not None:
                    bg.stop()
                    n = tps * seconds
                    for name, (runs, ns) in _programs(rec).items():
                        line += f"  {name}: {runs / n:.2f} runs/stmt {ns / max(runs, 1):.0f} ns/run"
                print(line, flush=True)
    finally:
        pg.stop()


def aio(out: Path) -> None:
    pg = PrivatePostgres(bindir=PG18_BINDIR, shared_buffers="4MB")
    pg.start()
    try:
        pg.execute("CREATE TABLE aio (id int, v text); "
                   "INSERT INTO aio SELECT g, md5(g::text) FROM generate_series(1, 100000) g; CHECKPOINT")
        pg.restart()
        rec = out / "aio"
        bg = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "1")
        bg.wait_recording()
        t = time.monotonic()
        pg.query("SELECT sum(length(v)) FROM aio")
        took = time.monotonic() - t
        (blocks,) = pg.query("SELECT heap_blks_read FROM pg_statio_user_tables WHERE relname = 'aio'")[0]
        bg.stop()
        progs = _programs(rec)
        handles = progs.get("ioattr_pg_aio_stage", (0, 0))[0]
        line = f"aio scan {took * 1000:.0f} ms, {blocks} blocks, {handles} handles staged"
        for name, (runs, ns) in progs.items():
            if name.startswith("ioattr_pg_aio"):
                line += f"  {name}: {ns / max(runs, 1):.0f} ns/run"
        print(line, flush=True)
    finally:
        pg.stop()


def main() -> None:
    ap = bench_parser(__doc__.splitlines()[0], rounds=2, json=False)
    ap.add_argument("--seconds", type=int, default=8)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ioattr-pgcost-") as d:
        stages(Path(d), a.rounds, a.seconds)
        aio(Path(d))


if __name__ == "__main__":
    main()

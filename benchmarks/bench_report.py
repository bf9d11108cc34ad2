#!/usr/bin/env python3
"""How long `ioattr report` takes on a big recording, cold and warm.

Times the real command (a new process each run, as a user types it):

    ioattr report REC --by file
    ioattr report REC --by thread,op
    ioattr report REC --by phase
    ioattr report REC --by index          (the pages table)
    ioattr report REC --format json       (by file)

each `--runs` times (default 3) cold (page cache dropped before every run:
`sync; echo 3 > /proc/sys/vm/drop_caches`, needs root) and warm (after one
untimed run), and reports the median wall time (and min/max), the median
CPU time (user + sys) of the process and the 1-minute load average: on a
shared machine the CPU time says what the wall time would be on an idle
one. Several recordings can
be given, e.g. the same synthetic day before and after compaction:

    .venv/bin/python benchmarks/synthetic_recording.py -o /tmp/day-raw
    cp -a /tmp/day-raw /tmp/day && .venv/bin/python -m ioattr.format.compact /tmp/day
    sudo .venv/bin/python benchmarks/bench_report.py raw=/tmp/day-raw compacted=/tmp/day

Writes results/report_speed.json (or --json PATH). The target (issue 4,
item 6) is <= 3 s for a 24-hour recording.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

COMMANDS = {
    "by file": ["--by", "file"],
    "by thread,op": ["--by", "thread,op"],
    "by phase": ["--by", "phase"],
    "by index": ["--by", "index"],
    "json": ["--format", "json"],
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ioattr_command() -> str:
    venv = Path(sys.executable).with_name("ioattr")
    if venv.exists():
        return str(venv)
    found = shutil.which("ioattr")
    if found:
        return found
    return str(HERE.parent / ".venv" / "bin" / "ioattr")


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def run_once(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys) of one run."""
    u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return dt, (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)


def summary(samples: list[tuple[float, float]]) -> dict:
    wall = [w for w, _ in samples]
    cpu = [c for _, c in samples]
    return {"median": round(statistics.median(wall), 3), "min": round(min(wall), 3), "max": round(max(wall), 3),
            "all": [round(t, 3) for t in wall], "cpu_median": round(statistics.median(cpu), 3),
            "loadavg_1m": round(os.getloadavg()[0], 2)}


def shape(rec: Path) -> dict:
    out: dict = {}
    for d in sorted(p for p in rec.iterdir() if p.is_dir()):
        files = [f for f in d.iterdir() if f.name.endswith(".parquet")]
        out[d.name] = {"files": len(files), "bytes": sum(f.stat().st_size for f in files),
                       "segments": sum(1 for f in files if f.name.startswith("seg")),
                       "chunks": sum(1 for f in files if f.name.startswith("chunk-"))}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("recordings", nargs="+", help="REC or LABEL=REC")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", help="comma-separated subset of: " + ", ".join(COMMANDS))
    ap.add_argument("--no-cold", action="store_true", help="skip the cold runs (they need root)")
    ap.add_argument("--json", default=str(HERE / "results" / "report_speed.json"))
    a = ap.parse_args()
    cold = not a.no_cold
    if cold and os.geteuid() != 0:
        raise SystemExit("cold runs drop the page cache: run as root, or pass --no-cold")
    ioattr = ioattr_command()
    names = [n.strip() for n in a.only.split(",")] if a.only else list(COMMANDS)
    results = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
               "cpus": os.cpu_count(), "kernel": platform.release(), "runs": a.runs, "recordings": {}}
    for spec in a.recordings:
        label, _, path = spec.rpartition("=")
        rec = Path(path)
        label = label or rec.name
        entry = {"path": str(rec), "shape": shape(rec), "commands": {}}
        results["recordings"][label] = entry
        log(f"{label}: {rec} {json.dumps(entry['shape'])}")
        for name in names:
            cmd = [ioattr, "report", str(rec), *COMMANDS[name]]
            res: dict = {"command": "ioattr report REC " + " ".join(COMMANDS[name])}
            if cold:
                samples = []
                for _ in range(a.runs):
                    drop_caches()
                    samples.append(run_once(cmd))
                res["cold"] = summary(samples)
            run_once(cmd)   # warm the page cache
            res["warm"] = summary([run_once(cmd) for _ in range(a.runs)])
            entry["commands"][name] = res
            c, w = res.get("cold", {}), res["warm"]
            log(f"  {name:14s} cold {c.get('median', '-')!s:>7} s (cpu {c.get('cpu_median', '-')!s:>6})   "
                f"warm {w['median']:>7} s (cpu {w['cpu_median']:>6})   load {w['loadavg_1m']}")
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(results, indent=2) + "\n")
    log(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

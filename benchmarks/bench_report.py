#!/usr/bin/env python3
"""How long `ioattr report`, `explain` and `compare` take on a big recording, cold and warm.

Times the real command (a new process each run, as a user types it):

    ioattr report REC --by file
    ioattr report REC --by thread,op
    ioattr report REC --by phase
    ioattr report REC --by index          (the pages table)
    ioattr report REC --format json       (by file)
    ioattr explain REC                    (default phases and metric)
    ioattr compare REC                    (every phase)

each `--runs` times (default 3) cold (page cache dropped before every run:
`sync; echo 3 > /proc/sys/vm/drop_caches`, needs root) and warm (after one
untimed run), and reports the median wall time (and min/max), the median
CPU time (user + sys) and peak RSS of the process and the 1-minute load
average: on a shared machine the CPU time says what the wall time would be
on an idle one. Several recordings can be given, e.g. the same synthetic day
before and after compaction:

    .venv/bin/python benchmarks/synthetic_recording.py -o /tmp/day-raw
    cp -a /tmp/day-raw /tmp/day && .venv/bin/python -m ioattr.format.compact /tmp/day
    sudo .venv/bin/python benchmarks/bench_report.py raw=/tmp/day-raw compacted=/tmp/day

and several builds of ioattr, side by side in the same run (`--build
LABEL=PATH/TO/ioattr`, repeated; each command's runs alternate between the
builds, so a machine whose speed drifts slows both alike):

    .venv/bin/python benchmarks/bench_report.py --no-cold /tmp/day \
        --build base=/tmp/base/.venv/bin/ioattr --build after=.venv/bin/ioattr

Writes results/report_speed.json (or --json PATH). The targets for the synthetic 24-hour
recording, warm: report by any dimension <= 1 s, explain and compare <= 2 s, peak RSS
<= 300 MB; docs/cost.md ("Reading a recording") has the figures.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from verdict import bench_parser, write_json  # noqa: E402

COMMANDS = {
    "by file": ["--by", "file"],
    "by thread,op": ["--by", "thread,op"],
    "by phase": ["--by", "phase"],
    "by index": ["--by", "index"],
    "json": ["--format", "json"],
    "explain": ["explain"],
    "compare": ["compare"],
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


def command_line(ioattr: str, rec: Path, name: str) -> list[str]:
    """`ioattr report REC ARGS`, or `ioattr explain|compare REC`."""
    args = COMMANDS[name]
    if args[0] in ("explain", "compare"):
        return [ioattr, args[0], str(rec), *args[1:]]
    return [ioattr, "report", str(rec), *args]


def run_once(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (KiB) of one run (its own
    rusage, from wait4: RUSAGE_CHILDREN's maxrss would be the largest run so far)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read() if p.stderr else ""
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err.strip()}")
    return dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def summary(samples: list[tuple[float, float, int]]) -> dict:
    wall = [w for w, _, _ in samples]
    cpu = [c for _, c, _ in samples]
    return {"median": round(statistics.median(wall), 3), "min": round(min(wall), 3), "max": round(max(wall), 3),
            "all": [round(t, 3) for t in wall], "cpu_median": round(statistics.median(cpu), 3),
            "rss_mb_max": round(max(r for _, _, r in samples) / 1024, 1),
            "loadavg_1m": round(os.getloadavg()[0], 2)}


def shape(rec: Path) -> dict:
    out: dict = {}
    for d in sorted(p for p in rec.iterdir() if p.is_dir() and not p.name.startswith(".")):  # not .derived
        files = [f for f in d.iterdir() if f.name.endswith(".parquet")]
        out[d.name] = {"files": len(files), "bytes": sum(f.stat().st_size for f in files),
                       "segments": sum(1 for f in files if f.name.startswith("seg")),
                       "chunks": sum(1 for f in files if f.name.startswith("chunk-"))}
    return out


def main() -> int:
    ap = bench_parser(__doc__.split("\n\n")[0], results='report_speed.json')
    ap.add_argument("recordings", nargs="+", help="REC or LABEL=REC")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="only this command (repeat for several): " + "; ".join(COMMANDS))
    ap.add_argument("--no-cold", action="store_true", help="skip the cold runs (they need root)")
    ap.add_argument("--build", action="append", metavar="LABEL=IOATTR",
                    help="an ioattr command to time (repeat: side by side); default: this venv's")
    a = ap.parse_args()
    cold = not a.no_cold
    if cold and os.geteuid() != 0:
        raise SystemExit("cold runs drop the page cache: run as root, or pass --no-cold")
    builds = dict(b.split("=", 1) for b in a.build) if a.build else {"": ioattr_command()}
    names = [n.strip() for n in a.only] if a.only else list(COMMANDS)
    unknown = [n for n in names if n not in COMMANDS]
    if unknown:
        raise SystemExit(f"unknown command {unknown[0]!r}; choose from: {', '.join(COMMANDS)}")
    results = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
               "cpus": os.cpu_count(), "kernel": platform.release(), "runs": a.runs,
               "builds": builds, "recordings": {}}
    for spec in a.recordings:
        label, _, path = spec.rpartition("=")
        rec = Path(path)
        label = label or rec.name
        entry = {"path": str(rec), "shape": shape(rec), "commands": {}}
        results["recordings"][label] = entry
        log(f"{label}: {rec} {json.dumps(entry['shape'])}")
        for name in names:
            cmds = {b: command_line(ioattr, rec, name) for b, ioattr in builds.items()}
            shown = " ".join(command_line("ioattr", Path("REC"), name))
            cold_s: dict[str, list] = {b: [] for b in builds}
            warm_s: dict[str, list] = {b: [] for b in builds}
            if cold:
                for _ in range(a.runs):
                    for b, cmd in cmds.items():
                        drop_caches()
                        cold_s[b].append(run_once(cmd))
            for cmd in cmds.values():
                run_once(cmd)   # warm the page cache
            for _ in range(a.runs):
                for b, cmd in cmds.items():
                    warm_s[b].append(run_once(cmd))
            for b in builds:
                res: dict = {"command": shown}
                if cold:
                    res["cold"] = summary(cold_s[b])
                res["warm"] = summary(warm_s[b])
                entry["commands"][f"{b}: {name}" if b else name] = res
                c, w = res.get("cold", {}), res["warm"]
                log(f"  {(b + ': ' if b else '') + name:22s} cold {c.get('median', '-')!s:>7} s "
                    f"(cpu {c.get('cpu_median', '-')!s:>6})   warm {w['median']:>7} s (cpu {w['cpu_median']:>6}, "
                    f"{w['rss_mb_max']:>6} MB)   load {w['loadavg_1m']}")
    write_json(a.json, results)
    log(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

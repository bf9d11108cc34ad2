"""What does `ioattr record` itself cost? (target: <= 2% of a core and <= 150 MB RSS at 30K IOPS)

Two scenarios, each round, every configuration once (order rotated per round):

  idle  `ioattr record --pid <a sleeping process>`: the floor of the loop (drains,
        /proc refreshes, the 100 ms wake-ups) with nothing to record.
  load  `ioattr record --pid P1 --pid P2 ...` on the fio-like load of bench_top.py
        (benchmarks/iops_load.py: 4 processes x 8 threads x 16 files, 4 KiB
        pread/pwrite, 20% writes, paced to --iops-target; reads hit the page cache,
        writes are written back, so syscall and block rows both move).

For each run the recorder's CPU (utime + stime of /proc/PID/stat, all its threads)
is read when it prints "recording" and again --seconds later, as % of one core;
start-up (imports, BPF load) and the final flush are left out of that figure (the
shutdown CPU is reported apart). Peak RSS is VmHWM of /proc/PID/status, polled
until the recorder exits, so it covers the final flush too. CPU of the background
compaction children (reaped by the recorder) is reported apart as `children_cpu_pct`.
The achieved IOPS is what the load's workers counted over the measured window; the
recording is checked against it (recorded syscall reads+writes / calls made).

The code measured is a frozen copy of the working tree (Python and BPF objects,
first on PYTHONPATH), so edits by others mid-run cannot mix builds. `--variant
NAME=DIR` adds a configuration running another source tree (e.g. a `git archive`
of an older commit), interleaved with the current one; a DIR without built BPF
objects gets the current tree's, so only the Python differs.

    sudo .venv/bin/python benchmarks/bench_recorder.py                      # 3 rounds x 60 s
    sudo .venv/bin/python benchmarks/bench_recorder.py --seconds 30 --rounds 5 --variant before=/tmp/old-tree
    sudo .venv/bin/python benchmarks/bench_recorder.py --only load --iops-target 30000 --json out.json
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from iops_load import IopsLoad  # noqa: E402  (the shared load generator)
from verdict import bench_parser, write_json  # noqa: E402

# package -> source folder, as setup.py maps them
PACKAGE_DIRS = {"ioattr": "ioattr", "ioattr/collectors": "collectors", "ioattr/cli": "cli", "ioattr/bpf": "bpf",
                **{f"ioattr/{p}": f"ioattr/{p}" for p in ("model", "format", "live", "analysis",
                                                          "output", "topview", "prometheus", "host")}}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def snapshot(src: Path, dst: Path, bpf_from: Path) -> str:
    """Copy a source tree into the installed package layout; returns a digest of what was copied."""
    digest = hashlib.sha256()
    for pkg, folder in PACKAGE_DIRS.items():
        out = dst / pkg
        out.mkdir(parents=True, exist_ok=True)
        # BPF: the current tree's package files, overlaid with the variant's own objects if built
        wheres = [bpf_from, src / folder] if pkg == "ioattr/bpf" else [src / folder]
        for where in wheres:
            if not where.is_dir():
                continue
            for f in sorted(where.iterdir()):
                if f.is_file() and f.suffix not in (".pyc", ".c", ".h"):
                    shutil.copy2(f, out / f.name)
        for f in sorted(out.iterdir()):
            digest.update(f.name.encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:12]


def proc_stat(pid: int) -> tuple[float, float]:
    """(utime+stime, cutime+cstime) of a live process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return ((int(fields[11]) + int(fields[12])) / CLK_TCK, (int(fields[13]) + int(fields[14])) / CLK_TCK)


def proc_mem_kib(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


class Variant:
    def __init__(self, name: str, snap: Path, digest: str) -> None:
        self.name, self.snap, self.digest = name, snap, digest
        self.env = {**os.environ, "PYTHONPATH": str(snap)}
        self.env.pop("IOATTR_BPF_DIR", None)
        self.cmd = [sys.executable, "-m", "ioattr.cli.main"]

    def check(self) -> None:
        r = subprocess.run([sys.executable, "-c", "import ioattr.collectors.probes as p; print(p.bpf_object_dir())"],
                           env=self.env, cwd=str(self.snap), capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout.strip().startswith(str(self.snap)):
            raise SystemExit(f"variant {self.name}: the snapshot is not what runs: {r.stdout} {r.stderr[-2000:]}")


def recorded_ops(v: Variant, rec: Path) -> tuple[int | None, float | None]:
    """Syscall-layer reads + writes in a recording, and its length in seconds."""
    r = subprocess.run([*v.cmd, "report", str(rec), "--by", "op", "--layer", "syscall", "--format", "json"],
                       env=v.env, cwd=str(v.snap), capture_output=True, text=True)
    try:
        meta = json.loads((rec / "meta.json").read_text())
        length = float(meta["ended"]) - float(meta["started"])
    except (OSError, ValueError, KeyError, TypeError):
        length = None
    if r.returncode != 0:
        log(f"  report failed: {r.stderr.strip()[-500:]}")
        return None, length
    rows = json.loads(r.stdout).get("rows", [])
    return sum(int(x["count"]) for x in rows if x.get("op") in ("read", "write")), length


def run_one(v: Variant, pids: list[int], seconds: float, work: Path, tag: str, interval: float,
            load: IopsLoad | None, extra: list[str]) -> dict:
    rec = work / f"rec-{tag}"
    cmd = [*v.cmd, "record", "-o", str(rec), "--interval", str(interval), *extra]
    for pid in pids:
        cmd += ["--pid", str(pid)]
    t_exec = time.monotonic()
    proc = subprocess.Popen(cmd, env=v.env, cwd=str(v.snap), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    started = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip())
            if "recording " in line:
                started.set()
        started.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    try:
        if not started.wait(60) or proc.poll() is not None:
            raise RuntimeError(f"ioattr record did not start: {' | '.join(lines[-10:])}")
        startup_s = time.monotonic() - t_exec
        time.sleep(0.2)  # past the baseline drain and the first counters snapshot
        t0 = time.monotonic()
        cpu0, child0 = proc_stat(proc.pid)
        ops0 = load.ops() if load else 0
        rss_samples = []
        while time.monotonic() - t0 < seconds:
            time.sleep(min(1.0, max(0.0, seconds - (time.monotonic() - t0))))
            rss_samples.append(proc_mem_kib(proc.pid).get("VmRSS", 0))
        t1 = time.monotonic()
        cpu1, child1 = proc_stat(proc.pid)
        ops1 = load.ops() if load else 0
        hwm = proc_mem_kib(proc.pid).get("VmHWM", 0)
        cpu_end, child_end = cpu1, child1
        proc.send_signal(signal.SIGINT)
        t_stop = time.monotonic()
        while proc.poll() is None and time.monotonic() - t_stop < 120:
            try:
                cpu_end, child_end = proc_stat(proc.pid)
            except (OSError, IndexError, ValueError):
                break
            hwm = max(hwm, proc_mem_kib(proc.pid).get("VmHWM", 0))
            time.sleep(0.05)
        proc.wait(120)
        stop_s = time.monotonic() - t_stop
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"ioattr record exited {proc.returncode}: {' | '.join(lines[-10:])}")
    wall = t1 - t0
    out = {
        "variant": v.name, "seconds": round(wall, 2), "startup_s": round(startup_s, 2),
        "cpu_pct": round(100 * (cpu1 - cpu0) / wall, 2),
        "children_cpu_pct": round(100 * (child1 - child0) / wall, 2),
        "shutdown_cpu_s": round(cpu_end - cpu1 + child_end - child1, 2), "shutdown_s": round(stop_s, 2),
        "peak_rss_mb": round(hwm / 1024, 1),
        "rss_mb_end_of_window": round(rss_samples[-1] / 1024, 1) if rss_samples else None,
    }
    if load is not None:
        out["iops"] = round((ops1 - ops0) / wall)
        n, length = recorded_ops(v, rec)
        out["recorded_ops"] = n
        if n is not None and length:
            out["recorded_iops"] = round(n / length)
    shutil.rmtree(rec, ignore_errors=True)
    return out


def summary(runs: list[dict]) -> dict:
    def med_max(key: str) -> dict | None:
        xs = [r[key] for r in runs if r.get(key) is not None]
        if not xs:
            return None
        return {"median": round(statistics.median(xs), 2), "max": round(max(xs), 2), "min": round(min(xs), 2)}

    keys = ("cpu_pct", "children_cpu_pct", "peak_rss_mb", "shutdown_cpu_s", "startup_s", "iops", "recorded_iops")
    return {k: med_max(k) for k in keys if med_max(k) is not None}


def main() -> int:
    ap = bench_parser(__doc__, raw=True, rounds=3, results='recorder_cost.json')
    ap.add_argument("--seconds", type=float, default=60, help="measured window per run (default 60)")
    ap.add_argument("--iops-target", type=float, default=30000)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=8, help="threads per load process")
    ap.add_argument("--files", type=int, default=16, help="files per load process")
    ap.add_argument("--write-share", type=float, default=0.2)
    ap.add_argument("--interval", type=float, default=1.0, help="the recorder's --interval")
    ap.add_argument("--only", choices=("idle", "load"), help="one scenario only")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=DIR",
                    help="also run the source tree DIR (interleaved with the current tree)")
    ap.add_argument("--no-current", action="store_true", help="only the --variant trees")
    ap.add_argument("--record-args", default="", help="extra arguments for ioattr record (one string)")
    ap.add_argument("--dir", help="where the load's files and the recordings go (default: the temp dir)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        log("needs root (BPF)")
        return 2

    work = Path(tempfile.mkdtemp(prefix="ioattr-bench-recorder-", dir=args.dir))
    variants: list[Variant] = []
    try:
        if not args.no_current:
            variants.append(Variant("current", work / "current", snapshot(REPO, work / "current", REPO / "bpf")))
        for spec in args.variant:
            name, _, d = spec.partition("=")
            if not name or not d or not Path(d).is_dir():
                ap.error(f"--variant NAME=DIR: bad {spec!r}")
            variants.append(Variant(name, work / name, snapshot(Path(d), work / name, REPO / "bpf")))
        for v in variants:
            v.check()
        if not variants:
            ap.error("nothing to run")
        scenarios = [args.only] if args.only else ["idle", "load"]
        extra = args.record_args.split()
        runs: dict[str, dict[str, list[dict]]] = {s: {v.name: [] for v in variants} for s in scenarios}
        load_desc = None
        for rnd in range(args.rounds):
            order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
            for scen in scenarios:
                if scen == "idle":
                    sleeper = subprocess.Popen(["sleep", "100000"])
                    try:
                        for v in order:
                            r = run_one(v, [sleeper.pid], args.seconds, work, f"{rnd}-{scen}-{v.name}",
                                        args.interval, None, extra)
                            runs[scen][v.name].append(r)
                            log(f"round {rnd + 1} idle {v.name}: CPU {r['cpu_pct']}% of a core, "
                                f"peak RSS {r['peak_rss_mb']} MB")
                    finally:
                        sleeper.kill()
                        sleeper.wait()
                else:
                    with IopsLoad(iops=args.iops_target, procs=args.procs, threads=args.threads,
                                  files=args.files, write_share=args.write_share, directory=str(work)) as load:
                        load_desc = load.describe()
                        time.sleep(2.0)  # let the load settle
                        for v in order:
                            r = run_one(v, load.pids, args.seconds, work, f"{rnd}-{scen}-{v.name}",
                                        args.interval, load, extra)
                            runs[scen][v.name].append(r)
                            log(f"round {rnd + 1} load {v.name}: {r['iops']:,} IOPS (recorded "
                                f"{r.get('recorded_iops')}), CPU {r['cpu_pct']}% of a core "
                                f"(+{r['children_cpu_pct']}% compaction), peak RSS {r['peak_rss_mb']} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True).stdout.strip()

    res = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "host": platform.node(),
        "kernel": platform.release(), "cpus": os.cpu_count(), "loadavg_end": os.getloadavg(),
        "git_head": git("rev-parse", "--short", "HEAD"),
        "tree_modified": bool(git("status", "--porcelain", "--untracked-files=no")),
        "targets": {"cpu_pct_of_one_core": 2.0, "peak_rss_mb": 150, "iops": args.iops_target},
        "seconds": args.seconds, "rounds": args.rounds, "interval": args.interval, "record_args": extra,
        "load": load_desc,
        "variants": {v.name: {"snapshot_sha256": v.digest} for v in variants},
        "summary": {s: {name: summary(rs) for name, rs in by.items()} for s, by in runs.items()},
        "runs": runs,
    }
    ok = True
    for scen, by in res["summary"].items():
        for name, s in by.items():
            c, m = s.get("cpu_pct", {}), s.get("peak_rss_mb", {})
            extra_txt = f", {s['iops']['median']:,.0f} IOPS" if "iops" in s else ""
            print(f"{scen:4} {name:10} CPU median {c.get('median')}% (max {c.get('max')}%) of a core, "
                  f"peak RSS median {m.get('median')} MB (max {m.get('max')}){extra_txt}")
            if scen == "load" and name == "current":
                ok = c.get("median", 1e9) <= 2.0 and m.get("max", 1e9) <= 150
    if "load" in res["summary"] and "current" in res["summary"]["load"]:
        print("target (<= 2% of a core, <= 150 MB at 30K IOPS):", "met" if ok else "NOT met")
    if args.json:
        write_json(args.json, res)
        print(f"wrote {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

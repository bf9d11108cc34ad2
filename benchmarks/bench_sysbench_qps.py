#!/usr/bin/env python3
"""sysbench QPS with `ioattr record` attached vs detached, probe set by probe set.

A private MariaDB (ioattr.host.sandbox.PrivateMariaDB: O_DIRECT, a small buffer
pool, so queries miss the pool and pread from storage) runs
oltp_point_select and oltp_read_write (`--workload`) in interleaved rounds:
each round runs, for each workload, every configuration once — detached and
each attached configuration — in an order rotated every round so drift does
not favour any of them. "Attached" is the real tool: `ioattr record --pid
<mariadbd> -o <dir> ARGS` in the background, started before sysbench (we wait
for it to say it is recording) and stopped with SIGINT afterwards, so its
probes, its drain loop and its engine collectors all count.

The attached configurations are a ladder (`--configs`), each adding one
probe set to the previous:
  files        --probes syscalls,targets,uring,pagecache --no-innodb-pages
  +block       + the block layer
  +pages       + InnoDB page classification (index, level, page type)
  +stage       + the mysqld uprobes, without fine stages (--stages statement: the
               default until the fine stages were read from the server's THD)
  +stages_auto + the fine stages read from the server's THD at IO time (--stages auto,
               the default since)
  +stages_full   --stages full (the same as auto where the THD is read)
  +stages_full_uprobes  the same from the four stage uprobes (IOATTR_THD_STAGES=off,
               the way --stages full worked before; not in the default ladder)
  +wire_syscall  +stages_auto with the statement reader on recvfrom's syscall
               tracepoint (IOATTR_WIRE_HOOK=syscall: kernels without sock_recv_length,
               and the default before it; not in the default ladder)
`--record-variant NAME=ARGS` adds more attached configurations.

Reports per workload each configuration's attached/detached QPS ratio (median
and min-max over rounds; the issue's target is >= 0.98), CPU per query
relative to detached, and the server CPU it adds per query. Also
Innodb_buffer_pool_reads per query, to show the runs really were IO-bound.
Every attached run is verified after its timed window: the recording holds
the server's reads, the probe sets asked for were active, InnoDB pages were
classified when asked for, and the stage uprobes were attached in the mode
asked for — else the benchmark stops rather than report a number for probes
that were not running.

Needs root, sysbench and mariadbd.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))  # harmless when ioattr is installed (editable)
sys.path.insert(0, str(HERE))  # the benchmarks' shared modules (verdict)

from ioattr.host.sandbox import PrivateMariaDB  # noqa: E402
from verdict import bench_parser, write_json  # noqa: E402

WORKLOADS = {"point_select": "oltp_point_select", "read_write": "oltp_read_write"}
FILES_SETS = "syscalls,targets,uring,pagecache"
# the ladder: each configuration adds one probe set to the one before
LADDER: dict[str, list[str]] = {
    "files": ["--probes", FILES_SETS, "--no-innodb-pages"],
    "+block": ["--probes", FILES_SETS + ",block", "--no-innodb-pages"],
    "+pages": ["--probes", FILES_SETS + ",block"],
    "+stage": ["--probes", FILES_SETS + ",block,stage", "--stages", "statement"],
    "+stages_auto": ["--probes", FILES_SETS + ",block,stage", "--stages", "auto"],
    "+stages_full": ["--probes", FILES_SETS + ",block,stage", "--stages", "full"],
    "+stages_full_uprobes": ["--probes", FILES_SETS + ",block,stage", "--stages", "full"],
    "+wire_syscall": ["--probes", FILES_SETS + ",block,stage", "--stages", "auto"],
}
# the recorder's environment for a configuration, past the arguments
CONFIG_ENV: dict[str, dict[str, str]] = {"+stages_full_uprobes": {"IOATTR_THD_STAGES": "off"},
                                         "+wire_syscall": {"IOATTR_WIRE_HOOK": "syscall"}}
DEFAULT_CONFIGS = "files,+block,+pages,+stage,+stages_auto"
# A configuration that attaches nothing: a second detached run in every round, compared with
# the first as the attached ones are. Its "ratio" and "added" CPU are this machine's noise
# and the position-in-round bias, measured in the same rounds (an A/A control).
AA_CONFIG = "detached_again"
# what `ioattr record` does with no options (--stages auto since the sixth pass of issue 13): the
# arguments the --bpf-variant and --code-variant configurations run with
DEFAULT_RECORDING = "+stages_auto"
ALL_SETS = ("syscalls", "targets", "uring", "block", "pagecache", "stage")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# How to run ioattr: set by snapshot_ioattr() to a frozen copy of the tree.
IOATTR_CMD: list[str] = [sys.executable]
IOATTR_ENV: dict[str, str] | None = None
IOATTR_CWD: str | None = None  # not the repo: '' on sys.path would find the live tree first

# package -> source folder, as setup.py maps them
# (every package under ioattr/, found, not listed: a new folder such as engines/myrocks must not
# be left out of the snapshot, which would then import it from nowhere)
PACKAGE_DIRS = {"ioattr": "ioattr", "ioattr/collectors": "collectors", "ioattr/cli": "cli", "ioattr/bpf": "bpf",
                **{str(d.parent.relative_to(REPO)): str(d.parent.relative_to(REPO))
                   for d in sorted((REPO / "ioattr").glob("*/**/__init__.py"))}}


def snapshot_ioattr(work: Path) -> dict[str, object]:
    """Run a frozen copy of the working tree's ioattr (Python and BPF objects).

    Other people edit and rebuild the tree while a long benchmark runs; every
    `ioattr record` here starts a new process, so without a copy the rounds
    could measure different code. The copy sits first on PYTHONPATH, ahead of
    the editable install's finder. Returns what was copied (git HEAD, whether
    the tree had local changes, a digest of the copy).
    """
    global IOATTR_ENV, IOATTR_CWD
    snap = work / "ioattr-snapshot"
    digest = hashlib.sha256()
    for pkg, src in PACKAGE_DIRS.items():
        dst = snap / pkg
        dst.mkdir(parents=True, exist_ok=True)
        for f in sorted((REPO / src).iterdir()):
            if f.is_file() and f.suffix not in (".pyc", ".c", ".h"):  # code, BPF objects, data
                shutil.copy2(f, dst / f.name)
                digest.update(f.name.encode())
                digest.update(f.read_bytes())
    IOATTR_ENV = {**os.environ, "PYTHONPATH": str(snap)}
    IOATTR_ENV.pop("IOATTR_BPF_DIR", None)
    IOATTR_CWD = str(snap)
    check = subprocess.run([*IOATTR_CMD, "-c", "import ioattr.collectors.probes as p; print(p.bpf_object_dir())"],
                           env=IOATTR_ENV, cwd=IOATTR_CWD, capture_output=True, text=True)
    if check.returncode != 0 or not check.stdout.strip().startswith(str(snap)):
        raise RuntimeError(f"the ioattr snapshot is not what runs: {check.stdout} {check.stderr[-2000:]}")

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True).stdout.strip()

    return {"git_head": git("rev-parse", "--short", "HEAD"),
            "tree_modified": bool(git("status", "--porcelain", "--untracked-files=no")),
            "snapshot_sha256": digest.hexdigest()[:12]}


def code_variant(work: Path, name: str, rev: str) -> dict[str, object]:
    """A copy of the snapshot whose Python sources are git REV's (BPF objects stay the
    tree's): to compare a change of the recorder's Python code in the same rounds, as
    --bpf-variant does for the BPF objects. Returns the copy's directory and what it holds."""
    src = work / "ioattr-snapshot"
    dst = work / f"code-{name}"
    shutil.copytree(src, dst)
    changed = []
    for pkg, folder in PACKAGE_DIRS.items():
        at_rev = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", f"{rev}:{folder}"],
                                capture_output=True, text=True)
        if at_rev.returncode != 0:
            continue  # the folder is newer than REV: the tree's copy stays
        names = {n for n in at_rev.stdout.split() if n.endswith(".py")}
        for f in (dst / pkg).glob("*.py"):
            if f.name not in names:
                f.unlink()
                changed.append(f"{folder}/{f.name} (absent)")
        for n in sorted(names):
            old = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{folder}/{n}"],
                                 capture_output=True, check=True).stdout
            f = dst / pkg / n
            if not f.exists() or f.read_bytes() != old:
                f.write_bytes(old)
                changed.append(f"{folder}/{n}")
    return {"dir": dst, "rev": rev, "files_differing_from_the_tree": changed}


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a live process, in seconds (BPF programs run in its context count too)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def host_busy_cores(window: float = 2.0) -> float:
    """CPU cores busy (all processes) over a short window, from /proc/stat."""
    def snap() -> tuple[int, int]:
        with open("/proc/stat") as f:
            vals = [int(x) for x in f.readline().split()[1:]]
        idle = vals[3] + vals[4]  # idle + iowait
        return sum(vals[:8]), idle

    t0, i0 = snap()
    time.sleep(window)
    t1, i1 = snap()
    total = max(t1 - t0, 1)
    return (os.cpu_count() or 1) * (1 - (i1 - i0) / total)


def wait_until_idle(max_busy: float, timeout: float) -> float:
    """Before a run (our server idle): wait until other work uses < max_busy cores."""
    t0 = time.monotonic()
    busy = host_busy_cores()
    while busy > max_busy and time.monotonic() - t0 < timeout:
        busy = host_busy_cores(5.0)
    if busy > max_busy:
        log(f"  host still busy ({busy:.2f} cores) after {timeout:.0f}s; running anyway")
    return busy


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def prog_ids_of(pid: int) -> set[int]:
    """Ids of the BPF programs process `pid` holds open (its fds' fdinfo `prog_id`)."""
    ids: set[int] = set()
    for fdinfo in Path(f"/proc/{pid}/fdinfo").glob("*"):
        try:
            for line in fdinfo.read_text().splitlines():
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except (OSError, ValueError):
            continue  # an fd closed meanwhile
    return ids


def ioattr_prog_stats(pid: int | None = None) -> dict[str, tuple[int, int]]:
    """name -> (run_cnt, run_time_ns) of the loaded ioattr_* BPF programs (bpftool);
    with `pid`, only that recorder's own programs: other people's ioattr tests load
    programs of the same names, which come and go during a run."""
    r = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True)
    mine = prog_ids_of(pid) if pid else None
    out: dict[str, tuple[int, int]] = {}
    for p in json.loads(r.stdout or "[]"):
        name = p.get("name", "")
        if name.startswith("ioattr_") and (mine is None or p.get("id") in mine):
            cnt, tim = out.get(name, (0, 0))
            out[name] = (cnt + int(p.get("run_cnt", 0)), tim + int(p.get("run_time_ns", 0)))
    return out


def prog_stats_per_query(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]],
                         queries: int) -> dict[str, dict[str, float]]:
    """Each program that ran between two ioattr_prog_stats() reads: runs and BPF ns per query, ns per run."""
    out = {}
    for name, (cnt, tim) in sorted(after.items()):
        c0, t0 = before.get(name, (0, 0))
        if cnt > c0:
            out[name] = {"runs_per_query": (cnt - c0) / queries, "bpf_ns_per_query": (tim - t0) / queries,
                         "ns_per_run": (tim - t0) / (cnt - c0)}
    return out


# What a recording adds to a process, by kernel symbol (perf's names), in groups that
# say which part of the design pays: the programs, their dispatch, their maps, their
# helpers. Everything else a process spends more on (its own code on colder caches,
# interrupts) stays in "rest".
PERF_GROUPS: dict[str, tuple[str, ...]] = {
    "programs": ("bpf_prog_",),
    "syscall tracepoint dispatch": (
        "trace_call_bpf", "perf_syscall_enter", "perf_syscall_exit", "perf_trace_buf_alloc",
        "perf_swevent_get_recursion_context", "perf_swevent_put_recursion_context", "perf_call_bpf_enter",
        "perf_call_bpf_exit", "syscall_trace_enter", "syscall_exit_work", "__pi_memcpy"),
    "raw tracepoint dispatch": ("bpf_trace_run", "__bpf_trace_", "call_trace_"),
    "uprobe traps": ("uprobe_", "handle_swbp", "arch_uprobe", "exc_int3", "do_int3", "__uprobe"),
    "map lookups and updates": ("lookup_nulls_elem_raw", "__htab_", "htab_", "memcmp", "alloc_htab_elem",
                                "pcpu_freelist", "bpf_lru_", "bpf_percpu_lru", "__bpf_lru"),
    "helpers": ("bpf_task_storage_", "bpf_local_storage", "task_init_private_helper_slot",
                "copy_from_user_nofault", "bpf_probe_read", "nmi_uaccess_okay", "bpf_ktime_get_ns",
                "ktime_get_mono_fast_ns", "bpf_get_current_", "bpf_task_pt_regs", "bpf_ringbuf_", "bpf_loop",
                "bpf_map_lookup_elem", "bpf_map_update_elem", "bpf_map_delete_elem"),
    # Not the recording's: where a VM's interrupt and exit time lands in cpu-clock samples
    # (a sample taken with interrupts off is charged to the point they come back on), the
    # virtio doorbell's VM exit, and first-touch page zeroing. An A/A control (detached_again,
    # 2026-11-28) swung by up to +-20 us a query here with nothing attached. Kept apart so
    # "rest" is the processes' own code; a hardirq program's time may hide here too.
    "interrupts, VM exits, page zeroing": (
        "handle_softirqs", "__do_softirq", "_raw_spin_unlock_irqrestore", "_raw_spin_unlock_irq",
        "iowrite16", "vp_notify", "irqentry_", "__irq_exit_rcu", "irq_exit_rcu", "asm_common_interrupt",
        "asm_sysvec_", "__sysvec_", "sysvec_", "clear_page_erms", "clear_page_", "native_safe_halt"),
}
PERF_HZ = 4999


def perf_group(sym: str) -> str:
    for group, prefixes in PERF_GROUPS.items():
        if sym.startswith(prefixes):
            return group
    return "rest"


class PerfSampler:
    """`perf record -a -g` on cpu-clock (this VM has no hardware counters) for one run.

    Why: BPF run-time statistics time a program from its first instruction to its
    last; what a tracepoint costs around that (the syscall slow path, building the
    perf record, the dispatch), the maps' and helpers' kernel code, and what all
    of it does to the caches show only in samples of the processes that pay it."""

    def __init__(self, stem: Path) -> None:
        stem.parent.mkdir(parents=True, exist_ok=True)
        self.data = stem.with_suffix(".data")
        self.txt = stem.with_suffix(".txt")
        self.proc = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_HZ), "-a", "-g",
                                      "-o", str(self.data)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)  # perf's mmap setup, before the workload starts

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=120)
        with open(self.txt, "w") as f:
            subprocess.run(["perf", "report", "-i", str(self.data), "--no-children", "--stdio", "-g", "none", "-n",
                            "--sort", "comm,sym", "--percent-limit", "0"],
                           stdout=f, stderr=subprocess.DEVNULL, check=False)

    def samples(self) -> dict[tuple[str, str], int]:
        """(comm, symbol) -> samples, from the report stop() wrote."""
        out: dict[tuple[str, str], int] = {}
        for line in self.txt.read_text(errors="replace").splitlines():
            m = re.match(r"\s+[\d.]+%\s+(\d+)\s+(\S+)\s+\[.\]\s+(.*)$", line)
            if m:
                key = (m.group(2), m.group(3).strip())
                out[key] = out.get(key, 0) + int(m.group(1))
        return out


def perf_added(base: dict[tuple[str, str], int], nq_base: int, run: dict[tuple[str, str], int], nq: int,
               comms: tuple[str, ...] = ("mariadbd", "sysbench", "python")) -> dict[str, dict[str, float]]:
    """CPU us per query a run adds over the detached run, per process name and PERF_GROUPS
    group (a symbol the detached run never hit is all added; "rest" is what is left of
    the process's total)."""
    def us(n: int, q: int) -> float:
        return n * 1e6 / PERF_HZ / max(q, 1)

    res: dict[str, dict[str, float]] = {}
    for comm in comms:
        total = (sum(n for (c, _), n in run.items() if c == comm) / max(nq, 1)
                 - sum(n for (c, _), n in base.items() if c == comm) / max(nq_base, 1)) * 1e6 / PERF_HZ
        groups = {g: 0.0 for g in PERF_GROUPS}
        for (c, sym), n in run.items():
            g = perf_group(sym)
            if c == comm and g != "rest":
                groups[g] += us(n, nq) - us(base.get((c, sym), 0), nq_base)
        groups["rest"] = total - sum(groups.values())
        groups["total"] = total
        res[comm] = {k: round(v, 3) for k, v in groups.items()}
    return res


def perf_rest_symbols(base: dict[tuple[str, str], int], nq_base: int, run: dict[tuple[str, str], int], nq: int,
                      comms: tuple[str, ...] = ("mariadbd", "sysbench")) -> dict[str, dict[str, float]]:
    """The "rest" of perf_added() symbol by symbol: CPU us per query each symbol outside
    PERF_GROUPS adds over the detached run, per process name.

    Why: "rest" was the largest part of what a recording adds to the server, and a sum
    says nothing of where it goes: the process's own code on colder caches, the kernel's
    syscall entry and exit around the tracepoints, or work the recorder asks of the server
    (its counter queries) each look different here."""
    def us(n: int, q: int) -> float:
        return n * 1e6 / PERF_HZ / max(q, 1)

    res: dict[str, dict[str, float]] = {}
    for comm in comms:
        syms = {s for (c, s) in (*run, *base) if c == comm and perf_group(s) == "rest"}
        res[comm] = {s: round(us(run.get((comm, s), 0), nq) - us(base.get((comm, s), 0), nq_base), 4)
                     for s in syms}
    return res


def top_symbols(per_round: list[dict[str, float]], n: int = 20) -> list[tuple[str, float, float, float]]:
    """(symbol, median, min, max) over rounds of the symbols whose median adds most, by size."""
    syms = {s for r in per_round for s in r}
    rows = [(s, _med([r.get(s, 0.0) for r in per_round]), min(r.get(s, 0.0) for r in per_round),
             max(r.get(s, 0.0) for r in per_round)) for s in syms]
    rows.sort(key=lambda x: -abs(x[1]))
    return [(s, round(m, 3), round(lo, 3), round(hi, 3)) for s, m, lo, hi in rows[:n]]


def parse_sysbench(out: str) -> dict[str, float]:
    q = re.search(r"queries:\s+(\d+)\s+\(([\d.]+) per sec\.\)", out)
    t = re.search(r"total time:\s+([\d.]+)s", out)
    p95 = re.search(r"95th percentile:\s+([\d.]+)", out)
    if not q:
        raise RuntimeError(f"cannot parse sysbench output:\n{out[-2000:]}")
    return {"queries": int(q.group(1)), "qps": float(q.group(2)),
            "seconds": float(t.group(1)) if t else float("nan"),
            "p95_ms": float(p95.group(1)) if p95 else float("nan")}


class Recorder:
    """`ioattr record --pid P -o DIR` in the background, ready once it says 'recording'."""

    def __init__(self, pid: int, outdir: Path, extra: list[str], timeout: float = 30.0,
                 bpf_dir: Path | None = None, code_dir: Path | None = None, cwd: str | None = None,
                 env_extra: dict[str, str] | None = None) -> None:
        self.outdir = outdir
        t0 = time.monotonic()
        env = {**(IOATTR_ENV or os.environ), **(env_extra or {})}
        if bpf_dir is not None:
            env["IOATTR_BPF_DIR"] = str(bpf_dir)
        if code_dir is not None:
            env["PYTHONPATH"] = str(code_dir)
        self.proc = subprocess.Popen([*IOATTR_CMD, "-m", "ioattr.cli.main", "record", "--pid", str(pid), "-o", str(outdir), *extra],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env=env,
                                     # `python -m` puts its directory first on sys.path: a code
                                     # variant's own copy, or it would import the tree's snapshot
                                     cwd=cwd or (str(code_dir) if code_dir is not None else IOATTR_CWD))
        assert self.proc.stderr is not None
        self.lines: list[str] = []
        for line in self.proc.stderr:
            self.lines.append(line)
            if "recording" in line:
                break
            if time.monotonic() - t0 > timeout:
                break
        self.attach_s = time.monotonic() - t0
        if not self.lines or "recording" not in self.lines[-1]:
            self.stop()
            raise RuntimeError(f"ioattr record did not start: {''.join(self.lines)}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        assert self.proc.stderr is not None
        self.lines.append(self.proc.stderr.read())
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9


def _report(rec: Path, *args: str) -> dict:
    r = subprocess.run([*IOATTR_CMD, "-m", "ioattr.cli.main", "report", str(rec), "--format", "json", *args],
                       capture_output=True, text=True, env=IOATTR_ENV, cwd=IOATTR_CWD)
    if r.returncode != 0:
        raise RuntimeError(f"ioattr report failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def recorded_reads(rec: Path) -> int:
    """Syscall-layer reads the recording holds (proves the probes saw the run)."""
    doc = _report(rec, "--layer", "syscall", "--by", "file")
    return sum(int(row.get("count") or 0) for row in doc.get("rows", []) if row.get("op") == "read")


def expected(args: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    """What an `ioattr record ARGS` run (with env) must show: probe sets, page classification,
    stage mode, and with --stages full where the stages come from."""
    ns = argparse.ArgumentParser(add_help=False)
    ns.add_argument("--probes")
    ns.add_argument("--no-innodb-pages", action="store_true")
    ns.add_argument("--stages", default="auto")
    a, _ = ns.parse_known_args(args)
    sets = [x.strip() for x in a.probes.split(",") if x.strip()] if a.probes else list(ALL_SETS)
    if "syscalls" not in sets:
        sets.insert(0, "syscalls")
    return {"probe_sets": sets, "innodb_pages": not a.no_innodb_pages,
            # counts with the index-dive pair (cffcaf1, both modes), and without it (older trees);
            # one fewer when statements start from the wire (--statements wire/auto, issue 13)
            # --stages full from the THD attaches the default's uprobes only
            "stage_uprobes": ({"statement": (5, 4, 3, 2), "auto": (5, 4, 3, 2),
                               "full": (9, 8, 7, 6, 5, 4)}.get(a.stages) if "stage" in sets else None),
            "full_source": (None if a.stages == "statement" or "stage" not in sets else
                            "stage uprobes" if (env or {}).get("IOATTR_THD_STAGES") == "off" else
                            "stages from the server's THD"),
            # where the statement reader ran (meta wire_hook; trees before it have none)
            "wire_hook": (None if "stage" not in sets else "syscalls:sys_exit_recvfrom"
                          if (env or {}).get("IOATTR_WIRE_HOOK") == "syscall" else "tp_btf:sock_recv_length")}


def verify_recording(rec: Path, want: dict[str, object], reads: int) -> dict[str, object]:
    """Check that the run recorded what its configuration asked for; raise if not."""
    meta = json.loads((rec / "meta.json").read_text())
    got: dict[str, object] = {}
    missing = [x for x in want["probe_sets"] if x not in (meta.get("probe_sets") or [])]  # type: ignore[union-attr]
    if missing:
        raise RuntimeError(f"{rec.name}: probe sets {missing} were not active: {meta.get('degraded')}")
    got["recorded_reads"] = recorded_reads(rec)
    got["recorded_reads_per_pool_read"] = int(got["recorded_reads"]) / max(reads, 1)  # type: ignore[arg-type]
    if reads > 100 and float(got["recorded_reads_per_pool_read"]) < 0.5:  # type: ignore[arg-type]
        raise RuntimeError(f"{rec.name}: recorded {got['recorded_reads']} reads for {reads} pool reads")
    if want["innodb_pages"]:
        pages = _report(rec, "--by", "index")
        got["recorded_page_reads"] = sum(int(r.get("count") or 0) for r in pages.get("rows", [])
                                         if r.get("op") == "read" and r.get("index"))
        if reads > 100 and not got["recorded_page_reads"]:
            raise RuntimeError(f"{rec.name}: InnoDB page classification asked for, no index pages recorded")
    elif meta.get("pages", meta.get("innodb_pages")):
        raise RuntimeError(f"{rec.name}: InnoDB pages were classified with --no-innodb-pages")
    status = [str(srv.get("stage_probes") or "") for srv in meta.get("servers") or []]
    if want["stage_uprobes"] is not None:
        if not status or not any(status[0].startswith(f"attached {n} uprobes")
                                 for n in want["stage_uprobes"]):  # type: ignore[attr-defined]
            raise RuntimeError(f"{rec.name}: want {want['stage_uprobes']} stage uprobes, got {status}")
        # trees before the THD source say "(--stages full)" alone: stage uprobes
        source = status[0].partition(": ")[2] if "(--stages full" in status[0] or "(--stages auto" in status[0] else ""
        source = source or "stage uprobes"
        if want["full_source"] and not source.startswith(str(want["full_source"])):
            raise RuntimeError(f"{rec.name}: want {want['full_source']}, got {status}")
        got["stage_probes"] = status[0]
        if "wire_hook" in meta and meta["wire_hook"] != want["wire_hook"]:
            raise RuntimeError(f"{rec.name}: want the wire reader on {want['wire_hook']}, got {meta['wire_hook']!r}")
        got["wire_hook"] = meta.get("wire_hook")
    elif any(x.startswith("attached") for x in status):
        raise RuntimeError(f"{rec.name}: stage uprobes attached without the stage set: {status}")
    return got


@contextlib.contextmanager
def ram_disk(work: Path, size_mb: int) -> Iterator[Path]:
    """An ext4 filesystem on a loop device backed by a file in /dev/shm, mounted under
    `work` for the body of a `with` (`--ram-disk`); unmounted, detached and removed after.

    Why: on this project's VMs the virtual disk's latency comes from a shared host, and
    with nothing attached two detached runs of a round differed by up to a quarter in QPS
    (the A/A control of 2026-11-28): IO-bound QPS there measures the host's disk. A loop
    device is a real blk-mq device (the block tracepoints fire as on a disk, O_DIRECT
    reads are bios), but its "media" is memory, so every pool miss costs the same each
    run, and a query is faster, so what the recorder adds weighs more, not less.
    """
    backing = Path(tempfile.mkdtemp(prefix="ioattr-qps-ram-", dir="/dev/shm")) / "disk.img"
    mnt, dev = work / "ramdisk", ""
    try:
        with open(backing, "wb") as f:
            f.truncate(size_mb << 20)
        dev = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                             capture_output=True, text=True).stdout.strip()
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        mnt.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", dev, str(mnt)], check=True)
        yield mnt
    finally:
        if dev:
            subprocess.run(["umount", str(mnt)], capture_output=True)
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        shutil.rmtree(backing.parent, ignore_errors=True)


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> int:
    ap = bench_parser(__doc__, raw=True, results='sysbench_qps.json')
    ap.add_argument("--pairs", "--rounds", dest="pairs", type=int, default=3,
                    help="rounds, each running every workload x configuration once (default 3)")
    ap.add_argument("--workload", default="point_select,read_write",
                    help="comma-separated: " + ", ".join(WORKLOADS) + " (default both)")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help=f"attached configurations of the ladder, comma-separated (default {DEFAULT_CONFIGS}); "
                         + "; ".join(f"{k} = {' '.join(v)}" for k, v in LADDER.items())
                         + f"; {AA_CONFIG} = nothing attached (an A/A control)")
    ap.add_argument("--record-variant", action="append", default=[], metavar="NAME=ARGS",
                    help="another attached configuration: `ioattr record` with these extra arguments "
                         "(shell-quoted), e.g. nostage='--probes syscalls,targets,uring,block,pagecache'")
    ap.add_argument("--duration", type=int, default=20, help="seconds per sysbench run (default 20)")
    ap.add_argument("--quick", action="store_true", help="10 s runs, 5 s warm-up (same number of rounds)")
    ap.add_argument("--threads", type=int, default=2, help="sysbench threads (default 2)")
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--rand-type", default="uniform",
                    help="sysbench --rand-type (default uniform: every row equally likely, so the "
                         "small pool misses; sysbench's own default 'special' is mostly cache hits)")
    ap.add_argument("--bpf-variant", action="append", default=[], metavar="NAME=DIR",
                    help="another attached configuration: the default recording (DEFAULT_RECORDING's "
                         "arguments; before 2026-11-25, +stage's) with the BPF objects of DIR (IOATTR_BPF_DIR; copied at start), interleaved "
                         "with the tree's own -- to compare a BPF change in the same rounds")
    ap.add_argument("--code-variant", action="append", default=[], metavar="NAME=REV",
                    help="another attached configuration: the default recording (DEFAULT_RECORDING's "
                         "arguments; before 2026-11-25, +stage's) with the Python code of git REV (the tree's BPF objects), interleaved with the "
                         "tree's own -- to compare a change of the recorder's Python code in the same rounds. With "
                         "the NAME of a --bpf-variant: REV's Python and that variant's objects (a whole older "
                         "revision: --bpf-variant old=DIR --code-variant old=REV, DIR holding REV's bpf/ built apart)")
    ap.add_argument("--record-cwd", metavar="DIR",
                    help="start every `ioattr record` in DIR (default: the frozen copy of ioattr, a small "
                         "directory; a user's shell is often somewhere bigger, such as / or a home directory). Not "
                         "the repository: `python -m` would import the live tree from there")
    ap.add_argument("--sysbench-arg", action="append", default=[], metavar="OPT",
                    help="extra sysbench run option, repeatable (e.g. --sysbench-arg=--db-ps-mode=disable: "
                         "plain COM_QUERY statements, whose text the stage probe digests, instead of "
                         "prepared COM_STMT_EXECUTE)")
    ap.add_argument("--buffer-pool", default="32M", help="innodb_buffer_pool_size (default 32M)")
    ap.add_argument("--ram-disk", type=int, default=0, metavar="MB",
                    help="put the server on an ext4 loop device of MB megabytes backed by /dev/shm "
                         "(default 0: the VM's disk). Pool misses still go through the block layer, "
                         "at a memory's steady latency instead of the shared host's disk")
    ap.add_argument("--warmup", type=int, default=10,
                    help="seconds of each workload before the rounds (default 10)")
    ap.add_argument("--round-warmup", type=int, default=5,
                    help="seconds of each workload, detached and not measured, before each round's runs "
                         "(default 5; 0: none, as before 2026-11-28): a round's first run was its dearest")
    ap.add_argument("--target", type=float, default=0.98,
                    help="QPS ratio a configuration must reach (median of rounds; default 0.98)")
    ap.add_argument("--prog-stats", action="store_true",
                    help="after the rounds, one more run per workload and attached config with kernel BPF "
                         "run-time stats on: runs and BPF ns per query for each ioattr program")
    ap.add_argument("--prog-stats-rounds", action="store_true",
                    help="BPF run-time stats on during the rounds themselves: every attached run gets its "
                         "per-program figures, summarised as medians over rounds (steadier than one run on "
                         "a shared machine; the stats' own ~2 clock reads per program run count in the QPS)")
    ap.add_argument("--max-busy", type=float, default=0.3,
                    help="before each run, wait until other processes use fewer cores than this "
                         "(default 0.3; this is a shared machine)")
    ap.add_argument("--idle-timeout", type=float, default=600,
                    help="max seconds to wait for that (default 600), then run anyway")
    ap.add_argument("--perf", metavar="DIR",
                    help="sample every CPU with `perf record -a -g` (cpu-clock) during each run and keep "
                         "DIR/<workload>-<config>-<round>.data plus a .txt of its hottest symbols by "
                         "process: where the CPU a recording adds goes, dispatch included (the BPF "
                         "statistics count only the programs' own run time)")
    args = ap.parse_args()
    # SIGTERM unwinds like an exception, so servers, probes and temp dirs are
    # cleaned up (a background job started by a shell may have SIGINT ignored)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.quick:
        args.duration = 10
        args.warmup = min(args.warmup, 5)
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()]
    bad = [w for w in workloads if w not in WORKLOADS]
    if bad or not workloads:
        ap.error(f"--workload: unknown {bad}; known: {', '.join(WORKLOADS)}")
    configs: dict[str, list[str] | None] = {"detached": None}
    for c in (x.strip() for x in args.configs.split(",") if x.strip()):
        if c == AA_CONFIG:  # detached again: the A/A control, what "added" is when nothing is
            configs[c] = None
            continue
        if c not in LADDER:
            ap.error(f"--configs: unknown {c!r}; known: {', '.join([*LADDER, AA_CONFIG])}")
        configs[c] = LADDER[c]
    for spec in args.record_variant:
        name, _, rest = spec.partition("=")
        if not name or name in configs:
            ap.error(f"--record-variant {spec!r}: want a new NAME=ARGS")
        configs[name] = shlex.split(rest)
    bpf_variants: dict[str, Path] = {}
    for spec in args.bpf_variant:
        name, _, rest = spec.partition("=")
        if not name or name in configs or not rest or not Path(rest).is_dir():
            ap.error(f"--bpf-variant {spec!r}: want a new NAME=DIR of built BPF objects")
        configs[name] = list(LADDER[DEFAULT_RECORDING])
        bpf_variants[name] = Path(rest)
    code_variants: dict[str, str] = {}
    for spec in args.code_variant:
        name, _, rev = spec.partition("=")
        ok = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "-q", f"{rev}^{{commit}}"],
                            capture_output=True).returncode == 0 if rev else False
        # a NAME of --bpf-variant too: REV's Python with DIR's objects (REV's own, built apart),
        # for a revision whose objects the tree's Python no longer loads (the ABI moved)
        if not name or (name in configs and name not in bpf_variants) or not ok:
            ap.error(f"--code-variant {spec!r}: want a new NAME=REV of this repository (or a --bpf-variant's NAME)")
        configs[name] = list(LADDER[DEFAULT_RECORDING])
        code_variants[name] = rev
    if args.record_cwd and not Path(args.record_cwd).is_dir():
        ap.error(f"--record-cwd {args.record_cwd}: not a directory")
    if args.record_cwd and Path(args.record_cwd).resolve() == REPO.resolve():
        ap.error("--record-cwd: not the repository (the recorder would import the live tree)")
    if len(configs) < 2:
        ap.error("no attached configuration: give --configs or --record-variant")
    if os.geteuid() != 0:
        print("bench_sysbench_qps: needs root", file=sys.stderr)
        return 2
    for tool in ("sysbench", "mariadbd"):
        if not shutil.which(tool):
            print(f"bench_sysbench_qps: {tool} is not installed", file=sys.stderr)
            return 2

    names = list(configs)
    attached = names[1:]
    wants = {c: expected(configs[c], CONFIG_ENV.get(c)) for c in attached if configs[c] is not None}  # type: ignore[arg-type]
    started = datetime.datetime.now(datetime.timezone.utc)
    work = Path(tempfile.mkdtemp(prefix="ioattr-qps-", dir="/var/tmp"))
    sb = dict(tables=args.tables, table_size=args.table_size)
    runs: list[dict[str, object]] = []
    pairs: list[dict[str, object]] = []
    prog_stats: dict[str, dict[str, object]] = {}
    disks = contextlib.ExitStack()  # --ram-disk's, closed after the server stopped
    try:
        code = snapshot_ioattr(work)
        variant_dirs: dict[str, Path] = {}
        for name, src in bpf_variants.items():  # frozen too: the objects as they are now
            variant_dirs[name] = work / f"bpf-{name}"
            variant_dirs[name].mkdir()
            h = hashlib.sha256()
            for f in sorted(src.glob("*.bpf.o")):
                shutil.copy2(f, variant_dirs[name] / f.name)
                h.update(f.name.encode())
                h.update(f.read_bytes())
            code[f"bpf_variant_{name}"] = {"dir": str(src), "objects_sha256": h.hexdigest()[:12]}
        code_dirs: dict[str, Path] = {}
        for name, rev in code_variants.items():
            v = code_variant(work, name, rev)
            code_dirs[name] = v.pop("dir")  # type: ignore[assignment]
            code[f"code_variant_{name}"] = v
        if args.record_cwd:
            code["record_cwd"] = args.record_cwd
        log(f"measuring ioattr {code['git_head']}{' + local changes' if code['tree_modified'] else ''} "
            f"(frozen copy {code['snapshot_sha256']}); workloads {', '.join(workloads)}; "
            f"configurations {', '.join(names)}")
        basedir = None
        if args.ram_disk:
            basedir = disks.enter_context(ram_disk(work, args.ram_disk)) / "server"
            basedir.mkdir()
            code["ram_disk_mb"] = args.ram_disk
        with PrivateMariaDB(buffer_pool=args.buffer_pool, basedir=basedir) as db:
            log(f"mariadbd pid {db.pid}, buffer pool {args.buffer_pool}, aio {db.aio_backend}; "
                f"preparing {args.tables} x {args.table_size} rows")
            t0 = time.monotonic()
            db.sysbench("oltp_point_select", "prepare", threads=min(args.tables, 2), **sb)
            log(f"prepared in {time.monotonic() - t0:.0f}s; warming up {args.warmup}s per workload")
            if args.warmup:
                for w in workloads:
                    db.sysbench(WORKLOADS[w], "run", f"--rand-type={args.rand_type}", *args.sysbench_arg,
                                threads=args.threads, time=args.warmup, **sb)

            def one_run(w: str, cfg: str, rnd: int, prog: bool = False) -> dict[str, object]:
                extra = configs[cfg]
                rec = None
                busy_before = wait_until_idle(args.max_busy, args.idle_timeout)
                if extra is not None:
                    rec = Recorder(db.pid, work / f"rec-{w}-{cfg.lstrip('+')}-{rnd}", extra,  # type: ignore[arg-type]
                                   bpf_dir=variant_dirs.get(cfg), code_dir=code_dirs.get(cfg),
                                   cwd=args.record_cwd, env_extra=CONFIG_ENV.get(cfg))
                try:
                    # CPU over the sysbench run only: the server (BPF programs run in its
                    # context, so they count there), sysbench, and the recorder process
                    reads0 = db.status("Innodb_buffer_pool_reads")
                    server_cpu0, child_cpu0 = proc_cpu_s(db.pid), children_cpu_s()  # type: ignore[arg-type]
                    rec_cpu0 = proc_cpu_s(rec.proc.pid) if rec else 0.0
                    stats0 = ioattr_prog_stats(rec.proc.pid if rec else None) if prog else {}
                    perf = PerfSampler(Path(args.perf) / f"{w}-{cfg.lstrip('+')}-{rnd}") if args.perf else None
                    try:
                        out = db.sysbench(WORKLOADS[w], "run", f"--rand-type={args.rand_type}", *args.sysbench_arg,
                                          threads=args.threads, time=args.duration, **sb)
                    finally:
                        if perf:
                            perf.stop()
                    server_cpu = proc_cpu_s(db.pid) - server_cpu0  # type: ignore[arg-type]
                    sysbench_cpu = children_cpu_s() - child_cpu0
                    rec_cpu = proc_cpu_s(rec.proc.pid) - rec_cpu0 if rec else 0.0
                    stats1 = ioattr_prog_stats(rec.proc.pid if rec else None) if prog else {}
                finally:
                    rc = rec.stop() if rec else 0
                client_cpu = sysbench_cpu + rec_cpu
                res: dict[str, object] = {"round": rnd, "workload": w, "config": cfg, "attached": rec is not None,
                                          "host_busy_cores_before": round(busy_before, 2),
                                          **parse_sysbench(out.stdout)}
                reads = db.status("Innodb_buffer_pool_reads") - reads0
                nq = max(int(res["queries"]), 1)  # type: ignore[arg-type]
                if perf:
                    res["_perf"] = perf.samples()  # (comm, symbol) -> samples; not written to the JSON
                if prog:
                    # only the recorder's own programs (ioattr_prog_stats(pid)): other ioattr runs share the names
                    res["prog_stats"] = prog_stats_per_query(stats0, stats1, nq)
                res["pool_reads_per_query"] = reads / nq
                res["server_cpu_us_per_query"] = server_cpu * 1e6 / nq
                res["client_cpu_us_per_query"] = client_cpu * 1e6 / nq
                res["recorder_cpu_us_per_query"] = rec_cpu * 1e6 / nq
                res["cpu_us_per_query"] = (server_cpu + client_cpu) * 1e6 / nq
                if rec:
                    if rc != 0:
                        raise RuntimeError(f"ioattr record exited {rc}: {''.join(rec.lines)[-2000:]}")
                    res["record_attach_s"] = rec.attach_s
                    res.update(verify_recording(rec.outdir, wants[cfg], reads))
                    shutil.rmtree(rec.outdir, ignore_errors=True)
                where = "stats run" if prog and rnd >= args.pairs else f"round {rnd + 1}/{args.pairs}"
                log(f"  {where} {w:<12} {cfg:<13} {res['qps']:9.1f} qps, "
                    f"{res['pool_reads_per_query']:.2f} pool reads/query, "
                    f"cpu us/query: server {res['server_cpu_us_per_query']:.1f}, sysbench+recorder "
                    f"{res['client_cpu_us_per_query']:.1f} (recorder {res['recorder_cpu_us_per_query']:.1f})"
                    + (f", recorded {res['recorded_reads']} reads" if rec else ""))
                return res

            stats_fd = None
            if args.prog_stats_rounds:
                from ioattr.collectors import libbpf

                stats_fd = libbpf.enable_run_time_stats()  # on while we hold the fd
                if stats_fd is None:
                    log("  cannot enable BPF run-time stats (BPF_ENABLE_STATS); --prog-stats-rounds ignored")
            for i in range(args.pairs):
                order = names[i % len(names):] + names[: i % len(names)]
                w_order = workloads[i % len(workloads):] + workloads[: i % len(workloads)]
                for w in w_order:
                    if args.round_warmup:
                        # not measured: the first run of a round was the dearest in every round of
                        # the A/A runs of 2026-11-28, whichever configuration it was (up to +50 us
                        # of server CPU a query); this run takes that place
                        wait_until_idle(args.max_busy, args.idle_timeout)
                        db.sysbench(WORKLOADS[w], "run", f"--rand-type={args.rand_type}", *args.sysbench_arg,
                                    threads=args.threads, time=args.round_warmup, **sb)
                    got = {cfg: one_run(w, cfg, i, prog=stats_fd is not None and configs[cfg] is not None)
                           for cfg in order}
                    runs.extend(got[c] for c in order)
                    det = got["detached"]
                    row: dict[str, object] = {"round": i, "workload": w, "order": order,
                                              **{f"{c}_qps": got[c]["qps"] for c in names}}
                    for c in attached:
                        row[f"{c}_ratio"] = float(got[c]["qps"]) / float(det["qps"])  # type: ignore[arg-type]
                        row[f"{c}_cpu_ratio"] = (float(got[c]["cpu_us_per_query"])  # type: ignore[arg-type]
                                                 / float(det["cpu_us_per_query"]))  # type: ignore[arg-type]
                        row[f"{c}_server_cpu_us_added"] = (float(got[c]["server_cpu_us_per_query"])  # type: ignore[arg-type]
                                                           - float(det["server_cpu_us_per_query"]))  # type: ignore[arg-type]
                    if args.perf:
                        for c in attached:
                            row[f"{c}_perf_added_us_per_query"] = perf_added(
                                det["_perf"], int(det["queries"]), got[c]["_perf"], int(got[c]["queries"]))  # type: ignore[arg-type]
                            row[f"{c}_perf_rest_symbols"] = perf_rest_symbols(
                                det["_perf"], int(det["queries"]), got[c]["_perf"], int(got[c]["queries"]))  # type: ignore[arg-type]
                            log(f"  round {i + 1} {w} {c}: CPU us/query added (perf samples): " + "; ".join(
                                f"{comm} " + ", ".join(f"{g} {v:+.2f}" for g, v in groups.items())
                                for comm, groups in row[f"{c}_perf_added_us_per_query"].items()))  # type: ignore[union-attr]
                        for c in names:
                            got[c].pop("_perf", None)
                    pairs.append(row)
                    log(f"  round {i + 1} {w}: " + ", ".join(f"{c} {row[c + '_ratio']:.3f}" for c in attached))
            if stats_fd is not None:
                os.close(stats_fd)
            if args.prog_stats:
                from ioattr.collectors import libbpf

                fd = libbpf.enable_run_time_stats()  # on while we hold the fd
                if fd is None:
                    log("  cannot enable BPF run-time stats (BPF_ENABLE_STATS); skipping --prog-stats")
                else:
                    try:
                        for w in workloads:
                            for c in attached:
                                r = one_run(w, c, args.pairs, prog=True)
                                prog_stats.setdefault(w, {})[c] = {"qps_with_stats": r["qps"],
                                                                   "programs": r["prog_stats"]}
                                for n, v in r["prog_stats"].items():  # type: ignore[union-attr]
                                    log(f"    {w} {c} {n:<28} {v['runs_per_query']:6.2f} runs/query "
                                        f"{v['ns_per_run']:8.0f} ns/run {v['bpf_ns_per_query']:8.0f} ns/query")
                    finally:
                        os.close(fd)
            aio = db.aio_backend
            version = db.query("SELECT VERSION()")[0][0]
    finally:
        disks.close()
        shutil.rmtree(work, ignore_errors=True)

    summary: dict[str, object] = {"target": f"attached/detached >= {args.target} (median of rounds)"}
    for w in workloads:
        wsum: dict[str, object] = {}
        wpairs = [p for p in pairs if p["workload"] == w]
        for c in names:
            mine = [r for r in runs if r["config"] == c and r["workload"] == w]
            entry: dict[str, object] = {
                "qps_median": _med([float(r["qps"]) for r in mine]),  # type: ignore[arg-type]
                "record_args": configs[c],
                "server_cpu_us_per_query_median": _med([float(r["server_cpu_us_per_query"]) for r in mine]),  # type: ignore[arg-type]
                "client_cpu_us_per_query_median": _med([float(r["client_cpu_us_per_query"]) for r in mine]),  # type: ignore[arg-type]
                "recorder_cpu_us_per_query_median": _med([float(r["recorder_cpu_us_per_query"]) for r in mine]),  # type: ignore[arg-type]
            }
            if c != "detached":
                ratios = [float(p[f"{c}_ratio"]) for p in wpairs]  # type: ignore[arg-type]
                cpu = [float(p[f"{c}_cpu_ratio"]) for p in wpairs]  # type: ignore[arg-type]
                added = [float(p[f"{c}_server_cpu_us_added"]) for p in wpairs]  # type: ignore[arg-type]
                entry.update({"ratio_median": _med(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                              "met": _med(ratios) >= args.target,
                              "cpu_per_query_ratio_median": _med(cpu),
                              "cpu_per_query_ratio_min": min(cpu), "cpu_per_query_ratio_max": max(cpu),
                              "server_cpu_us_per_query_added_median": _med(added)})
                perf_rows = [p[f"{c}_perf_added_us_per_query"] for p in wpairs if f"{c}_perf_added_us_per_query" in p]
                if perf_rows:  # medians over rounds, per process and group
                    entry["perf_added_us_per_query_median"] = {
                        comm: {g: round(_med([float(r[comm][g]) for r in perf_rows]), 3)  # type: ignore[index]
                               for g in perf_rows[0][comm]}  # type: ignore[index]
                        for comm in perf_rows[0]}  # type: ignore[union-attr]
                rest_rows = [p.pop(f"{c}_perf_rest_symbols") for p in wpairs if f"{c}_perf_rest_symbols" in p]
                if rest_rows:  # the symbols of "rest" that add most, median over rounds (min, max)
                    entry["perf_rest_top_us_per_query"] = {
                        comm: top_symbols([r[comm] for r in rest_rows]) for comm in rest_rows[0]}  # type: ignore[index]
            wsum[c] = entry
        round_stats: dict[str, object] = {}
        for c in names[1:]:
            per_prog: dict[str, list[dict[str, float]]] = {}
            for r in runs:
                if r["config"] == c and r["workload"] == w and r.get("prog_stats"):
                    for n, v in r["prog_stats"].items():  # type: ignore[union-attr]
                        per_prog.setdefault(n, []).append(v)
            if per_prog:
                round_stats[c] = {n: {k: _med([x[k] for x in vs]) for k in ("runs_per_query", "ns_per_run",
                                                                           "bpf_ns_per_query")}
                                  | {"bpf_ns_per_query_min": min(x["bpf_ns_per_query"] for x in vs),
                                     "bpf_ns_per_query_max": max(x["bpf_ns_per_query"] for x in vs),
                                     "rounds": len(vs)}
                                  for n, vs in sorted(per_prog.items())}
        if round_stats:
            wsum["prog_stats_rounds_median"] = round_stats
        wsum["pool_reads_per_query_median"] = _med(
            [float(r["pool_reads_per_query"]) for r in runs if r["workload"] == w])  # type: ignore[arg-type]
        summary[w] = wsum

    print()
    for w in workloads:
        ws = summary[w]
        det = ws["detached"]  # type: ignore[index]
        print(f"{w} ({WORKLOADS[w]}): detached {det['qps_median']:.1f} qps median, "
              f"{ws['pool_reads_per_query_median']:.2f} buffer-pool reads/query, "  # type: ignore[index]
              f"server CPU {det['server_cpu_us_per_query_median']:.1f} us/query")
        print(f"  {'round':>5} " + " ".join(f"{c:>13}" for c in attached) + "   (QPS / detached)")
        for p in (p for p in pairs if p["workload"] == w):
            print(f"  {int(p['round']) + 1:>5} " + " ".join(f"{p[c + '_ratio']:13.4f}" for c in attached))  # type: ignore[call-overload]
        print(f"  {'config':<13} {'qps':>9} {'ratio median (min-max)':>26} {'CPU/query x median (min-max)':>30} "
              f"{'server us/q added':>18} {'target':>7}")
        for c in attached:
            e = ws[c]  # type: ignore[index]
            print(f"  {c:<13} {e['qps_median']:9.1f} "
                  f"{e['ratio_median']:>10.4f} ({e['ratio_min']:.3f}-{e['ratio_max']:.3f}) "
                  f"{e['cpu_per_query_ratio_median']:>14.3f} ({e['cpu_per_query_ratio_min']:.3f}-"
                  f"{e['cpu_per_query_ratio_max']:.3f}) {e['server_cpu_us_per_query_added_median']:>18.2f} "
                  f"{'MET' if e['met'] else 'no':>7}")
        for c, progs in (ws.get("prog_stats_rounds_median") or {}).items():  # type: ignore[union-attr]
            print(f"  BPF ns/query, median over rounds (min-max), {c}: " + ", ".join(
                f"{n.removeprefix('ioattr_')} {v['bpf_ns_per_query']:.0f} ({v['bpf_ns_per_query_min']:.0f}-"
                f"{v['bpf_ns_per_query_max']:.0f})" for n, v in progs.items() if v["bpf_ns_per_query"] >= 5))
        for c in attached:
            for comm, top in (ws[c].get("perf_rest_top_us_per_query") or {}).items():  # type: ignore[union-attr]
                print(f"  perf 'rest' of {comm}, {c}, us/query added, median (min-max): " + ", ".join(
                    f"{s} {m:+.2f} ({lo:+.2f}..{hi:+.2f})" for s, m, lo, hi in top[:12]))
        print()
    result = {
        "benchmark": "sysbench_qps",
        "date": started.isoformat(timespec="seconds"),
        "command": "sudo " + " ".join([".venv/bin/python"] + [os.path.relpath(sys.argv[0], REPO)]
                                      + [shlex.quote(a) for a in sys.argv[1:]]),
        "host": {"kernel": platform.release(), "cpus": os.cpu_count(), "loadavg_end": os.getloadavg()},
        "ioattr": code,
        "server": {"version": version, "aio": aio, "buffer_pool": args.buffer_pool, "flush_method": "O_DIRECT"},
        "params": {"rounds": args.pairs, "duration_s": args.duration, "threads": args.threads,
                   "tables": args.tables, "table_size": args.table_size, "warmup_s": args.warmup,
                   "round_warmup_s": args.round_warmup,
                   "rand_type": args.rand_type, "sysbench_args": args.sysbench_arg, "workloads": {w: WORKLOADS[w] for w in workloads},
                   "configs": configs,
                   "attached": "ioattr record --pid <mariadbd> -o <dir> [ARGS], SIGINT after"},
        "runs": runs,
        "rounds": pairs,
        "summary": summary,
        "prog_stats": prog_stats or None,
    }
    log(f"wrote {write_json(args.json, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

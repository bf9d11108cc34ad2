#!/usr/bin/env python3
"""Where ioattr's BPF programs spend their time, call site by call site, from a perf recording.

BPF run-time statistics (`--prog-stats-rounds`) say how long each program ran, not on what:
a program's own instructions, a hash map's bucket walk, a user-memory read of a cold line.
This reads the `perf record -a -g` files `bench_sysbench_qps.py --perf DIR` keeps and charges
every sample taken inside an ioattr program to

    (process, program, the kernel function the program was in, the call site in the program)

in CPU µs per query. The call site is the return address in the JITed program, as an offset
(`+0x54a`): two lookups of one map, or the page-header read and the THD read, are told apart
by it. Which source line a site is: `bpftool prog dump jited name PROG linum` while the
programs are loaded (the offsets are the JIT's, stable for one object on one kernel).

    sudo .venv/bin/python benchmarks/bench_sysbench_qps.py --pairs 1 --workload point_select \\
        --configs +stages_auto --duration 10 --prog-stats-rounds --perf /tmp/perf --json /tmp/perf/r.json
    sudo .venv/bin/python benchmarks/perf_bpf_sites.py /tmp/perf/point_select-stages_auto-0.data \\
        --results /tmp/perf/r.json

Caveats, on a VM without hardware counters (cpu-clock): a sample taken while interrupts are
off lands where they come back on, so a hardirq program (`rq_complete`) shows as almost
nothing here; the statistics have its time. Sampling error: a site with n samples is known
to about ±1/√n.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

PROG_RE = re.compile(r"^bpf_prog_[0-9a-f]+_(?P<name>\w+?)(?:\+(?P<off>0x[0-9a-f]+))?$")
HEAD_RE = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<period>\d+)\s*$")


@dataclass(frozen=True)
class Site:
    comm: str
    program: str
    callee: str   # the kernel function the sample was in, "(own code)" for the program's instructions
    offset: str   # the call site in the program ("+0x54a"), "" for own code


def samples(lines: Iterable[str]) -> Iterator[tuple[str, int, list[str]]]:
    """(comm, period, frames as sym+off, leaf first) from `perf script -F comm,period,ip,sym,symoff`."""
    comm, period, frames = None, 0, []  # type: tuple[str | None, int, list[str]]
    for line in lines:
        if not line.strip():
            if comm is not None:
                yield comm, period, frames
            comm, frames = None, []
            continue
        if line[0] not in " \t":
            if comm is not None:
                yield comm, period, frames
            m = HEAD_RE.match(line)
            comm, period, frames = (m.group("comm"), int(m.group("period")), []) if m else (None, 0, [])
            continue
        if comm is not None:
            parts = line.split(None, 1)
            frames.append(parts[1].split(" (")[0].strip() if len(parts) > 1 else "?")
    if comm is not None:
        yield comm, period, frames


def site_of(comm: str, frames: list[str], prefix: str = "ioattr_") -> Site | None:
    """The first (innermost) ioattr program on the stack and what it was calling, or None."""
    for i, fr in enumerate(frames):
        m = PROG_RE.match(fr)
        if m and m.group("name").startswith(prefix):
            if i == 0:
                return Site(comm, m.group("name"), "(own code)", "")
            callee = frames[i - 1].split("+")[0]
            return Site(comm, m.group("name"), callee, "+" + (m.group("off") or "?").removeprefix("0x"))
    return None


def charge(lines: Iterable[str]) -> Counter[Site]:
    """ns of CPU per site (a sample's period is the ns it stands for)."""
    out: Counter[Site] = Counter()
    for comm, period, frames in samples(lines):
        s = site_of(comm, frames)
        if s:
            out[s] += period
    return out


def table(sites: Counter[Site], queries: int, top: int = 30) -> str:
    per_prog: Counter[tuple[str, str]] = Counter()
    for s, ns in sites.items():
        per_prog[(s.comm, s.program)] += ns
    rows = ["process    program              CPU µs/query",
            *(f"{c:10} {p:20} {ns / queries / 1000:12.3f}" for (c, p), ns in per_prog.most_common()),
            "",
            "process    program              in                           site       CPU µs/query",
            *(f"{s.comm:10} {s.program:20} {s.callee:28} {s.offset:10} {ns / queries / 1000:12.3f}"
              for s, ns in sites.most_common(top))]
    return "\n".join(rows)


def queries_of(results: Path, data: Path) -> int:
    """The run's query count from bench_sysbench_qps's JSON, by the data file's name
    (<workload>-<config>-<round>.data)."""
    workload, config, rnd = data.stem.rsplit("-", 2)
    doc = json.loads(results.read_text())
    for run in doc.get("runs", []):
        if (run.get("workload") == workload and str(run.get("config", "")).lstrip("+") == config
                and int(run.get("round", -1)) == int(rnd)):
            return int(run["queries"])
    raise SystemExit(f"perf_bpf_sites: no run {workload}/{config}/round {rnd} in {results}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="a perf.data file from bench_sysbench_qps.py --perf")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--queries", type=int, help="queries the run served")
    src.add_argument("--results", type=Path, help="the bench's --json file: the run's query count is read from it")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args(argv)
    if not a.data.is_file():
        print(f"perf_bpf_sites: {a.data}: no such file", file=sys.stderr)
        return 2
    queries = a.queries if a.queries else queries_of(a.results, a.data)
    p = subprocess.run(["perf", "script", "-i", str(a.data), "-F", "comm,period,ip,sym,symoff"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
    if p.returncode:
        print(f"perf_bpf_sites: perf script failed on {a.data} (exit {p.returncode})", file=sys.stderr)
        return 2
    print(table(charge(p.stdout.splitlines()), max(queries, 1), a.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())

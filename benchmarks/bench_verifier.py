#!/usr/bin/env python3
"""Where attaching's time goes: the kernel's CPU verifying each probe set, and each program of
the statement reader's object (stage.bpf.o), loaded alone.

Each object is loaded as `ioattr record` loads it by default (its configuration written: pages
classified, fine stages, the wire reader's PostgreSQL branch, as for a PostgreSQL target, the
dearer case; the programs the default picks): the recorder's system CPU over the load is the
verifier's, the largest part of the time from `ioattr record` starting to its "recording" line
on an idle host. Then each program of
stage.bpf.o is loaded on its own, so the set's total can be told apart. A program the kernel
refuses is listed with the error (the fallback hooks of other kernels may be refused here). The
minimum of `--rounds` loads is kept (the verifier's work is deterministic; the rest is noise).

    sudo .venv/bin/python benchmarks/bench_verifier.py [--rounds 2] [--json PATH]

docs/cost.md ("Attaching") has the figures.
"""
from __future__ import annotations

import resource
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ioattr.collectors import libbpf, probes  # noqa: E402
from verdict import bench_parser, write_json  # noqa: E402


def system_seconds(load: Callable[[], object]) -> tuple[float, str | None]:
    """This process's system CPU over load() (the kernel verifying), and the error it raised."""
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    error = None
    try:
        load()
    except Exception as e:  # noqa: BLE001 - a refused program is a result, not a failure
        error = str(e).splitlines()[0][:120]
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return r1.ru_stime - r0.ru_stime, error


def by_set(session: probes.ProbeSession, rounds: int) -> dict[str, float]:
    """Seconds of verification per probe set, loaded and attached as the recorder does."""
    out: dict[str, float] = {}
    for spec in probes.PROBE_SETS:
        if spec.name not in session.wanted:
            continue
        hook = probes.choose_syscall_hook()[0] if spec.name == "syscalls" else None
        best = None
        for _ in range(rounds):
            loaded: list = []
            took, error = system_seconds(lambda: loaded.append(session._load_one(spec, hook)))
            for ls in loaded:
                ls.release()
            if error:
                raise SystemExit(f"bench_verifier: the {spec.name} set did not load: {error}")
            best = took if best is None else min(best, took)
        out[spec.name] = round(best or 0.0, 3)
    session.shared_fds.clear()
    return out


def by_program(session: probes.ProbeSession, name: str, rounds: int) -> list[dict]:
    """Each program of NAME.bpf.o loaded alone: [{program, seconds, error}], dearest first."""
    path = str(probes.bpf_object_dir() / f"{name}.bpf.o")
    probe = libbpf.Object(path)
    programs = [p.name for p in probe.programs()]
    probe.close()
    rows = []
    for prog in programs:
        best, error = None, None
        for _ in range(rounds):
            obj = libbpf.Object(path)
            try:
                for p in obj.programs():
                    p.set_autoload(p.name == prog)
                session._write_config(obj)
                took, error = system_seconds(obj.load)
            finally:
                obj.close()
            best = took if best is None else min(best, took)
        rows.append({"program": prog, "seconds": round(best or 0.0, 3), "error": error})
    return sorted(rows, key=lambda r: -r["seconds"])


def main() -> int:
    ap = bench_parser(__doc__.splitlines()[0], rounds=2)
    args = ap.parse_args()
    # record's defaults (ioattr/live/session.py): --stages auto is not 'statement'
    session = probes.ProbeSession(pages=True, fine_stages=True, pg_wire=True)
    sets = by_set(session, args.rounds)
    stage = by_program(session, "stage", args.rounds)
    print("probe set    verifier CPU s")
    for name, s in sets.items():
        print(f"{name:12s} {s:8.2f}")
    print(f"{'total':12s} {sum(sets.values()):8.2f}\n")
    print("stage.bpf.o, one program at a time")
    for r in stage:
        print(f"{r['program']:28s} {r['seconds']:6.2f}" + (f"  refused: {r['error']}" if r["error"] else ""))
    if args.json:
        write_json(args.json, {"sets": sets, "stage_programs": stage, "rounds": args.rounds})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`ioattr record`: attach to targets and write a recording (see ioattr.live.recorder)."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from ioattr.cli import argtypes
from ioattr.format import duck
from ioattr.cli.definition import (add_duration_argument, add_interval_argument, add_live_arguments, command_parser,
                                      live_options)
from ioattr.collectors.probes import PROBE_SETS
from ioattr.collectors.targets import DEFAULT_COMMS, TargetSpec
from ioattr.errors import UsageError
from ioattr.live.recorder import RecordOptions, Recorder


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "record")
    p.add_argument("-o", "--output", metavar="DIR", help="recording directory (default: ./ioattr-YYYYmmdd-HHMMSS)")
    p.add_argument("--only-command", action="store_true",
                   help="with -- CMD: trace only the command's process tree, not the host's mysqld/mariadbd")
    add_interval_argument(p, "seconds per aggregate row")
    add_duration_argument(p)
    p.add_argument("--phase", default="main", type=argtypes.phase_name, help="name of the first phase")
    p.add_argument("--auto-phases", action="store_true",
                   help="start a new phase when the statement mix changes (load, ddl, mixed, read, write)")
    p.add_argument("--phase-pattern", metavar="REGEX",
                   help="start a phase when a line of the wrapped command's output matches "
                        "(the phase is group 'phase', else group 1, else the match)")
    p.add_argument("--ops-pattern", metavar="REGEX",
                   help="count the benchmark's own operations from the wrapped command's output: each "
                        "matching line adds the number in group 'ops' (else group 1, else 1) to the phase "
                        "in force; report --by phase and compare then show IO per op (docs/queries.md)")
    p.add_argument("--no-marker-wait", dest="marker_wait", action="store_false",
                   help="SQL phase markers don't wait for the boundary's engine-counter snapshot "
                        "(by default a marker statement is held, at most 2 s, until it is taken, "
                        "so the engine's per-phase counters are cut where ioattr's are)")
    p.add_argument("--chunk-seconds", type=argtypes.seconds(0.0), default=10.0, metavar="SEC",
                   help="seconds per Parquet chunk: a crash loses at most one (default 10)")
    p.add_argument("--probes", help="comma-separated probe sets (default all): "
                   + ", ".join(s.name for s in PROBE_SETS))
    # --no-innodb-pages: the name it had when only InnoDB's pages were classified (an alias)
    p.add_argument("--no-pages", "--no-innodb-pages", dest="no_pages", action="store_true",
                   help="don't classify the pages of the engines' page files (InnoDB pages, PostgreSQL "
                        "relation pages, MyRocks SST blocks: index, level, page type)")
    p.add_argument("--keep-literals", action="store_true",
                   help="store statement samples with their literal values (default: stripped)")
    add_live_arguments(p)
    p.set_defaults(takes_command=True)  # `-- CMD ARGS...` (cli/main.py splits it off)


def check_output(out: Path) -> None:
    """Refuse an unusable -o before any probe is loaded (the recorder checks again)."""
    from ioattr.format.recording import check_output_dir  # lazy: start-up time

    try:
        check_output_dir(out)
    except PermissionError:
        raise UsageError(f"cannot write the recording at {out}: permission denied") from None


def run(args: argparse.Namespace) -> int:
    # the compactor (a DuckDB connection) runs late in a recording: a bad IOATTR_DUCKDB_*
    # is refused now, before anything is attached, not after an hour of benchmark
    duck.limits()
    if args.phase_pattern and not args.wrapped_command:
        raise UsageError("--phase-pattern reads the wrapped command's output: give -- CMD")
    if args.ops_pattern and not args.wrapped_command:
        raise UsageError("--ops-pattern reads the wrapped command's output: give -- CMD")
    if args.chunk_seconds < args.interval:
        raise UsageError("--chunk-seconds must be at least --interval")
    sets = None
    if args.probes:
        sets = tuple(s.strip() for s in args.probes.split(",") if s.strip())
        known = {s.name for s in PROBE_SETS}
        bad = [s for s in sets if s not in known]
        if bad:
            raise UsageError(f"unknown probe set {bad[0]!r}; known: {', '.join(sorted(known))}")
        if "syscalls" not in sets:
            sets = ("syscalls",) + sets
    spec = TargetSpec(pids=list(args.pid), comms=list(args.comm), command=list(args.wrapped_command))
    if args.only_command and not spec.command:
        raise UsageError("--only-command needs a command: ioattr record --only-command -- CMD ARGS")
    if not spec.pids and not spec.comms and not args.only_command:
        if spec.command:
            # the command's tree plus the mysqld/mariadbd it talks to, not every server on the host
            spec.talked_to_servers = True
        else:
            spec.comms = list(DEFAULT_COMMS)
    output = Path(args.output or time.strftime("ioattr-%Y%m%d-%H%M%S"))
    check_output(output)
    opts = RecordOptions(output=output, targets=spec, interval=args.interval, duration=args.duration,
                         phase=args.phase, chunk_seconds=args.chunk_seconds, probe_sets=sets,
                         pages=not args.no_pages, keep_literals=args.keep_literals,
                         phase_pattern=args.phase_pattern, ops_pattern=args.ops_pattern,
                         auto_phases=args.auto_phases,
                         marker_wait=args.marker_wait, **live_options(args))
    return Recorder(opts).run()

"""`ioattr record`: attach to targets and write a recording (see ioattr.recorder)."""
from __future__ import annotations

import argparse
import os
import stat
import time
from pathlib import Path

from ioattr.collectors.engine import EngineOptions
from ioattr.control import check_phase_name
from ioattr.collectors.probes import PROBE_SETS
from ioattr.collectors.stage_probes import DEFAULT_STAGE_MODE, STAGE_MODES
from ioattr.collectors.targets import DEFAULT_COMMS, TargetSpec
from ioattr.errors import UsageError
from ioattr.recorder import RecordOptions, Recorder


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("record", help="attach to mysqld (or a command) and write a recording",
                       description="Record IO attribution. Targets: --pid, --comm (default: every "
                                   "mysqld/mariadbd), or '-- CMD ARGS' to run and follow a command.")
    p.add_argument("-o", "--output", help="recording directory (default: ./ioattr-YYYYmmdd-HHMMSS)")
    p.add_argument("--pid", type=int, action="append", default=[], help="trace this process (repeatable)")
    p.add_argument("--comm", action="append", default=[], help="trace processes with this name (repeatable)")
    p.add_argument("--only-command", action="store_true",
                   help="with -- CMD: trace only the command's process tree, not the host's mysqld/mariadbd")
    p.add_argument("--interval", type=float, default=1.0, help="seconds per aggregate row (default 1)")
    p.add_argument("--duration", type=float, help="stop after this many seconds")
    p.add_argument("--phase", default="main", help="name of the first phase (default main)")
    p.add_argument("--auto-phases", action="store_true",
                   help="start a new phase when the statement mix changes (load, ddl, mixed, read, write)")
    p.add_argument("--phase-pattern", metavar="REGEX",
                   help="start a phase when a line of the wrapped command's output matches "
                        "(the phase is group 'phase', else group 1, else the match)")
    p.add_argument("--no-marker-wait", dest="marker_wait", action="store_false",
                   help="SQL phase markers don't wait for the boundary's engine-counter snapshot "
                        "(by default a marker statement is held, at most 2 s, until it is taken, "
                        "so the engine's per-phase counters are cut where ioattr's are)")
    p.add_argument("--chunk-seconds", type=float, default=10.0,
                   help="seconds per Parquet chunk: a crash loses at most one (default 10)")
    p.add_argument("--probes", help="comma-separated probe sets (default all): "
                   + ", ".join(s.name for s in PROBE_SETS))
    p.add_argument("--no-innodb-pages", action="store_true",
                   help="don't classify InnoDB pages (index, level, page type)")
    p.add_argument("--keep-literals", action="store_true",
                   help="store statement samples with their literal values (default: stripped)")
    add_stages_argument(p)
    add_capacity_argument(p)
    add_engine_arguments(p)


def add_stages_argument(p: argparse.ArgumentParser) -> None:
    """--stages: how much of query processing the mysqld uprobes follow (each hit is a trap)."""
    p.add_argument("--stages", choices=STAGE_MODES, default=DEFAULT_STAGE_MODE,
                   help="statement (default): statement digests and roles from 3 uprobes, one hit per "
                        "statement; IO inside a statement has its query but a null stage. full: also "
                        "parse/optimize/execute/commit (4 more uprobes, ~4 more hits per point select: "
                        "costs QPS on short queries)")


MAX_ENTRIES_DEFAULT = 65536
MAX_ENTRIES_RANGE = (16, 1 << 24)


def add_capacity_argument(p: argparse.ArgumentParser) -> None:
    """--max-entries: the io_stats map's capacity (IO of keys that find it full is counted as drops)."""
    p.add_argument("--max-entries", type=int, default=MAX_ENTRIES_DEFAULT, metavar="N",
                   help=f"capacity of the in-kernel aggregation map io_stats (default {MAX_ENTRIES_DEFAULT}); "
                        "IO of a new file/thread/query key that finds it full is not counted but shown as "
                        "dropped")


def max_entries(args: argparse.Namespace) -> int:
    lo, hi = MAX_ENTRIES_RANGE
    if not lo <= args.max_entries <= hi:
        raise UsageError(f"--max-entries must be between {lo} and {hi}")
    return int(args.max_entries)


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """How to reach the server for names, roles and counters (never a password in argv)."""
    g = p.add_argument_group("server connection (password: option file or MYSQL_PWD)")
    g.add_argument("--mysql-defaults-file", help="client option file ([client] section)")
    g.add_argument("--mysql-socket", help="unix socket (default: found from the server process)")
    g.add_argument("--mysql-host", help="host (default: the socket)")
    g.add_argument("--mysql-port", type=int, help="TCP port")
    g.add_argument("--mysql-user", help="user (default root)")


def engine_options(args: argparse.Namespace) -> EngineOptions:
    # what the user named explicitly must exist: refuse at once (exit 2) rather than run
    # without the server connection that was asked for; a server that merely refuses the
    # login is a runtime condition (file-level attribution continues, with one message)
    if args.mysql_defaults_file and (not os.path.isfile(args.mysql_defaults_file)
                                     or not os.access(args.mysql_defaults_file, os.R_OK)):
        raise UsageError(f"cannot read option file {args.mysql_defaults_file}")
    if args.mysql_socket:
        try:
            is_socket = stat.S_ISSOCK(os.stat(args.mysql_socket).st_mode)
        except OSError as e:
            raise UsageError(f"--mysql-socket {args.mysql_socket}: {e.strerror}") from None
        if not is_socket:
            raise UsageError(f"--mysql-socket {args.mysql_socket}: not a unix socket")
    if args.mysql_port is not None and not 0 < args.mysql_port < 65536:
        raise UsageError("--mysql-port must be between 1 and 65535")
    return EngineOptions(defaults_file=args.mysql_defaults_file, socket=args.mysql_socket,
                         host=args.mysql_host, port=args.mysql_port, user=args.mysql_user)


def check_output(out: Path) -> None:
    """Refuse an unusable -o before any probe is loaded (the recorder checks again)."""
    try:
        if out.exists():
            if not out.is_dir():
                raise UsageError(f"output {out} exists and is not a directory")
            if (out / "meta.json").exists():
                raise UsageError(f"output {out} already holds a recording; choose another -o")
            if any(out.iterdir()):
                raise UsageError(f"output directory {out} is not empty")
    except PermissionError:
        raise UsageError(f"cannot write the recording at {out}: permission denied") from None


def run(args: argparse.Namespace) -> int:
    if args.interval <= 0 or args.interval > 3600:
        raise UsageError("--interval must be between 0 and 3600 seconds")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration must be positive")
    check_phase_name(args.phase)
    if args.phase_pattern and not args.wrapped_command:
        raise UsageError("--phase-pattern reads the wrapped command's output: give -- CMD")
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
                         innodb_pages=not args.no_innodb_pages, keep_literals=args.keep_literals,
                         stages=args.stages, max_stats=max_entries(args),
                         phase_pattern=args.phase_pattern, auto_phases=args.auto_phases,
                         marker_wait=args.marker_wait, engine=engine_options(args))
    return Recorder(opts).run()

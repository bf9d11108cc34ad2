"""`ioattr exporter`: serve the live attribution as Prometheus metrics."""
from __future__ import annotations

import argparse

from ioattr.cli.record import add_capacity_argument, add_engine_arguments, add_stages_argument, engine_options, \
    max_entries
from ioattr.collectors.targets import DEFAULT_COMMS
from ioattr.errors import UsageError
from ioattr.exporter import DEFAULT_LISTEN, Exporter, ExporterOptions, WaitingTargets, parse_listen


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "exporter", help="serve live IO attribution as Prometheus metrics",
        description="Attach to the targets and serve counters by file, index, role, device and layer on "
                    "/metrics for Prometheus. Listens on loopback unless told otherwise: the metrics "
                    "name files, indexes and tables of this host.")
    p.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"address to serve /metrics on (default {DEFAULT_LISTEN}; ':PORT' = all interfaces)")
    p.add_argument("--pid", type=int, action="append", default=[], help="trace this process (repeatable)")
    p.add_argument("--comm", action="append", default=[],
                   help="trace processes with this name (repeatable; default: mysqld, mariadbd; "
                        "waits for one to start)")
    p.add_argument("--interval", type=float, default=1.0,
                   help="seconds between drains of the BPF maps (default 1)")
    p.add_argument("--top-n", type=int, default=50, metavar="N",
                   help="files and indexes with series of their own (the rest: file/index=\"other\"; "
                        "default 50)")
    p.add_argument("--retention", type=float, default=600.0, metavar="SEC",
                   help="keep the series of a file or index that left the top N this long (default 600)")
    p.add_argument("--no-probe-stats", action="store_true",
                   help="don't turn on kernel BPF run-time statistics (ioattr_probe_run_seconds_total)")
    p.add_argument("--duration", type=float, help="stop after this many seconds")
    add_stages_argument(p)
    add_capacity_argument(p)
    add_engine_arguments(p)


def run(args: argparse.Namespace) -> int:
    if args.interval <= 0 or args.interval > 3600:
        raise UsageError("--interval must be between 0 and 3600 seconds")
    if args.top_n < 1:
        raise UsageError("--top-n must be at least 1")
    if args.retention < 0:
        raise UsageError("--retention must not be negative")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration must be positive")
    parse_listen(args.listen)
    spec = WaitingTargets(pids=list(args.pid), comms=list(args.comm))
    if not spec.pids and not spec.comms:
        spec.comms = list(DEFAULT_COMMS)
    opts = ExporterOptions(targets=spec, engine=engine_options(args), listen=args.listen,
                           interval=args.interval, top_n=args.top_n, retention=args.retention,
                           probe_stats=not args.no_probe_stats, duration=args.duration, stages=args.stages,
                           max_stats=max_entries(args))
    return Exporter(opts).run()

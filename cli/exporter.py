"""`ioattr exporter`: serve the live attribution as Prometheus metrics."""
from __future__ import annotations

import argparse

from ioattr.cli import argtypes
from ioattr.cli.definition import (add_duration_argument, add_interval_argument, add_live_arguments, command_parser,
                                      live_options)
from ioattr.collectors.targets import DEFAULT_COMMS
from ioattr.prometheus.exporter import DEFAULT_LISTEN, Exporter, ExporterOptions, WaitingTargets, parse_listen


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "exporter")
    p.add_argument("--listen", "--web.listen-address", dest="listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"address to serve /metrics on (default {DEFAULT_LISTEN}; ':PORT' = all interfaces)")
    add_interval_argument(p, "seconds between drains of the BPF maps")
    p.add_argument("--top-n", type=argtypes.int_range(1), default=50, metavar="N",
                   help="files and indexes with series of their own (the rest: file/index=\"other\"; "
                        "default 50)")
    p.add_argument("--retention", type=argtypes.seconds(0.0, low_inclusive=True), default=600.0, metavar="SEC",
                   help="keep the series of a file or index that left the top N this long (default 600)")
    p.add_argument("--no-probe-stats", action="store_true",
                   help="don't turn on kernel BPF run-time statistics (ioattr_probe_run_seconds_total)")
    add_duration_argument(p)
    add_live_arguments(p, "mysqld, mariadbd; waits for one to start")


def run(args: argparse.Namespace) -> int:
    parse_listen(args.listen)
    spec = WaitingTargets(pids=list(args.pid), comms=list(args.comm))
    if not spec.pids and not spec.comms:
        spec.comms = list(DEFAULT_COMMS)
    opts = ExporterOptions(targets=spec, listen=args.listen, interval=args.interval, top_n=args.top_n,
                           retention=args.retention, probe_stats=not args.no_probe_stats,
                           duration=args.duration, **live_options(args))
    return Exporter(opts).run()

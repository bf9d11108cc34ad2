"""`ioattr top`: a live, top-style view of which file, index, thread, query, device or cgroup does IO."""
from __future__ import annotations

import argparse

from ioattr.cli import argtypes
from ioattr.cli.definition import (add_format_argument, add_interval_argument, add_live_arguments, command_parser,
                                      live_options)
from ioattr.collectors.targets import DEFAULT_COMMS, TargetSpec
from ioattr.model.labels import LAYERS
from ioattr.topview.top import BY_CHOICES
from ioattr.topview.top_live import TopApp, TopOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "top")
    p.add_argument("delay", nargs="?", type=argtypes.seconds(0.0, 3600.0), metavar="INTERVAL",
                   help="seconds between refreshes (same as -d)")
    p.add_argument("count", nargs="?", type=argtypes.int_range(1), metavar="COUNT",
                   help="stop after this many refreshes (same as -n)")
    p.add_argument("--by", default="file", metavar="VIEW",
                   help="the first view: " + ", ".join(BY_CHOICES) + " (default file); with --batch, "
                        "several comma-separated (file,index) print one table each per snapshot")
    add_interval_argument(p, "seconds between refreshes", "-d", "--interval")
    p.add_argument("-s", "--sort", metavar="COLUMN",
                   help="sort column, by header or key: IO/s, R/s, W/s, RMB/s, WMB/s, P50, P99, PG/s, "
                        "LEAF%%, name... (default IO/s; PG/s for indexes)")
    p.add_argument("--reverse", action="store_true", help="reverse the sort order")
    p.add_argument("--layer", default="syscall", choices=LAYERS,
                   help="layer of the file/thread/query/device/cgroup views (default syscall)")
    p.add_argument("-b", "--batch", action="store_true",
                   help="print plain-text snapshots instead of a screen, like top -b")
    p.add_argument("-n", "--iterations", type=argtypes.int_range(1), metavar="N",
                   help="stop after this many refreshes")
    p.add_argument("--rows", type=argtypes.int_range(0), metavar="N", help="batch: rows per snapshot (default all)")
    p.add_argument("--width", type=argtypes.int_range(60), metavar="COLS",
                   help="batch: line width (default the terminal's, else 160)")
    add_format_argument(p, ("text", "json"),
                        "batch: text (default) or json, one object per snapshot and line: its views' rows "
                        "with every column's value and, for queries, the executions behind EXEC/s")
    add_live_arguments(p, "mysqld, mariadbd")


def run(args: argparse.Namespace) -> int:
    interval = args.delay if args.delay is not None else args.interval
    iterations = args.count if args.count is not None else args.iterations
    spec = TargetSpec(pids=list(args.pid), comms=list(args.comm))
    if not spec.pids and not spec.comms:
        spec.comms = list(DEFAULT_COMMS)
    opts = TopOptions(targets=spec, by=args.by, interval=interval, batch=args.batch, iterations=iterations,
                      sort=args.sort, reverse=args.reverse, layer=args.layer, rows=args.rows or None,
                      width=args.width, format=args.format, **live_options(args))
    return TopApp(opts).run()

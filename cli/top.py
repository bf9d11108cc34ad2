"""`ioattr top`: a live, top-style view of which file, index, thread, query or device does IO."""
from __future__ import annotations

import argparse

from ioattr.cli.record import add_capacity_argument, add_engine_arguments, add_stages_argument, engine_options, \
    max_entries
from ioattr.collectors.targets import DEFAULT_COMMS, TargetSpec
from ioattr.errors import UsageError
from ioattr.top import BY_CHOICES, LAYERS
from ioattr.top_live import TopApp, TopOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "top", help="live top-style view of IO by file, index, thread, query or device",
        description="A live view of the attributed IO, refreshed every interval. Keys: f files, "
                    "i indexes, t threads (again: roles), q queries, d devices, < > change the sort "
                    "column, r reverse, l layer (syscall/block/pagecache), space refresh now, Q quit.")
    p.add_argument("--pid", type=int, action="append", default=[], help="trace this process (repeatable)")
    p.add_argument("--comm", action="append", default=[],
                   help="trace processes with this name (repeatable; default: mysqld, mariadbd)")
    p.add_argument("--by", default="file", metavar="VIEW",
                   help="the first view: " + ", ".join(BY_CHOICES) + " (default file); with --batch, "
                        "several comma-separated (file,index) print one table each per snapshot")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes (default 1)")
    p.add_argument("--sort", metavar="COLUMN",
                   help="sort column, by header or key: IO/s, R/s, W/s, RMB/s, WMB/s, P50, P99, PG/s, "
                        "LEAF%%, name... (default IO/s; PG/s for indexes)")
    p.add_argument("--reverse", action="store_true", help="reverse the sort order")
    p.add_argument("--layer", default="syscall", choices=LAYERS,
                   help="layer of the file/thread/query/device views (default syscall)")
    p.add_argument("-b", "--batch", action="store_true",
                   help="print plain-text snapshots instead of a screen, like top -b")
    p.add_argument("-n", "--iterations", type=int, help="stop after this many refreshes")
    p.add_argument("--rows", type=int, help="batch: rows per snapshot (default all)")
    p.add_argument("--width", type=int, help="batch: line width (default the terminal's, else 160)")
    add_stages_argument(p)
    add_capacity_argument(p)
    add_engine_arguments(p)


def run(args: argparse.Namespace) -> int:
    if args.interval <= 0 or args.interval > 3600:
        raise UsageError("--interval must be between 0 and 3600 seconds")
    if args.iterations is not None and args.iterations <= 0:
        raise UsageError("--iterations must be a positive number")
    if args.rows is not None and args.rows < 0:
        raise UsageError("--rows must be 0 (all) or more")
    if args.width is not None and args.width < 60:
        raise UsageError("--width must be at least 60")
    spec = TargetSpec(pids=list(args.pid), comms=list(args.comm))
    if not spec.pids and not spec.comms:
        spec.comms = list(DEFAULT_COMMS)
    opts = TopOptions(targets=spec, engine=engine_options(args), by=args.by, interval=args.interval,
                      batch=args.batch, iterations=args.iterations, sort=args.sort, reverse=args.reverse,
                      layer=args.layer, rows=args.rows or None, width=args.width, stages=args.stages,
                      max_stats=max_entries(args))
    return TopApp(opts).run()

"""`ioattr demo`: record the miniature insert benchmark on a private MariaDB and explain it."""
from __future__ import annotations

import argparse
from pathlib import Path

from ioattr.demo import DEFAULT_PHASE_SECONDS, DEFAULT_TABLE_SIZE, DemoOptions, default_output, run_demo
from ioattr.cli.record import check_output
from ioattr.errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="the whole story on a private MariaDB, no set-up",
        description="Start a private MariaDB (temp datadir, socket and port; never the host's service), "
                    "record the miniature insert benchmark (examples/insert_benchmark.py: l.i0 load, l.x "
                    "index build, l.i1 inserts, then q100, q500, q1000: inserts at 100/500/1000 rows/s "
                    "with range queries) and print where its IO went per phase and why it changed.")
    p.add_argument("-o", "--output",
                   help="where to keep the recording (default $XDG_DATA_HOME/ioattr/demo-TIME, i.e. "
                        "~/.local/share/ioattr/demo-TIME; /var/tmp/ioattr-demo-TIME if that cannot be written)")
    p.add_argument("--seconds", type=int, default=DEFAULT_PHASE_SECONDS,
                   help=f"seconds of each query phase q100, q500, q1000 (default {DEFAULT_PHASE_SECONDS})")
    p.add_argument("--table-size", type=int, default=DEFAULT_TABLE_SIZE,
                   help=f"rows loaded in l.i0; l.i1 adds a third more (default {DEFAULT_TABLE_SIZE:,})")


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.seconds <= 3600:
        raise UsageError("--seconds must be between 1 and 3600")
    if args.table_size < 100:
        raise UsageError("--table-size must be at least 100")
    out = Path(args.output) if args.output else default_output()
    # refuse a bad -o before starting a server and a workload, not after
    check_output(out)
    if not out.exists():
        try:
            out.mkdir(mode=0o700, parents=True)  # the recorder accepts an empty directory
        except OSError as e:
            raise UsageError(f"cannot write the recording at {out}: {e.strerror}") from None
    return run_demo(DemoOptions(output=out, seconds=args.seconds, table_size=args.table_size))

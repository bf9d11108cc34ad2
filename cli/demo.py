"""`ioattr demo`: record a private MariaDB under a short sysbench run and explain it."""
from __future__ import annotations

import argparse
from pathlib import Path

from ioattr.demo import DemoOptions, default_output, run_demo
from ioattr.cli.record import check_output
from ioattr.errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the whole story on a private MariaDB, no set-up")
    p.add_argument("-o", "--output", help="where to keep the recording (default ./ioattr-demo-TIME)")
    p.add_argument("--seconds", type=int, default=10, help="length of the recorded run (default 10)")
    p.add_argument("--table-size", type=int, default=50000, help="rows per sysbench table (default 50000)")


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

"""`ioattr demo`: the insert benchmark at two sizes on private MariaDBs, recorded and explained."""
from __future__ import annotations

import argparse
from pathlib import Path

from ioattr.host.demo import (DEFAULT_BUFFER_POOL, DEFAULT_LARGE_TABLE_SIZE, DEFAULT_PHASE_SECONDS, DEFAULT_TABLE_SIZE,
                              MAX_ROWS_L_I1, RUNS, DemoOptions, default_output, run_demo)
from ioattr.cli.definition import command_parser
from ioattr.cli.record import check_output
from ioattr.errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "demo", buffer_pool=DEFAULT_BUFFER_POOL)
    p.add_argument("-o", "--output",
                   help="a new or empty directory for the two recordings, OUTPUT/small and OUTPUT/large (default "
                        "$XDG_DATA_HOME/ioattr/demo-TIME, i.e. ~/.local/share/ioattr/demo-TIME; "
                        "/var/tmp/ioattr-demo-TIME if that cannot be written)")
    p.add_argument("--seconds", type=int, default=DEFAULT_PHASE_SECONDS,
                   help=f"seconds of each query phase q100, q500, q1000 (default {DEFAULT_PHASE_SECONDS})")
    p.add_argument("--table-size", type=int, default=DEFAULT_TABLE_SIZE,
                   help=f"rows loaded in l.i0 by the small run (default {DEFAULT_TABLE_SIZE:,}); l.i1 adds a third more, "
                        f"at most {MAX_ROWS_L_I1:,}")
    p.add_argument("--large-table-size", type=int, default=DEFAULT_LARGE_TABLE_SIZE,
                   help=f"rows loaded in l.i0 by the large run (default {DEFAULT_LARGE_TABLE_SIZE:,})")


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.seconds <= 3600:
        raise UsageError("--seconds must be between 1 and 3600")
    if args.table_size < 100:
        raise UsageError("--table-size must be at least 100")
    if args.large_table_size <= args.table_size:
        raise UsageError(f"--large-table-size ({args.large_table_size:,}) must be larger than --table-size "
                         f"({args.table_size:,})")
    out = Path(args.output) if args.output else default_output()
    # refuse a bad -o before starting a server and a workload, not after
    check_output(out)
    try:
        out.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in RUNS:
            (out / name).mkdir(mode=0o700)  # the recorder accepts an empty directory
    except OSError as e:
        raise UsageError(f"cannot write the recordings at {out}: {e.strerror}") from None
    from ioattr.cli.main import main as cli_main  # lazy; runs each step as its own `ioattr` command

    return run_demo(DemoOptions(output=out, seconds=args.seconds, table_size=args.table_size,
                                large_table_size=args.large_table_size), cli_main)

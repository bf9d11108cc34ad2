"""`ioattr compare`: N benchmark runs side by side, one row per run x phase."""
from __future__ import annotations

import argparse
import json
import sys

from ioattr.cli import argtypes
from ioattr.cli.definition import add_output_arguments, command_parser
from ioattr.errors import UsageError

FORMATS = ("table", "json", "csv")
BY = ("index", "file_class", "role", "stage")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "compare")
    p.add_argument("recordings", nargs="+", metavar="REC", help="recordings (one run each), in the order shown")
    p.add_argument("--label", action="append", metavar="NAME",
                   help="a run's name in the output, once per REC in the same order (default: the run "
                        "directory's name)")
    p.add_argument("--phase", metavar="NAME[,NAME...]", help="only these phases (default: every phase)")
    p.add_argument("--by", choices=BY, help="also split the storage terms by this dimension")
    add_output_arguments(p, FORMATS, top=10, top_help="with --by: rows per run and phase",
                         output_help="write the table/JSON/CSV to this file instead of stdout")
    p.add_argument("--html", type=argtypes.writable_file, metavar="FILE",
                   help="also write a self-contained HTML page with the tables and plots")


def run(args: argparse.Namespace) -> int:
    phases = None
    if args.phase is not None:
        phases = [x.strip() for x in args.phase.split(",") if x.strip()]
        if not phases:
            raise UsageError("--phase needs a phase name")
    # lazy: start-up time (`ioattr --help` loads no pyarrow or duckdb)
    from ioattr.analysis.compare import compare, labels_for
    from ioattr.format.reader import Recording
    from ioattr.output.render import write_output

    labels_for(args.recordings, args.label)  # a bad --label count is bad usage before any reading
    recs = [Recording(p) for p in args.recordings]
    result = compare(recs, args.label, phases=phases, by=args.by, top=args.top)
    if args.format == "json":
        text = json.dumps(result, indent=2) + "\n"
    elif args.format == "csv":
        from ioattr.output.compare_view import to_csv  # lazy: start-up time

        text = to_csv(result)
        for info in result["runs"]:  # CSV has no place a parser would not trip on: stderr
            if info.get("recording_state"):
                print(f"ioattr compare: WARNING: {info['label']}: {info['recording_state']['message']}",
                      file=sys.stderr)
    else:
        from ioattr.output.compare_view import render_table  # lazy: start-up time

        text = render_table(result)
    if args.html:
        from ioattr.output.compare_html import render_compare_html  # lazy: start-up time

        write_output(render_compare_html(result), args.html, "compare")
    write_output(text, args.output, "compare")
    return 0

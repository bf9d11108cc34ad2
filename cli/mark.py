"""`ioattr mark PHASE`: start a new phase in a running recording."""
from __future__ import annotations

import argparse
import sys

from ioattr.cli import argtypes
from ioattr.cli.definition import command_parser
from ioattr.errors import UsageError
from ioattr.format.control import check_phase_name, resolve_recording, send_mark, send_stop


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "mark")
    p.add_argument("phase", nargs="?", help="the new phase's name")
    p.add_argument("--recording", help="the recording (default: the only one running)")
    p.add_argument("--ops", type=argtypes.count, metavar="N",
                   help="the benchmark's operations in the phase in force (added to any given before, "
                        "and to record --ops-pattern's); alone, no phase starts")
    p.add_argument("--stop", action="store_true", help="ask the recorder to stop (after --ops, if given)")


def run(args: argparse.Namespace) -> int:
    if not args.phase and not args.stop and args.ops is None:
        raise UsageError("give a PHASE name (or --ops N, or --stop)")
    if args.phase and args.stop:
        raise UsageError("give a PHASE or --stop, not both")
    if args.phase:
        check_phase_name(args.phase)  # a bad name is refused before looking for the recording
    rec = resolve_recording(args.recording)
    ops = None if args.ops is None else (int(args.ops) if float(args.ops).is_integer() else args.ops)
    if args.phase or ops is not None:
        what = " ".join(x for x in (f"phase {args.phase}" if args.phase else "",
                                    f"{ops} operations" if ops is not None else "") if x)
        if not send_mark(rec, args.phase, ops=ops):
            print(f"ioattr mark: {rec}'s recorder has not taken {what} yet (busy or stuck); "
                  "the request stays queued", file=sys.stderr)
            return 0
        print(f"ioattr mark: {what} -> {rec}", file=sys.stderr)
    if args.stop:
        send_stop(rec)
        print(f"ioattr mark: asked {rec} to stop", file=sys.stderr)
    return 0

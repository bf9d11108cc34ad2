"""`ioattr mark PHASE`: start a new phase in a running recording."""
from __future__ import annotations

import argparse
import sys

from ioattr.cli.definition import command_parser
from ioattr.errors import UsageError
from ioattr.format.control import check_phase_name, resolve_recording, send_mark, send_stop


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "mark")
    p.add_argument("phase", nargs="?", help="the new phase's name")
    p.add_argument("--recording", help="the recording (default: the only one running)")
    p.add_argument("--stop", action="store_true", help="ask the recorder to stop instead")


def run(args: argparse.Namespace) -> int:
    if not args.phase and not args.stop:
        raise UsageError("give a PHASE name (or --stop)")
    if args.phase:
        check_phase_name(args.phase)  # a bad name is refused before looking for the recording
    rec = resolve_recording(args.recording)
    if args.stop:
        send_stop(rec)
        print(f"ioattr mark: asked {rec} to stop", file=sys.stderr)
        return 0
    if not send_mark(rec, args.phase):
        print(f"ioattr mark: {rec}'s recorder has not taken phase {args.phase} yet (busy or stuck); "
              "the request stays queued", file=sys.stderr)
        return 0
    print(f"ioattr mark: phase {args.phase} -> {rec}", file=sys.stderr)
    return 0

"""`ioattr mark PHASE`: start a new phase in a running recording."""
from __future__ import annotations

import argparse
import sys

from ioattr.cli.definition import command_parser, examples
from ioattr.errors import UsageError
from ioattr.format.control import check_phase_name, resolve_recording, send_mark, send_stop


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "mark",
        description="Start a new phase in a running recording: the IO from now on is PHASE's, the "
                    "previous phase ends here, and the engine counters are read at the boundary before "
                    "mark returns. The recorder's start line prints the exact command for its recording. "
                    "A phase can also start from SQL (any statement containing ioattr:phase=NAME), "
                    "from the wrapped command's output (record --phase-pattern) or at record --phase.",
        epilog=examples("ioattr mark load                      # the only recording running",
                        "ioattr mark --recording run1 q100     # one of several",
                        "ioattr mark --stop --recording run1   # stop the recorder (ends the last phase)",
                        "mariadb -e \"SELECT 'ioattr:phase=q100'\"   # the same from SQL"))
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

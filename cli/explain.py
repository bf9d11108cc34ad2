"""`ioattr explain`: why an IO metric changed between phases or runs."""
from __future__ import annotations

import argparse
import errno
import json
import os
import shutil
from pathlib import Path

from ioattr.analysis.explain import METRICS, explain
from ioattr.cli.definition import command_parser, examples
from ioattr.analysis.explain_text import render_text
from ioattr.errors import UsageError
from ioattr.format.reader import Recording
from ioattr.output.render import write_output

FORMATS = ("text", "json", "html")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "explain",
        description="Why did reads (or another --metric) per operation change? Ranks what contributed "
                    "(file, index, stage, role...) and checks the known mechanisms (buffer pool too small, "
                    "change-buffer merges, flush storms...) against the evidence. "
                    "Like diff: RECORDING is the baseline, --against REC2 the target (the run whose IO "
                    "changed). Shares are of the gross change (the sum of the contributors' increases, or "
                    "decreases); a change within noise is said as 'no significant change'.",
        epilog=examples("ioattr explain run1                           # its first phase vs its last",
                        "ioattr explain run1 --baseline warmup --target q100",
                        "ioattr explain bp256m --against bp64m         # two runs, same phase names",
                        "ioattr explain run1 --format html -o why.html"))
    p.add_argument("recording", help="the baseline recording")
    p.add_argument("--baseline", help="baseline phase (default: the first phase with the operations the metric "
                                      "divides by; with --against: the last such phase)")
    p.add_argument("--target", help="target phase (default: the last phase with those operations; with "
                                    "--against: the baseline's phase name if REC2 has it)")
    p.add_argument("--against", metavar="REC2",
                   help="the target recording (RECORDING stays the baseline): compare two runs")
    p.add_argument("--metric", default="reads_per_query", help="|".join(METRICS))
    p.add_argument("--top", type=int, default=8, help="contributors listed before 'other' (default 8)")
    p.add_argument("--format", default="text", help="|".join(FORMATS))
    p.add_argument("-o", "--output", help="write to this file instead of stdout")


def check_output(path: str | None) -> None:
    """Refuse an output path that cannot be written before any analysis runs.

    Bad usage is reported first: a user who mistyped -o should hear about it
    at once, not after the analysis (nor see a complaint about the recording's
    content instead). The message is write_output's, so the error reads the
    same whichever check catches it; nothing is created here."""
    if not path:
        return
    p = Path(path)
    err = 0
    if p.is_dir():
        err = errno.EISDIR
    elif p.exists():
        err = 0 if os.access(p, os.W_OK) else errno.EACCES
    elif not p.parent.exists():
        err = errno.ENOENT
    elif not p.parent.is_dir():
        err = errno.ENOTDIR
    elif not os.access(p.parent, os.W_OK | os.X_OK):
        err = errno.EACCES
    if err:
        raise UsageError(f"cannot write {path}: {os.strerror(err)}")


def run(args: argparse.Namespace) -> int:
    if args.format not in FORMATS:
        raise UsageError(f"unknown format {args.format!r}; choose one of {', '.join(FORMATS)}")
    if args.top < 1:
        raise UsageError("--top must be at least 1")
    check_output(args.output)
    rec = Recording(args.recording)
    other = Recording(args.against) if args.against else None
    from ioattr.analysis.rec_state import recording_state

    states = {str(r.path): st for r in (rec, other) if r is not None and (st := recording_state(r))}

    def warn() -> None:
        import sys

        for p, st in states.items():
            print(f"ioattr explain: WARNING: {p}: {st['message']}", file=sys.stderr)

    if states and (args.format != "text" or args.output):
        warn()  # the output has it too; said on the terminal first
    try:
        result = explain(rec, baseline=args.baseline, target=args.target, against=other, metric=args.metric,
                         top=args.top)
    except Exception:
        if states and not (args.format != "text" or args.output):
            warn()  # what the recording lacks may be why the explanation failed
        raise
    if states:
        result["recording_state"] = states  # incomplete, crashed or still being written
    if args.format == "json":
        text = json.dumps(result, indent=2) + "\n"
    elif args.format == "html":
        from ioattr.output.html_report import render_html

        text = render_html(rec, explanation=result, against=other)
    else:
        # wrapped to the terminal's width: COLUMNS, else the tty's, else (a pipe, a file) 80
        width = shutil.get_terminal_size((80, 24)).columns
        text = "".join(f"WARNING: {p}: {st['message']}\n" for p, st in states.items()) + render_text(result, width)
    write_output(text, args.output, "explain")
    return 0

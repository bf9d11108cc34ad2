"""`ioattr explain`: why an IO metric changed between phases or runs."""
from __future__ import annotations

import argparse
import json
import shutil
import sys

from ioattr.analysis.explain import METRICS, explain
from ioattr.cli.definition import add_output_arguments, command_parser
from ioattr.analysis.explain_text import render_text
from ioattr.analysis.rec_state import recording_state
from ioattr.format.reader import Recording
from ioattr.output.render import write_output

FORMATS = ("text", "json", "html")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "explain")
    p.add_argument("recording", help="the baseline recording")
    p.add_argument("--baseline", help="baseline phase (default: the first phase with the operations the metric "
                                      "divides by; with --against: the last such phase)")
    p.add_argument("--target", help="target phase (default: the last phase with those operations; with "
                                    "--against: the baseline's phase name if REC2 has it)")
    p.add_argument("--against", metavar="REC2",
                   help="the target recording (RECORDING stays the baseline): compare two runs")
    p.add_argument("--metric", default="reads_per_query", help="|".join(METRICS))
    add_output_arguments(p, FORMATS, top=8, top_help="contributors listed before 'other'")


def run(args: argparse.Namespace) -> int:
    rec = Recording(args.recording)
    other = Recording(args.against) if args.against else None
    states = {str(r.path): st for r in (rec, other) if r is not None and (st := recording_state(r))}

    def warn() -> None:
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
        from ioattr.output.html_report import render_html  # lazy: start-up time

        text = render_html(rec, explanation=result, against=other)
    else:
        # wrapped to the terminal's width: COLUMNS, else the tty's, else (a pipe, a file) 80
        width = shutil.get_terminal_size((80, 24)).columns
        text = "".join(f"WARNING: {p}: {st['message']}\n" for p, st in states.items()) + render_text(result, width)
    write_output(text, args.output, "explain")
    return 0

"""`ioattr report`: tables, JSON or CSV of a recording, grouped by dimensions."""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys

from ioattr.analysis.report import LAYERS, ReportRequest, build_report
from ioattr.cli.definition import add_output_arguments, command_parser
from ioattr.format.reader import Recording
from ioattr.model.dimensions import DIMENSIONS
from ioattr.model.self_cost import self_cost_line
from ioattr.output.render import render_table, write_output

FORMATS = ("table", "json", "csv", "html")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "report")
    p.add_argument("recording", help="the recording directory (ioattr record -o)")
    p.add_argument("--by", default="file", help="dimensions, comma-separated: " + ",".join(DIMENSIONS))
    p.add_argument("--phase", help="only this phase")
    p.add_argument("--layer", help="only this layer: " + "|".join(LAYERS))
    add_output_arguments(p, FORMATS, top=None, top_help="only the N biggest rows (by bytes)")


def run(args: argparse.Namespace) -> int:
    rec = Recording(args.recording)
    report = build_report(rec, ReportRequest(by=args.by.split(","), phase=args.phase,
                                             layer=args.layer, top=args.top))
    if args.format == "json":
        text = json.dumps(report, indent=2) + "\n"
    elif args.format == "csv":
        text = to_csv(report)
        if report.get("recording_state"):
            # CSV has no place for it that a parser would not trip on: stderr, before the data
            print(f"ioattr report: WARNING: {report['recording_state']['message']}", file=sys.stderr)
    elif args.format == "html":
        from ioattr.output.html_report import render_html  # lazy: start-up time

        text = render_html(rec, report=report, by=args.by.split(","),
                           request={"phase": args.phase, "layer": args.layer, "top": args.top})
    else:
        text = render_table(report, args.by.split(","),
                            datadirs=[s.get("datadir") or "" for s in rec.meta.get("servers") or []])
        # what recording cost (meta.json self_cost): one line under the table, not in the JSON
        cost = self_cost_line(rec.meta.get("self_cost"))
        if cost:
            text = text.rstrip("\n") + "\n" + cost + "\n"
    write_output(text, args.output, "report")
    return 0


def to_csv(report: dict) -> str:
    buf = io.StringIO()
    rows = report["rows"]
    if not rows:
        return ""
    fields = [k for k in rows[0] if k != "latency_us"] + ["latency_p50_us", "latency_p99_us"]
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    for r in rows:
        out = {k: v for k, v in r.items() if k != "latency_us"}
        out["latency_p50_us"] = r["latency_us"]["p50"]
        out["latency_p99_us"] = r["latency_us"]["p99"]
        w.writerow(out)
    return buf.getvalue()

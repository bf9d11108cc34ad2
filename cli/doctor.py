"""`ioattr doctor`: what works on this host, what is missing, and why."""
from __future__ import annotations

import argparse
import json
import sys

from ioattr.cli.definition import command_parser
from ioattr.host import pydeps


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "doctor")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    problems = pydeps.broken()  # first: the other checks need these packages to import
    if problems:
        checks = pydeps.as_checks(problems)
        sys.stdout.write(json.dumps(checks, indent=2) + "\n" if args.json else pydeps.render_plain(checks))
    else:
        from ioattr.host.doctor import render_checks, run_checks  # lazy: start-up time

        checks = run_checks()
        sys.stdout.write(json.dumps(checks, indent=2) + "\n" if args.json else render_checks(checks))
    if not checks["usable"]:
        print(f"ioattr doctor: {checks.get('verdict', 'this host cannot run ioattr')}", file=sys.stderr)
        return 2
    return 0

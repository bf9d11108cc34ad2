"""The `ioattr` command: dispatch to one module per subcommand.

Every failure becomes one line on stderr and an exit code (0 ok, 1 runtime
failure, 2 bad usage or unusable host); `--debug` adds the traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from types import ModuleType

from ioattr import __version__
from ioattr.errors import EXIT_RUNTIME, EXIT_USAGE, IoattrError

from ioattr.cli.definition import COMMANDS, HelpFormatter


def subcommand(name: str) -> ModuleType:
    """The module of one subcommand (ioattr.cli.NAME: add_parser and run), imported on first use:
    what it needs (BPF loading, numpy, pyarrow, duckdb) loads only when that command is named."""
    return importlib.import_module(f"ioattr.cli.{name}")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), not a usage dump; --help shows
    every option's default and the command's examples (cli/definition.HelpFormatter)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser (only=None: docs, tests), or one where only the named subcommand has
    its options and the others are listed with their one-line help (main(): `ioattr --help`
    imports no subcommand, `ioattr doctor --help` only doctor's)."""
    parser = OneLineParser(prog="ioattr", description="eBPF IO attribution for database benchmarks (MariaDB/MySQL, MyRocks, PostgreSQL)")
    parser.add_argument("--version", action="version", version=f"ioattr {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and libbpf logs on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name, help_line in COMMANDS.items():
        if only is None or name == only:
            subcommand(name).add_parser(sub)
        else:
            sub.add_parser(name, help=help_line)
    return parser


def named_command(argv: list[str]) -> str:
    """The subcommand argv names ("" if none): the first word that is not an option (ioattr's
    own options take no value)."""
    word = next((a for a in argv if not a.startswith("-")), "")
    return word if word in COMMANDS else ""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `record ... -- CMD ARGS`: everything after the first -- is the command, untouched
    command: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1:]
    parser = build_parser(only=named_command(argv))
    try:
        # a bad value is refused by its type (cli/argtypes.py) here, as one line; the exit
        # code is returned, not raised, so main() called in-process behaves like the command
        args, extra = parser.parse_known_args(argv)
        if extra:
            # name the subcommand whose options these are not
            where = f"ioattr {args.command}" if getattr(args, "command", None) else "ioattr"
            parser.exit(EXIT_USAGE, f"{where}: unrecognized arguments: {' '.join(extra)} (see {where} --help)\n")
        if command and args.command and args.command != "record":
            parser.error(f"'-- CMD' is only for record, not {args.command}")
    except SystemExit as e:  # --help, --version, or a usage error
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    args.wrapped_command = command
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(subcommand(args.command).run(args) or 0)
    except IoattrError as e:
        print(f"ioattr {args.command}: {e}", file=sys.stderr)
        if args.debug and e.detail:
            print(e.detail, file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"ioattr {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: still one line unless --debug
        if args.debug:
            traceback.print_exc()
        print(f"ioattr {args.command}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_RUNTIME


if __name__ == "__main__":
    sys.exit(main())

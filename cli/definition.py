"""The options that several commands share, declared once.

record, top and exporter all attach to servers: they take the same targets, the same
server connection, the same probe settings and the same map capacity, with the same
spellings, types (cli/argtypes.py), defaults and help. Each subcommand module declares
only its own options and composes these groups; `live_options(args)` turns the shared
ones into the keyword arguments of ioattr.live.session.SessionOptions, which RecordOptions,
TopOptions and ExporterOptions extend.

Spellings follow what users bring from bcc/libbpf-tools and top(1): `-p PID`, `-c COMM`.
"""
from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ioattr.cli import argtypes

if TYPE_CHECKING:
    from ioattr.collectors.engine import EngineOptions

#: cli/commands.toml: every subcommand's one-line help, description and examples, in the order
#: `ioattr --help` lists them (one source for `ioattr --help`, each command's --help, the README
#: synopsis and the man pages). cli/main.py builds `ioattr --help` from it alone and imports a
#: subcommand's module (ioattr.cli.NAME: add_parser and run) only when that subcommand is named,
#: so `ioattr --help` and `ioattr doctor --help` load no BPF, numpy, pyarrow or duckdb.
#: Module-level imports here stay light for the same reason: the shared groups import what
#: their defaults come from when a parser uses them.
COMMAND_TEXTS: dict[str, dict[str, Any]] = tomllib.loads(
    (Path(__file__).with_name("commands.toml")).read_text(encoding="utf-8"))

#: each subcommand's one-line help, in `ioattr --help`'s order
COMMANDS: dict[str, str] = {name: texts["help"] for name, texts in COMMAND_TEXTS.items()}


def command_parser(sub: argparse._SubParsersAction, name: str, **fields: str) -> argparse.ArgumentParser:
    """The subparser of one command, with its help, description and examples from
    cli/commands.toml; FIELDS fill the description's {name} fields (values the module owns,
    such as the demo's buffer pool)."""
    texts = COMMAND_TEXTS[name]
    return sub.add_parser(name, help=texts["help"], description=texts["description"].format(**fields),
                          epilog=examples(*texts["examples"]))


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions are wrapped, examples keep their lines; every option with a value shows
    its default unless its help already says it."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text or default in (None, False, [], argparse.SUPPRESS)
                or not action.option_strings):
            return text
        return f"{text} (default: {default})"


def examples(*lines: str) -> str:
    """An --help epilog: one command per line."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def add_target_arguments(p: argparse.ArgumentParser, comm_default: str = "every mysqld/mariadbd") -> None:
    """Which processes to trace (each repeatable)."""
    g = p.add_argument_group("targets")
    g.add_argument("-p", "--pid", type=argtypes.int_range(1), action="append", default=[],
                   help="trace this process (repeatable)")
    g.add_argument("-c", "--comm", action="append", default=[],
                   help=f"trace processes with this name (repeatable; default: {comm_default})")


def add_interval_argument(p: argparse.ArgumentParser, what: str, *flags: str) -> None:
    p.add_argument(*(flags or ("--interval",)), dest="interval", type=argtypes.seconds(0.0, 3600.0),
                   default=1.0, metavar="SEC", help=what)


def add_duration_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--duration", type=argtypes.seconds(), metavar="SEC", help="stop after this many seconds")


def add_format_argument(p: argparse.ArgumentParser, formats: tuple[str, ...], help: str = "output format") -> None:
    """--format: one of `formats`, the first by default, refused at parse time by its type (the
    same words for every command that has one: add_output_arguments, top --batch)."""
    p.add_argument("--format", type=argtypes.one_of("format", formats), choices=formats, default=formats[0],
                   help=help)


def add_output_arguments(p: argparse.ArgumentParser, formats: tuple[str, ...], *, top: int | None,
                         top_help: str, output_help: str = "write to this file instead of stdout") -> None:
    """--format, -o and --top of the commands that read recordings (report, explain, compare):
    the same spellings, and the same refusals at parse time (argtypes), for all three."""
    add_format_argument(p, formats)
    p.add_argument("-o", "--output", type=argtypes.writable_file, metavar="FILE", help=output_help)
    p.add_argument("--top", type=argtypes.int_range(1), default=top, metavar="N", help=top_help)


def add_stages_argument(p: argparse.ArgumentParser) -> None:
    """--stages: how much of query processing the mysqld uprobes follow (each hit is a trap)."""
    # lazy: start-up time (the defaults come from the collectors)
    from ioattr.collectors.stage_probes import (DEFAULT_STAGE_MODE, DEFAULT_STATEMENT_SOURCE, STAGE_MODES,
                                                 STATEMENT_SOURCES)
    p.add_argument("--stages", choices=STAGE_MODES, default=DEFAULT_STAGE_MODE,
                   help="auto (default): statement digests and roles, the optimizer's index dives (stage "
                        "estimate: a uprobe hit only by statements that estimate index ranges), and the stage "
                        "of IO inside a statement (parse/optimize/execute/commit) read from the server's own "
                        "THD::proc_info when the statement does IO, without more uprobes; a binary whose "
                        "layout is not found has a null stage inside statements. statement: the same without "
                        "reading the THD (stage null inside statements). full: like auto, and a binary whose "
                        "layout is not found gets 4 stage uprobes instead (~4 traps per point select)")
    p.add_argument("--statements", choices=STATEMENT_SOURCES, default=DEFAULT_STATEMENT_SOURCE,
                   help="where statements start: wire (each command packet as the server receives it, "
                        "no uprobe trap; blind to TLS and compressed clients), uprobe (dispatch_command, "
                        "a trap per statement), auto (default: the wire, plus the uprobe for a server "
                        "whose Questions grow faster than the wire shows statements)")


def add_capacity_argument(p: argparse.ArgumentParser) -> None:
    """--max-entries: the io_stats map's capacity (IO of keys that find it full is counted as drops)."""
    from ioattr.collectors.probes import MAX_STATS_DEFAULT, MAX_STATS_RANGE  # lazy: start-up time
    lo, hi = MAX_STATS_RANGE
    p.add_argument("--max-entries", dest="max_entries", type=argtypes.int_range(lo, hi), default=MAX_STATS_DEFAULT,
                   metavar="N",
                   help=f"capacity of the in-kernel aggregation map io_stats (default {MAX_STATS_DEFAULT}); "
                        "IO of a new file/thread/query key that finds it full is not counted but shown as "
                        "dropped")


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """How to reach the server for names, roles and counters (never a password in argv)."""
    g = p.add_argument_group("server connection (password: option file or MYSQL_PWD)")
    g.add_argument("--mysql-defaults-file", type=argtypes.readable_file, metavar="FILE",
                   help="client option file ([client] section)")
    g.add_argument("--mysql-socket", type=argtypes.unix_socket, metavar="PATH",
                   help="unix socket (default: found from the server process)")
    g.add_argument("--mysql-host", metavar="HOST", help="host (default: the socket)")
    g.add_argument("--mysql-port", type=argtypes.port, metavar="PORT", help="TCP port")
    g.add_argument("--mysql-user", metavar="USER", help="user (default root)")


def add_live_arguments(p: argparse.ArgumentParser, comm_default: str = "every mysqld/mariadbd") -> None:
    """Everything a command that attaches to servers shares: targets, probes, capacity, connection."""
    add_target_arguments(p, comm_default)
    add_stages_argument(p)
    add_capacity_argument(p)
    add_engine_arguments(p)


def engine_options(args: argparse.Namespace) -> EngineOptions:
    """What the user named explicitly was checked by its type (exit 2 if unusable); a server that
    merely refuses the login is a runtime condition (file-level attribution continues)."""
    from ioattr.collectors.engine import EngineOptions  # lazy: start-up time
    return EngineOptions(defaults_file=args.mysql_defaults_file, socket=args.mysql_socket,
                         host=args.mysql_host, port=args.mysql_port, user=args.mysql_user)


def live_options(args: argparse.Namespace) -> dict[str, Any]:
    """The SessionOptions keyword arguments the shared groups give (targets are built by each
    command: record adds a wrapped command, exporter waits for servers)."""
    return {"engine": engine_options(args), "stages": args.stages, "statements": args.statements,
            "max_stats": args.max_entries}

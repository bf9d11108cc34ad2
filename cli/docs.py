"""Generate the README's command synopsis and the man pages from the argument parser.

Both are written by `make docs` (python -m ioattr.cli.docs --write) and checked by
tests/unit/test_docs.py, so an option added, renamed or re-defaulted in cli/ shows up
in the docs or fails the unit tier: they cannot drift from what the commands accept.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ioattr import __version__

ROOT = Path(__file__).resolve().parents[1]  # the checkout (cli/ is mapped to ioattr.cli)
README = ROOT / "README.md"
MAN_DIR = ROOT / "docs" / "man"
BEGIN = "<!-- synopsis: generated from the parser by `make docs`; do not edit -->"
END = "<!-- end of synopsis -->"
WIDTH = 100


def _subcommands() -> tuple[dict[str, argparse.ArgumentParser], dict[str, str]]:
    """{name: parser}, {name: its one-line help}."""
    from ioattr.cli.main import build_parser  # lazy: start-up time

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices), {a.dest: a.help or "" for a in action._choices_actions}
    raise RuntimeError("no subcommands")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    return _subcommands()[0]


def _formatter(p: argparse.ArgumentParser) -> argparse.HelpFormatter:
    return p.formatter_class(prog=p.prog, width=WIDTH)


def usage(p: argparse.ArgumentParser) -> str:
    """The usage lines without -h (every command has it) and with `-- CMD ARGS...` where the
    command runs one (cli/main.py takes it off before argparse sees it)."""
    f = _formatter(p)
    actions = [a for a in p._actions if not isinstance(a, argparse._HelpAction)]
    f.add_usage(p.usage, actions, p._mutually_exclusive_groups, prefix="")
    text = f.format_help().strip()
    return text + " [-- CMD ARGS...]" if p.get_default("takes_command") else text


def synopsis() -> str:
    """One usage block per subcommand, after its one-line purpose."""
    parsers, helps = _subcommands()
    return "\n".join(f"# {helps[name]}\n{usage(p)}" for name, p in parsers.items())


def readme_block() -> str:
    return f"{BEGIN}\n```\n{synopsis()}\n```\n{END}"


def _roff(text: str) -> str:
    text = text.replace("\\", "\\e")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.splitlines())


def man_page(name: str, p: argparse.ArgumentParser) -> str:
    """A man(7) page: NAME, SYNOPSIS, DESCRIPTION, OPTIONS (with defaults), EXAMPLES."""
    lines = [f'.TH IOATTR-{name.upper()} 1 "" "ioattr {__version__}" "ioattr manual"',
             ".SH NAME", f"ioattr-{name} \\- {_roff(_subcommands()[1][name])}",
             ".SH SYNOPSIS", ".nf", _roff(usage(p)), ".fi"]
    if p.description:
        lines += [".SH DESCRIPTION", _roff(p.description)]
    fmt = _formatter(p)
    lines.append(".SH OPTIONS")
    for action in p._actions:
        if action.help == argparse.SUPPRESS:
            continue
        flags = ", ".join(action.option_strings) or (action.metavar or action.dest)
        if action.option_strings and action.nargs != 0:
            flags += " " + fmt._format_args(action, fmt._get_default_metavar_for_optional(action))
        lines += [".TP", f"\\fB{_roff(flags)}\\fR", _roff(fmt._expand_help(action) if action.help else "")]
    if p.epilog and p.epilog.startswith("examples:"):
        lines += [".SH EXAMPLES", ".nf", _roff("\n".join(l.strip() for l in p.epilog.splitlines()[1:])), ".fi"]
    return "\n".join(lines) + "\n"


def man_pages() -> dict[str, str]:
    return {f"ioattr-{n}.1": man_page(n, p) for n, p in _subparsers().items()}


def readme_with_synopsis(text: str) -> str:
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{README}: no generated synopsis block ({BEGIN})")
    return pattern.sub(lambda _m: readme_block(), text)


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(readme_block())
        return 0
    README.write_text(readme_with_synopsis(README.read_text()))
    MAN_DIR.mkdir(parents=True, exist_ok=True)
    for fname, text in man_pages().items():
        (MAN_DIR / fname).write_text(text)
    print(f"wrote the synopsis in {README} and {len(man_pages())} man pages in {MAN_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

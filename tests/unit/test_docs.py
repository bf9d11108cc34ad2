"""The README's synopsis and the man pages are what the parser accepts (make docs writes them)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ioattr.cli import docs
from ioattr.cli.definition import COMMANDS
from ioattr.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]


def test_readme_synopsis_is_generated_from_the_parser() -> None:
    text = (ROOT / "README.md").read_text()
    assert docs.readme_block() in text, "the README's synopsis is stale: run `make docs`"


def test_man_pages_are_generated_from_the_parser() -> None:
    pages = docs.man_pages()
    assert len(pages) == len(COMMANDS)  # one per command
    for name, text in pages.items():
        path = ROOT / "docs" / "man" / name
        assert path.exists() and path.read_text() == text, f"{path} is stale: run `make docs`"


@pytest.mark.parametrize("command", ["record", "top", "exporter"])
def test_help_shows_defaults_and_examples(command: str, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    out = docs._subparsers()[command].format_help()
    assert "examples:\n  ioattr " + command in out
    assert "(default: 1.0)" in out        # --interval, from the shared declaration
    assert "-p PID, --pid PID" in out and "-c COMM, --comm COMM" in out


def test_shared_options_are_declared_once() -> None:
    """record, top and exporter accept the same shared options with the same defaults."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    shared = ("pid", "comm", "stages", "max_entries", "mysql_port", "mysql_socket", "interval")
    seen = {}
    for name in ("record", "top", "exporter"):
        acts = {a.dest: a for a in sub.choices[name]._actions}
        seen[name] = {d: (tuple(acts[d].option_strings[-1:]), acts[d].default, acts[d].type.__class__)
                      for d in shared}
    assert seen["record"] == seen["top"] == seen["exporter"]


def test_top_takes_interval_and_count_like_top() -> None:
    args = build_parser().parse_args(["top", "-b", "2", "5"])
    assert (args.delay, args.count) == (2.0, 5)
    args = build_parser().parse_args(["top", "-d", "3", "-s", "P99"])
    assert (args.interval, args.sort) == (3.0, "P99")
    args = build_parser().parse_args(["exporter", "--web.listen-address", ":9999"])
    assert args.listen == ":9999"


def test_no_pages_keeps_its_old_name() -> None:
    for flag in ("--no-pages", "--no-innodb-pages"):
        assert build_parser().parse_args(["record", flag]).no_pages
    assert not build_parser().parse_args(["record"]).no_pages


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_help_has_a_description_and_an_example(command: str) -> None:
    """`ioattr COMMAND --help`, as typed: a paragraph saying what the command does, and at least
    one runnable example line (the man pages carry both, from the same parser)."""
    import subprocess
    import sys

    ioattr = str(Path(sys.executable).parent / "ioattr")
    r = subprocess.run([ioattr, command, "--help"], capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})
    assert r.returncode == 0 and not r.stderr, r.stderr
    blocks = r.stdout.split("\n\n")
    assert blocks[0].startswith(f"usage: ioattr {command}")
    description = blocks[1]
    assert not description.startswith(("positional arguments", "options")) and len(description) > 60, r.stdout
    ex = r.stdout.split("examples:\n", 1)
    assert len(ex) == 2, r.stdout
    assert any(line.strip().startswith(f"ioattr {command}") or f"ioattr {command} " in line
               for line in ex[1].splitlines()), ex[1]
    page = (ROOT / "docs" / "man" / f"ioattr-{command}.1").read_text()
    assert ".SH DESCRIPTION" in page and ".SH EXAMPLES" in page

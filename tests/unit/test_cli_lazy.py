"""`ioattr --help` and `ioattr doctor --help` import no subcommand they do not need.

cli/main.py lists the subcommands from cli/definition.COMMANDS and imports one's module
only when it is named; this protects that (a help screen that loads numpy, pyarrow, duckdb
or the MySQL client costs seconds on a cold cache), in a fresh interpreter each time.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("duckdb", "pyarrow", "numpy", "pymysql")
PROBE = """
import json, sys
from ioattr.cli.main import main
sys.stdout = open("/dev/null", "w")
rc = main(sys.argv[1:])
sys.__stdout__.write(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def loaded(*argv: str) -> tuple[int, set[str]]:
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
    out = json.loads(r.stdout)
    return out["rc"], set(out["modules"])


@pytest.mark.parametrize("argv", [["--help"], ["doctor", "--help"], ["--debug", "doctor", "--help"], []])
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    rc, modules = loaded(*argv)
    assert rc == (2 if not argv else 0)
    assert [m for m in HEAVY if m in modules] == []
    named = {m.rsplit(".", 1)[1] for m in modules if m.startswith("ioattr.cli.")} - {"main", "definition", "argtypes"}
    assert named == ({"doctor"} if "doctor" in argv else set())


def test_a_bad_command_is_one_line_without_imports() -> None:
    r = subprocess.run([sys.executable, "-m", "ioattr.cli.main", "nosuch"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "invalid choice: 'nosuch'" in r.stderr

"""The environment is read in one module (ioattr/environment.py) and documented in one page."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ioattr import environment

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("ioattr", "collectors", "cli")


def _python_files() -> list[Path]:
    return sorted(p for d in SOURCES for p in (ROOT / d).rglob("*.py") if ".venv" not in p.parts)


def test_only_the_environment_module_reads_the_environment() -> None:
    readers = []
    for path in _python_files():
        if path == ROOT / "ioattr" / "environment.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and node.module == "os" \
                    and any(a.name in ("environ", "getenv") for a in node.names):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not readers, f"read the environment through ioattr.environment.get(): {readers}"


def test_every_ioattr_variable_named_in_the_code_is_declared() -> None:
    named = set()
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"IOATTR_[A-Z_]+", node.value):
                named.add(node.value)
    assert named - set(environment.VARIABLES) == set()


def test_every_variable_is_documented() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert [v for v in environment.VARIABLES if f"`{v}`" not in page] == []


def test_defaults_and_undeclared_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IOATTR_SYSCALL_HOOK", raising=False)
    assert environment.get("IOATTR_SYSCALL_HOOK") == "auto" and not environment.is_set("IOATTR_SYSCALL_HOOK")
    monkeypatch.setenv("IOATTR_SYSCALL_HOOK", "raw")
    assert environment.get("IOATTR_SYSCALL_HOOK") == "raw" and environment.is_set("IOATTR_SYSCALL_HOOK")
    with pytest.raises(KeyError):
        environment.get("IOATTR_NOT_DECLARED")

"""Shared test conventions.

Tests run on the real kernel and a real, private MariaDB. On a developer
machine a missing prerequisite skips the test with the reason; under CI
(CI=true) it fails instead, because a skipped test there would hide a
broken install step.
"""
from __future__ import annotations

import os
import shutil

import pytest

pytest_plugins = ["tests.fixtures_mariadb"]

IN_CI = os.environ.get("CI", "").lower() == "true"


def need(condition: bool, reason: str) -> None:
    """Skip (developer machine) or fail (CI) when a prerequisite is missing."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"prerequisite missing under CI: {reason}", pytrace=False)
    pytest.skip(reason)


def need_root() -> None:
    need(os.geteuid() == 0, "needs root (BPF, tracefs, drop_caches)")


def need_tool(name: str) -> str:
    path = shutil.which(name)
    need(path is not None, f"{name} is not installed")
    return path  # type: ignore[return-value]

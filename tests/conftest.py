"""Shared test conventions.

Tests run on the real kernel and a real, private MariaDB. A missing
prerequisite (root, BPF support, tracefs, mariadbd, a tool) FAILS the test,
whatever the environment says (`CI` set or not, to any value): a skip would
let `make test` exit 0 while whole areas went untested, hiding a broken
install step or a broken host.

A developer who knowingly runs on a machine without some prerequisite can opt
out explicitly with `IOATTR_TEST_ALLOW_SKIP=1`; such tests then skip with the
reason (`pytest -rs` lists them). Nothing else turns failures into skips: a
skip raised any other way (a bare `pytest.skip`, `importorskip`, a skip
marker) is reported as a failure too, by `pytest_runtest_makereport` below.
"""
from __future__ import annotations

import os
import shutil

import pytest

pytest_plugins = ["tests.fixtures_mariadb", "tests.fixtures_postgres"]

#: The only way to turn a missing prerequisite into a skip; read once per session.
ALLOW_SKIP = os.environ.get("IOATTR_TEST_ALLOW_SKIP", "") == "1"

# The caller's terminal size is not the tests' business: with COLUMNS=80 in their environment,
# the `ioattr report`s the tests run laid their tables out for 80 columns and wrapped the paths the
# tests look for. It need not come from the caller: pytest imports readline, which exports
# COLUMNS/LINES (80x24 without a terminal) into the C environment the tests' subprocesses inherit,
# behind os.environ's back. Tests that care set COLUMNS themselves (env=...).
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
    os.unsetenv(_name)


def need(condition: bool, reason: str) -> None:
    """Fail (default) or skip (IOATTR_TEST_ALLOW_SKIP=1) when a prerequisite is missing."""
    if condition:
        return
    if not ALLOW_SKIP:
        pytest.fail(f"prerequisite missing: {reason} (set IOATTR_TEST_ALLOW_SKIP=1 to skip instead)",
                    pytrace=False)
    pytest.skip(reason)


def need_root() -> None:
    need(os.geteuid() == 0, "needs root (BPF, tracefs, drop_caches)")


def need_tool(name: str) -> str:
    path = shutil.which(name)
    need(path is not None, f"{name} is not installed")
    return path  # type: ignore[return-value]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[no-untyped-def]
    """Turn every skip into a failure unless skipping was allowed explicitly, so a
    skip that bypasses need() (a bare pytest.skip, a skip marker) cannot hide a
    test either. Expected failures (xfail) are left alone."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not ALLOW_SKIP and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, and skips are failures here: {reason} (IOATTR_TEST_ALLOW_SKIP=1 allows it)"

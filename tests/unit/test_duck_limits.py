"""DuckDB's limits come from the environment only when they are valid sizes and counts; a bad
value is one UsageError line (exit 2), and `record` refuses it before attaching anything."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ioattr.errors import UsageError
from ioattr.format import duck


def test_defaults(monkeypatch) -> None:
    monkeypatch.delenv(duck.MEMORY_ENV, raising=False)
    monkeypatch.delenv(duck.THREADS_ENV, raising=False)
    assert duck.limits() == ("512MB", max(1, min(4, os.cpu_count() or 1)))
    assert duck.limits(threads=1) == ("512MB", 1)


@pytest.mark.parametrize("env,value,ok", [
    (duck.MEMORY_ENV, "2GB", True), (duck.MEMORY_ENV, "1.5GiB", True), (duck.MEMORY_ENV, "lots", False),
    (duck.MEMORY_ENV, "1MB", False), (duck.THREADS_ENV, "8", True), (duck.THREADS_ENV, "0", False),
    (duck.THREADS_ENV, "9999", False), (duck.THREADS_ENV, "two", False)])
def test_environment_values(monkeypatch, env: str, value: str, ok: bool) -> None:
    monkeypatch.setenv(env, value)
    if ok:
        duck.limits()
    else:
        with pytest.raises(UsageError) as e:
            duck.limits()
        assert env in str(e.value) and "\n" not in str(e.value)


def test_record_refuses_a_bad_limit_before_attaching(tmp_path) -> None:
    """No root needed: the check comes before any probe is loaded or -o is created."""
    out = tmp_path / "rec"
    env = dict(os.environ, **{duck.MEMORY_ENV: "lots"})
    r = subprocess.run([sys.executable, "-m", "ioattr.cli.main", "record", "-o", str(out), "-p", "1"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert r.stderr.strip() == f"ioattr record: {duck.MEMORY_ENV}='lots': not a size (e.g. 512MB, 2GB)"
    assert not out.exists()

"""`ioattr doctor` on a host whose Python packages are broken: it says which, in its own
output and one stderr line, with exit 2, instead of dying on the import (the collectors it
loads for the other checks import numpy)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ioattr.host import pydeps


def _doctor(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    broken = tmp_path / "numpy"
    broken.mkdir()
    (broken / "__init__.py").write_text('raise ImportError("numpy is half-upgraded (test)")\n')
    env = dict(os.environ, PYTHONPATH=str(tmp_path))  # before site-packages: this numpy is found
    return subprocess.run([sys.executable, "-m", "ioattr.cli.main", "doctor", *args], capture_output=True,
                          text=True, env=env)


def test_doctor_names_a_broken_package(tmp_path: Path) -> None:
    r = _doctor(tmp_path)
    assert r.returncode == 2, r
    assert "Traceback" not in r.stdout + r.stderr
    assert "FAIL  python package numpy: import numpy fails: ImportError: numpy is half-upgraded (test)" in r.stdout
    assert r.stderr.count("\n") == 1 and "Python packages are broken (numpy)" in r.stderr, r.stderr


def test_doctor_json_says_the_same(tmp_path: Path) -> None:
    out = json.loads(_doctor(tmp_path, "--json").stdout)
    assert out["usable"] is False
    assert [c["name"] for c in out["checks"]] == ["python package numpy"]


def test_the_list_is_the_installed_metadata() -> None:
    deps = pydeps.dependencies()
    assert {"numpy", "duckdb", "pyarrow", "rich", "PyMySQL", "psycopg"} <= set(deps), deps
    modules = pydeps.modules_of(deps)
    # a distribution's own module, not its optional extras (duckdb ships adbc_driver_duckdb)
    assert modules["PyMySQL"] == ["pymysql"] and modules["duckdb"] == ["duckdb"], modules
    assert pydeps.broken() == []
    assert pydeps.modules_of(["no-such-dist-ioattr"]) == {"no-such-dist-ioattr": []}  # "not installed"

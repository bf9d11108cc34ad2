"""`ioattr demo`: where its recording goes, and what it prints.

The demo is what a new user runs first (`make demo`, from the checkout): it
must not write into the directory it runs in, must say where the recording
is, run the miniature insert benchmark with all its phases, and print the
per-phase table once.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ioattr import demo
from tests.conftest import need_root
from tests.helpers import assert_no_ioattr_programs, ioattr, recording_phases

BENCHMARK_PHASES = ["setup", "l.i0", "l.x", "l.i1", "q100", "q500", "q1000"]


def test_default_output_is_under_xdg_data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    out = demo.default_output()
    assert out.parent == tmp_path / "data" / "ioattr"
    assert out.name.startswith("demo-") and not out.exists()


def test_relative_xdg_data_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the XDG spec: a relative path is invalid and must be ignored
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert demo.default_output().parent == tmp_path / ".local" / "share" / "ioattr"


def test_two_demos_in_one_second_get_two_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setattr(demo.time, "strftime", lambda fmt: "20260101-000000")
    first = demo.default_output()
    first.mkdir()
    second = demo.default_output()
    assert (first.name, second.name) == ("demo-20260101-000000", "demo-20260101-000000-2")


def test_unusable_data_dir_falls_back_to_var_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker / "data"))  # mkdir fails: NotADirectoryError
    out = demo.default_output()
    assert out.parent == Path("/var/tmp") and out.name.startswith("ioattr-demo-")
    assert not out.exists()


def test_demo_records_the_insert_benchmark_outside_the_cwd(tmp_path: Path) -> None:
    need_root()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    data = tmp_path / "data"
    env = dict(os.environ, XDG_DATA_HOME=str(data))
    r = ioattr("demo", "--seconds", "1", "--table-size", "1000", cwd=cwd, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert list(cwd.iterdir()) == [], "the demo wrote into the directory it ran in"

    # it says where, first thing, and the recording is there
    first = r.stderr.splitlines()[0]
    assert first.startswith("ioattr demo: the recording goes to "), first
    rec = Path(first.removeprefix("ioattr demo: the recording goes to "))
    assert rec.parent == data / "ioattr" and (rec / "meta.json").is_file()
    assert r.stdout.rstrip().splitlines()[-3] == f"recording kept at {rec}"

    # the miniature insert benchmark ran, every phase marked
    assert recording_phases(rec) == BENCHMARK_PHASES
    assert "insert_benchmark.py" in r.stderr and "sysbench" not in r.stderr

    # the per-phase summary table once (its title is "per phase"), then the other sections
    titles = [line.strip() for line in r.stdout.splitlines()]
    assert titles.count("per phase") == 1
    for section in ("Per phase, in the insert benchmark's terms",
                    "Where the reads and writes went, by phase and index (syscalls)",
                    "Who did the IO, by role and stage (syscalls)",
                    "Why did the IO change from q100 to q1000?"):
        assert titles.count(section) == 1, section
    assert_no_ioattr_programs()

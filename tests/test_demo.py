"""`ioattr demo`: where its recording goes, and what it prints.

The demo is what a new user runs first (`make demo`, from the checkout): it
must not write into the directory it runs in, must say where the recordings
are, run the miniature insert benchmark with all its phases at two table
sizes recorded with `ioattr record`'s defaults, print the per-phase table of
both once, and print the exact `ioattr explain` command it ran, whose output
a rerun reproduces.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from ioattr.host import demo
from tests.conftest import need_root
from tests.helpers import assert_no_ioattr_programs, ioattr, recording_phases

BENCHMARK_PHASES = ["setup", "l.i0", "l.x", "l.i1", "q100", "q500", "q1000"]


def _unfolded(text: str) -> list[str]:
    """Lines as they were before folding to the terminal (continuations start with 4 spaces)."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("    ") and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def _fits(text: str, width: int) -> list[str]:
    """The lines wider than `width` that need not be: a longer line must hold a word (a path)
    that does not fit with its indent."""
    return [ln for ln in text.splitlines() if len(ln) > width and max(map(len, ln.split())) <= width - 12]


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


def test_large_table_must_be_larger(tmp_path: Path) -> None:
    r = ioattr("demo", "--table-size", "5000", "--large-table-size", "5000", "-o", str(tmp_path / "d"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--large-table-size" in r.stderr, r.stderr
    assert not (tmp_path / "d").exists()


def test_demo_records_two_sizes_outside_the_cwd_and_explains(tmp_path: Path) -> None:
    need_root()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    data = tmp_path / "data"
    env = dict(os.environ, XDG_DATA_HOME=str(data), COLUMNS="80")   # as typed in an 80-column terminal
    r = ioattr("demo", "--seconds", "1", "--table-size", "1000", "--large-table-size", "3000",
               cwd=cwd, env=env, timeout=400)
    assert r.returncode == 0, r.stderr
    assert list(cwd.iterdir()) == [], "the demo wrote into the directory it ran in"

    # progress lines folded to the 80 columns (a path longer than that on its own line)
    assert not _fits(r.stderr, 80), _fits(r.stderr, 80)
    err = _unfolded(r.stderr)
    # it says where, first thing, and both recordings are there
    first = err[0]
    assert first.startswith("ioattr demo: the recordings go to "), first
    out = Path(first.removeprefix("ioattr demo: the recordings go to "))
    assert out.parent == data / "ioattr"
    small, large = out / "small", out / "large"
    assert (small / "meta.json").is_file() and (large / "meta.json").is_file()
    assert f"\nrecordings kept at {out}\n" in r.stdout

    # the miniature insert benchmark ran twice, every phase marked, recorded with record's defaults
    for rec in (small, large):
        assert recording_phases(rec) == BENCHMARK_PHASES
        meta = json.loads((rec / "meta.json").read_text())
        # record's default --stages auto: the fine stages, read from the server's THD
        assert meta["stages"] == "full" and meta["interval"] == 1.0, meta
        assert {s["source"] for s in meta["stage_sources"].values()} == {"thd"}, meta
    joined = "\n".join(err)
    assert "insert_benchmark.py" in joined and "sysbench" not in joined
    assert "is not a database server" not in joined, joined   # the wrapped command is no -p slip
    assert "--rows 1000 " in joined and "--rows 3000 " in joined
    assert sum(ln.startswith("insert_benchmark: q1000 ") and "storage reads/query" in ln for ln in err) == 2, joined

    # the per-phase summary table once (its title is "per phase"), both runs in it
    lines = r.stdout.splitlines()
    titles = [line.strip() for line in lines]
    assert titles.count("per phase") == 1
    for run in ("small", "large"):
        for phase in BENCHMARK_PHASES:
            assert any(line.startswith(f"{run} {phase} ") for line in lines), (run, phase)
    assert sum(t.startswith("Per phase, in the insert benchmark's terms") for t in titles) == 1
    for section in ("Where the large run's IO went in q1000, by index (syscalls)",
                    "Why do the queries read more in the large run?"):
        assert titles.count(section) == 1, section

    # its own tables fit 80 columns, every number whole (explain's text is explain's)
    own = lines[:titles.index("Why do the queries read more in the large run?")]
    assert all(len(line) <= 80 for line in own) and "…" not in "\n".join(own), "\n".join(own)

    # all of stdout within 80 columns too: explain's text, the commands (folded with a backslash)
    assert not _fits(r.stdout, 80), _fits(r.stdout, 80)

    # the exact explain command it ran, then its output: rerunning the command gives the same
    i = titles.index("Why do the queries read more in the large run?")
    j = i + 1
    while lines[j].endswith(" \\"):
        j += 1
    command = " ".join(ln.removesuffix(" \\").strip() for ln in lines[i + 1:j + 1])
    assert command == f"$ ioattr explain {small} --against {large}", command
    end = lines.index(f"recordings kept at {out}")
    shown = "\n".join(lines[j + 1:end]).strip("\n")
    # the commands to run next, as pasted into a shell (bash joins the backslashed lines)
    pasted = subprocess.run(["bash", "-c", "\n".join(["ioattr() { printf '%s\\n' \"$@\"; }", *lines[end + 1:]])],
                            capture_output=True, text=True, check=True).stdout.split("\n")
    assert pasted == ["report", str(large), "--by", "phase,index", "explain", str(small), "--against", str(large),
                      "--format", "html", "-o", "explain.html", ""], pasted
    again = ioattr(*shlex.split(command.removeprefix("$ ioattr ")), check=True, env=env)
    assert shown == again.stdout.strip("\n")
    # explain wraps at the terminal's width: a path longer than it stands on its own line
    assert " ".join(shown.split()).split(" baseline: ", 1)[1].startswith(f"{small} ("), shown
    assert_no_ioattr_programs()

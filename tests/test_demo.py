"""`ioattr demo`: where its recording goes, and what it prints.

The demo is what a new user runs first (`make demo`, from the checkout): it
must not write into the directory it runs in, must say where the recordings
are, run the miniature insert benchmark with all its phases at two table
sizes recorded with `ioattr record`'s defaults, print the per-phase table of
both once, and print the exact `ioattr explain` command it ran, whose output
a rerun reproduces. All of it in a tmux pane 80 columns wide, as typed, and its
results again in one 200 columns wide (one run of the demo for both widths).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ioattr.host import demo
from tests.conftest import need_root, need_tool
from tests.helpers import IOATTR, assert_no_ioattr_programs, ioattr, recording_phases
from tests.unit.test_html_width import measure
from tests.unit.test_terminal_width import _in_tmux_pane

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


#: what the demo prints after its runs, shown again from its recordings (ioattr.host.demo.show,
#: the function the demo ends with): the results at another width without running it twice
SHOW_AGAIN = ("import sys; from pathlib import Path; from ioattr.host import demo; from ioattr.cli.main import main; "
              "d = Path(sys.argv[1]); sys.exit(demo.show(demo.DemoOptions(output=d), {n: d / n for n in demo.RUNS}, main))")
INDEXES = {"ib.t.PRIMARY", "ib.t.ix_price", "ib.t.ix_customer", "ib.t.ix_register"}


def _phase_rows(lines: list[str]) -> dict[str, list[str]]:
    """The per-phase table's cells by row ("small q1000"), its parts (80 columns) joined."""
    rows: dict[str, list[str]] = {}
    for line in lines:
        cells = line.replace("│", " ").split()
        if len(cells) > 2 and cells[0] in demo.RUNS and cells[1] in BENCHMARK_PHASES:
            rows.setdefault(" ".join(cells[:2]), []).extend(cells[2:])
    return rows


def test_demo_in_tmux_at_80_and_200_columns(tmp_path: Path) -> None:
    """`ioattr demo` typed at a shell in a tmux pane 80 columns wide, with its default workload
    (what `make demo` runs): what the pane shows (progress on stderr and results on stdout,
    both to the terminal, no COLUMNS) fits 80 columns and no number is cut; then the results
    shown again from the same recordings in a pane 200 columns wide use the width (the
    per-phase table in one piece, explain's lines past 80) with the same numbers. About 50 s
    on an idle 2-core host (two private MariaDBs, the benchmark's phases of 3 s)."""
    need_root()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    data = tmp_path / "data"
    text = _in_tmux_pane(f"cd {shlex.quote(str(cwd))} && XDG_DATA_HOME={shlex.quote(str(data))} {IOATTR} demo",
                         80, tmp_path, timeout=900)
    assert list(cwd.iterdir()) == [], "the demo wrote into the directory it ran in"
    # within 80 columns (a line longer holds a path longer than that), no number cut
    assert not _fits(text, 80), _fits(text, 80)
    assert not re.search(r"[0-9,.]…|…[0-9]", text), text
    lines = [ln.rstrip() for ln in text.splitlines()]
    assert lines[-1] == "DONE-0"
    begin = next(i for i, ln in enumerate(lines) if ln.startswith("Per phase, in the insert benchmark's terms"))
    err, lines = _unfolded("\n".join(lines[:begin])), lines[begin:-1]

    # it says where, first thing, and both recordings are there
    first = err[0]
    assert first.startswith("ioattr demo: the recordings go to "), first
    out = Path(first.removeprefix("ioattr demo: the recordings go to "))
    assert out.parent == data / "ioattr"
    small, large = out / "small", out / "large"
    assert (small / "meta.json").is_file() and (large / "meta.json").is_file()

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
    assert f"--rows {demo.DEFAULT_TABLE_SIZE} " in joined and f"--rows {demo.DEFAULT_LARGE_TABLE_SIZE} " in joined
    assert sum(ln.startswith("insert_benchmark: q1000 ") and "storage reads/query" in ln for ln in err) == 2, joined

    # the per-phase summary table once (its title is "per phase", split in parts), both runs in it
    titles = [line.strip() for line in lines]
    assert titles.count("per phase") == 1
    rows80 = _phase_rows(lines)
    assert sorted(rows80) == sorted(f"{run} {phase}" for run in demo.RUNS for phase in BENCHMARK_PHASES)
    for section in ("Where the large run's IO went in q1000, by index (syscalls)",
                    "Why do the queries read more in the large run?"):
        assert titles.count(section) == 1, section
    # its own tables fit 80 columns, every number and index name whole
    i = titles.index("Why do the queries read more in the large run?")
    own = lines[:i]
    assert all(len(line) <= 80 for line in own) and "…" not in "\n".join(own), "\n".join(own)
    by_index = "\n".join(lines[titles.index("Where the large run's IO went in q1000, by index (syscalls)"):i])
    assert set(re.findall(r"ib\.t\.[^\s│]*", by_index)) == INDEXES, by_index

    # the exact explain command it ran (folded with a backslash), then its output
    j = i + 1
    while lines[j].endswith(" \\"):
        j += 1
    command = " ".join(ln.removesuffix(" \\").strip() for ln in lines[i + 1:j + 1])
    assert command == f"$ ioattr explain {small} --against {large}", command
    end = next(k for k in range(j, len(lines)) if lines[k].startswith("recordings kept at"))
    kept = end + 1
    while lines[kept].startswith("    "):  # the path folded onto its own line
        kept += 1
    assert " ".join(" ".join(lines[end:kept]).split()) == f"recordings kept at {out}"
    shown = "\n".join(lines[j + 1:end]).strip("\n")
    # the story: the large run's queries read from storage, the small run's hardly
    m = re.match(r"reads_per_query \(per query\): ([0-9.e-]+) -> ([0-9.,]+)", shown)
    assert m and float(m[1]) < 1 < float(m[2].replace(",", "")), shown[:300]
    # the commands to run next, as pasted into a shell (bash joins the backslashed lines)
    pasted = subprocess.run(["bash", "-c", "\n".join(["ioattr() { printf '%s\\n' \"$@\"; }", *lines[kept:]])],
                            capture_output=True, text=True, check=True).stdout.split("\n")
    assert pasted == ["report", str(large), "--by", "phase,index", "explain", str(small), "--against", str(large),
                      "--format", "html", "-o", "explain.html", ""], pasted
    # rerunning the command gives the same (in an 80-column terminal)
    again = ioattr(*shlex.split(command.removeprefix("$ ioattr ")), check=True, env=dict(os.environ, COLUMNS="80"))
    assert shown == "\n".join(ln.rstrip() for ln in again.stdout.splitlines()).strip("\n")
    # explain wraps at the terminal's width: a path longer than it stands on its own line
    assert " ".join(shown.split()).split(" baseline: ", 1)[1].startswith(f"{small} ("), shown
    assert_no_ioattr_programs()

    # the same results in a pane 200 columns wide: the width used, the same numbers
    wide = _in_tmux_pane(f"{shlex.quote(sys.executable)} -c {shlex.quote(SHOW_AGAIN)} {shlex.quote(str(out))}",
                         200, tmp_path, timeout=300)
    assert not _fits(wide, 200), _fits(wide, 200)
    assert not re.search(r"[0-9,.]…|…[0-9]", wide), wide
    wlines = [ln.rstrip() for ln in wide.splitlines()]
    assert "per phase (continued)" not in wide and "per phase" in wlines
    assert _phase_rows(wlines) == rows80
    assert max(map(len, wlines)) > 150   # the boxed per-phase table, explain's contributors
    k = wlines.index("Why do the queries read more in the large run?")
    j = k + 1
    while wlines[j].endswith(" \\"):
        j += 1
    assert " ".join(ln.removesuffix(" \\").strip() for ln in wlines[k + 1:j + 1]) == command
    assert (j == k + 1) == (len(command) + 2 <= 200), wlines[k + 1:j + 1]  # folded only past 200 columns
    assert " ".join("\n".join(wlines[j + 1:]).split()).count(m[0]) == 1

    # the pages of the same runs in a 1400 px Chromium window: no horizontal scroll, no label
    # clipped (explain's as the demo suggests it, compare's as the README does)
    need_tool("chromium")
    pages = tmp_path / "pages"
    pages.mkdir()
    ioattr(*pasted[4:-1], cwd=pages, check=True, timeout=300)
    ioattr("compare", str(small), str(large), "--html", str(pages / "compare.html"), "-o", str(pages / "compare.txt"),
           check=True, timeout=300)
    for page in (pages / "explain.html", pages / "compare.html"):
        got = measure(page)
        assert got["scroll"] <= 1400 and got["labels"] > 10 and not got["clipped"], (page.name, got)

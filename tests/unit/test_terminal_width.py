"""`report`, `compare` and `explain` as typed in an 80- and a 200-column terminal (no root).

Two synthetic recordings (tests/unit/test_compare.py's writer) with the wide numbers of a real
benchmark (57,479.2 queries/s, 2,600,000 rows) and files inside and outside the server's datadir.
At each width: no line longer than the terminal, no cell cut with "…", every number whole, and
at 200 columns the per-phase table in one piece. Then all three in real tmux panes 80 and 200
columns wide, where a line too long would wrap (capture-pane -J joins it back)."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from ioattr.output.compare_view import short_version
from tests.conftest import need_tool
from tests.helpers import IOATTR, cli_in_process
from tests.unit.test_compare import PAGE, _io_row, _write

DATADIR = "/var/lib/mysql-benchmark-datadir-with-a-long-name"
QPS = "57,479.2"          # 574,792 SELECTs in 10 s
ROWS_PER_S = "260,000.0"  # 2,600,000 rows in 10 s


def _rec(path: Path, label: str) -> Path:
    rows = [_io_row("read", 0, "syscall", "read", "tablespace", 2_600_123, 2_600_123 * PAGE),
            _io_row("read", 0, "block", "read", "tablespace", 1_234_567, 1_234_567 * PAGE),
            _io_row("read", 0, "syscall", "write", "other", 77, 77 * 4096)]
    rows[0]["file"] = rows[1]["file"] = f"{DATADIR}/sbtest/sbtest1.ibd"
    rows[2]["file"] = "/home/someone/benchmarks/results/a-rather-long-directory-name/out.log"
    _write(path, [("read", 10.0, rows, {"status:Com_select": 574_792.0, "status:Com_commit": 57_479.0,
                                         "status:Handler_write": 2_600_000.0,
                                         "status:Innodb_buffer_pool_reads": 1_234_567.0})],
           settings={"innodb_buffer_pool_size": 256 << 20, "innodb_flush_method": "O_DIRECT",
                     "innodb_page_size": PAGE})
    meta = json.loads((path / "meta.json").read_text())
    meta["servers"] = [{"pid": 4242, "connected": True, "datadir": DATADIR, "flavor": "mariadb",
                        "version": "10.11.19-MariaDB-0+deb12u1"}]
    (path / "meta.json").write_text(json.dumps(meta))
    return path


@pytest.fixture(scope="module")
def recs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("width")
    return _rec(tmp / "bp256m-run", "a"), _rec(tmp / "bp1g-run", "b")


COMMANDS = [("report", "{a}", "--by", "phase"), ("report", "{a}"), ("report", "{a}", "--by", "phase,file,role"),
            ("compare", "{a}", "{b}"), ("compare", "{a}", "{b}", "--by", "role")]


def _check(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if len(line) > width]
    assert not long, f"{len(long)} lines wider than {width}:\n" + "\n".join(long[:3])
    assert "…" not in text, text


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:1] + a[2:]))
def test_fits_the_terminal(recs, argv: tuple[str, ...], width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    a, b = recs
    rc, out, err = cli_in_process([x.format(a=a, b=b) for x in argv])
    assert rc == 0, err
    _check(out, width)
    if argv[0] == "report" and "phase" in argv:
        assert QPS in out and ROWS_PER_S in out
        if width == 200:   # the width it has: one boxed table, wider than 80 columns
            assert "(continued)" not in out and max(len(line) for line in out.splitlines()) > 100
    if argv[0] == "report":
        assert "2,600,123" in out and "1,234,567" in out
    if argv[0] == "report" and "file" in " ".join(argv[1:]) or argv == ("report", "{a}"):
        # inside the datadir: relative; outside: absolute (folded at 80 columns, whole at 200)
        assert "sbtest/sbtest1.ibd" in out and f"{DATADIR}/sbtest" not in out.split("datadir (")[-1]
        assert f"relative to the server's datadir ({DATADIR})" in out.replace("\n", "")
        if width == 200:
            assert "/home/someone/benchmarks/results/a-rather-long-directory-name/out.log" in out
    if argv[0] == "compare":
        assert QPS in out and "10.11.19-MariaDB " in out and "deb12" not in out


def test_short_version() -> None:
    assert short_version("10.11.19-MariaDB-0+deb12u1") == "10.11.19-MariaDB"
    assert short_version("8.0.36") == "8.0.36"
    assert short_version("16.4 (Debian 16.4-1.pgdg120+1)") == "16.4"
    assert short_version(None) == "-"


def _in_tmux_pane(script: str, width: int, tmp_path: Path, timeout: float = 90) -> str:
    """What a shell in a tmux pane `width` columns wide shows after running script (the output
    goes to the pane, a terminal; no COLUMNS), lines tmux wrapped joined back (-J), the whole
    scrollback (up to 50,000 lines)."""
    tmux = need_tool("tmux")
    sock = str(tmp_path / f"tmux-{width}.sock")
    conf = tmp_path / f"tmux-{width}.conf"
    conf.write_text("set -g history-limit 50000\n")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
    subprocess.run([tmux, "-S", sock, "-f", str(conf), "new-session", "-d", "-x", str(width), "-y", "50",
                    "bash", "--norc", "-c", script + "; echo DONE-$?; sleep 60"], check=True, env=env, timeout=10)
    try:
        text = ""
        deadline = time.monotonic() + timeout
        while "DONE-" not in text:
            assert time.monotonic() < deadline, text
            time.sleep(0.2)
            text = subprocess.run([tmux, "-S", sock, "capture-pane", "-p", "-J", "-S", "-"],
                                  capture_output=True, text=True, timeout=10).stdout
        assert "DONE-0" in text, text
        return text.rstrip()
    finally:
        subprocess.run([tmux, "-S", sock, "kill-server"], capture_output=True, timeout=10)


@pytest.mark.parametrize("width", [80, 200])
def test_in_a_tmux_pane(recs, width: int, tmp_path: Path) -> None:
    """report, compare and explain as typed at a shell prompt in a tmux pane 80 and 200 columns
    wide: within the width, numbers whole, and at 200 the width used (lines past 80 columns)."""
    a, b = recs
    cmds = {"report": f"{IOATTR} report {a} --by phase,file", "compare": f"{IOATTR} compare {a} {b}",
            "explain": f"{IOATTR} explain {a} --against {b}"}
    text = _in_tmux_pane(" && ".join(f"echo =={name}== && {c}" for name, c in cmds.items()), width, tmp_path)
    _check(text, width)
    parts = dict(zip(cmds, text.split("==report==")[1].split("==compare==")[0:1]
                     + text.split("==compare==")[1].split("==explain==")))
    assert QPS in parts["report"] and "sbtest/sbtest1.ibd" in parts["report"] and "2,600,123" in parts["report"]
    assert QPS in parts["compare"] and "10.11.19-MariaDB " in parts["compare"]
    assert "reads_per_query (per query): 4.524 -> 4.524" in " ".join(parts["explain"].split())
    widest = {name: max(map(len, part.splitlines())) for name, part in parts.items()}
    if width == 200:
        assert all(w > 80 for w in widest.values()), widest
        assert "(continued)" not in parts["report"]


@pytest.mark.parametrize("width", [80, 200])
def test_the_demos_results(recs, width: int, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """What `ioattr demo` prints after its two runs (ioattr.host.demo.show, on these recordings
    as its small and large runs) at 80 and 200 columns: within the width, the width used at 200.
    tests/test_demo.py runs the whole demo once, at 80 columns."""
    from ioattr.cli.main import main
    from ioattr.host import demo

    monkeypatch.setenv("COLUMNS", str(width))
    a, b = recs
    assert demo.show(demo.DemoOptions(output=a.parent), {"small": a, "large": b}, main) == 0
    out = capsys.readouterr().out
    _check(out, width)
    pasted = " ".join(out.replace(" \\\n", " ").split())  # the commands as a shell joins them
    assert QPS in out and f"$ ioattr explain {a} --against {b} " in pasted
    assert (max(map(len, out.splitlines())) > 80) == (width == 200)


def test_names_wrap_only_after_headers() -> None:
    """The demo's "by index" table at 80 columns (8 columns, names of 16 characters): the number
    headers wrap and the box goes before a name folds ("ib.t.ix_registe" / "r")."""
    from ioattr.output.render import render_table

    names = ["ib.t.ix_price", "ib.t.ix_register", "ib.t.ix_customer", "ib.t.PRIMARY", "-"]
    rows = [{"index": n, "layer": "syscall", "op": op, "count": 5_987, "pages": 5_987, "bytes": 98_041_856,
             "latency_us": {"p50": 352.5, "p99": 3_103.8}} for n in names for op in ("read", "write")]
    text = render_table({"recording": "/r/large", "rows": rows}, ["index"], width=80)
    _check(text, 80)
    lines = text.splitlines()
    for n in names:
        assert sum(n in line.replace("│", " ").split() for line in lines) == 2, text
    assert "3,103.8" in text and "93.5 MiB" in text

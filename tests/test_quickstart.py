"""The README's quickstart, run as written: its five commands, line by line through a shell,
twice (run1 with a buffer pool that holds the tables, run2 with one that does not), against
private servers. Only what a private server needs is changed: `$(pidof mariadbd)` becomes the
server's pid, sysbench gets the server's socket, and the sizes and run time are small. The
README stays true: a command it shows that stops working fails here.

Ground truth: sysbench's own count of read queries is the read phase's SELECTs, and the run
whose buffer pool cannot hold the tables reads more per query than the one that can."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

from tests.fixtures_mariadb import private_server
from tests.helpers import IOATTR, Background

README = Path(__file__).resolve().parents[1] / "README.md"
TABLES, ROWS, SECONDS = 2, 40000, 3


def quickstart_lines() -> list[str]:
    """The commands of the README's quickstart block, comments taken off."""
    text = README.read_text()
    section = text.split("## Quickstart on your own server", 1)[1]
    block = section.split("```", 2)[1]
    lines = []
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _for_private_server(line: str, pid: int, socket: str, run: str) -> str:
    """The line as typed, pointed at a private server and made small."""
    line = line.replace("$(pidof mariadbd)", str(pid)).replace("run1", run)
    line = re.sub(r"--tables=\d+", f"--tables={TABLES}", line)
    line = re.sub(r"--table-size=\d+", f"--table-size={ROWS}", line)
    line = re.sub(r"--time=\d+", f"--time={SECONDS}", line)
    return re.sub(r"\bsysbench (\S+)", lambda m: f"sysbench {m.group(1)} --mysql-socket={shlex.quote(socket)} "
                  "--mysql-user=root --mysql-db=sbtest", line)


def _shell(line: str, cwd: Path, env: dict[str, str]) -> str:
    r = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (line, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, (line, r.stderr)
    return r.stdout


def _record_run(lines: list[str], buffer_pool: str, run: str, cwd: Path, env: dict[str, str]) -> int:
    """record (line 1, without its '&': the test waits for its start line as the README says),
    the phase lines, mark --stop; returns sysbench's read queries of the read phase."""
    record, *phases = lines[: lines.index("ioattr mark --stop") + 1]
    assert record.startswith("ioattr record ") and record.endswith("&"), record
    with private_server("CREATE DATABASE sbtest", buffer_pool=buffer_pool) as db:
        argv = shlex.split(_for_private_server(record.rstrip("& "), db.pid, str(db.socket), run))
        assert argv[0] == "ioattr"
        bg = Background(*argv[1:], cwd=cwd)
        try:
            bg.wait_recording(timeout=60)
            assert f"ioattr mark --recording {cwd / run}" in bg.stderr, bg.stderr   # the start line's hint
            reads = None
            for line in phases:
                out = _shell(_for_private_server(line, db.pid, str(db.socket), run), cwd, env)
                m = re.search(r"read:\s+(\d+)", out)
                if " run" in line and m:
                    reads = int(m.group(1))
            assert bg.proc.wait(timeout=120) == 0, bg.stderr   # mark --stop ended it
        finally:
            code, err = bg.stop()
        assert code == 0 and "Traceback" not in err, err
    assert reads is not None and reads > 0, reads
    return reads


def test_readme_quickstart_as_written(tmp_path: Path) -> None:
    lines = quickstart_lines()
    assert [ln.split()[1] for ln in lines if ln.startswith("ioattr ")] == \
        ["record", "mark", "mark", "mark", "report", "explain", "compare"], lines
    env = dict(os.environ, PATH=f"{Path(IOATTR).parent}:{os.environ['PATH']}")
    env.pop("COLUMNS", None)
    reads = {run: _record_run(lines, pool, run, tmp_path, env)
             for run, pool in (("run1", "128M"), ("run2", "8M"))}

    after = [_for_private_server(ln, 0, "", "run1") for ln in lines[lines.index("ioattr mark --stop") + 1:]]
    report, explain, compare = after
    out = _shell(report, tmp_path, env)
    assert "load" in out and "read" in out, out
    summary = {s["phase"]: s for s in json.loads(_shell(report + " --format json", tmp_path, env))["summary"]}
    assert summary["read"]["selects"] == reads["run1"], (summary["read"], reads)
    out = _shell(explain, tmp_path, env)
    assert "read" in out and "Findings" in out, out
    cmp_rows = json.loads(_shell(compare + " --format json", tmp_path, env))["rows"]
    rpq = {(r["run"], r["phase"]): r["reads_per_query"] for r in cmp_rows}
    assert rpq[("run2", "read")] > rpq[("run1", "read")], rpq

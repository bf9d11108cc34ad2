"""A reader that hangs up early: `ioattr report REC | head -1`, as typed in a shell (no root).

The output is several times a pipe's 64 KiB buffer (checked in-process first), so ioattr is
still writing when head exits and its next write fails (EPIPE): it stops quietly, exit 0, no
traceback and no "Exception ignored" line at interpreter exit."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import IOATTR, cli_in_process, synthetic_generator

BIG = 2 * 65536  # more than a pipe holds and head reads before it exits


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hangup") / "rec"
    synthetic_generator().generate(out, hours=40 / 3600, counters=False)
    return out


@pytest.mark.parametrize("args", [
    ["report", "{rec}", "--by", "file,thread,query", "--top", "100000"],
    ["report", "{rec}", "--by", "file,thread,query,phase,layer", "--top", "100000", "--format", "csv"],
    ["report", "{rec}", "--by", "file,thread,query,phase,layer", "--top", "100000", "--format", "json"],
    ["explain", "{rec}", "--format", "html"],
], ids=["report", "report-csv", "report-json", "explain-html"])
def test_a_reader_that_hangs_up(rec: Path, args: list[str]) -> None:
    argv = [a.format(rec=rec) for a in args]
    rc, out, err = cli_in_process(argv)
    assert rc == 0 and len(out.encode()) > BIG, (rc, len(out), err)
    r = subprocess.run(["bash", "-c", f"{IOATTR} {' '.join(argv)} | head -1 >/dev/null; "
                                      "echo \"status ${PIPESTATUS[0]}\" >&2"],
                       capture_output=True, text=True, timeout=120)
    assert r.stderr == "status 0\n", r.stderr

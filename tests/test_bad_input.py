"""Bad input and unusable hosts: one clear line, the right exit code, no
traceback, and nothing already recorded is lost."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import need, need_root
from tests.helpers import IOATTR, assert_no_ioattr_programs, fake_tracefs, ioattr


def one_line_error(r: subprocess.CompletedProcess, code: int = 2) -> str:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    err = r.stderr.strip()
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    assert err and "\n" not in err, r.stderr
    return err


@pytest.fixture(scope="module")
def small_recording(tmp_path_factory) -> Path:
    need_root()
    rec = tmp_path_factory.mktemp("bad-input") / "rec"
    r = ioattr("record", "-o", str(rec), "--only-command", "--interval", "0.2", "--",
               "dd", "if=/dev/zero", f"of={rec.parent / 'f'}", "bs=4096", "count=10", "status=none")
    assert r.returncode == 0, r.stderr
    return rec


def test_unknown_pid(tmp_path: Path) -> None:
    need_root()
    err = one_line_error(ioattr("record", "--pid", "999999999", "-o", str(tmp_path / "r")))
    assert "no such process: 999999999" in err
    assert not (tmp_path / "r").exists()


def test_unknown_comm(tmp_path: Path) -> None:
    need_root()
    err = one_line_error(ioattr("record", "--comm", "no-such-proc", "-o", str(tmp_path / "r")))
    assert "no running process named no-such-proc" in err


def test_not_root(tmp_path: Path) -> None:
    need_root()
    need(shutil.which("setpriv") is not None, "setpriv (util-linux) is missing")
    os.chmod(tmp_path, 0o777)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", IOATTR, "record",
                        "--pid", "1", "-o", str(tmp_path / "r")], capture_output=True, text=True, timeout=60)
    assert "root" in one_line_error(r)


def test_no_btf(tmp_path: Path) -> None:
    need_root()
    env = dict(os.environ, IOATTR_BTF="/nonexistent/vmlinux")
    err = one_line_error(ioattr("record", "--pid", "1", "-o", str(tmp_path / "r"), env=env))
    assert "BTF" in err


def test_missing_required_tracepoint(tmp_path: Path) -> None:
    need_root()
    fake = fake_tracefs(tmp_path / "tracefs", ["sched:sched_process_fork"])
    env = dict(os.environ, IOATTR_TRACEFS=str(fake))
    err = one_line_error(ioattr("record", "--pid", "1", "-o", str(tmp_path / "r"), env=env))
    assert "raw_syscalls:sys_enter" in err


def test_missing_optional_tracepoint_degrades_with_a_message(tmp_path: Path) -> None:
    need_root()
    fake = fake_tracefs(tmp_path / "tracefs", ["raw_syscalls:sys_enter", "raw_syscalls:sys_exit",
                                                 "sched:sched_process_fork", "sched:sched_process_exec"])
    env = dict(os.environ, IOATTR_TRACEFS=str(fake))
    rec = tmp_path / "r"
    r = ioattr("record", "--only-command", "-o", str(rec), "--", "dd", "if=/dev/zero", f"of={tmp_path / 'f'}",
               "bs=4096", "count=4", "status=none", env=env)
    assert r.returncode == 0, r.stderr
    assert "degraded" in r.stderr and "io_uring:io_uring_submit_req" in r.stderr
    meta = json.loads((rec / "meta.json").read_text())
    assert set(meta["degraded"]) == {"uring", "block", "pagecache"}
    assert meta["probe_sets"] == ["syscalls", "targets", "stage"]
    assert_no_ioattr_programs()


def test_unwritable_output(tmp_path: Path) -> None:
    need_root()
    err = one_line_error(ioattr("record", "--pid", "1", "-o", "/proc/ioattr-cannot-write-here"))
    assert "cannot write the recording" in err


def test_existing_recording_is_never_overwritten(small_recording: Path) -> None:
    before = ioattr("report", str(small_recording), "--format", "json", check=True).stdout
    err = one_line_error(ioattr("record", "--pid", "1", "-o", str(small_recording)))
    assert "already holds a recording" in err
    assert ioattr("report", str(small_recording), "--format", "json", check=True).stdout == before


def test_unknown_dimension(small_recording: Path) -> None:
    err = one_line_error(ioattr("report", str(small_recording), "--by", "file,colour"))
    assert "unknown dimension 'colour'" in err and "thread" in err


@pytest.mark.parametrize("args, needle", [
    (["--format", "yaml"], "unknown format"),
    (["--layer", "disk"], "unknown layer"),
    (["--phase", "warmup"], "this recording has: main"),
    (["--top", "0"], "--top"),
])
def test_bad_report_options(small_recording: Path, args: list[str], needle: str) -> None:
    assert needle in one_line_error(ioattr("report", str(small_recording), *args))


def test_report_on_missing_or_foreign_paths(tmp_path: Path) -> None:
    assert "no such recording" in one_line_error(ioattr("report", str(tmp_path / "nothing")))
    assert "not an ioattr recording" in one_line_error(ioattr("report", str(tmp_path)))
    (tmp_path / "meta.json").write_text("{not json")
    assert "unreadable recording metadata" in one_line_error(ioattr("report", str(tmp_path)))


def test_bad_arguments_are_one_line() -> None:
    one_line_error(ioattr("record", "--interval", "abc"))
    one_line_error(ioattr("record", "--interval", "0"))
    one_line_error(ioattr("frobnicate"))
    one_line_error(ioattr("report"))


def test_command_not_found(tmp_path: Path) -> None:
    need_root()
    err = one_line_error(ioattr("record", "--pid", "1", "-o", str(tmp_path / "r"), "--", "no-such-command-x"))
    assert "command not found" in err


def test_damaged_chunk_is_skipped_with_a_warning(small_recording: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(small_recording, copy)
    chunk = sorted((copy / "io").glob("chunk-*.parquet"))[0]
    (copy / "io" / "chunk-999999.parquet").write_bytes(chunk.read_bytes()[: len(chunk.read_bytes()) // 2])
    r = ioattr("report", str(copy), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "skipping damaged chunk" in r.stderr
    assert json.loads(r.stdout)["rows"]

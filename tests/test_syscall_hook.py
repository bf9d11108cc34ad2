"""The syscalls probe set's two attach methods ("syscall hooks").

Per-syscall tracepoints are the default where tracefs has them; the raw
sys_enter/sys_exit tracepoints are the fallback and can be forced with
IOATTR_SYSCALL_HOOK. Both must count the same IO exactly, and the choice
must be said, never silent.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need, need_root
from tests.helpers import assert_no_ioattr_programs, bpf_fds, fake_tracefs, ioattr, report_json

TRACEFS = "/sys/kernel/tracing"


def _have_syscall_events() -> bool:
    return os.path.isdir(os.path.join(TRACEFS, "events", "syscalls", "sys_enter_pread64"))


@pytest.mark.parametrize("hook", ["tracepoints", "raw"])
def test_each_hook_counts_exactly(tmp_path: Path, hook: str) -> None:
    need_root()
    if hook == "tracepoints":
        need(_have_syscall_events(), "this kernel has no per-syscall tracepoints (CONFIG_FTRACE_SYSCALLS)")
    data = tmp_path / "f"
    rec = tmp_path / "rec"
    env = dict(os.environ, IOATTR_SYSCALL_HOOK=hook)
    script = (f"import os; fd = os.open({str(data)!r}, os.O_RDWR | os.O_CREAT, 0o644); "
              "[os.pwrite(fd, b'x' * 4096, i * 4096) for i in range(8)]; os.fsync(fd); "
              "[os.pread(fd, 4096, i * 4096) for i in range(5)]; os.close(fd)")
    r = ioattr("record", "-o", str(rec), "--only-command", "--", sys.executable, "-c", script, env=env)
    assert r.returncode == 0, r.stderr
    rows = [row for row in report_json(rec, "--by", "file,op", "--layer", "syscall")["rows"]
            if row["file"] == str(data)]
    got = {row["op"]: (row["count"], row["bytes"]) for row in rows}
    assert got.get("write") == (8, 8 * 4096), got
    assert got.get("read") == (5, 5 * 4096), got
    assert got.get("fsync", (0, 0))[0] == 1, got
    assert_no_ioattr_programs()


def _session_in_child(env: dict[str, str]) -> subprocess.CompletedProcess:
    """Open and close a syscalls-only ProbeSession in a fresh interpreter (tracefs
    overrides are read at import); prints its hook, notes and programs as JSON."""
    code = ("import json; from ioattr.collectors.probes import ProbeSession\n"
            "with ProbeSession(('syscalls',)) as s:\n"
            "    print(json.dumps({'hook': s.syscall_hook, 'why': s.syscall_hook_why, 'notes': s.notes,\n"
            "                      'programs': [p for ls in s.loaded for p in ls.programs],\n"
            "                      'links': sum(len(ls.obj.links) for ls in s.loaded)}))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


def test_default_is_per_syscall_tracepoints_and_loads_only_its_programs() -> None:
    need_root()
    need(_have_syscall_events(), "this kernel has no per-syscall tracepoints (CONFIG_FTRACE_SYSCALLS)")
    env = {k: v for k, v in os.environ.items() if k != "IOATTR_SYSCALL_HOOK"}
    r = _session_in_child(env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["hook"] == "tracepoints" and out["notes"] == {}, out
    assert set(out["programs"]) == {"ioattr_tp_ent4", "ioattr_tp_ent3", "ioattr_tp_ent1", "ioattr_tp_exit"}
    assert out["links"] >= 20, out  # enter + exit of each IO syscall (io_submit: enter only)
    assert_no_ioattr_programs()


def test_falls_back_to_raw_with_a_note(tmp_path: Path) -> None:
    need_root()
    fake = fake_tracefs(tmp_path / "tracefs", ["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"])
    env = {k: v for k, v in os.environ.items() if k != "IOATTR_SYSCALL_HOOK"}
    env["IOATTR_TRACEFS"] = str(fake)
    r = _session_in_child(env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["hook"] == "raw", out
    assert set(out["programs"]) == {"ioattr_sys_enter", "ioattr_sys_exit"}, out
    note = out["notes"]["syscalls"]
    assert "\n" not in note and "CONFIG_FTRACE_SYSCALLS" in note and "raw" in note, note
    assert_no_ioattr_programs()


def test_forced_tracepoints_without_them_is_a_host_error(tmp_path: Path) -> None:
    need_root()
    fake = fake_tracefs(tmp_path / "tracefs", ["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"])
    env = dict(os.environ, IOATTR_TRACEFS=str(fake), IOATTR_SYSCALL_HOOK="tracepoints")
    r = ioattr("record", "--pid", "1", "-o", str(tmp_path / "r"), env=env)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "per-syscall tracepoints" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_unknown_hook_is_a_usage_error(tmp_path: Path) -> None:
    need_root()
    env = dict(os.environ, IOATTR_SYSCALL_HOOK="kprobes")
    r = ioattr("record", "--pid", "1", "-o", str(tmp_path / "r"), env=env)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "IOATTR_SYSCALL_HOOK" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_close_hands_the_tracepoint_teardown_to_a_child() -> None:
    """~40 perf events each wait for RCU grace periods when torn down; close()
    hands that to a child process instead of waiting itself. Checked by what
    close() leaves behind, not by a stopwatch (timings belong in benchmarks/):
    this process holds no BPF or perf-event fd afterwards, and once the child
    is done nothing of ours stays loaded."""
    need_root()
    need(_have_syscall_events(), "this kernel has no per-syscall tracepoints (CONFIG_FTRACE_SYSCALLS)")
    from ioattr.collectors import libbpf
    from ioattr.collectors.probes import ProbeSession

    assert libbpf.wait_for_closers(60)  # no helper of an earlier test is still counted
    before = bpf_fds()
    s = ProbeSession(("syscalls",), syscall_hook="tracepoints")
    s.open()
    assert len(bpf_fds()) > len(before)  # the session really holds programs and links
    s.close()
    assert bpf_fds() == before, "close() kept BPF/perf fds in this process"
    assert len(libbpf._closers) == 1, "close() did not hand the perf events to a helper process"
    # the helper finishes the teardown and exits (60 s only guards against a hang) ...
    assert libbpf.wait_for_closers(60), "the teardown helper never exited"
    # ... leaving nothing of ours loaded
    assert_no_ioattr_programs()

"""`ioattr doctor` tells the truth about THIS host (see DESIGN.md "Machine facts").

The workplace VMs: tracepoints, raw tracepoints, tp_btf, uprobes, ring
buffer, batch map ops and BTF work; kprobes are compiled out and fentry
fails to load with EPERM. The doctor must find each of those by trying
and leave nothing loaded (its speed is measured in benchmarks/, not asserted
here). As an unprivileged user it must say so in one line and exit 2,
without a traceback.
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import shutil
import subprocess

import pytest

from tests.conftest import need, need_root, need_tool
from tests.helpers import IOATTR, assert_no_ioattr_programs, bpf_fds, ioattr


def _by_name(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


@pytest.fixture(scope="module")
def doctor_json() -> dict:
    need_root()
    need_tool("bpftool")
    r = ioattr("doctor", "--json", timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr, r.stdout[-2000:])
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout)


def test_json_shape(doctor_json: dict) -> None:
    assert doctor_json["usable"] is True
    host = doctor_json["host"]
    assert host["kernel"] == os.uname().release
    assert host["arch"] == os.uname().machine
    assert host["libbpf"].count(".") == 1
    for c in doctor_json["checks"]:
        assert set(c) >= {"name", "ok", "required", "detail"}
        assert isinstance(c["ok"], bool) and isinstance(c["required"], bool)
        assert c["detail"] and "\n" not in c["detail"], c
    names = [c["name"] for c in doctor_json["checks"]]
    assert len(names) == len(set(names))
    required = {c["name"] for c in doctor_json["checks"] if c["required"]}
    assert required == {"python packages", "privileges", "btf", "tracefs", "probe set syscalls"}


def test_what_works_here(doctor_json: dict) -> None:
    checks = _by_name(doctor_json)
    for name in ("privileges", "btf", "tracefs", "tracepoint attach", "raw tracepoint attach",
                 "tp_btf attach", "uprobe", "uretprobe", "ring buffer", "batch map ops", "task storage",
                 "kallsyms iomap_dio_bio_end_io", "btrfs block attribution"):
        assert checks[name]["ok"], checks[name]
    assert "charged to files" in checks["btrfs block attribution"]["detail"], checks
    # the attach checks prove the program ran, not just that it attached
    for name in ("tracepoint attach", "raw tracepoint attach", "tp_btf attach", "uprobe", "uretprobe"):
        assert "it ran" in checks[name]["detail"], checks[name]
    assert "getpid" in checks["uprobe"]["detail"]
    # the installed MariaDB's stage is read from its THD (the default --stages auto)
    assert checks["server stages"]["ok"] and "proc_info at THD+0x" in checks["server stages"]["detail"], checks


def test_each_tracepoint_ioattr_uses_takes_a_program(doctor_json: dict) -> None:
    checks = _by_name(doctor_json)
    for tp in ("raw_syscalls:sys_enter", "raw_syscalls:sys_exit", "io_uring:io_uring_submit_req",
               "io_uring:io_uring_complete", "block:block_rq_issue", "block:block_rq_complete",
               "block:block_bio_queue", "filemap:mm_filemap_add_to_page_cache",
               "iomap:iomap_dio_rw_begin", "sched:sched_process_fork"):
        c = checks[f"tracepoint {tp}"]
        assert c["ok"], c


def test_what_is_missing_here_and_why(doctor_json: dict) -> None:
    checks = _by_name(doctor_json)
    kp = checks["kprobe"]
    assert not kp["ok"] and not kp["required"]
    assert "kprobe_events" in kp["detail"] and "CONFIG_KPROBES" in kp["detail"], kp
    for name in ("fentry", "fexit"):
        c = checks[name]
        assert not c["ok"] and not c["required"]
        assert "EPERM" in c["detail"] and "load" in c["detail"], c
    assert doctor_json["verdict"].startswith("usable")
    assert "kprobe" in doctor_json["verdict"] and "fentry" in doctor_json["verdict"]


def test_all_probe_sets_load(doctor_json: dict) -> None:
    checks = _by_name(doctor_json)
    for name in ("syscalls", "targets", "uring", "block", "pagecache"):
        c = checks[f"probe set {name}"]
        assert c["ok"], c
        assert "loaded and attached" in c["detail"] and "ioattr_" in c["detail"], c


def test_doctor_reports_its_own_duration(doctor_json: dict) -> None:
    """The doctor says how long it took (how fast it is belongs in benchmarks/,
    not in a pass/fail test); the figure must be a real, finite duration."""
    secs = doctor_json["host"]["doctor_seconds"]
    assert isinstance(secs, (int, float)) and math.isfinite(secs) and secs > 0, doctor_json["host"]


def test_text_output_one_line_per_check(doctor_json: dict) -> None:
    r = ioattr("doctor", timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.rstrip("\n").split("\n")
    names = [c["name"] for c in doctor_json["checks"]]
    for name in names:
        hits = [ln for ln in lines if ln.startswith(name + " ")]
        assert len(hits) == 1, (name, hits)
    # title, header, rule, one line per check, verdict: nothing wraps
    assert len(lines) == 3 + len(names) + 1, r.stdout
    assert lines[-1].startswith("usable"), lines[-1]
    assert "\x1b[" not in r.stdout  # no colour codes into a pipe
    kp = next(ln for ln in lines if ln.startswith("kprobe "))
    assert "missing" in kp and "CONFIG_KPROBES" in kp


def test_nothing_left_loaded_after_the_command(doctor_json: dict) -> None:
    assert_no_ioattr_programs()
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True, check=True)
    maps = [m.get("name", "") for m in json.loads(out.stdout or "[]")]
    assert not [m for m in maps if m.startswith("doctor_")], maps


def test_run_checks_closes_everything_before_returning() -> None:
    """In-process: while this process is still alive, nothing of the doctor's stays loaded."""
    need_root()
    need_tool("bpftool")
    from ioattr.host.doctor import run_checks

    before = bpf_fds()
    result = run_checks()
    assert result["usable"], result["verdict"]
    # every program, map, link and perf event fd is closed when run_checks returns ...
    assert bpf_fds() == before
    # ... and the kernel then frees the programs (tp_btf ones after an RCU grace period)
    assert_no_ioattr_programs()


def test_uprobe_offset_matches_the_loaded_code() -> None:
    """The ELF parser's file offset for getpid holds the bytes libc's getpid runs."""
    from ioattr.host.doctor import elf_symbol_offset, libc_path

    path = libc_path()
    assert path, "no libc in /proc/self/maps"
    off = elf_symbol_offset(path, "getpid")
    libc = ctypes.CDLL(None)
    addr = ctypes.cast(libc.getpid, ctypes.c_void_p).value
    with open(path, "rb") as f:
        f.seek(off)
        on_disk = f.read(16)
    assert ctypes.string_at(addr, 16) == on_disk
    with pytest.raises(ValueError):
        elf_symbol_offset(path, "no_such_function_in_libc")


def _unprivileged(*args: str) -> subprocess.CompletedProcess:
    if shutil.which("setpriv"):
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
    else:
        cmd = ["runuser", "-u", "nobody", "--"]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
    return subprocess.run([*cmd, IOATTR, *args], capture_output=True, text=True, timeout=60,
                          cwd="/tmp", env=env)


def test_unprivileged_says_why_in_one_line() -> None:
    need_root()  # root is needed to drop to nobody
    need(bool(shutil.which("setpriv") or shutil.which("runuser")),
         "needs setpriv or runuser to drop privileges")
    r = _unprivileged("doctor")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    both = r.stdout + r.stderr
    assert "Traceback" not in both and "internal error" not in both, both
    verdict = r.stdout.rstrip("\n").split("\n")[-1]
    assert verdict.startswith("NOT usable: privileges:"), verdict
    assert "root" in verdict and "CAP_BPF" in verdict
    priv = [ln for ln in r.stdout.split("\n") if ln.startswith("privileges ")]
    assert len(priv) == 1 and "FAIL" in priv[0], priv

    j = _unprivileged("doctor", "--json")
    assert j.returncode == 2, j.stderr
    report = json.loads(j.stdout)
    assert report["usable"] is False
    checks = _by_name(report)
    assert not checks["privileges"]["ok"] and "65534" in checks["privileges"]["detail"]
    assert checks["btf"]["ok"]  # what can be seen without privileges is still reported truthfully


def test_mounts_tracefs_when_absent_and_says_so() -> None:
    """In a private mount namespace (the host's tracefs is untouched) with tracefs unmounted."""
    need_root()
    unshare = need_tool("unshare")
    script = f"umount /sys/kernel/tracing 2>/dev/null; exec {IOATTR} doctor --json"
    r = subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    checks = _by_name(json.loads(r.stdout))
    assert checks["tracefs"]["ok"], checks["tracefs"]
    assert "was not mounted; mounted it" in checks["tracefs"]["detail"], checks["tracefs"]
    assert checks["tracepoint block:block_rq_issue"]["ok"]

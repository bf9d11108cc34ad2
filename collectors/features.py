"""What this host can trace, found by looking and by trying.

`require_tracing_host()` is the preflight every tracing command runs: it
turns a missing prerequisite into one clear line and exit code 2. The
fuller per-feature probes behind `ioattr doctor` live in ioattr.host.doctor.
"""
from __future__ import annotations

import os
import subprocess

from ioattr.errors import HostError

# Overridable so the suite can show what happens on a host without BTF or
# without a tracepoint; the checks themselves are the real ones.
BTF_PATH = os.environ.get("IOATTR_BTF", "/sys/kernel/btf/vmlinux")
TRACEFS = os.environ.get("IOATTR_TRACEFS", "/sys/kernel/tracing")


def is_root() -> bool:
    return os.geteuid() == 0


def has_btf() -> bool:
    return os.path.exists(BTF_PATH)


def tracefs_mounted() -> bool:
    return os.path.exists(os.path.join(TRACEFS, "events"))


def ensure_tracefs() -> tuple[bool, str]:
    """Mount tracefs at /sys/kernel/tracing if needed; (ok, what happened)."""
    if tracefs_mounted():
        return True, f"mounted at {TRACEFS}"
    if "IOATTR_TRACEFS" in os.environ:
        return False, f"not found at {TRACEFS} (IOATTR_TRACEFS)"
    if not is_root():
        return False, f"not mounted at {TRACEFS}, and only root can mount it"
    os.makedirs(TRACEFS, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS],
                       capture_output=True, text=True)
    if r.returncode == 0 and tracefs_mounted():
        return True, f"was not mounted; mounted it at {TRACEFS}"
    return False, f"not mounted and mounting failed: {(r.stderr or r.stdout).strip()}"


def tracepoint_exists(category: str, name: str) -> bool:
    return os.path.isdir(os.path.join(TRACEFS, "events", category, name))


def require_tracing_host() -> None:
    if not is_root():
        raise HostError("tracing needs root (CAP_BPF and CAP_PERFMON); run as root or with sudo")
    if not has_btf():
        raise HostError(f"this kernel has no BTF ({BTF_PATH} is missing); ioattr's CO-RE probes need "
                        "CONFIG_DEBUG_INFO_BTF=y")
    ok, why = ensure_tracefs()
    if not ok:
        raise HostError(f"tracefs is {why}")

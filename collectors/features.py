"""What this host can trace, found by looking and by trying.

`require_tracing_host()` is the preflight every tracing command runs: it
turns a missing prerequisite into one clear line and exit code 2. The
fuller per-feature probes behind `ioattr doctor` live in ioattr.host.doctor.
"""
from __future__ import annotations

import os
import subprocess

from ioattr.errors import HostError
from ioattr import environment

# Overridable so the suite can show what happens on a host without BTF or
# without a tracepoint; the checks themselves are the real ones.
BTF_PATH = environment.get("IOATTR_BTF")
TRACEFS = environment.get("IOATTR_TRACEFS")


# capability bits (linux/capability.h)
CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF = 21, 38, 39


def is_root() -> bool:
    return os.geteuid() == 0


def effective_capabilities() -> int:
    """This process's effective capability set (/proc/self/status CapEff), 0 if unreadable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def missing_capabilities(caps: int | None = None) -> list[str]:
    """The capabilities loading and attaching ioattr's BPF programs needs that `caps` (default:
    this process's) lacks: CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN in their place."""
    caps = effective_capabilities() if caps is None else caps
    if caps >> CAP_SYS_ADMIN & 1:
        return []
    return [name for name, bit in (("CAP_BPF", CAP_BPF), ("CAP_PERFMON", CAP_PERFMON)) if not caps >> bit & 1]


def privileges_problem(uid: int, caps: int) -> str | None:
    """One line saying which capability is missing and how to get it (None: nothing missing).
    Root without them is a container or a capability-dropping wrapper (setpriv, capsh), where
    sudo does not help; anyone else runs ioattr as root."""
    missing = missing_capabilities(caps)
    lacks = f"capabilit{'ies' if len(missing) > 1 else 'y'} {' and '.join(missing)} (or CAP_SYS_ADMIN)"
    if uid != 0:
        why = (f"uid {uid} lacks {lacks} to load BPF programs" if missing
               else f"uid {uid} may load BPF programs, but attaching to other users' servers needs root")
        return f"tracing needs root: {why}; run as root, e.g. with sudo"
    if missing:
        return (f"missing {lacks} to load BPF programs (root, but without {'them' if len(missing) > 1 else 'it'}): start ioattr "
                f"with {'them' if len(missing) > 1 else 'it'} (a container: --cap-add BPF --cap-add PERFMON, or --privileged)")
    return None


def has_btf() -> bool:
    return os.path.exists(BTF_PATH)


def tracefs_mounted() -> bool:
    return os.path.exists(os.path.join(TRACEFS, "events"))


def ensure_tracefs() -> tuple[bool, str]:
    """Mount tracefs at /sys/kernel/tracing if needed; (ok, what happened)."""
    if tracefs_mounted():
        return True, f"mounted at {TRACEFS}"
    if environment.is_set("IOATTR_TRACEFS"):
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
    problem = privileges_problem(os.geteuid(), effective_capabilities())
    if problem:
        raise HostError(problem)
    if not has_btf():
        raise HostError(f"this kernel has no BTF ({BTF_PATH} is missing); ioattr's CO-RE probes need "
                        "CONFIG_DEBUG_INFO_BTF=y")
    ok, why = ensure_tracefs()
    if not ok:
        raise HostError(f"tracefs is {why}")

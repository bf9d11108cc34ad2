"""The preflight's line for missing privileges: which capability, and how to get it (root without
them is a container or a capability-dropping wrapper, where sudo does not help)."""
from __future__ import annotations


def test_missing_capabilities_are_named_with_how_to_get_them() -> None:
    from ioattr.collectors.features import CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, privileges_problem

    both = 1 << CAP_BPF | 1 << CAP_PERFMON
    assert privileges_problem(0, both) is None and privileges_problem(0, 1 << CAP_SYS_ADMIN) is None
    line = privileges_problem(0, 1 << CAP_BPF)
    assert line.startswith("missing capability CAP_PERFMON (or CAP_SYS_ADMIN) to load BPF programs") and \
        "--cap-add BPF --cap-add PERFMON" in line and "\n" not in line
    assert "missing capabilities CAP_BPF and CAP_PERFMON" in privileges_problem(0, 0)
    assert privileges_problem(1000, 0) == ("tracing needs root: uid 1000 lacks capabilities CAP_BPF and "
                                           "CAP_PERFMON (or CAP_SYS_ADMIN) to load BPF programs; run as "
                                           "root, e.g. with sudo")
    assert "run as root" in privileges_problem(1000, both)

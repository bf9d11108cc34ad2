"""collectors/namespaces.py on a process in our own namespaces (tests/test_container.py covers
a server in its own mount and PID namespaces): paths and thread ids pass through unchanged."""
from __future__ import annotations

import os

from ioattr.collectors.namespaces import in_root, namespace_tids, root_of


def test_own_process_needs_no_translation() -> None:
    assert root_of(os.getpid()) == ""
    assert namespace_tids(os.getpid()) is None
    assert in_root("", "/var/lib/mysql/ibdata1") == "/var/lib/mysql/ibdata1"


def test_paths_of_another_root() -> None:
    assert in_root("/proc/42/root", "/var/lib/mysql/mysql.sock") == "/proc/42/root/var/lib/mysql/mysql.sock"
    assert in_root("/proc/42/root", "socket:[123]") == "socket:[123]"  # not a path: as is


def test_gone_process_is_taken_as_ours() -> None:
    gone = 2 ** 22 + 1  # above pid_max
    assert root_of(gone) == ""
    assert namespace_tids(gone) is None

"""rows._block_roles: a block row takes its syscalls' role when that is one role."""
from __future__ import annotations

from ioattr.live.rows import _block_roles

S, B = 0, 1  # abi.Layer.SYSCALL, abi.Layer.BLOCK


def test_block_rows_take_the_one_role_of_their_syscalls() -> None:
    roles = ["purge", "innodb_worker", "innodb_worker", "page_cleaner"]
    layers = [S, B, B, B]
    pids, tids = [1, 1, 1, 1], [10, 10, 10, 0]
    inos, ops = [5, 5, 6, 5], [1, 1, 1, 1]
    got = _block_roles(roles, layers, pids, tids, inos, ops)
    # same thread, inode, op: purge; another inode: the thread's own; no thread: unchanged
    assert got == ["purge", "purge", "innodb_worker", "page_cleaner"]


def test_several_roles_leave_the_thread_role() -> None:
    roles = ["purge", "connection", "innodb_worker"]
    got = _block_roles(roles, [S, S, B], [1, 1, 1], [10, 10, 10], [5, 5, 5], [0, 0, 0])
    assert got == roles


def test_no_syscall_rows() -> None:
    roles = ["kworker", None]
    assert _block_roles(roles, [B, B], [1, 2], [3, 0], [5, 5], [1, 1]) == roles

"""rows._as_their_syscalls: a block row takes its syscalls' role or stage when that is one value."""
from __future__ import annotations

from ioattr.live.rows import _as_their_syscalls

S, B = 0, 1  # abi.Layer.SYSCALL, abi.Layer.BLOCK


def test_block_rows_take_the_one_role_of_their_syscalls() -> None:
    roles = ["purge", "innodb_worker", "innodb_worker", "page_cleaner"]
    layers = [S, B, B, B]
    pids, tids = [1, 1, 1, 1], [10, 10, 10, 0]
    inos, ops = [5, 5, 6, 5], [1, 1, 1, 1]
    got = _as_their_syscalls(roles, layers, pids, tids, inos, ops, keep_own=True)
    # same thread, inode, op: purge; another inode: the thread's own; no thread: unchanged
    assert got == ["purge", "purge", "innodb_worker", "page_cleaner"]


def test_several_roles_leave_the_thread_role() -> None:
    roles = ["purge", "connection", "innodb_worker"]
    got = _as_their_syscalls(roles, [S, S, B], [1, 1, 1], [10, 10, 10], [5, 5, 5], [0, 0, 0], keep_own=True)
    assert got == roles


def test_no_syscall_rows() -> None:
    roles = ["kworker", None]
    assert _as_their_syscalls(roles, [B, B], [1, 2], [3, 0], [5, 5], [1, 1], keep_own=True) == roles


def test_block_rows_take_the_stage_of_their_syscalls_or_none() -> None:
    """A connection's page read at the block layer: the stage its pread had (execute), never
    the `background` a block row's own stage value would read as; several stages, another
    inode or no thread: null."""
    stages = ["execute", "background", "background", "background", "optimize", "execute", "background"]
    layers = [S, B, B, B, S, S, B]
    pids = [1, 1, 1, 1, 1, 1, 1]
    tids = [10, 10, 10, 0, 11, 11, 11]
    inos = [5, 5, 6, 5, 7, 7, 7]
    ops = [0, 0, 0, 0, 0, 0, 0]
    got = _as_their_syscalls(stages, layers, pids, tids, inos, ops, keep_own=False)
    assert got == ["execute", "execute", None, None, "optimize", "execute", None]

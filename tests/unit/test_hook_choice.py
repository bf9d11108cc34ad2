"""collectors/probes.py HookChoice: of the programs that do one job at different hooks (the
statement reader at the socket layer or at recvfrom's syscall tracepoint), the loader loads one:
the first this kernel has a tracepoint for, or the one $IOATTR_WIRE_HOOK names."""
from __future__ import annotations

import pytest

from ioattr.collectors import features, probes
from ioattr.collectors.probes import WIRE_CHOICE
from ioattr.errors import HostError

BOTH = {"ioattr_wire_recv", "ioattr_wire_sys"}


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The tracepoints the fake kernel has (category:event); both by default."""
    have = {"sock:sock_recv_length", "syscalls:sys_exit_recvfrom"}
    monkeypatch.setattr(features, "tracepoint_exists", lambda cat, ev: f"{cat}:{ev}" in have)
    monkeypatch.delenv(WIRE_CHOICE.env, raising=False)
    return have


def test_the_socket_layer_first(kernel: set[str]) -> None:
    assert WIRE_CHOICE.pick(BOTH) == "ioattr_wire_recv"


def test_without_the_socket_tracepoint_the_syscall_one(kernel: set[str]) -> None:
    kernel.discard("sock:sock_recv_length")
    assert WIRE_CHOICE.pick(BOTH) == "ioattr_wire_sys"


def test_neither_tracepoint_loads_neither(kernel: set[str]) -> None:
    kernel.clear()
    assert WIRE_CHOICE.pick(BOTH) is None


@pytest.mark.parametrize("value,want", [("syscall", "ioattr_wire_sys"), ("SYSCALL ", "ioattr_wire_sys"),
                                        ("sock", "ioattr_wire_recv"), ("auto", "ioattr_wire_recv"),
                                        ("", "ioattr_wire_recv")])
def test_the_environment_names_a_hook(kernel: set[str], monkeypatch: pytest.MonkeyPatch,
                                      value: str, want: str) -> None:
    monkeypatch.setenv(WIRE_CHOICE.env, value)
    assert WIRE_CHOICE.pick(BOTH) == want


def test_a_forced_hook_the_kernel_lacks_is_none(kernel: set[str], monkeypatch: pytest.MonkeyPatch) -> None:
    kernel.discard("sock:sock_recv_length")
    monkeypatch.setenv(WIRE_CHOICE.env, "sock")
    assert WIRE_CHOICE.pick(BOTH) is None


def test_an_unknown_hook_is_a_one_line_error(kernel: set[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WIRE_CHOICE.env, "kprobe")
    with pytest.raises(HostError, match=r"unknown hook 'kprobe' in IOATTR_WIRE_HOOK: use sock, syscall or auto"):
        WIRE_CHOICE.pick(BOTH)


def test_objects_built_before_the_socket_hook(kernel: set[str]) -> None:
    """Their ioattr_wire_recv is on the syscall tracepoint (its section says so, and the stage
    probes attach by section): it is the one loaded."""
    assert WIRE_CHOICE.pick({"ioattr_wire_recv"}) == "ioattr_wire_recv"


def test_the_stage_set_carries_the_choice() -> None:
    assert next(p for p in probes.PROBE_SETS if p.name == "stage").choice is WIRE_CHOICE


def test_the_send_side_goes_with_its_receive_side() -> None:
    """The programs that read COM_STMT_PREPARE_OK (bpf/mysql_wire.bpf.h) are loaded with the
    receive program of the same layer: a kernel with one socket tracepoint has the other."""
    assert WIRE_CHOICE.companions == {"ioattr_wire_recv": ("ioattr_wire_send",),
                                      "ioattr_wire_sys": ("ioattr_wire_send_sys",)}

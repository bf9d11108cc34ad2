"""collectors/probes.py verifier_priority: the loading thread's nice value is lowered while the
kernel verifies the programs and put back after, and a host that refuses changes nothing.

Why here: a nice value left lowered would let the recorder's own drain loop take CPU from the
benchmark for the whole run; one that raises would make `record` fail where it worked."""
from __future__ import annotations

import os

import pytest

from ioattr.collectors import probes


class FakePriority:
    def __init__(self, nice: int, refuse: bool = False) -> None:
        self.nice, self.refuse, self.seen = nice, refuse, []

    def get(self, which: int, who: int) -> int:
        return self.nice

    def set(self, which: int, who: int, value: int) -> None:
        if self.refuse and value < self.nice:
            raise PermissionError(1, "Operation not permitted")
        self.seen.append(value)
        self.nice = value


def _patch(monkeypatch: pytest.MonkeyPatch, fake: FakePriority) -> None:
    monkeypatch.setattr(os, "getpriority", fake.get)
    monkeypatch.setattr(os, "setpriority", fake.set)


def test_lowered_inside_and_restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePriority(0)
    _patch(monkeypatch, fake)
    with probes.verifier_priority() as raised:
        assert raised and fake.nice == -probes.LOAD_PRIORITY_BOOST
    assert fake.nice == 0 and fake.seen == [-probes.LOAD_PRIORITY_BOOST, 0]


def test_restored_after_an_error_and_never_below_minus_20(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePriority(-15)
    _patch(monkeypatch, fake)
    with pytest.raises(RuntimeError):
        with probes.verifier_priority(boost=10):
            assert fake.nice == -20
            raise RuntimeError("load failed")
    assert fake.nice == -15


def test_refused_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePriority(5, refuse=True)
    _patch(monkeypatch, fake)
    with probes.verifier_priority() as raised:
        assert not raised and fake.nice == 5
    assert fake.nice == 5 and fake.seen == []

"""collectors/drain.py StatementDrainer, without BPF: the statements counted in stmt_stats (a
hash) and in stmt_slots (the array in front of it, bpf/stage.bpf.c count_stmt) are one set of
per-interval deltas. The two maps are fakes holding what the kernel would: a slot written by
its claim (tag, then digest), keys of ended phases retired from the hash and never from a
slot, and a key in both (one statement reached the hash while another CPU was claiming the
key's slot) counted once with both parts."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ioattr.collectors import abi, drain
from tests.helpers import fake_map_calls

PID, PHASE = 4_194_000, 1
HASH_FD, SLOTS_FD = 1001, 1002


class FakeMaps:
    """The two maps as lookup_batch and map_delete see them."""

    def __init__(self) -> None:
        self.hash: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.slots = np.zeros(abi.STMT_SLOTS, dtype=abi.STMT_SLOT_DTYPE)
        self.deleted: list[tuple[int, int, int]] = []

    def slot(self, tgid: int, phase: int, digest: int, count: int, estimates: int = 0) -> None:
        s = self.slots[drain.stmt_slot_of(tgid, phase, digest)]
        s["tag"], s["digest"], s["count"], s["estimates"] = tgid << 32 | phase << 1 | 1, digest, count, estimates

    def lookup_batch(self, fd: int, key_size: int, value_size: int, max_entries: int, **_: object):
        if fd == SLOTS_FD:
            keys = np.arange(abi.STMT_SLOTS, dtype="<u4")
            return keys.tobytes(), self.slots.tobytes(), abi.STMT_SLOTS
        keys = np.zeros(len(self.hash), dtype=abi.STMT_KEY_DTYPE)
        vals = np.zeros(len(self.hash), dtype=abi.STMT_VAL_DTYPE)
        for i, ((tgid, phase, digest), (count, est)) in enumerate(self.hash.items()):
            keys[i]["tgid"], keys[i]["phase"], keys[i]["digest"] = tgid, phase, digest
            vals[i]["count"], vals[i]["estimates"] = count, est
        return keys.tobytes(), vals.tobytes(), len(self.hash)

    def map_delete(self, fd: int, key) -> bool:  # type: ignore[no-untyped-def]
        assert fd == HASH_FD, "a slot is never deleted"
        k = np.frombuffer(bytes(key), dtype=abi.STMT_KEY_DTYPE)[0]
        t = (int(k["tgid"]), int(k["phase"]), int(k["digest"]))
        self.deleted.append(t)
        return self.hash.pop(t, None) is not None

    def map_lookup_and_delete(self, fd: int, key, value) -> bool:  # type: ignore[no-untyped-def]
        assert fd == HASH_FD, "a slot is never deleted"
        k = np.frombuffer(bytes(key), dtype=abi.STMT_KEY_DTYPE)[0]
        t = (int(k["tgid"]), int(k["phase"]), int(k["digest"]))
        self.deleted.append(t)
        got = self.hash.pop(t, None)
        if got is None:
            return False
        v = np.zeros(1, dtype=abi.STMT_VAL_DTYPE)
        v["count"], v["estimates"] = got
        ctypes.memmove(value, v.tobytes(), v.nbytes)
        return True


@pytest.fixture
def maps(monkeypatch: pytest.MonkeyPatch) -> FakeMaps:
    return fake_map_calls(monkeypatch, FakeMaps())


def _counts(d: drain.Deltas) -> dict[tuple[int, int, int], tuple[int, int]]:
    return {(int(k["tgid"]), int(k["phase"]), int(k["digest"])): (int(v["count"]), int(v["estimates"]))
            for k, v in zip(d.keys, d.values)}


def test_the_slot_of_a_key_is_the_kernels_mix() -> None:
    # bpf/stage.bpf.c: ((digest ^ tgid << 20 ^ phase) * 0x9E3779B97F4A7C15) >> 52, in 64 bits
    for tgid, phase, digest in ((1, 1, 0x17), (PID, 7, 0xCBF29CE484222325), (65535, 65535, 2**64 - 1)):
        mixed = ((digest ^ (tgid << 20) ^ phase) * 0x9E3779B97F4A7C15) % 2**64
        assert drain.stmt_slot_of(tgid, phase, digest) == mixed >> 52 < abi.STMT_SLOTS


def test_a_slot_is_read_like_a_hash_entry(maps: FakeMaps) -> None:
    d = drain.statement_drainer(HASH_FD, SLOTS_FD)
    d.drain()
    maps.slot(PID, PHASE, 0x17, count=5)
    maps.hash[(PID, PHASE, 0xABC)] = (2, 1)
    assert _counts(d.drain()) == {(PID, PHASE, 0x17): (5, 0), (PID, PHASE, 0xABC): (2, 1)}
    maps.slot(PID, PHASE, 0x17, count=9)
    assert _counts(d.drain()) == {(PID, PHASE, 0x17): (4, 0)}


def test_a_claim_half_written_is_not_a_key(maps: FakeMaps) -> None:
    """The claimer writes the tag, then the digest: a slot read in between holds nothing yet."""
    d = drain.statement_drainer(HASH_FD, SLOTS_FD)
    maps.slot(PID, PHASE, 0x17, count=0)
    maps.slots[drain.stmt_slot_of(PID, PHASE, 0x17)]["digest"] = 0
    assert _counts(d.drain()) == {}
    maps.slot(PID, PHASE, 0x17, count=1)
    assert _counts(d.drain()) == {(PID, PHASE, 0x17): (1, 0)}


def test_a_key_in_both_maps_is_one_row_of_both_parts(maps: FakeMaps) -> None:
    d = drain.statement_drainer(HASH_FD, SLOTS_FD)
    maps.slot(PID, PHASE, 0x17, count=10, estimates=2)
    maps.hash[(PID, PHASE, 0x17)] = (1, 0)
    got = d.drain()
    assert len(got) == 1 and _counts(got) == {(PID, PHASE, 0x17): (11, 2)}


def test_ended_phases_leave_the_hash_and_slots_stay_exact(maps: FakeMaps) -> None:
    """An ended phase's idle keys are deleted from the hash (MapDrainer's retirement); a key a
    slot holds is not, so its counts are never taken for a new key's."""
    d = drain.statement_drainer(HASH_FD, SLOTS_FD)
    maps.slot(PID, 1, 0x17, count=100)
    maps.hash[(PID, 1, 0x17)] = (1, 0)     # the same key's race part
    maps.hash[(PID, 1, 0xABC)] = (3, 0)    # a key whose slot was another's
    assert _counts(d.drain(live_phase=1)) == {(PID, 1, 0x17): (101, 0), (PID, 1, 0xABC): (3, 0)}
    maps.slot(PID, 2, 0x17, count=7)       # phase 2 begins
    assert _counts(d.drain(live_phase=2)) == {(PID, 2, 0x17): (7, 0)}
    assert maps.deleted == []
    for _ in range(2):                     # phase 1 idle for good: retired after two drains
        assert _counts(d.drain(live_phase=2)) == {}
    assert (PID, 1, 0xABC) in maps.deleted and (PID, 1, 0x17) not in maps.deleted, maps.deleted
    assert _counts(d.drain(live_phase=2)) == {}   # nothing counted twice
    maps.hash[(PID, 1, 0xABC)] = (1, 0)    # a late statement of phase 1 re-creates the key: from zero
    assert _counts(d.drain(live_phase=2)) == {(PID, 1, 0xABC): (1, 0)}


def test_objects_without_slots_drain_the_hash_alone(maps: FakeMaps) -> None:
    d = drain.statement_drainer(HASH_FD, None)
    assert not isinstance(d, drain.StatementDrainer)
    maps.hash[(PID, PHASE, 0x17)] = (4, 0)
    assert _counts(d.drain()) == {(PID, PHASE, 0x17): (4, 0)}

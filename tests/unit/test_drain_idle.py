"""collectors/drain.py MapDrainer, without BPF: keys idle for `idle_intervals` drains leave the
map and the drainer's copy of it, so both follow the keys that moved lately instead of growing
with every (thread, statement, file, stage) a long run ever met -- the recorder's RSS and drain
time grew ~20 MiB and ~1.3% of a core an hour before (docs/cost.md "Long and wide runs"). An
IO that lands on a key between the drain's read and its deletion is counted, not lost: the
deletion reads the last value (BPF_MAP_LOOKUP_AND_DELETE_ELEM). The map is a fake io_stats."""
from __future__ import annotations

import ctypes
from typing import Callable

import numpy as np
import pytest

from ioattr.collectors import abi, drain
from tests.helpers import fake_map_calls

FD = 1001


class FakeHash:
    """io_stats as lookup_batch and the deletions see it: key -> (count, bytes, hist[0])."""

    def __init__(self) -> None:
        self.entries: dict[int, list[int]] = {}   # ino stands for the whole key
        self.before_delete: Callable[[int], None] = lambda ino: None
        self.and_delete = True
        self.plain_deletes = 0

    def io(self, ino: int, n: int = 1) -> None:
        e = self.entries.setdefault(ino, [0, 0, 0])
        e[0] += n
        e[1] += 4096 * n
        e[2] += n

    def lookup_batch(self, fd: int, key_size: int, value_size: int, max_entries: int, **_: object):
        keys = np.zeros(len(self.entries), dtype=abi.IO_KEY_DTYPE)
        vals = np.zeros(len(self.entries), dtype=abi.IO_VAL_DTYPE)
        for i, (ino, (count, nbytes, h0)) in enumerate(self.entries.items()):
            keys[i]["ino"], keys[i]["tgid"], keys[i]["phase"] = ino, 7, 1
            vals[i]["count"], vals[i]["bytes"] = count, nbytes
            vals[i]["hist"][0] = h0
        return keys.tobytes(), vals.tobytes(), len(self.entries)

    def _ino(self, key) -> int:  # type: ignore[no-untyped-def]
        return int(np.frombuffer(bytes(key), dtype=abi.IO_KEY_DTYPE)[0]["ino"])

    def map_lookup_and_delete(self, fd: int, key, value):  # type: ignore[no-untyped-def]
        if not self.and_delete:
            return None
        ino = self._ino(key)
        self.before_delete(ino)  # an IO on its way in, just before the deletion
        got = self.entries.pop(ino, None)
        if got is None:
            return False
        v = np.zeros(1, dtype=abi.IO_VAL_DTYPE)
        v["count"], v["bytes"] = got[0], got[1]
        v["hist"][0][0] = got[2]
        ctypes.memmove(value, v.tobytes(), v.nbytes)
        return True

    def map_delete(self, fd: int, key) -> bool:  # type: ignore[no-untyped-def]
        self.plain_deletes += 1
        return self.entries.pop(self._ino(key), None) is not None


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeHash:
    return fake_map_calls(monkeypatch, FakeHash())


def _counts(d: drain.Deltas) -> dict[int, tuple[int, int, int]]:
    return {int(k["ino"]): (int(v["count"]), int(v["bytes"]), int(v["hist"][0])) for k, v in zip(d.keys, d.values)}


def test_new_keys_all_run_long_hold_what_moved_lately(fake: FakeHash) -> None:
    """Every drain meets 50 keys never seen before and keeps 10 busy: the map and the drainer's
    copy hold the busy ones and the last idle_intervals drains' new ones, not all 50 x N."""
    d = drain.io_stats_drainer(FD, 65536)
    total = seen = 0
    for tick in range(200):
        for k in range(10):
            fake.io(k)
        for k in range(50):
            fake.io(1000 + 50 * tick + k)
        total += 60
        seen += sum(c for c, _, _ in _counts(d.drain()).values())
    assert seen == total  # every IO counted once
    held = 10 + 50 * (d.idle_intervals + 1)
    assert len(fake.entries) <= held and len(d._prev_keys) <= held, (len(fake.entries), len(d._prev_keys))
    assert len(d._prev_vals) == len(d._prev_keys) == len(d._idle)


def test_an_io_landing_at_the_deletion_is_counted(fake: FakeHash) -> None:
    d = drain.io_stats_drainer(FD, 65536)
    fake.io(5, 3)
    assert _counts(d.drain()) == {5: (3, 3 * 4096, 3)}
    for _ in range(d.idle_intervals - 1):
        assert _counts(d.drain()) == {}
    late = {5}
    fake.before_delete = lambda ino: fake.io(ino, 2) if ino in late and not late.remove(ino) else None
    assert _counts(d.drain()) == {5: (2, 2 * 4096, 2)}  # deleted this drain, with what came at the last moment
    assert 5 not in fake.entries and len(d._prev_keys) == 0
    fake.io(5)  # an IO creates the key again: from zero
    assert _counts(d.drain()) == {5: (1, 4096, 1)}


def test_a_kernel_without_lookup_and_delete_deletes_plainly(fake: FakeHash) -> None:
    fake.and_delete = False
    d = drain.io_stats_drainer(FD, 65536)
    fake.io(9)
    d.drain()
    for _ in range(d.idle_intervals):
        d.drain()
    assert fake.entries == {} and fake.plain_deletes == 1 and len(d._prev_keys) == 0

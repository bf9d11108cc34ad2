"""Drain the io_stats map into per-interval deltas.

The BPF side only ever adds to cumulative counters (no delete on the hot
path, so nothing is lost to a read/delete race). Each interval we read the
whole map with one batch syscall per 4096 keys, and subtract what we read
last time, vectorised with numpy over the raw key bytes.

Keys that stay idle for `idle_intervals` drains are deleted, each with
BPF_MAP_LOOKUP_AND_DELETE_ELEM: the value it had when it went is compared
with the last one read, and whatever landed in between is counted in the
drain that deleted it, so deleting loses nothing. Without this the map (and
our copy of it, read and diffed in full every drain) only grew: a 64-thread
sysbench run meets new (thread, statement, file, stage) combinations for
hours, and the recorder's memory and drain time grew with them (docs/cost.md,
"Long and wide runs"). Now both follow the keys that moved in the last
`idle_intervals` drains. A key an IO creates again later starts from zero.

Keys carry the phase the IO was issued in (bpf/ioattr.h, "Phases"), so a
phase change makes new keys and leaves the old phase's keys idle for good.
Those are deleted once they have been idle for two drains after their phase
ended (`drain(live_phase=...)`): a key re-created later by an IO of that phase
still completing starts from zero, so its delta stays exact, and short phases
can't fill the map with keys nobody will move again.
"""
from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass

import numpy as np

from ioattr.collectors import abi
from ioattr.collectors import libbpf


def _value_field(name: str) -> property:
    """A read-only attribute for one field of Deltas.values."""
    return property(lambda self: self.values[name], doc=f"values[{name!r}]")


@dataclass
class Deltas:
    """One interval's changes: one row per key that moved."""

    keys: np.ndarray     # the map's key dtype
    values: np.ndarray   # the map's value dtype, holding differences
    map_entries: int
    drain_seconds: float

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    # io_stats conveniences: d.count is d.values["count"]
    count = _value_field("count")
    bytes = _value_field("bytes")
    lat_sum_ns = _value_field("lat_sum_ns")
    hist = _value_field("hist")


class MapDrainer:
    """Per-interval deltas of one cumulative hash map (io_stats, page_stats)."""

    def __init__(self, map_fd: int, key_dtype: np.dtype, val_dtype: np.dtype, max_entries: int, *,
                 moved_fields: tuple[str, ...] = ("count", "bytes"), idle_intervals: int = 30) -> None:
        self.fd = map_fd
        self.key_dtype = key_dtype
        self.val_dtype = val_dtype
        self.raw_key = np.dtype(f"V{key_dtype.itemsize}")
        self.max_entries = max_entries
        self.moved_fields = moved_fields
        self.idle_intervals = idle_intervals
        self._buffers = libbpf.BatchBuffers(key_dtype.itemsize, val_dtype.itemsize, max_entries)
        self._prev_keys = np.empty(0, dtype=self.raw_key)
        self._prev_vals = np.empty(0, dtype=val_dtype)
        self._idle = np.empty(0, dtype=np.int64)
        self._and_delete = True  # BPF_MAP_LOOKUP_AND_DELETE_ELEM works on this map (until it fails)
        self._late: list[tuple[np.ndarray, np.ndarray]] = []  # what deleted entries gained since the read

    @property
    def entries(self) -> int:
        """The map's entries at the last drain, less those it deleted (what it holds now)."""
        return len(self._prev_keys)

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        """The map's current contents: (keys as raw bytes, values)."""
        kraw, vraw, n = libbpf.lookup_batch(self.fd, self.key_dtype.itemsize, self.val_dtype.itemsize,
                                            self.max_entries, buffers=self._buffers)
        keys = np.frombuffer(kraw, dtype=self.raw_key, count=n)
        vals = np.frombuffer(vraw, dtype=self.val_dtype, count=n)
        return keys, vals

    def drain(self, live_phase: int | None = None) -> Deltas:
        """The deltas since the last drain. live_phase: the phase number keys of the current
        phase carry; idle keys of other (ended) phases are then deleted."""
        t0 = time.monotonic()
        keys, vals = self.read()
        order = np.argsort(keys, kind="stable")
        keys, vals = keys[order], vals[order]

        delta = vals.copy()
        idle = np.zeros(len(keys), dtype=np.int64)
        if len(self._prev_keys) and len(keys):
            idx = np.searchsorted(self._prev_keys, keys)
            idx_c = np.minimum(idx, len(self._prev_keys) - 1)
            seen = self._prev_keys[idx_c] == keys
            prev = self._prev_vals[idx_c[seen]]
            for name in self.val_dtype.names:
                delta[name][seen] -= prev[name]
            idle[seen] = self._idle[idx_c[seen]]
        moved = np.zeros(len(keys), dtype=bool)
        for name in self.moved_fields:
            moved |= delta[name] != 0
        idle = np.where(moved, 0, idle + 1)

        self._prev_keys, self._prev_vals, self._idle = keys, vals, idle
        if live_phase is not None and "phase" in (self.key_dtype.names or ()):
            self._retire_ended_phases(live_phase)
        self._collect_idle()
        out_keys, out_vals = self._take_late(keys[moved], delta[moved])
        return Deltas(keys=out_keys.view(self.key_dtype).reshape(-1), values=out_vals,
                      map_entries=len(keys), drain_seconds=time.monotonic() - t0)

    def _retire_ended_phases(self, live_phase: int) -> None:
        phases = self._prev_keys.view(self.key_dtype)["phase"] if len(self._prev_keys) else None
        if phases is None:
            return
        self._delete(np.nonzero((phases != live_phase) & (self._idle >= 2))[0])

    def _collect_idle(self) -> None:
        if len(self._prev_keys):
            self._delete(np.nonzero(self._idle >= self.idle_intervals)[0])

    def _delete(self, stale: np.ndarray) -> None:
        """Delete these entries (indexes into the last read) from the map and our memory. What
        an entry gained since that read (an IO landing just before its deletion) is kept in
        `_late`, added to this drain's deltas."""
        if not len(stale):
            return
        size = self.key_dtype.itemsize
        value = (ctypes.c_char * self.val_dtype.itemsize)()
        late_at: list[int] = []
        late_vals: list[np.ndarray] = []
        for i in stale:
            key = (ctypes.c_char * size).from_buffer_copy(self._prev_keys[i].tobytes())
            got = libbpf.map_lookup_and_delete(self.fd, key, value) if self._and_delete else None
            if got is None:
                self._and_delete = False  # an old kernel: deleted plainly, as before
                libbpf.map_delete(self.fd, key)
                continue
            if not got:
                continue
            last = np.frombuffer(bytes(value), dtype=self.val_dtype).copy()
            moved = False
            for name in self.val_dtype.names:
                last[name] -= self._prev_vals[i][name]
            for name in self.moved_fields:
                moved |= bool(np.any(last[name] != 0))
            if moved:
                late_at.append(int(i))
                late_vals.append(last)
        if late_at:
            self._late.append((self._prev_keys[np.asarray(late_at)].copy(), np.concatenate(late_vals)))
        keep = np.ones(len(self._prev_keys), dtype=bool)
        keep[stale] = False
        self._prev_keys = self._prev_keys[keep]
        self._prev_vals = self._prev_vals[keep]
        self._idle = self._idle[keep]

    def _take_late(self, keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """This drain's moved rows with the late gains of the entries it deleted (never among
        them: a deleted entry was idle at this read)."""
        if not self._late:
            return keys, values
        late, self._late = self._late, []
        return (np.concatenate([keys] + [k for k, _ in late]), np.concatenate([values] + [v for _, v in late]))


def io_stats_drainer(map_fd: int, max_entries: int) -> MapDrainer:
    return MapDrainer(map_fd, abi.IO_KEY_DTYPE, abi.IO_VAL_DTYPE, max_entries)


def stmt_stats_drainer(map_fd: int, max_entries: int = 16384) -> MapDrainer:
    return MapDrainer(map_fd, abi.STMT_KEY_DTYPE, abi.STMT_VAL_DTYPE, max_entries,
                       moved_fields=("count", "estimates"))


def stmt_slot_of(tgid: int, phase: int, digest: int) -> int:
    """The stmt_slots index of a (process, phase, digest) key: bpf/stage.bpf.c count_stmt's mix."""
    return (((digest ^ (tgid << 20) ^ phase) & 0xFFFFFFFFFFFFFFFF) * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF) >> 52


def stmt_slots_entries(slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keys held in stmt_slots (abi.STMT_SLOT_DTYPE records), as stmt_stats has them:
    (raw keys, values). A slot counts once both its tag and its digest are written."""
    held = slots[(slots["tag"] != 0) & (slots["digest"] != 0)]
    keys = np.zeros(len(held), dtype=abi.STMT_KEY_DTYPE)
    keys["tgid"] = held["tag"] >> 32
    keys["phase"] = (held["tag"] >> 1) & 0xFFFF
    keys["digest"] = held["digest"]
    vals = np.zeros(len(held), dtype=abi.STMT_VAL_DTYPE)
    vals["count"], vals["estimates"] = held["count"], held["estimates"]
    return keys.view(f"V{abi.STMT_KEY_DTYPE.itemsize}").reshape(-1), vals


class StatementDrainer(MapDrainer):
    """Per-interval deltas of the statements counted in stmt_stats and in stmt_slots, the
    array in front of it (bpf/stage.bpf.c count_stmt): a key's counts are the sum of both
    (one statement may land in the hash while another CPU is claiming the key's slot).

    A slot is never freed while the programs run, so its counts only grow, and its key is
    never retired (an ended phase's other keys are deleted from the hash as MapDrainer does):
    4096 slots hold the keys of many phases, and a key that finds its slot taken is counted in
    the hash as before."""

    def __init__(self, map_fd: int, slots_fd: int, max_entries: int = 16384) -> None:
        super().__init__(map_fd, abi.STMT_KEY_DTYPE, abi.STMT_VAL_DTYPE, max_entries,
                         moved_fields=("count", "estimates"))
        self.slots_fd = slots_fd
        self._slot_buffers = libbpf.BatchBuffers(4, abi.STMT_SLOT_DTYPE.itemsize, abi.STMT_SLOTS,
                                                 initial=abi.STMT_SLOTS)
        self._slot_held: set[bytes] = set()  # the keys the slots held at the last read

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        keys, vals = super().read()
        _, sraw, n = libbpf.lookup_batch(self.slots_fd, 4, abi.STMT_SLOT_DTYPE.itemsize, abi.STMT_SLOTS,
                                         buffers=self._slot_buffers)
        skeys, svals = stmt_slots_entries(np.frombuffer(sraw, dtype=abi.STMT_SLOT_DTYPE, count=n))
        self._slot_held = {k.tobytes() for k in skeys}
        if not len(skeys):
            return keys, vals
        allk = np.concatenate([keys, skeys])
        allv = np.concatenate([vals, svals])
        uniq, inv = np.unique(allk, return_inverse=True)
        out = np.zeros(len(uniq), dtype=self.val_dtype)
        for name in self.val_dtype.names:
            np.add.at(out[name], inv, allv[name])
        return uniq, out

    def _delete(self, stale: np.ndarray) -> None:
        """MapDrainer's, but never for a key a slot holds: the slot's counts would come back
        at the next read as a new key's, counted twice."""
        keep = [i for i in stale if self._prev_keys[i].tobytes() not in self._slot_held]
        super()._delete(np.asarray(keep, dtype=np.int64))


def statement_drainer(map_fd: int, slots_fd: int | None, max_entries: int = 16384) -> MapDrainer:
    """The statements' drainer: stmt_stats with its slots where the objects have them (BPF
    objects built before stmt_slots count in the hash alone)."""
    if slots_fd is None:
        return stmt_stats_drainer(map_fd, max_entries)
    return StatementDrainer(map_fd, slots_fd, max_entries)


def page_stats_drainer(map_fd: int, max_entries: int = 65536) -> MapDrainer:
    return MapDrainer(map_fd, abi.PAGE_KEY_DTYPE, abi.PAGE_VAL_DTYPE, max_entries,
                      moved_fields=("pages", "bytes"))


def possible_cpus() -> int:
    """How many values a per-CPU map's lookup returns (the kernel's possible CPUs)."""
    try:
        with open("/sys/devices/system/cpu/possible") as f:
            spec = f.read().strip()
        return max(int(part.split("-")[-1]) for part in spec.split(",")) + 1
    except (OSError, ValueError):
        return os.cpu_count() or 1


def percpu_sum(map_fd: int, slot: int, ncpu: int | None = None) -> int | None:
    """Slot `slot` of a per-CPU array of u64, summed over CPUs (None: no such slot)."""
    vals = (ctypes.c_uint64 * (ncpu or possible_cpus()))()
    if not libbpf.map_lookup(map_fd, ctypes.c_uint32(slot), vals):
        return None
    return int(sum(vals))


def read_drops(map_fd: int) -> dict[str, int]:
    """Total drops per reason, summed over CPUs (the map is per-CPU)."""
    ncpu = possible_cpus()
    out = {}
    for reason in abi.Drop:
        n = percpu_sum(map_fd, int(reason), ncpu)
        if n is not None:
            out[reason.name.lower()] = n
    return out

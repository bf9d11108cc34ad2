"""`ioattr record`'s engine: attach, drain each interval, write the recording.

The loop wakes every 100 ms to consume the (rare) open-event stream while
the file is still open, and every interval to drain io_stats into one
batch of rows. Chunks are flushed every `chunk_seconds`. Stopping (signal,
--duration, the wrapped command exiting) always ends with a final drain
and a complete meta.json, so nothing already counted is lost.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ioattr.collectors import abi
from ioattr.collectors.drain import Deltas, StatsDrainer, read_drops
from ioattr.collectors.libbpf import RingBuffer
from ioattr.collectors.names import DeviceNames, FileNames, TaskNames
from ioattr.collectors.probes import ProbeSession
from ioattr.collectors.targets import TargetSpec, TargetTracker
from ioattr.collectors import features
from ioattr.errors import UsageError
from ioattr.labels import API_NAMES, KIND_FILE_LABELS, KIND_NAMES, LAYER_NAMES, OP_NAMES
from ioattr.recording import HIST_COLUMNS, RecordingWriter


@dataclass
class RecordOptions:
    output: Path
    targets: TargetSpec
    interval: float = 1.0
    duration: float | None = None
    phase: str = "main"
    chunk_seconds: float = 10.0
    discard_command_output: bool = False
    probe_sets: tuple[str, ...] | None = None
    log: Callable[[str], None] = field(default=lambda msg: print(f"ioattr: {msg}", file=sys.stderr))


class RowBuilder:
    """Turns drained deltas into recording columns, naming what it can."""

    def __init__(self) -> None:
        self.files = FileNames()
        self.devices = DeviceNames()
        self.tasks = TaskNames()

    def columns(self, d: Deltas, ts_start: float, ts_end: float, phase: str) -> dict[str, object]:
        self.tasks.new_interval()
        k = d.keys
        n = len(d)
        pids = k["tgid"].astype(np.int64)
        tids = k["tid"].astype(np.int64)
        file_col: list[str | None] = []
        for i in range(n):
            kind = int(k["kind"][i])
            if kind in KIND_FILE_LABELS:
                file_col.append(KIND_FILE_LABELS[kind])
            else:
                file_col.append(self.files.lookup(int(k["dev"][i]), int(k["ino"][i]), int(pids[i])))
        cols: dict[str, object] = {
            "ts_start": [ts_start] * n,
            "ts_end": [ts_end] * n,
            "phase": [phase] * n,
            "layer": [LAYER_NAMES[int(x)] for x in k["layer"]],
            "op": [OP_NAMES[int(x)] for x in k["op"]],
            "api": [API_NAMES.get(int(x), "other") for x in k["api"]],
            "kind": [KIND_NAMES.get(int(x), "unknown") for x in k["kind"]],
            "pid": [int(p) if p else None for p in pids],
            "tid": [int(t) if t else None for t in tids],
            "process": [self.tasks.process(int(p)) if p else None for p in pids],
            "thread": [self.tasks.thread(int(p), int(t)) if t else None for p, t in zip(pids, tids)],
            "dev": ["%d:%d" % abi.dev_major_minor(int(x)) for x in k["dev"]],
            "device": [self.devices.lookup(int(x)) for x in k["dev"]],
            "ino": [int(x) if x else None for x in k["ino"]],
            "file": file_col,
            "count": d.count.astype(np.int64),
            "bytes": d.bytes.astype(np.int64),
            "lat_sum_ns": d.lat_sum_ns.astype(np.int64),
        }
        hist = d.hist.astype(np.int64)
        for i, name in enumerate(HIST_COLUMNS):
            cols[name] = hist[:, i] if n else np.empty(0, dtype=np.int64)
        return cols


class Recorder:
    def __init__(self, opts: RecordOptions) -> None:
        self.opts = opts
        self.stop_reason: str | None = None
        self.child_pid: int | None = None
        self.child_status: int | None = None
        self.rows = RowBuilder()

    # -- lifecycle ---------------------------------------------------------
    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_reason = signal.Signals(signum).name

    def _spawn_command(self) -> tuple[int, int]:
        """Fork the wrapped command, held at a barrier until it is a target."""
        cmd = self.opts.targets.command
        if shutil.which(cmd[0]) is None and not os.path.exists(cmd[0]):
            raise UsageError(f"command not found: {cmd[0]}")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            try:
                os.close(w)
                os.read(r, 1)
                os.close(r)
                if self.opts.discard_command_output:
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 1)
                    os.close(null)
                os.execvp(cmd[0], cmd)
            except OSError as e:
                print(f"ioattr: cannot run {cmd[0]}: {e.strerror}", file=sys.stderr)
            os._exit(127)
        os.close(r)
        return pid, w

    def run(self) -> int:
        o = self.opts
        features.require_tracing_host()
        o.targets.validate()
        writer_targets = o.targets.describe()
        barrier_fd = None
        prev_handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with ProbeSession(o.probe_sets, follow_forks=bool(o.targets.command)) as probes:
                for name, why in probes.degraded.items():
                    o.log(f"degraded: {why}")
                writer = RecordingWriter.create(
                    o.output, targets=writer_targets, interval=o.interval, phase=o.phase,
                    probe_sets=probes.active_sets, degraded=probes.degraded)
                tracker = TargetTracker(o.targets, probes.map_fd("targets"))
                if o.targets.command:
                    self.child_pid, barrier_fd = self._spawn_command()
                    o.targets.pids.append(self.child_pid)
                new, _ = tracker.refresh()
                for pid in new:
                    if pid == self.child_pid:
                        continue  # not exec'd yet: its names would be ours
                    self.rows.files.scan_process(pid)
                    self.rows.tasks.remember_threads(pid)
                events = RingBuffer(probes.map_fd("events"), self._on_event)
                drainer = StatsDrainer(probes.map_fd("io_stats"), probes.max_stats)
                drainer.drain()  # baseline: what happened before we start counting
                if barrier_fd is not None:
                    os.write(barrier_fd, b"g")
                    os.close(barrier_fd)
                    barrier_fd = None
                o.log(f"recording {', '.join(writer_targets)} -> {o.output} "
                      f"(interval {o.interval:g}s; Ctrl-C to stop)")
                try:
                    self._loop(probes, tracker, events, drainer, writer)
                finally:
                    events.consume()
                    self._drain_into(drainer, writer, self._last_tick, time.time())
                    writer.flush(read_drops(probes.map_fd("drops")))
                    events.free()
                    writer.close("complete")
        finally:
            for s, h in prev_handlers.items():
                signal.signal(s, h)
            if barrier_fd is not None:
                os.close(barrier_fd)
        return self._exit_code()

    def _exit_code(self) -> int:
        if self.child_status is not None and self.child_status != 0:
            self.opts.log(f"the command exited with status {self.child_status}; the recording is complete")
            return 1
        return 0

    # -- the loop -------------------------------------------------------------
    def _on_event(self, data: bytes) -> None:
        """One record of the rare event stream: an open, or a thread's name."""
        kind = int.from_bytes(data[:4], "little")
        if kind == abi.EV_OPEN and len(data) >= ctypes.sizeof(abi.OpenEvent):
            self.rows.files.on_open(abi.OpenEvent.from_buffer_copy(data))
        elif kind == abi.EV_TASK and len(data) >= ctypes.sizeof(abi.TaskEvent):
            ev = abi.TaskEvent.from_buffer_copy(data)
            self.rows.tasks.on_task_event(int(ev.tgid), int(ev.tid), ev.comm.decode(errors="replace"))

    def _drain_into(self, drainer: StatsDrainer, writer: RecordingWriter, t0: float, t1: float) -> int:
        d = drainer.drain()
        if len(d):
            writer.add_columns(self.rows.columns(d, t0, t1, writer.current_phase))
        return len(d)

    def _child_exited(self) -> bool:
        if self.child_pid is None:
            return False
        pid, status = os.waitpid(self.child_pid, os.WNOHANG)
        if pid == 0:
            return False
        self.child_status = os.waitstatus_to_exitcode(status)
        return True

    def _loop(self, probes: ProbeSession, tracker: TargetTracker, events: RingBuffer,
              drainer: StatsDrainer, writer: RecordingWriter) -> None:
        o = self.opts
        start = time.time()
        self._last_tick = start
        next_tick = start + o.interval
        next_flush = start + o.chunk_seconds
        while True:
            # records are submitted without wakeups (cheaper for the traced
            # process), so epoll never fires: consume on our own clock
            time.sleep(0.1)
            events.consume()
            now = time.time()
            if self._child_exited():
                self.stop_reason = "command exited"
            if o.duration is not None and now - start >= o.duration:
                self.stop_reason = "duration reached"
            if self.stop_reason:
                o.log(f"stopping: {self.stop_reason}")
                return
            if now < next_tick:
                continue
            self._drain_into(drainer, writer, self._last_tick, now)
            self._last_tick = now
            next_tick += o.interval
            if next_tick < now:
                next_tick = now + o.interval
            new, gone = tracker.refresh()
            for pid in new:
                self.rows.files.scan_process(pid)
                self.rows.tasks.remember_threads(pid)
                if pid != self.child_pid and tracker.ever and o.targets.comms:
                    writer.note(f"target {self.rows.tasks.process(pid)}[{pid}] appeared")
            for pid in gone:
                if pid in o.targets.pids or o.targets.comms:
                    writer.note(f"target {self.rows.tasks.procs.get(pid, '?')}[{pid}] exited")
            for pid in tracker.current:
                self.rows.tasks.remember_threads(pid)
            if now >= next_flush:
                writer.flush(read_drops(probes.map_fd("drops")))
                next_flush = now + o.chunk_seconds

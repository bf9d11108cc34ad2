"""`ioattr record`'s engine: attach, drain each interval, write the recording.

The loop wakes every 100 ms to consume the (rare) event stream (opens,
thread names) while files are still open, and every interval to drain
io_stats and page_stats into one batch of rows each. Chunks are flushed
every `chunk_seconds`. Stopping (signal, --duration, the wrapped command
exiting) always ends with a final drain and a complete meta.json, so
nothing already counted is lost.
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

from ioattr.collectors import abi, features
from ioattr.collectors.drain import MapDrainer, io_stats_drainer, page_stats_drainer, read_drops
from ioattr.collectors.engine import EngineOptions
from ioattr.collectors.innodb_files import InnodbFileMap, classify_path, PAGE_FILE_CLASSES
from ioattr.collectors.libbpf import RingBuffer
from ioattr.collectors.mysqld import ServerContext, is_server
from ioattr.collectors.probes import ProbeSession
from ioattr.collectors.sqltext import normalize
from ioattr.collectors.stage_probes import StageProbes
from ioattr.collectors.targets import TargetSpec, TargetTracker
from ioattr.errors import UsageError
from ioattr.recording import RecordingWriter
from ioattr.rows import IoRows, Naming, PageRows


@dataclass
class RecordOptions:
    output: Path
    targets: TargetSpec
    interval: float = 1.0
    duration: float | None = None
    phase: str = "main"
    chunk_seconds: float = 10.0
    probe_sets: tuple[str, ...] | None = None
    innodb_pages: bool = True
    keep_literals: bool = False
    engine: EngineOptions = field(default_factory=EngineOptions)
    discard_command_output: bool = False
    log: Callable[[str], None] = field(default=lambda msg: print(f"ioattr: {msg}", file=sys.stderr))


class Recorder:
    def __init__(self, opts: RecordOptions) -> None:
        self.opts = opts
        self.stop_reason: str | None = None
        self.child_pid: int | None = None
        self.child_status: int | None = None
        self.naming = Naming()
        self.io_rows = IoRows(self.naming)
        self.page_rows = PageRows(self.naming)
        self._new_page_file = False
        self._last_tick = time.time()

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
            with ProbeSession(o.probe_sets, follow_forks=bool(o.targets.command),
                              innodb_pages=o.innodb_pages) as probes:
                for why in probes.degraded.values():
                    o.log(f"degraded: {why}")
                writer = RecordingWriter.create(
                    o.output, targets=writer_targets, interval=o.interval, phase=o.phase,
                    probe_sets=probes.active_sets, degraded=probes.degraded)
                writer.meta["innodb_pages"] = o.innodb_pages
                writer.meta["keep_literals"] = o.keep_literals
                self.stage = StageProbes(probes)
                self.file_map = InnodbFileMap(probes.map_fd("innodb_files") if o.innodb_pages else None)
                tracker = TargetTracker(o.targets, probes.map_fd("targets"))
                if o.targets.command:
                    self.child_pid, barrier_fd = self._spawn_command()
                    o.targets.pids.append(self.child_pid)
                new, _ = tracker.refresh()
                self._welcome(new, writer)
                events = RingBuffer(probes.map_fd("events"), self._on_event)
                io_drain = io_stats_drainer(probes.map_fd("io_stats"), probes.max_stats)
                page_drain = page_stats_drainer(probes.map_fd("page_stats"))
                io_drain.drain()  # baseline: what happened before we start counting
                page_drain.drain()
                if barrier_fd is not None:
                    os.write(barrier_fd, b"g")
                    os.close(barrier_fd)
                    barrier_fd = None
                o.log(f"recording {', '.join(writer_targets)} -> {o.output} "
                      f"(interval {o.interval:g}s; Ctrl-C to stop)")
                try:
                    self._loop(probes, tracker, events, io_drain, page_drain, writer)
                finally:
                    events.consume()
                    self._drain_into(io_drain, page_drain, writer, self._last_tick, time.time())
                    writer.flush(read_drops(probes.map_fd("drops")))
                    events.free()
                    self.stage.close()
                    self._describe_servers(writer)
                    for ctx in self.naming.servers.values():
                        ctx.close()
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

    # -- targets and servers ---------------------------------------------------
    def _welcome(self, pids: list[int], writer: RecordingWriter) -> None:
        """Learn what we can about new targets while they are alive."""
        for pid in pids:
            if pid == self.child_pid:
                continue  # not exec'd yet: its names would be ours
            self.naming.files.scan_process(pid)
            self.naming.tasks.remember_threads(pid)
            if is_server(pid) and pid not in self.naming.servers:
                ctx = ServerContext(pid, self.opts.engine, self.file_map)
                ctx.connect()
                if ctx.engine_error:
                    self.opts.log(f"server {pid}: {ctx.engine_error}; index names and thread roles "
                                  "will be missing, file-level attribution continues")
                ctx.refresh()
                if self.stage.available:
                    ctx.stage_status = self.stage.attach(pid)
                    if not ctx.stage_status.startswith("attached"):
                        self.opts.log(f"server {pid}: {ctx.stage_status}")
                    self.naming.stage_probes = self.stage.attached
                for err in (ctx.names.error, ctx.roles.error):
                    if err:
                        self.opts.log(f"server {pid}: {err}")
                self.naming.servers[pid] = ctx
                self._describe_servers(writer)

    def _describe_servers(self, writer: RecordingWriter) -> None:
        writer.meta["servers"] = [ctx.describe() for ctx in self.naming.servers.values()]
        writer.write_meta()

    # -- the loop -------------------------------------------------------------
    def _on_event(self, data: bytes) -> None:
        """One record of the rare event stream: an open, or a thread's name."""
        kind = int.from_bytes(data[:4], "little")
        if kind == abi.EV_OPEN and len(data) >= ctypes.sizeof(abi.OpenEvent):
            ev = abi.OpenEvent.from_buffer_copy(data)
            self.naming.files.on_open(ev)
            name = self.naming.files.names.get((int(ev.dev), int(ev.ino)))
            if int(ev.tgid) in self.naming.servers and name and classify_path(name) in PAGE_FILE_CLASSES:
                self._new_page_file = True
        elif kind == abi.EV_QUERY and len(data) >= ctypes.sizeof(abi.QueryEvent):
            ev = abi.QueryEvent.from_buffer_copy(data)
            text = ev.text[: min(int(ev.len), abi.QUERY_MAX)].decode(errors="replace")
            if int(ev.digest) not in self.naming.queries:
                self.naming.queries[int(ev.digest)] = text if self.opts.keep_literals else normalize(text)
        elif kind in (abi.EV_TASK, abi.EV_EXEC) and len(data) >= ctypes.sizeof(abi.TaskEvent):
            ev = abi.TaskEvent.from_buffer_copy(data)
            self.naming.tasks.on_task_event(int(ev.tgid), int(ev.tid), ev.comm.decode(errors="replace"),
                                            renamed=kind == abi.EV_EXEC)

    def _refresh_servers(self) -> None:
        for pid, ctx in list(self.naming.servers.items()):
            ctx.refresh(new_files=self._new_page_file, unknown_index=True, unknown_thread=True)
        self._new_page_file = False

    def _drain_into(self, io_drain: MapDrainer, page_drain: MapDrainer, writer: RecordingWriter,
                    t0: float, t1: float) -> None:
        d = io_drain.drain()
        p = page_drain.drain()
        if len(p):
            self._refresh_servers()  # names for index ids first seen in this interval
        if len(d):
            writer.add_columns(self.io_rows.columns(d, t0, t1, writer.current_phase), "io")
        if len(p):
            writer.add_columns(self.page_rows.columns(p, t0, t1, writer.current_phase), "pages")

    def _child_exited(self) -> bool:
        if self.child_pid is None:
            return False
        pid, status = os.waitpid(self.child_pid, os.WNOHANG)
        if pid == 0:
            return False
        self.child_status = os.waitstatus_to_exitcode(status)
        return True

    def _loop(self, probes: ProbeSession, tracker: TargetTracker, events: RingBuffer,
              io_drain: MapDrainer, page_drain: MapDrainer, writer: RecordingWriter) -> None:
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
            if self._new_page_file:
                self._refresh_servers()  # register new tablespaces before their first reads
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
            self._drain_into(io_drain, page_drain, writer, self._last_tick, now)
            self._last_tick = now
            next_tick += o.interval
            if next_tick < now:
                next_tick = now + o.interval
            new, gone = tracker.refresh()
            self._welcome(new, writer)
            for pid in new:
                if pid != self.child_pid and o.targets.comms and tracker.ever:
                    writer.note(f"target {self.naming.tasks.process(pid)}[{pid}] appeared")
            for pid in gone:
                if pid in o.targets.pids or o.targets.comms:
                    writer.note(f"target {self.naming.tasks.procs.get(pid, '?')}[{pid}] exited")
                ctx = self.naming.servers.pop(pid, None)
                if ctx:
                    ctx.close()
                    self.stage.detach(pid)
            for pid in tracker.current:
                self.naming.tasks.remember_threads(pid)
            if now >= next_flush:
                writer.flush(read_drops(probes.map_fd("drops")))
                next_flush = now + o.chunk_seconds

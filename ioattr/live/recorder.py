"""`ioattr record`: a LiveSession whose intervals are written to a recording.

The loop wakes at once when a phase starts (a SQL marker's ring-buffer
event, a mark's FIFO poke, a matching output line), else every 100 ms, and
drains every interval. Chunks are flushed every `chunk_seconds`. Stopping
(signal, --duration, the wrapped command exiting) always ends with a final
drain and a complete meta.json, so nothing already counted is lost.

Phases come from --phase (the first), `ioattr mark NAME`, a regex over the
wrapped command's output (--phase-pattern), statements containing
`ioattr:phase=NAME` seen by the stage probes, and --auto-phases. Each starts
in the kernel the moment it is seen (ioattr/live/session.py: the phase number every
key carries), so IO is charged to the phase in force when it was issued,
whatever the interval. At a phase start the recorder snapshots the engine and
host counters first (tagged with the phase that ended: the boundary), then
drains. A mark is acknowledged only after that snapshot.
"""
from __future__ import annotations

import dataclasses
import json
import os
import queue
import re
import select
import shlex
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ioattr import environment
from ioattr.collectors.counters import CounterCollector
from ioattr.collectors.engine import EngineError
from ioattr.collectors.targets import pid_alive
from ioattr.engines import registry
from ioattr.errors import RuntimeFailure, UsageError
from ioattr.format import control
from ioattr.format.recording import RecordingWriteError, RecordingWriter
from ioattr.live.auto_phases import AutoPhaser
from ioattr.live.memtrace import MemTrace
from ioattr.live.session import Interval, LiveSession, PhaseStart, SessionOptions
from ioattr.model.labels import drops_line


@dataclass(kw_only=True)
class RecordOptions(SessionOptions):
    """`ioattr record`: the live session's options (targets, probes, connection) and these."""

    output: Path
    interval: float = 1.0
    duration: float | None = None
    phase: str = "main"
    chunk_seconds: float = 10.0
    discard_command_output: bool = False
    phase_pattern: str | None = None
    ops_pattern: str | None = None  # the benchmark's operations in its output (ops_from_match)
    auto_phases: bool = False
    marker_wait: bool = True  # SQL markers wait (bounded) for the boundary's counters snapshot


# how long a SQL marker statement waits for its boundary snapshot (bpf/stage.bpf.c MARKER_WAIT_NS)
MARKER_WAIT_SECONDS = 2.0


# the start line's word on BPF run-time statistics (meta.json self_cost; ioattr/live/self_cost.py)
STATS_NOTE = {"ioattr": "BPF run-time stats on until the stop",
              "sysctl": "BPF run-time stats on (kernel.bpf_stats_enabled)",
              "off": "BPF run-time stats unavailable: own cost not counted"}


def compile_phase_pattern(pattern: str, option: str = "--phase-pattern") -> re.Pattern:
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise UsageError(f"{option} is not a valid regular expression: {e}") from e
    return rx


def ops_from_match(m: re.Match) -> float:
    """The benchmark operations a matching output line counts (--ops-pattern): the number in
    group 'ops', else in group 1 (sysbench's `total number of events: 1154`), else 1 (a line
    per operation). A group that holds no number counts nothing."""
    text = m.group("ops") if "ops" in m.re.groupindex else (m.group(1) if m.re.groups else None)
    if text is None:
        return 0.0 if m.re.groups else 1.0
    try:
        return max(float(text.replace(",", "")), 0.0)
    except ValueError:
        return 0.0


def phase_tail_hint(phase: str, last_statement: float | None, end: float, interval: float,
                    wrapped: bool, stop_reason: str | None) -> str | None:
    """The one line that says the last phase ran on idle after the benchmark (so its per-second
    rates are diluted), or None when that is not the case or cannot be known.

    Only when relevant: a wrapped command ends the recording itself, `ioattr mark --stop` is an
    exact end, and without statements seen (no server probes) nothing says the tail was idle.
    Idle means no statement of a target for two intervals and at least 2 s."""
    if wrapped or last_statement is None or stop_reason == "ioattr mark --stop":
        return None
    idle = end - last_statement
    if idle < max(2.0, 2 * interval):
        return None
    return (f"phase {phase} ran {idle:.0f} s past its last statement (idle time counted in its rates); "
            f"for exact phase ends: ioattr record ... -- CMD")


def phase_from_match(m: re.Match) -> str:
    """The phase a matching output line names: group 'phase', else group 1, else the match."""
    if "phase" in m.re.groupindex and m.group("phase"):
        return m.group("phase")
    if m.re.groups and m.group(1):
        return m.group(1)
    return m.group(0)


class Recorder:
    def __init__(self, opts: RecordOptions) -> None:
        self.opts = opts
        self.stop_reason: str | None = None
        self.child_pid: int | None = None
        self.child_status: int | None = None
        self.phase_queue: "queue.Queue[PhaseStart]" = queue.Queue()
        self.session: LiveSession | None = None  # set while recording (the output thread starts phases)
        self._wake_r, self._wake_w = os.pipe()  # "look now" from the output thread
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._pattern = compile_phase_pattern(opts.phase_pattern) if opts.phase_pattern else None
        self._ops_pattern = compile_phase_pattern(opts.ops_pattern, "--ops-pattern") if opts.ops_pattern else None
        # (time seen, operations) from the output thread, added to the phase in force at that time
        self._ops_seen: "queue.Queue[tuple[float, float]]" = queue.Queue()
        self._output_thread: threading.Thread | None = None
        self.auto = AutoPhaser() if opts.auto_phases else None
        self._last_statement: float | None = None  # end of the last interval with target statements

    # -- the wrapped command ---------------------------------------------------------
    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_reason = signal.Signals(signum).name

    def _spawn_command(self) -> tuple[int, int]:
        """Fork the wrapped command, held at a barrier until it is a target."""
        cmd = self.opts.targets.command
        if shutil.which(cmd[0]) is None and not os.path.exists(cmd[0]):
            raise UsageError(f"command not found: {cmd[0]}")
        r, w = os.pipe()
        out_r = out_w = None
        if self._pattern is not None or self._ops_pattern is not None:
            out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            try:
                os.close(w)
                go = os.read(r, 1)
                os.close(r)
                if go != b"g":
                    os._exit(127)  # ioattr failed before tracing began: don't run it untraced
                if out_w is not None:
                    os.dup2(out_w, 1)
                    os.dup2(out_w, 2)
                    os.close(out_w)
                    os.close(out_r)
                elif self.opts.discard_command_output:
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 1)
                    os.close(null)
                os.execvp(cmd[0], cmd)
            except OSError as e:
                print(f"ioattr: cannot run {cmd[0]}: {e.strerror}", file=sys.stderr)
            os._exit(127)
        os.close(r)
        if out_r is not None:
            os.close(out_w)
            self._output_thread = threading.Thread(target=self._watch_output, args=(out_r,), daemon=True)
            self._output_thread.start()
        return pid, w

    def _watch_output(self, fd: int) -> None:
        """Tee the command's output to ours and turn matching lines into phase changes."""
        with os.fdopen(fd, "rb", buffering=0) as f:
            for raw in iter(f.readline, b""):
                if not self.opts.discard_command_output:
                    sys.stdout.buffer.write(raw)
                    sys.stdout.flush()
                line = raw.decode(errors="replace")
                ops = self._ops_pattern.search(line) if self._ops_pattern else None
                if ops:
                    self._ops_seen.put((time.time(), ops_from_match(ops)))
                m = self._pattern.search(line) if self._pattern else None
                if m and self.session is not None:
                    name = phase_from_match(m)
                    try:
                        # start it in the kernel now, from this thread: what the command does after
                        # printing the line is the new phase's (the main loop names and snapshots it)
                        start = self.session.begin_phase(name, "output")
                    except Exception:  # the session is closing
                        start = PhaseStart(time.time(), name, 0, "output")
                    self.phase_queue.put(start)
                    try:
                        os.write(self._wake_w, b"p")
                    except OSError:
                        pass

    # -- the run ---------------------------------------------------------------------
    def run(self) -> int:
        o = self.opts
        # a wrapped command's children are followed (it starts the workload)
        session = LiveSession(dataclasses.replace(o, follow_forks=bool(o.targets.command)))
        barrier_fd = None
        failure: RecordingWriteError | None = None
        prev_handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with session:
                writer = RecordingWriter.create(
                    o.output, targets=o.targets.describe(), interval=o.interval, phase=o.phase,
                    probe_sets=session.active_sets, degraded=session.degraded)
                writer.meta.update(pages=o.pages, keep_literals=o.keep_literals,
                                   phase_pattern=o.phase_pattern, ops_pattern=o.ops_pattern,
                                   max_entries={"io_stats": o.max_stats},
                                   syscall_hook=session.probes.syscall_hook if session.probes else None)
                session.name_phase(o.phase)
                self.session = session
                if o.targets.command:
                    self.child_pid, barrier_fd = self._spawn_command()
                    o.targets.pids.append(self.child_pid)
                session.start(skip_pid=self.child_pid)
                self._warn_unnamed(session, writer)
                self._describe(session, writer)
                # engine and host counters: the baseline snapshot (collectors/counters.py)
                self.counters = CounterCollector(note=lambda text, detail: self._counters_note(writer, text, detail))
                self._counters(session, writer, force=True)
                ctl = control.register(o.output)
                if barrier_fd is not None:
                    os.write(barrier_fd, b"g")
                    os.close(barrier_fd)
                    barrier_fd = None
                try:
                    try:
                        if o.marker_wait:
                            session.ack_phases()  # from now on SQL markers wait for their boundary snapshot
                        # announced only now: a workload started on this line has its first marker
                        # held for the boundary snapshot like every later one
                        mark = f"ioattr mark --recording {shlex.quote(str(o.output.resolve()))} NAME"
                        o.log(f"recording {', '.join(o.targets.describe())} -> {o.output} "
                              f"(interval {o.interval:g}s; {STATS_NOTE[session.cost.source]}; Ctrl-C to stop; "
                              f"phases: {mark})")  # the mark command last: copied from the line's end
                        self._loop(session, writer, ctl)
                    finally:
                        session.ack_phases(0)  # nobody will snapshot any more: markers don't wait
                        if writer.broken is None:  # after a write error nothing more is written
                            self._take_ops(writer, final=True)
                            session.sweep_inflight()  # requests still open count in the last interval
                            self._write(writer, session.tick())
                            hint = phase_tail_hint(writer.current_phase, self._last_statement, time.time(),
                                                   o.interval, bool(o.targets.command), self.stop_reason)
                            if hint:
                                o.log(hint)
                                writer.note(hint)
                            self._counters(session, writer, force=True)  # engine and host counters, last
                            self._flush(session, writer)
                            warn = drops_line(writer.meta.get("dropped"), writer.meta.get("max_entries"))
                            if warn:
                                o.log(warn)  # never silent: also in meta.json and every report
                            self._describe(session, writer, final=True)
                            writer.close("complete")
                except RecordingWriteError as e:
                    failure = e
                    writer.abandon(e)
                finally:
                    ctl.unregister()
                    self.session = None
            # the session is closed: nothing of ours is attached any more
            if failure is not None:
                self._after_write_failure(failure)
        finally:
            for s, h in prev_handlers.items():
                signal.signal(s, h)
            if barrier_fd is not None:
                os.close(barrier_fd)
            for fd in (self._wake_r, self._wake_w):
                try:
                    os.close(fd)
                except OSError:
                    pass
        return self._exit_code()

    def _after_write_failure(self, failure: RecordingWriteError) -> None:
        """The recording can't be written (disk full...): tracing has stopped. A wrapped
        command is left alone to finish its work (waited for, so it is not orphaned; a
        SIGINT/SIGTERM to ioattr meanwhile is passed on to it). Then exit 1 with one line."""
        o = self.opts
        chunks = f"{o.output} keeps the {self._chunks_written(failure)} chunks written before"
        if self.child_pid is not None and self.child_status is None:
            o.log(f"{failure.reason}: recording stopped; waiting for the command "
                  f"(pid {self.child_pid}) to finish")
            self._wait_child()
            msg = f"the command exited with status {self.child_status}"
            chunks += f"; {msg}"
        raise RuntimeFailure(f"{failure}; recording stopped; {chunks}") from None

    @staticmethod
    def _chunks_written(failure: RecordingWriteError) -> int:
        try:
            meta = json.loads((failure.rec / "meta.json").read_text())
            return int(meta.get("chunks") or 0)
        except (OSError, ValueError):
            return 0

    def _wait_child(self) -> None:
        """Wait for the command; a SIGINT/SIGTERM that reaches ioattr meanwhile goes on to it."""
        self.stop_reason = None        # what stopped the recording is not for the command
        while True:
            if self.stop_reason:
                self.stop_reason = None
                try:
                    os.kill(self.child_pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            try:
                pid, status = os.waitpid(self.child_pid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid:
                self.child_status = os.waitstatus_to_exitcode(status)
                return
            time.sleep(0.1)

    def _counters_note(self, writer: RecordingWriter, text: str, detail: str = "") -> None:
        writer.note(f"{text}; {detail}" if detail else text)  # the whole of it in meta.json
        # a refused login was said once already (LiveSession: "cannot connect ... engine counters
        # will be missing"); the note stays in meta.json, stderr gets one line per problem
        if "no engine counters (cannot connect" not in text:
            self.opts.log(text)

    def _exit_code(self) -> int:
        if self.child_status is not None and self.child_status != 0:
            self.opts.log(f"the command exited with status {self.child_status}; the recording is complete")
            return 1
        return 0

    @staticmethod
    def _tablespace_sizes(session: LiveSession, writer: RecordingWriter) -> None:
        """meta.json "tablespace_sizes": {server pid: {schema.table: file bytes}} at the end of the
        recording, so explain can compare the data read with the buffer pool. One query of InnoDB's
        dictionary per connected server (its engine adapters' object_sizes); a server that can't
        answer is left out (unknown, never 0)."""
        sizes: dict[str, dict[str, int]] = dict(writer.meta.get("tablespace_sizes") or {})
        # a native server (PostgreSQL) too: its tables per database (compare's data on disk)
        for pid, ctx in {**session.naming.servers, **session.native_servers}.items():
            if getattr(ctx, "engine", None) is None:
                continue
            try:
                sizes[str(pid)] = {t: n for e in ctx.engines for t, n in e.object_sizes(ctx.engine).items()}
            except (EngineError, OSError, ValueError):  # server gone or odd answer: stays unknown
                continue
        if sizes:
            writer.meta["tablespace_sizes"] = sizes

    @staticmethod
    def _flush(session: LiveSession, writer: RecordingWriter) -> None:
        """Write the buffered rows as a chunk, with what was not counted (drops) and the block
        requests counted without a latency (block_untimed, docs/block.md) in meta.json."""
        untimed = session.block_untimed()
        if untimed is not None:
            writer.meta["block_untimed"] = untimed
        # what recording costs (ioattr/live/self_cost.py), kept current with every chunk
        writer.meta["self_cost"] = session.self_cost()
        writer.flush(session.drops())

    @staticmethod
    def _describe(session: LiveSession, writer: RecordingWriter, final: bool = False) -> None:
        writer.meta["servers"] = session.servers()
        writer.meta["stage_probes"] = session.naming.stage_probes
        # "statement" (digests; stage null inside statements), "full" (+ parse/optimize/execute/
        # commit in every MariaDB server: --stages full, or auto where each server's THD is read)
        # or null (no stage probes attached); recordings without the key are "full"
        writer.meta["stages"] = session.naming.stages
        # the optimizer's index dives are stage "estimate" in both modes (collectors/stage_probes.py)
        writer.meta["estimate_stage"] = bool(session.stage.available and session.stage.estimating)
        # per server pid: where statements start ("wire", "uprobe", or "wire+uprobe" after the
        # fallback for what the wire does not show in clear) and why (collectors/stage_probes.py)
        writer.meta["statement_sources"] = session.stage.describe_sources() if session.stage.available else {}
        # the wire reader's hook, when it is attached: "tp_btf:sock_recv_length" (the socket
        # layer, the default) or "syscalls:sys_exit_recvfrom" (kernels without that tracepoint)
        writer.meta["wire_hook"] = session.stage.wire_hook if session.stage.available else ""
        if session.stage.available and session.stage.mode != "statement":
            # per server pid: where the stages inside statements come from, "thd" (the server's
            # THD::proc_info, read when a statement does IO), "uprobes" (--stages full) or "none"
            # (--stages auto), and why not the THD; and the IO inside statements whose server stage
            # could not be read or named (stage `statement` instead)
            writer.meta["stage_sources"] = session.stage.describe_stage_sources()
            writer.meta["thd_stage_misses"] = session.stage.thd_misses()
        fell_back = {pid: src["why"] for pid, src in writer.meta["statement_sources"].items()
                     if src["source"] == "wire+uprobe"}
        if fell_back and isinstance(writer.meta.get("degraded"), dict):
            # the statements of connections the wire could not read, before the fallback, have no digest
            writer.meta["degraded"]["statements"] = "; ".join(
                f"server {pid}: {why}: dispatch_command uprobe attached as the fallback, statements "
                "before it on those connections are not digested" for pid, why in fell_back.items())
        # every statement digest's text (literals stripped unless --keep-literals): rows drained
        # before their text arrived get it at report time
        writer.meta["queries"] = {f"{d:016x}": q for d, q in session.naming.queries.items()}
        # the latest name of every index id: a name read mid-CREATE INDEX (MariaDB's temporary
        # "\xffname") or before a RENAME is corrected at report time. The last one always
        # re-reads: a table created less than a refresh period before the end (a short
        # recording with DDL) would otherwise keep its pages unnamed.
        names: dict[str, str] = {}
        for ctx in session.naming.servers.values():
            ctx.names.refresh_if_stale(0.0 if final else 10.0)
            names.update({str(i): n for i, n in ctx.names.names.items()})
        writer.meta["indexes"] = names
        # what the engines know of each file by path (MyRocks: an SST's level and the indexes it
        # holds), gathered as files come and go; the last one re-reads every catalog
        catalog: dict[str, dict] = {}
        for ctx in session.naming.servers.values():
            file_table = getattr(ctx, "file_table", None)  # MySQL/MariaDB servers' contexts
            if file_table is not None:
                catalog.update(file_table(final))
        if catalog or "files" in writer.meta:
            writer.meta["files"] = catalog
        # PostgreSQL's data files: path -> database.schema.relation, kind, fork, segment (the
        # names re-read at the end: relfilenodes change under TRUNCATE, VACUUM FULL, REINDEX...)
        relations = session.relation_files(final=final)
        if relations or "relations" in writer.meta:
            writer.meta["relations"] = relations
        if final:
            Recorder._tablespace_sizes(session, writer)
        # the recorder's name tables (bounded: collectors/names.py), to see they don't grow forever
        writer.meta["name_tables"] = {"files": len(session.naming.files.names),
                                      "processes": len(session.naming.tasks.procs),
                                      "threads": len(session.naming.tasks.threads)}
        writer.write_meta()

    def _warn_unnamed(self, session: LiveSession, writer: RecordingWriter) -> None:
        """One line per --pid target that is no database server ioattr can name: it is still
        traced, but only its own file IO (a silent empty report is the slip to avoid). The
        wrapped command (`-- CMD`) is a target by its pid too, but no -p slip: not said."""
        for pid in session.unnamed_pids():
            if pid == self.child_pid:
                continue
            comm = session.naming.tasks.process(pid) or "?"
            worker = registry.server_of(pid)
            if worker is not None and worker[1] not in session.opts.targets.pids:
                # a process its server forked (a PostgreSQL backend): the server's pid is the one to give
                text = (f"pid {pid} is a {worker[0].name} backend, not its server: record --pid {worker[1]} "
                        "(the postmaster) for relation names, roles and queries")
            else:
                text = (f"pid {pid} ({comm}) is not a database server ioattr can name: only its own file IO "
                        f"is traced (no index, page, query or role names)")
            self.opts.log(text)
            writer.note(text)

    def _write(self, writer: RecordingWriter, iv: Interval) -> None:
        if iv.statements is not None and int(np.sum(iv.statements["count"])) > 0:
            self._last_statement = iv.end  # for phase_tail_hint
        if iv.io is not None:
            writer.add_columns(iv.io, "io")
        if iv.pages is not None:
            writer.add_columns(iv.pages, "pages")
        if iv.statements is not None:
            writer.add_columns(iv.statements, "statements")

    # -- engine and host counters (collectors/counters.py) ---------------------------
    def _counters(self, session: LiveSession, writer: RecordingWriter, force: bool = False,
                  phase: str | None = None) -> None:
        """One counters snapshot right after a drain (or at a phase boundary, tagged with the
        phase that ended: `phase`); the settings snapshot into meta.json."""
        cols = self.counters.collect(session.counter_servers(), list(session.tracker.current),
                                     session.phase if phase is None else phase, force=force)
        if cols is not None:
            writer.add_columns(cols, "counters")
        # the engines' file catalogs (MyRocks' SSTs) with them: every interval where files
        # changed, and always at a phase boundary, so a file that lived across one is named
        for ctx in list(session.naming.servers.values()):
            if hasattr(ctx, "refresh_catalogs"):
                ctx.refresh_catalogs(force=force)
        if self.counters.settings != writer.meta.get("settings"):
            writer.meta["settings"] = dict(self.counters.settings)
            writer.write_meta()
    # -- end engine and host counters ----------------------------------------------

    def _auto_phase(self, session: LiveSession, writer: RecordingWriter, iv: Interval) -> None:
        """--auto-phases: an interval whose statement mix differs starts a phase, itself included.

        The phase starts where that interval started (the previous drain, where the last
        counters snapshot was taken: the boundary), so the interval's rows of the phase in
        force are relabelled, and the session renames that phase from here on."""
        if self.auto is None:
            return
        name = self.auto.observe(iv.statements, iv.io)
        if name is None:
            return
        old = writer.current_phase
        for cols in (iv.io, iv.pages, iv.statements):
            if cols is not None:
                cols["phase"] = [name if p == old else p for p in cols["phase"]]
        start = max(iv.start, float(writer.meta["phases"][-1]["start"]))
        writer.start_phase(name, start, source="auto")
        session.name_phase(name)
        self.opts.log(f"phase {name} (auto)")

    def _child_exited(self) -> bool:
        if self.child_pid is None:
            return False
        pid, status = os.waitpid(self.child_pid, os.WNOHANG)
        if pid == 0:
            return False
        self.child_status = os.waitstatus_to_exitcode(status)
        return True

    def _phase_changes(self, session: LiveSession, ctl: "control.Control") -> tuple[list[PhaseStart], list]:
        """Every phase started since the last look, in the order the kernel saw them, and the
        mark requests to acknowledge once their boundary snapshot is taken."""
        out = session.take_phase_starts()  # SQL markers: started by the probe
        marks = ctl.take_marks()
        for m in marks:  # ioattr mark --ops: the phase in force when it asked (before its own phase)
            if m.ops is not None:
                self._ops_seen.put((m.time, m.ops))
        out += [session.begin_phase(m.name, "mark") for m in marks if m.name is not None]
        if not out:  # --ops alone: counted (the next _take_ops places them by time), nothing to wait for
            for m in marks:
                m.ack()
            marks = []
        while not self.phase_queue.empty():
            out.append(self.phase_queue.get_nowait())
        return sorted(out, key=lambda p: (p.seq or 1 << 62, p.at)), marks

    def _boundary(self, session: LiveSession, writer: RecordingWriter, starts: list[PhaseStart],
                  marks: list["control.Mark"]) -> None:
        """Phases started: snapshot the counters at once (they close the phase that ended),
        then release the SQL markers and acknowledge the marks (`ioattr mark` returns), then
        record the new phases and drain (rows are split by phase anyway)."""
        changes = []
        current = writer.current_phase
        for p in starts:
            if p.name != current:
                changes.append(p)
                current = p.name
        if changes:
            # every source (engine status, INNODB_METRICS, P_S, /proc...) while a SQL marker's
            # statement still waits in its probe and `ioattr mark` has not returned: no IO or
            # statement of the new phase can be in it
            snapshot_at = time.time()
            self._counters(session, writer, force=True, phase=writer.current_phase)
            self._note_late_boundaries(writer, changes, snapshot_at)
        if self.opts.marker_wait:
            session.ack_phases()  # a SQL marker's statement goes on now (stage.bpf.c wait_for_recorder)
        for m in marks:
            m.ack()  # `ioattr mark` returns
        if not changes:
            return
        for p in changes:
            writer.start_phase(p.name, p.at, source=p.source)
            self.opts.log(f"phase {p.name} ({p.source})")
        self._write(writer, session.tick())

    def _note_late_boundaries(self, writer: RecordingWriter, changes: list[PhaseStart], snapshot_at: float) -> None:
        """Say so when a SQL marker had stopped waiting (MARKER_WAIT_SECONDS, stage.bpf.c
        MARKER_WAIT_NS) before its boundary snapshot began: the statements its connection ran
        meanwhile are in the engine counters of the phase before (e.g. Com_select), while our
        own rows stay exact (the kernel tags them). Without this note such a shift looks like
        a miscount of ioattr's own statements."""
        if not self.opts.marker_wait:
            return
        for p in changes:
            late = snapshot_at - p.at
            if p.source == "sql" and late > MARKER_WAIT_SECONDS:
                text = (f"phase {p.name}: the engine counters at its start were read {late:.2f} s after its "
                        f"SQL marker, which waits at most {MARKER_WAIT_SECONDS:g} s (the recorder was "
                        f"busy or waiting for a CPU): statements run meanwhile count in the engine "
                        f"counters of the phase before it")
                writer.note(text)
                self.opts.log(text)

    def _take_ops(self, writer: RecordingWriter, final: bool = False) -> None:
        """--ops-pattern and `ioattr mark --ops`: add the operations counted to meta.json's phase
        ("ops") in force when each line was read or the mark asked. At the end, the command's last
        lines first (sysbench prints its total after its run): its output is read to the end, a
        bounded wait. A phase no operations were given for keeps none (unknown), unless the
        recording has --ops-pattern: then it counted 0."""
        if self._ops_pattern is None and self._ops_seen.empty():
            return
        if final and self._ops_pattern is not None and self._output_thread is not None \
                and self.child_status is not None:
            self._output_thread.join(timeout=5.0)
        phases = writer.meta["phases"]
        while True:
            try:
                at, n = self._ops_seen.get_nowait()
            except queue.Empty:
                break
            phase = next((p for p in reversed(phases) if float(p["start"]) <= at), phases[0])
            phase["ops"] = (phase.get("ops") or 0) + (int(n) if float(n).is_integer() else n)
        if final and self._ops_pattern is not None:
            for p in phases:  # a pattern that never matched: 0 operations, said as such
                p.setdefault("ops", 0)

    def _phases(self, session: LiveSession, writer: RecordingWriter, ctl: "control.Control") -> None:
        """Deal with every phase started since the last look (cheap when none did)."""
        self._take_ops(writer)
        starts, marks = self._phase_changes(session, ctl)
        if starts:
            self._boundary(session, writer, starts, marks)

    def _wait(self, session: LiveSession, ctl: "control.Control", timeout: float) -> None:
        """Sleep until a phase may have started (ring-buffer wakeup, mark FIFO, output line)
        or `timeout` passes."""
        fds = [self._wake_r, session.events.epoll_fd()]
        if ctl.wake_fd is not None:
            fds.append(ctl.wake_fd)
        try:
            ready, _, _ = select.select(fds, [], [], max(0.0, timeout))
        except (OSError, ValueError):
            time.sleep(max(0.0, timeout))
            return
        if self._wake_r in ready:
            control.drain_fd(self._wake_r)

    def _pids_gone(self) -> bool:
        """Only --pid targets were asked for and none of them runs any more: nothing can be
        traced again (a restarted server is a new pid; --comm follows restarts), so stop
        instead of recording nothing until Ctrl-C."""
        t = self.opts.targets
        if not t.pids or t.comms or t.command or t.talked_to_servers:
            return False
        return not any(pid_alive(p) for p in t.pids)

    def _loop(self, session: LiveSession, writer: RecordingWriter, ctl: "control.Control") -> None:
        o = self.opts
        start = time.time()
        next_tick = start + o.interval
        next_flush = start + o.chunk_seconds
        memtrace = MemTrace(environment.get("IOATTR_MEMTRACE") or None)  # a debugging aid (memtrace.py)
        while True:
            self._wait(session, ctl, min(0.1, next_tick - time.time()))
            session.poll()
            self._phases(session, writer, ctl)
            now = time.time()
            if self._child_exited():
                self.stop_reason = "command exited"
            if o.duration is not None and now - start >= o.duration:
                self.stop_reason = "duration reached"
            if ctl.stop_requested():
                self.stop_reason = "ioattr mark --stop"
            if self.stop_reason:
                o.log(f"stopping: {self.stop_reason}")
                return
            if now < next_tick:
                continue
            iv = session.tick(now)
            self._auto_phase(session, writer, iv)
            self._write(writer, iv)
            # a phase that started while draining gets its boundary snapshot first (a SQL marker
            # waits for it); then the interval's snapshot, in the phase in force now
            self._phases(session, writer, ctl)
            self._counters(session, writer)  # engine and host counters, in the interval's phase
            next_tick += o.interval
            if next_tick < now:
                next_tick = now + o.interval
            changes = session.refresh_targets(skip_pid=self.child_pid)
            for pid in changes.appeared:
                # a forking server's children (PostgreSQL's backends) come and go all the time:
                # followed from their fork, not noted one by one
                if pid != self.child_pid and o.targets.comms and pid not in session.followed_pids:
                    writer.note(f"target {session.naming.tasks.process(pid)}[{pid}] appeared")
            for pid in changes.exited:
                if (pid in o.targets.pids or o.targets.comms) and pid not in session.followed_pids:
                    writer.note(f"target {session.naming.tasks.procs.get(pid, '?')}[{pid}] exited")
            if changes.appeared or changes.exited:
                self._describe(session, writer)
            if self._pids_gone():
                self.stop_reason = "every --pid target exited"  # said at the next turn, then drained
            if now >= next_flush:
                self._phases(session, writer, ctl)
                self._describe(session, writer)
                self._flush(session, writer)
                next_flush = now + o.chunk_seconds
                if memtrace.due():
                    memtrace.sample(phases=len(writer.meta["phases"]), notes=len(writer.meta["notes"]),
                                    queries=len(session.naming.queries), files=len(session.naming.files.names),
                                    threads=len(session.naming.tasks.threads),
                                    io_keys=session.io_drain.entries, page_keys=session.page_drain.entries,
                                    meta_bytes=len(json.dumps(writer.meta)))

"""A live attribution session: attach to targets, then hand out named
per-interval deltas. `record` writes them to a recording; `top` and the
exporter show or export them. One implementation, so the three agree.

    with LiveSession(opts) as s:
        while ...:
            s.poll()                 # every ~100 ms: event stream, new tablespaces
            iv = s.tick()            # every interval: drained deltas as named columns

Phases are exact whatever the interval: the kernel keeps the current phase's
sequence number (map phase_seq) and every aggregation key carries the one in
force when its IO was issued. A statement with `ioattr:phase=NAME` bumps it in
BPF at the statement's start; begin_phase() bumps it for marks and output
patterns. The session names each number and labels every drained row with the
phase of its key, so an interval that spans a phase change is split exactly.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
import dataclasses
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ioattr.collectors import abi, features, libbpf
from ioattr.collectors.drain import Deltas, io_stats_drainer, page_stats_drainer, read_drops, statement_drainer
from ioattr.collectors.engine import HIDDEN_QUERIES, EngineError, EngineOptions
from ioattr.collectors.libbpf import RingBuffer
from ioattr.collectors.mysqld import ServerContext, is_server
from ioattr.collectors.names import cap_oldest
from ioattr.collectors.probes import MAX_STATS_DEFAULT, ProbeSession
from ioattr.collectors.prog_stats import skipped_runs
from ioattr.collectors.sqltext import normalize, phase_marker
from ioattr.collectors.stage_probes import DEFAULT_STAGE_MODE, DEFAULT_STATEMENT_SOURCE, StageProbes
from ioattr.collectors.targets import (FLAG_EXPLICIT, FLAG_FOLLOWED, TargetSpec, TargetTracker, open_inodes,
                                       pids_with_comm, slot_of)
from ioattr.engines import registry as engines
from ioattr.engines.base import EngineAdapter, FileRegistry, NativeProbes, NativeServer, PageFile
from ioattr.format.schema import Columns
from ioattr.live.rows import IoRows, Naming, PageRows, StatementRows
from ioattr.live.self_cost import SelfCost
from ioattr.model.labels import PROG_SKIPPED
from ioattr.model.self_cost import SelfCostSample


THREAD_SCAN_SECONDS = 5.0  # how often refresh_targets() re-reads every target thread's name
MAX_PROCESS_ROLES = 100_000  # roles of exited processes kept (a forking server's backends come and go)
# the targets' open files are scanned before each drain (~10 us an fd) up to this many fds in
# all; past it an interval's reused inodes keep every earlier path (collectors/names.py)
OPEN_FILES_SCAN_MAX = 2048
# A block request the device finished this long after its issue without block_rq_complete
# reaching our program is counted at the next drain, untimed (ProbeSession.sweep_block):
# far past any normal completion, well inside a recording interval.
SWEEP_MIN_AGE = 1.0


@dataclass(kw_only=True)
class SessionOptions:
    """What every command that attaches to servers configures (cli/definition.py declares the
    options once); RecordOptions, TopOptions and ExporterOptions extend it with their own."""

    targets: TargetSpec
    probe_sets: tuple[str, ...] | None = None
    pages: bool = True  # classify the pages of the engines' page files (record --no-pages)
    keep_literals: bool = False
    follow_forks: bool = False
    stages: str = DEFAULT_STAGE_MODE  # statement: digests + index dives; auto/full: + every stage (THD, or uprobes in full)
    statements: str = DEFAULT_STATEMENT_SOURCE  # where statements start: auto, wire, uprobe (stage_probes.py)
    max_stats: int = MAX_STATS_DEFAULT  # io_stats capacity (--max-entries); a full map counts drops
    engine: EngineOptions = field(default_factory=EngineOptions)
    # kernel BPF run-time statistics held on while attached, so the session knows its own
    # cost (ioattr/live/self_cost.py; ~2 clock reads a program run)
    run_time_stats: bool = True
    log: Callable[[str], None] = field(default=lambda msg: print(f"ioattr: {msg}", file=sys.stderr))


@dataclass
class Interval:
    """One interval's deltas, named, column-wise (see ioattr.format.schema)."""

    start: float
    end: float
    io: Columns | None      # io table columns, None when nothing moved
    pages: Columns | None   # pages table columns
    statements: Columns | None = None  # statements started (stage probes)
    io_rows: int = 0
    page_rows: int = 0
    drain_seconds: float = 0.0
    map_entries: int = 0


@dataclass
class PhaseStart:
    """A phase that started: when, its name, the sequence number its IO carries, and how."""

    at: float      # unix time it started (a SQL marker's: when the BPF probe saw the statement)
    name: str
    seq: int
    source: str    # "sql", "mark", "output", "auto"


@dataclass
class TargetChanges:
    appeared: list[int]
    exited: list[int]


class LiveSession:
    def __init__(self, opts: SessionOptions) -> None:
        self.opts = opts
        self.naming = Naming()
        self.io_rows = IoRows(self.naming)
        self.page_rows = PageRows(self.naming)
        self.stmt_rows = StatementRows(self.naming)
        self.stmt_drain = None
        self.probes: ProbeSession | None = None
        self.file_map: FileRegistry | None = None  # the page engine's registrar of page files (open())
        self.phase_markers: list[PhaseStart] = []  # from `ioattr:phase=NAME` statements
        self._new_page_file = False
        self._last_tick = time.time()
        self._next_thread_scan = 0.0
        # phase sequence number (low 16 bits, as keys carry it) -> name; begin_phase() runs in
        # the recorder's output-watching thread too, hence the lock
        self._phase_lock = threading.Lock()
        self._seq = abi.PHASE_FIRST
        self._phase_names: dict[int, str] = {abi.PHASE_FIRST: "main"}
        self._bump_fd: int | None = None
        self._ack_fd: int | None = None  # stage.bpf.c phase_ack: SQL markers wait for it
        self.past_servers: list[dict] = []
        # servers of an engine's own (not MySQL/MariaDB: PostgreSQL's postmasters), by pid:
        # their adapters' server_context() (ioattr/engines/base.py)
        self.native_servers: dict[int, NativeServer] = {}
        # their engines' probes (statements from their wire, async IO), by engine name
        self.native_probes: dict[str, NativeProbes] = {}
        self._native_probes_of: dict[int, NativeProbes] = {}  # by server pid
        self._degraded_said: set[str] = set()  # engines whose probes' degraded line was said
        self.followed_pids: set[int] = set()  # targets the kernel added at their fork
        self.follow_forks = False
        self._process_roles: dict[int, str] = {}
        self._not_relations: set[str] = set()  # file names relation_files() parsed as none
        self._wire = False  # the wire reader loaded with the engines' protocols (ProbeSession pg_wire)
        self.cost = SelfCost()  # our programs' run time and our CPU (meta.json self_cost)

    # -- attach / detach ---------------------------------------------------------
    def __enter__(self) -> "LiveSession":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        o = self.opts
        features.require_tracing_host()
        o.targets.validate()
        # a server that forks a process per connection (PostgreSQL) is traced with its children
        # from their fork on, or the backends that do its IO are never seen; mysqld/mariadbd do
        # not fork, so their sessions keep fork following off unless a command is wrapped
        self.follow_forks = o.follow_forks or self._forking_targets()
        self._wire = self._may_trace_native()
        self.probes = ProbeSession(o.probe_sets, follow_forks=self.follow_forks, pages=o.pages,
                                   fine_stages=o.stages != "statement", max_stats=o.max_stats,
                                   pg_wire=self._wire)
        self.probes.open()
        self.cost.open(o.run_time_stats)
        try:
            for why in self.probes.degraded.values():
                o.log(f"degraded: {why}")
            for note in self.probes.notes.values():  # e.g. the syscall hook fell back to raw
                o.log(note)
            pages = engines.page_engine()
            self.file_map = pages.file_registry(self.probes.map_fd(pages.file_map_name) if o.pages else None)
            self.stage = StageProbes(self.probes, o.statements, engines.statement_probes(), stages=o.stages)
            self.naming.process_role = self._process_role
            self.naming.native_page = self._native_page
            self.naming.files.cwd_hint = self._cwd_hint
            self.tracker = TargetTracker(o.targets, self.probes.map_fd("targets"),
                                         self.probes.shared_fds.get("target_slots"))
            self._init_phases()
            self.events = RingBuffer(self.probes.map_fd("events"), self._on_event)
            self.io_drain = io_stats_drainer(self.probes.map_fd("io_stats"), self.probes.max_stats)
            self.page_drain = page_stats_drainer(self.probes.map_fd("page_stats"))
            if "stmt_stats" in self.probes.shared_fds:
                self.stmt_drain = statement_drainer(self.probes.map_fd("stmt_stats"),
                                                    self.probes.shared_fds.get("stmt_slots"))
        except Exception:
            self.probes.close()
            self.cost.close()
            raise

    def start(self, skip_pid: int | None = None) -> TargetChanges:
        """Add the targets, take the baseline: what happened before now is not counted."""
        new, _ = self.tracker.refresh()
        self.welcome(new, skip_pid)
        self._note_open_files()
        self.io_drain.drain()
        self.page_drain.drain()
        if self.stmt_drain is not None:
            self.stmt_drain.drain()
        self._last_tick = time.time()
        self.naming.files.end_interval()  # the baseline begins the first interval
        self.cost.restart()
        return TargetChanges(new, [])

    def close(self) -> None:
        if self.probes is None:
            return
        try:
            self.events.consume()
        except Exception:
            pass
        self.events.free()
        self.stage.close()
        for probes in self.native_probes.values():
            probes.close()
        for ctx in self.naming.servers.values():
            ctx.close()
        for native in self.native_servers.values():
            native.close()
        self.probes.close()
        self.probes = None
        self.cost.close()

    # -- what we know ------------------------------------------------------------
    @property
    def active_sets(self) -> list[str]:
        return self.probes.active_sets if self.probes else []

    @property
    def degraded(self) -> dict[str, str]:
        return self.probes.degraded if self.probes else {}

    def drops(self) -> dict[str, int]:
        """What was not counted, by reason: the drops map (a full map or ring buffer), plus
        "prog_skipped", the runs of our programs the kernel skipped (recursion_misses)."""
        if not self.probes:
            return {}
        out = read_drops(self.probes.map_fd("drops"))
        out[PROG_SKIPPED] = skipped_runs(self.probes.program_fds())
        return out

    def self_cost(self) -> SelfCostSample:
        """Our programs' runs and run time, and this process's CPU, since start()
        (meta.json self_cost; ioattr/live/self_cost.py)."""
        return self.cost.sample(self.probes.program_fds() if self.probes else {})

    def servers(self) -> list[dict]:
        """Every server traced so far: exited ones (with "exited": time) first."""
        return (self.past_servers + [ctx.describe() for ctx in self.naming.servers.values()]
                + [s.describe() for s in self.native_servers.values()])

    def unnamed_pids(self) -> list[int]:
        """The --pid targets that are no database server ioattr can name (attached as neither a
        MySQL/MariaDB server nor an engine's own, e.g. `-p $(pidof sleep)` or a benchmark client):
        only their own file IO is traced, with no index, page, statement or role names."""
        servers = self.counter_servers()
        return [p for p in self.opts.targets.pids if p not in servers and p in self.tracker.current]

    def counter_servers(self) -> dict[int, object]:
        """Every traced server whose counters are read (the counters table, `top`, the exporter):
        MySQL/MariaDB ServerContexts and engines' own servers (PostgreSQL), by pid."""
        return {**self.naming.servers, **self.native_servers}

    def _may_trace_native(self) -> bool:
        """Whether a server of an engine's own (PostgreSQL) can be among the targets: one is now,
        a command is wrapped (it may start one), or a --comm names such a server's processes (they
        may appear later; EngineAdapter.server_comms). Otherwise the wire reader's part for their
        protocols is not loaded (ProbeSession pg_wire)."""
        t = self.opts.targets
        comms = set(t.comms or ())
        return (self.follow_forks or bool(t.command) or self.opts.follow_forks
                or any(comms & e.server_comms for e in engines.ENGINES))

    def _forking_targets(self) -> bool:
        """Whether a target given now is a server that forks its workers (PostgreSQL)."""
        t = self.opts.targets
        pids = list(t.pids) + (pids_with_comm(t.comms) if t.comms else [])
        return engines.forks_servers(pids)

    def _process_role(self, pid: int, fresh: bool = False) -> str | None:
        """The role of a process of a native server (PostgreSQL: postmaster, checkpointer,
        connection, ioattr's own backends...), remembered once known (it outlives the process).
        `fresh`: pid is a new process (it just appeared, or did its first IO): what was known of
        an earlier process with the same pid is forgotten (pids are reused) -- if it still lives
        to be asked again; a process gone already keeps what was read while it lived."""
        if fresh and os.path.exists(f"/proc/{pid}"):
            self._process_roles.pop(pid, None)
            for srv in self.native_servers.values():
                srv.forget(pid)
        role = self._process_roles.get(pid)
        if role is not None or not self.native_servers:
            return role
        for srv in self.native_servers.values():
            role = srv.role(pid)
            if role is not None:
                self._process_roles[pid] = role
                cap_oldest(self._process_roles, MAX_PROCESS_ROLES)
                return role
        return None

    def _native_page(self, pid: int, space_id: int, index_id: int) -> tuple[PageFile, str | None] | None:
        """A page row of a native server's process (PostgreSQL: space_id the database oid,
        index_id segment << 32 | relfilenode) -> (its registered file, the relation's name); or of
        a MySQL server's MyRocks SST (index_id its file number) -> (the SST, its one index)."""
        ctx = self.naming.servers.get(pid)
        if ctx is not None:
            for catalog in ctx.catalogs:
                found = catalog.page_file(index_id) if hasattr(catalog, "page_file") else None
                if found is not None:
                    return found
            return None
        servers = list(self.native_servers.values())
        if len(servers) > 1:  # which cluster pid belongs to: the one that knows its role
            servers = [s for s in servers if s.knows(pid)]
        if len(servers) != 1:
            return None
        return servers[0].page_name(space_id, index_id)

    def _cwd_hint(self, pid: int) -> str | None:
        """The working directory of a target already gone, where only a native server's children
        can be such a target (one PostgreSQL cluster and no wrapped command): its data directory,
        where every PostgreSQL process runs."""
        if len(self.native_servers) != 1 or self.opts.targets.command:
            return None
        srv = next(iter(self.native_servers.values()))
        return srv.datadir

    def relation_files(self, final: bool = False) -> dict[str, dict]:
        """meta.json "relations": every named file of a traced native server that holds a
        relation (PostgreSQL: base/<db>/<relfilenode>...) -> its relation, kind, fork and segment.
        Names are re-read when a file is unknown (at most every few seconds) and always at the
        end (`final`): relfilenodes change under TRUNCATE, VACUUM FULL, CLUSTER, REINDEX."""
        out: dict[str, dict] = {}
        if not self.native_servers:
            return out
        servers = list(self.native_servers.values())
        if final:
            for srv in servers:
                srv.refresh_names(force=True)
        paths = [p for p in set(self.naming.files.names.values()) if p not in self._not_relations]
        for attempt in range(2):
            missing = False
            for path in paths:
                for srv in servers:
                    d = srv.describe_path(path)
                    if d is None:
                        self._not_relations.add(path)  # parsed once: no relation file's name
                        continue
                    if d["relation"] is None:
                        missing = True
                    if d["relation"] is not None or path not in out:
                        out[path] = d
            if not missing or attempt or final:
                break
            for srv in servers:
                srv.refresh_names()  # throttled
        return out

    def welcome(self, pids: list[int], skip_pid: int | None = None) -> None:
        """Learn what we can about new targets while they are alive."""
        for pid in pids:
            if pid == skip_pid:
                continue  # a command not exec'd yet: its names would be ours
            self.naming.files.scan_process(pid)
            self.naming.tasks.remember_threads(pid)
            if self.native_servers:
                self._process_role(pid, fresh=True)  # its title, while it lives
            if pid in self.naming.servers or pid in self.native_servers:
                continue
            if is_server(pid):
                self._attach_server(pid)  # MySQL/MariaDB: the statement probes are theirs only
                continue
            engine = engines.server_engine(pid)
            if engine is not None:
                self._attach_native(pid, engine)

    def _attach_native(self, pid: int, engine: EngineAdapter) -> None:
        """A server of an engine's own (PostgreSQL's postmaster): its context (connection,
        names, roles), the engine's flags on it and its children (PostgreSQL: read the wire as its
        protocol), on children it forks from now on too (copied by the kernel at fork), and the
        engine's own probes (its statements from the wire); the MySQL statement probes are never
        attached to it."""
        probes = self.native_probes.get(engine.name)
        if probes is None and self.stage.available:
            probes = engine.native_probes(self.stage, self._wire)
            if probes is not None:
                self.native_probes[engine.name] = probes
        # the flags first (the engine's, and those its probes add: PostgreSQL's stage uprobes
        # are on), so that a child forked from now on has them from its fork
        flags = engine.target_flags | (probes.prepare(pid) if probes is not None else 0)
        self.tracker.add(pid, self.tracker.current.get(pid, FLAG_EXPLICIT) | flags)
        srv = engine.server_context(pid)
        if self.opts.pages and engine.file_map_name:
            # its page files, registered for page classification once the catalogs are read
            srv.attach_pages(self.probes.map_fd(engine.file_map_name))
        srv.start()
        if probes is not None:
            srv.stage_status = probes.attach(srv)
            self._native_probes_of[pid] = probes
            self.naming.stage_probes = self.stage.attached
            self.naming.stages = self.stage.recorded_mode
        self.native_servers[pid] = srv
        self._process_roles.pop(pid, None)
        if srv.error:
            self.opts.log(f"server {pid} ({engine.name}): {srv.error}; relation names will be missing, "
                          "file-level attribution and roles continue")
        self.opts.log(f"server {pid} ({engine.name}): {srv.stage_status}")
        # its processes already traced (--comm postgres lists them before the postmaster)
        for other in list(self.tracker.current):
            self._process_role(other)
        # the processes it forked before the attach (checkpointer, open connections...) are
        # its too: targets like the ones the kernel adds at their fork from now on
        children = srv.children()
        born = [c for c in children if c not in self.tracker.current]
        for child in children:  # those traced already (--comm) get the flags too
            self.tracker.add(child, self.tracker.current.get(child, FLAG_FOLLOWED) | flags, sync=False)
        if children:
            self.tracker.map.sync_slots({slot_of(c) for c in children})
            self.followed_pids.update(born)
            self.welcome(born)

    def _attach_server(self, pid: int) -> None:
        ctx = ServerContext(pid, self.opts.engine, self.file_map, engines=engines.engines_for(None))
        ctx.connect()
        if ctx.engine_error:
            self.opts.log(f"server {pid}: {ctx.engine_error}; index names, thread roles and engine counters "
                          "will be missing, file-level attribution continues")
        ctx.refresh()
        if self.stage.available:
            ctx.stage_status = self.stage.attach(pid)
            self._check_statement_source(pid, ctx)  # the baseline of --statements auto's check
            if not ctx.stage_status.startswith("attached"):
                self.opts.log(f"server {pid}: {ctx.stage_status}")
            elif pid in self.stage.thd_why and pid not in self.stage.fine_uprobe_pids and self.stage.mode == "auto":
                self.opts.log(f"server {pid}: no stages inside statements: the THD's stage cannot be read "
                              f"({self.stage.thd_why[pid]}); --stages full attaches 4 stage uprobes instead")
            self.naming.stage_probes = self.stage.attached
            self.naming.stages = self.stage.recorded_mode
        for err in (ctx.names.error, ctx.roles.error):
            if err:
                self.opts.log(f"server {pid}: {err}")
        self.naming.servers[pid] = ctx

    def _check_statement_source(self, pid: int, ctx: ServerContext) -> None:
        """--statements auto: does the wire show this server's statements? (StageProbes.check_wire
        compares with the server's Questions; a fallback is said once and kept in meta.json)"""
        if ctx.engine is None or self.stage.source(pid) != "wire" or self.opts.statements != "auto":
            return
        wire_before = self.stage.wire_count(pid)  # the wire before Questions, and after (check_wire)
        try:
            rows = dict(ctx.engine.query(
                "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Threads_connected')"))
            questions = int(rows["Questions"])
            connections = int(rows.get("Threads_connected", 0))
        except (EngineError, KeyError, ValueError, TypeError):
            return
        # less what ioattr itself sent over TLS (invisible to the wire, counted in Questions)
        said = self.stage.check_wire(pid, questions - HIDDEN_QUERIES[pid], wire_before, connections)
        if said:
            ctx.stage_status = self.stage.status.get(pid, ctx.stage_status)
            self.opts.log(said)

    # -- the event stream -----------------------------------------------------------
    def _on_event(self, data: bytes) -> None:
        """One record of the rare event stream: an open, a statement sample, a thread name."""
        kind = int.from_bytes(data[:4], "little")
        if kind == abi.EV_OPEN and len(data) >= ctypes.sizeof(abi.OpenEvent):
            ev = abi.OpenEvent.from_buffer_copy(data)
            self.naming.files.on_open(ev)
            name = self.naming.files.names.get((int(ev.dev), int(ev.ino)))
            if int(ev.tgid) in self.naming.servers and name and engines.is_page_file(name):
                self._new_page_file = True
        elif kind == abi.EV_QUERY and len(data) >= ctypes.sizeof(abi.QueryEvent):
            ev = abi.QueryEvent.from_buffer_copy(data)
            text = ev.text[: min(int(ev.len), abi.QUERY_MAX)].decode(errors="replace")
            if ev.marker:
                self._on_marker(ev, text)
            if int(ev.digest) not in self.naming.queries:
                self.naming.queries[int(ev.digest)] = text if self.opts.keep_literals else normalize(text)
        elif kind in (abi.EV_TASK, abi.EV_EXEC) and len(data) >= ctypes.sizeof(abi.TaskEvent):
            ev = abi.TaskEvent.from_buffer_copy(data)
            self.naming.tasks.on_task_event(int(ev.tgid), int(ev.tid), ev.comm.decode(errors="replace"),
                                            renamed=kind == abi.EV_EXEC)
            if self.native_servers and int(ev.tgid) == int(ev.tid) and kind == abi.EV_TASK:
                # a forked server process's first IO: its title, before a short-lived one exits
                self._process_role(int(ev.tgid), fresh=True)

    def _refresh_servers(self) -> None:
        for ctx in list(self.naming.servers.values()):
            ctx.refresh(new_files=self._new_page_file, unknown_index=True, unknown_thread=True)
        self._new_page_file = False

    def poll(self) -> None:
        """Cheap, often (~100 ms): consume events (submitted without wakeups), register new tablespaces."""
        self.events.consume()
        if self._new_page_file:
            self._refresh_servers()
        for srv in self.native_servers.values():
            srv.poll_pages()  # new relation files (throttled)

    # -- phases ------------------------------------------------------------------------
    def _init_phases(self) -> None:
        """Start the kernel's phase sequence at PHASE_FIRST; find the atomic bump program."""
        seq = ctypes.c_uint64(abi.PHASE_FIRST)
        libbpf.map_update(self.probes.map_fd("phase_seq"), ctypes.c_uint32(0), seq)
        stage = self.probes.loaded_set("stage")
        if stage is not None:
            self._bump_fd = next((p.fd for p in stage.obj.programs() if p.name == "ioattr_phase_bump"), None)
            self._ack_fd = next((m.fd for m in stage.obj.maps() if m.name == "phase_ack"), None)

    def ack_phases(self, seq: int | None = None) -> None:
        """Say the boundaries up to phase number `seq` (default: the current one) are dealt
        with: a SQL marker statement waits in its probe (bounded) until its number is acked,
        so the recorder can read the engine's counters exactly at the boundary. 0 (the
        default state, and what top and the exporter keep) makes markers not wait at all."""
        if self._ack_fd is None:
            return
        with self._phase_lock:
            value = self._seq if seq is None else seq
        libbpf.map_update(self._ack_fd, ctypes.c_uint32(0), ctypes.c_uint64(value))

    def sweep_inflight(self, finished_only: bool = False) -> int:
        """Count the block requests issued whose completion was not seen (ProbeSession.sweep_block).
        Before every drain (`finished_only`): those the block layer finished over SWEEP_MIN_AGE
        ago without block_rq_complete reaching us, so their bytes land in the interval they were
        done in. Once more just before the last drain (everything), so no issued request's bytes
        stay in rq_inflight where no drain reads them."""
        if self.probes is None:
            return 0
        return self.probes.sweep_block(SWEEP_MIN_AGE if finished_only else 0.0, finished_only)

    def block_untimed(self) -> int | None:
        """Block requests counted without a latency so far (meta.json block_untimed)."""
        return self.probes.block_untimed() if self.probes is not None else None

    def _bump(self) -> int:
        """The next phase sequence number, in force in the kernel from now on."""
        if self._bump_fd is not None:
            # atomic with respect to the SQL-marker probe, which bumps the same counter
            return libbpf.prog_test_run(self._bump_fd)
        # no stage probes: nothing else writes the counter
        fd = self.probes.map_fd("phase_seq")
        cur = ctypes.c_uint64()
        libbpf.map_lookup(fd, ctypes.c_uint32(0), cur)
        nxt = ctypes.c_uint64(cur.value + 1)
        libbpf.map_update(fd, ctypes.c_uint32(0), nxt)
        return int(nxt.value)

    @staticmethod
    def _low(seq: int) -> int:
        return seq & abi.PHASE_MASK

    @property
    def phase(self) -> str:
        """The name of the phase in force now."""
        with self._phase_lock:
            return self._phase_names[self._low(self._seq)]

    @phase.setter
    def phase(self, name: str) -> None:
        """Start phase `name` now unless it is the current one (top, exporter: after a marker)."""
        if name != self.phase:
            self.begin_phase(name, "mark")

    def name_phase(self, name: str) -> None:
        """Rename the current phase: the first one's name, or an --auto-phases phase that
        starts where the interval just drained started (so its IO is the new phase's)."""
        with self._phase_lock:
            self._phase_names[self._low(self._seq)] = name

    def begin_phase(self, name: str, source: str) -> PhaseStart:
        """Start phase `name` at once: IO issued from here on is charged to it. Thread-safe."""
        with self._phase_lock:
            seq = self._bump()
            at = time.time()
            self._seq = max(self._seq, seq)
            self._phase_names[self._low(seq)] = name
        return PhaseStart(at, name, seq, source)

    def _on_marker(self, ev: abi.QueryEvent, text: str) -> None:
        """A statement with `ioattr:phase=`: the probe already started a phase (ev.phase) at
        ev.ts; name it. A marker without a usable name continues the phase before it."""
        name = phase_marker(text)
        seq = int(ev.phase)
        if not seq:  # the probe could not bump (no phase_seq): a phase from now, as before
            if name:
                self.phase_markers.append(self.begin_phase(name, "sql"))
            return
        at = time.time() - max(0, time.monotonic_ns() - int(ev.ts)) / 1e9
        with self._phase_lock:
            if not name:
                name = self._phase_names.get(self._low(seq - 1), self._phase_names[self._low(self._seq)])
            self._phase_names[self._low(seq)] = name
            self._seq = max(self._seq, seq)
        self.phase_markers.append(PhaseStart(at, name, seq, "sql"))

    def take_phase_starts(self) -> list[PhaseStart]:
        """SQL markers seen since the last call (their phases already started in the kernel)."""
        out, self.phase_markers = self.phase_markers, []
        return out

    def take_phase_markers(self) -> list[tuple[float, str]]:
        return [(p.at, p.name) for p in self.take_phase_starts()]

    def _phase_column(self, seqs: np.ndarray) -> list[str]:
        """Each row's phase name, from the phase number its key carries."""
        with self._phase_lock:
            names = dict(self._phase_names)
            cur = self._low(self._seq)
        known = sorted(names)

        def name_of(s: int) -> str:
            if s in names:
                return names[s]
            # a number whose marker event is not read yet (or was lost): the phase before it
            lower = [k for k in known if k < s]
            return names[lower[-1]] if lower else names[cur]
        uniq = {int(s): name_of(int(s)) for s in np.unique(seqs)}
        return [uniq[s] for s in seqs.tolist()]

    def _label(self, cols: Columns | None, d) -> Columns | None:
        if cols is not None:
            cols["phase"] = self._phase_column(d.keys["phase"])
        return cols

    def tick(self, now: float | None = None) -> Interval:
        """Drain both maps: everything since the previous tick, named, each row in the phase
        its IO was issued in."""
        now = time.time() if now is None else now
        self.events.consume()
        self._note_open_files()
        self.sweep_inflight(finished_only=True)  # completions no program saw (docs/block.md)
        live = self._low(self._seq)
        d = self.io_drain.drain(live_phase=live)
        p = self.page_drain.drain(live_phase=live)
        st = self.stmt_drain.drain(live_phase=live) if self.stmt_drain is not None else None
        st = self._without_own_statements(st)
        self.events.consume()  # markers whose numbers the drained keys may already carry
        self._note_native_degraded()
        if len(p):
            self._refresh_servers()  # names for index ids first seen in this interval
        t0, self._last_tick = self._last_tick, now
        phase = self.phase
        io = self._label(self.io_rows.columns(d, t0, now, phase), d) if len(d) else None
        self.naming.files.end_interval()  # inode reuse seen so far is this interval's (names.py)
        pages = self._label(self.page_rows.columns(p, t0, now, phase), p) if len(p) else None
        if self.file_map is not None:
            self.file_map.end_interval()  # page files dropped before this drain named its rows
        return Interval(
            start=t0, end=now,
            io=io,
            pages=pages,
            statements=(self._label(self.stmt_rows.columns(st, t0, now, phase), st)
                        if st is not None and len(st) else None),
            io_rows=len(d), page_rows=len(p),
            drain_seconds=d.drain_seconds + p.drain_seconds, map_entries=d.map_entries)

    def _note_open_files(self) -> None:
        """Right before a drain: the files the targets have open, which is what an inode reused
        in the interval that drain begins may have had IO from besides its new file (names.py).
        Children the kernel added since the last refresh_targets() included: they are traced."""
        pids = set(self.tracker.current)
        if self.follow_forks:
            pids.update(self.tracker.in_kernel())
        self.naming.files.note_open_files(open_inodes(sorted(pids), OPEN_FILES_SCAN_MAX))

    def _without_own_statements(self, st: Deltas | None) -> Deltas | None:
        """The statements drain without ioattr's own PostgreSQL backends' (its catalog and
        counter queries: not the workload's; MySQL's are left out in BPF by their comment)."""
        if st is None or not len(st) or not self.native_servers:
            return st
        own = [p for srv in self.native_servers.values() for p in srv.own_pids]
        if not own:
            return st
        keep = ~np.isin(st.keys["tgid"].astype(np.int64), np.array(own, dtype=np.int64))
        return st if keep.all() else dataclasses.replace(st, keys=st.keys[keep], values=st.values[keep])

    def _note_native_degraded(self) -> None:
        """Statements an engine's own probes cannot read (PostgreSQL connections in TLS), said once
        (the first reason) and kept, as it changes, under degraded "statements"."""
        for name, probes in self.native_probes.items():
            why = probes.degraded()
            if why is None:
                continue
            if self.probes is not None:
                self.probes.degraded["statements"] = why
            if name not in self._degraded_said:
                self._degraded_said.add(name)
                self.opts.log(f"degraded: {why}")

    def refresh_targets(self, skip_pid: int | None = None) -> TargetChanges:
        new, gone = self.tracker.refresh()
        self.followed_pids.update(p for p in new if self.tracker.current.get(p, 0) & FLAG_FOLLOWED)
        self.welcome(new, skip_pid)
        for pid in gone:
            ctx = self.naming.servers.pop(pid, None)
            if ctx:
                # an exited server stays described (meta.json "servers"), marked exited
                self.past_servers.append(dict(ctx.describe(), exited=time.time()))
                ctx.close()
                self.stage.detach(pid)
            native = self.native_servers.pop(pid, None)
            if native is not None:
                self.past_servers.append(dict(native.describe(), exited=time.time()))
                native.close()
                probes = self._native_probes_of.pop(pid, None)
                if probes is not None:
                    probes.detach(pid)
        for pid, ctx in self.naming.servers.items():
            if ctx.retry_connect():
                self.opts.log(f"server {pid}: connected; index names and thread roles are back")
            self._check_statement_source(pid, ctx)
        if self.stage.available:
            for line in self.stage.learn_thd_names():  # --stages full: names met at IO time
                self.opts.log(line)
        # every thread's name, in case it exits unnamed: a backstop (the kernel names a thread at
        # its first IO, and rows re-read names each interval), so every few seconds, not each
        # interval -- a server has hundreds of threads
        if time.monotonic() >= self._next_thread_scan:
            self._next_thread_scan = time.monotonic() + THREAD_SCAN_SECONDS
            for pid in self.tracker.current:
                self.naming.tasks.remember_threads(pid)
        return TargetChanges(new, gone)

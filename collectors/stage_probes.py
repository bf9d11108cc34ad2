"""Attach the stage uprobes (bpf/stage.bpf.c) to each traced server.

Symbols are looked up in the server's own binary (/proc/PID/exe, so an
upgraded-on-disk binary is not confused with the running one); uprobes are
attached for that process only and detached when it exits. A restarted
server is a new process and gets new probes. A binary without the symbols
(stripped, or a MySQL 8 whose dispatch_command takes other arguments)
degrades with a reason instead of failing.

Three modes (`--stages` of record, top and exporter). Every uprobe hit is a
trap (1.1 us idle, 3-5 us on a loaded small VM), so:
  statement            the statement start (digest: from the wire, below), the
                       purge pair thd_attach_thd/thd_detach_thd (rare) and the
                       optimizer's index dives (entry and return of
                       handler::multi_range_read_info_const: stage `estimate`):
                       four uprobes, none hit by a point select by primary key
                       (two per index whose ranges the optimizer estimates).
                       Other IO inside a statement has its digest; its stage is
                       not traced (null).
  auto (default)       the same four uprobes, and parse, optimize, execute,
                       commit inside statements (the estimate stage nests inside
                       optimize, or execute for single-table UPDATE/DELETE and
                       "range checked for each record"), read from the server's
                       own THD::proc_info when, and only when, a statement does
                       IO (collectors/thd_stages.py, bpf/thd_stage.bpf.h): no
                       trap per statement. A binary whose THD layout is not
                       found has null stages inside statements, as `statement`.
  full                 as auto, but a binary whose layout is not found gets
                       four more uprobes instead (mysql_execute_command,
                       JOIN::optimize, JOIN::exec, ha_commit_trans): four traps
                       a point select.
The cost rule: a probe that every statement would hit is never on by default; a
probe that only the statements doing the traced work hit (index dives, purge) is.

Where a statement starts (`--statements`, every mode): the dispatch_command
uprobe traps on every statement (1.1 us idle, 3-5 us on a loaded small VM:
docs/cost.md), so by default the statement source is the
wire: bpf/stage.bpf.c ioattr_wire_recv on sock:sock_recv_length (raw; ioattr_wire_sys on
syscalls:sys_exit_recvfrom where the kernel lacks it: probes.WIRE_CHOICE) reads
each command packet as the server receives it (no trap) and does what the
uprobe did (digest, counts, stage reset, phase markers). It cannot see what
the socket does not carry in clear (TLS, the compressed protocol). So:
  auto (default)  the wire; the session compares, per server, the statements
                  the wire reader started (BPF map wire_stmts) with the
                  server's own Questions growth (check_wire) and, when fewer
                  show on the wire, attaches the dispatch_command uprobe for
                  that server next to it (it skips the statements the wire
                  reader already started), saying so in one line
  wire            the wire only, never the fallback (the uprobe only where the wire
                  reader cannot run on this host, said in the status)
  uprobe          the dispatch_command uprobe only (the pre-issue-13 behaviour)

PostgreSQL (attach_postgres): the same program parses a postmaster's and its backends'
recvfrom()s as PostgreSQL messages (the targets value's IOA_TARGET_PG_WIRE bit, which the
session sets and the fork follower copies): a statement starts at each Simple Query and each
Execute (its Parse's digest). The wire is PostgreSQL's only source (no uprobe fallback): TLS
connections are not read (counted in the BPF map pg_tls; tls_connections()), nor COPY data,
nor the statements a function runs inside the server.
"""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from ioattr.collectors import abi, libbpf, thd_stages
from ioattr.collectors.drain import percpu_sum
from ioattr.collectors.elf import symbol_offsets
from ioattr.collectors.probes import WIRE_CHOICE, ProbeSession
from ioattr.collectors.targets import TARGET_SLOTS  # wire_slots has as many slots as target_slots
from ioattr import environment


@dataclass(frozen=True)
class StageProbe:
    program: str
    symbols: tuple[str, ...]  # candidates, first found wins
    retprobe: bool = False
    required: bool = False
    fine: bool = False  # a stage probe proper: attached only with --stages full
    estimate: bool = False  # marks the optimizer's index dives (stage `estimate`)


STAGE_MODES = ("auto", "statement", "full")
DEFAULT_STAGE_MODE = "auto"

STATEMENT_SOURCES = ("auto", "wire", "uprobe")
DEFAULT_STATEMENT_SOURCE = "auto"
WIRE_PROGRAMS = tuple(name for name, _, _ in WIRE_CHOICE.programs)  # the loader loads one of them
DISPATCH_PROGRAM = "ioattr_dispatch_command"
# --stages auto and full read each server's stage from its THD where they can; IOATTR_THD_STAGES=off
# reads none, as if no layout were found (full: the stage uprobes, the pre-THD way; auto: no
# stages inside statements): for comparisons, benchmarks and tests of the fallback
THD_STAGES_ENV = "IOATTR_THD_STAGES"
# check_wire's evidence: a verdict once the server counted this many Questions since the last
# one, and the share of them the wire must have seen. In clear the wire sees at least every
# Question (it also sees COM_STMT_PREPARE/CLOSE, COM_PING, which Questions skips) and sees it
# first (at the recv, before dispatch_command counts it). The wire is read before and after
# Questions, so a statement counted in Questions is in the wire's later read however long the
# reads took (a recorder off the CPU between them on a busy host); what the wire counted before
# the window but Questions inside it is at most one statement per connection (its current
# command): the server's Threads_connected, plus WIRE_SLACK.
WIRE_CHECK_QUESTIONS = 200
WIRE_CHECK_SHARE = 0.95
WIRE_SLACK = 16
# the bytes of a COM_QUERY's text the wire reader scans for its statements (bpf/stage.bpf.c SCAN_MAX):
# a longer one is counted in the BPF array wire_long
WIRE_SCANNED = 64 << 10
PG_WIRE_FLAG = 4  # bpf/ioattr.h IOA_TARGET_PG_WIRE: a targets value bit, "speaks PostgreSQL"


class WireSlot(ctypes.Structure):
    """bpf/stage.bpf.c struct wire_slot: the process counting in this slot, its statements."""
    _fields_ = [("tgid", ctypes.c_uint64), ("count", ctypes.c_uint64)]


# The server's (SQL layer's) probes, whatever engine stores the tables; an engine adapter adds
# the probes of its own work inside a statement (EngineAdapter.statement_probes: InnoDB's index
# dives and purge), passed in as engine_probes. MariaDB 10.x/11.x signatures
# (dispatch_command(command, thd, packet, length, blocking)). Entry probes only: a uretprobe
# costs about twice a uprobe, and the one that marked the end of a statement is not worth it
# (a connection thread does almost no IO between statements; the next statement resets the state).
SERVER_PROBES = (
    StageProbe("ioattr_dispatch_command", ("_Z16dispatch_command19enum_server_commandP3THDPcjb",
                                           "_Z16dispatch_command19enum_server_commandP3THDPcjbb"),
               required=True),
    StageProbe("ioattr_execute_command", ("_Z21mysql_execute_commandP3THDb", "_Z21mysql_execute_commandP3THD"),
               fine=True),
    StageProbe("ioattr_join_optimize", ("_ZN4JOIN8optimizeEv",), fine=True),
    StageProbe("ioattr_join_exec", ("_ZN4JOIN4execEv",), fine=True),
    StageProbe("ioattr_commit", ("_Z15ha_commit_transP3THDb",), fine=True),
)


class StageProbes:
    def __init__(self, session: ProbeSession, statements: str = DEFAULT_STATEMENT_SOURCE,
                 engine_probes: tuple[StageProbe, ...] = (), stages: str | None = None) -> None:
        # `stages` is --stages; it must agree with the loaded objects' config (fine_stages: a
        # statement starts in parse, and the IO programs read the server's stage), so without it
        # the mode follows the config
        self.mode = stages or ("full" if session.fine_stages else "statement")
        if (self.mode != "statement") != bool(session.fine_stages):
            raise ValueError(f"--stages {self.mode} needs the probe session's fine_stages "
                             f"{'on' if self.mode != 'statement' else 'off'}")
        self.session = session
        self.probes = tuple(p for p in SERVER_PROBES + engine_probes if self.mode == "full" or not p.fine)
        self.loaded = session.loaded_set("stage")
        self.links: dict[int, list[libbpf.Link]] = {}
        self.status: dict[int, str] = {}
        self.estimate_pids: set[int] = set()  # servers whose index-dive probes are attached
        self.requested = statements
        # per server: "wire", "uprobe" or "wire+uprobe" (the wire and the fallback uprobe), and why
        self.sources: dict[int, tuple[str, str]] = {}
        self.wire_attached = False
        self.wire_why = ""  # why the wire reader cannot be used, when it cannot
        self.wire_hook = ""  # where it is attached (category:event), once it is
        # why prepared statements' executions can't be given their digests ("" when they can)
        self.prepared_why = ""
        self._dispatch_at: dict[int, tuple[str, int]] = {}  # pid -> (binary, offset) for a later fallback
        self._wire_base: dict[int, tuple[int, int]] = {}  # pid -> (wire statements, Questions) at the last verdict
        self._wire_fd: int | None = None
        self._wire_slots_fd: int | None = None  # absent from objects built before the slots
        self._wire_long_fd: int | None = None  # texts not scanned to their end (absent from older objects)
        self._wire_long_base: dict[int, int] = {}  # pid -> wire_long at its last verdict
        # --stages auto/full: servers whose stage is read from their THD at IO time, with the keys
        # of their stage names in thd_stage_names; and why not, for the others
        self.thd_keys: dict[int, list[abi.ThdStageKey]] = {}
        self.thd_slots: set[int] = set()  # servers holding their slot of thd_layouts (THD or uprobes)
        self.fine_uprobe_pids: set[int] = set()  # --stages full: servers with the stage uprobes
        self.pg_pids: set[int] = set()  # PostgreSQL servers
        self.pg_staged: set[int] = set()  # those whose stage uprobes are on (ioattr/engines/postgres/stages.py)
        self.thd_why: dict[int, str] = {}
        self.thd_learned: dict[int, dict[str, str]] = {}  # per server: names learned at run time -> stage
        self._thd_facts: dict[tuple[int, int], thd_stages.ServerStages | str] = {}
        if self.loaded is not None:
            self._wire_fd = next((m.fd for m in self.loaded.obj.maps() if m.name == "wire_stmts"), None)
            self._wire_slots_fd = next((m.fd for m in self.loaded.obj.maps() if m.name == "wire_slots"), None)
            self._wire_long_fd = next((m.fd for m in self.loaded.obj.maps() if m.name == "wire_long"), None)
        if statements != "uprobe":
            self.wire_why = self._wire_unavailable()

    @property
    def available(self) -> bool:
        return self.loaded is not None

    def _wire_program(self) -> libbpf.Program | None:
        """The wire reader the loader loaded (probes.WIRE_CHOICE picked it), if any."""
        return next((p for p in self.loaded.obj.programs() if p.name in WIRE_PROGRAMS and p.autoload), None)

    def _wire_unavailable(self) -> str:
        """Why the wire reader cannot run on this host ("" when it can)."""
        if self.loaded is None:
            return "stage probes not loaded"
        if self._wire_fd is None or not any(p.name in WIRE_PROGRAMS for p in self.loaded.obj.programs()):
            return f"{WIRE_PROGRAMS[0]} is not in stage.bpf.o (rebuild it: make -C bpf)"
        if self._wire_program() is None:
            return "no tracepoint for it on this kernel (" + " or ".join(
                tp for name, _, tp in WIRE_CHOICE.programs) + ")"
        return ""

    def _attach_wire(self) -> str:
        """Attach the wire reader once for all servers (it filters by target); "" or why not.
        Its section says its hook: a raw BTF tracepoint attaches as itself, a tracepoint the
        way the syscall probes attach (objects built before the raw one have ioattr_wire_recv
        on syscalls:sys_exit_recvfrom, and still work)."""
        if self.wire_attached or self.wire_why:
            return self.wire_why
        prog = self._wire_program()
        # its companion: the send side, which reads the statement ids of prepared statements
        names = WIRE_CHOICE.companions.get(prog.name, ())
        send = [p for p in self.loaded.obj.programs() if p.name in names and p.autoload]
        hook = ""
        for i, p in enumerate([prog] + send):
            kind, _, where = p.section.partition("/")
            at = where.replace("/", ":") if kind == "tracepoint" else f"{kind}:{where}"
            hook = hook or at
            try:
                if kind == "tracepoint":
                    self.session._attach_tracepoint(self.loaded, p, *where.split("/", 1))
                else:
                    self.loaded.obj.links.append(p.attach())
            except (libbpf.LibbpfError, OSError) as e:
                if i == 0:
                    self.wire_why = f"cannot attach {p.name} to {at}: {e}"
                    return self.wire_why
                self.prepared_why = f"cannot attach {p.name} to {at}: {e}"
        if not send:
            self.prepared_why = f"no {' or '.join(names) or 'send program'} in stage.bpf.o"
        self.wire_attached = True
        self.wire_hook = hook
        return ""

    def attach(self, pid: int) -> str:
        """Attach to one server; returns a one-line status ("attached ..." or why not)."""
        if self.loaded is None:
            self.status[pid] = "stage probes not loaded"
            return self.status[pid]
        binary = f"/proc/{pid}/exe"
        try:
            offsets = symbol_offsets(binary, [s for p in self.probes for s in p.symbols])
        except (OSError, ValueError) as e:
            self.status[pid] = f"cannot read the server binary's symbols: {e}"
            return self.status[pid]
        programs = {p.name: p for p in self.loaded.obj.programs()}
        # --stages auto/full: the stage from the server's THD at IO time, else (full) the stage
        # uprobes or (auto) no stage inside statements
        thd_why = self._attach_thd(pid, binary) if self.mode != "statement" else ""
        fine_uprobes = self.mode == "full" and bool(thd_why)
        # the statement source: the wire unless asked otherwise or unavailable
        wire_why = "" if self.requested == "uprobe" else self._attach_wire()
        use_wire = self.requested != "uprobe" and not wire_why
        links: list[libbpf.Link] = []
        missing: list[str] = []
        for probe in self.probes:
            if probe.fine and not fine_uprobes:
                continue
            sym = next((s for s in probe.symbols if s in offsets), None)
            if sym is None:
                missing.append(probe.symbols[0])
                if probe.required:
                    for link in links:
                        link.destroy()
                    self._forget_thd(pid)
                    self.status[pid] = (f"no {probe.symbols[0]} in the server binary (stripped, or not "
                                        "MariaDB): query and stage attribution is off")
                    return self.status[pid]
                continue
            if probe.program == DISPATCH_PROGRAM:
                self._dispatch_at[pid] = (binary, offsets[sym])
                if use_wire:
                    continue  # the wire reader starts statements; the uprobe only as the fallback
            try:
                links.append(programs[probe.program].attach_uprobe(pid, binary, offsets[sym],
                                                                   retprobe=probe.retprobe))
            except libbpf.LibbpfError as e:
                for link in links:
                    link.destroy()
                self._forget_thd(pid)
                self.status[pid] = f"uprobe attach failed: {e}"
                return self.status[pid]
        self.links[pid] = links
        if fine_uprobes:
            self.fine_uprobe_pids.add(pid)
            self._mark_uprobes(pid)
        if any(s in offsets for p in self.probes if p.estimate for s in p.symbols):
            self.estimate_pids.add(pid)
        if use_wire:
            self.sources[pid] = ("wire", f"--statements {self.requested}")
            self._wire_base.pop(pid, None)
        elif self.requested == "uprobe":
            self.sources[pid] = ("uprobe", "--statements uprobe")
        else:
            self.sources[pid] = ("uprobe", wire_why)
        self._set_status(pid, missing)
        return self.status[pid]

    def _thd_maps(self) -> tuple[int, int] | None:
        """The fds of thd_layouts and thd_stage_names (None: objects built before them)."""
        try:
            return self.session.map_fd("thd_layouts"), self.session.map_fd("thd_stage_names")
        except KeyError:
            return None

    def _attach_thd(self, pid: int, binary: str) -> str:
        """Tell the IO programs where server pid keeps its stage (thd_layouts, thd_stage_names);
        "" when done, else why not (the caller attaches the stage uprobes instead)."""
        fds = self._thd_maps()
        why = ""
        if environment.get(THD_STAGES_ENV) == "off":
            why = f"{THD_STAGES_ENV}=off"
        elif fds is None:
            why = "the BPF objects have no THD stage maps (rebuild them: make -C bpf)"
        else:
            try:
                st = os.stat(binary)
            except OSError as e:
                st, why = None, f"cannot read the server binary: {e}"
            if st is not None:
                facts = self._thd_facts.get((st.st_dev, st.st_ino))
                if facts is None:
                    facts = self._thd_facts[(st.st_dev, st.st_ino)] = thd_stages.read_binary(binary)
                bias = None if isinstance(facts, str) else thd_stages.load_bias(pid, binary, facts)
                if isinstance(facts, str):
                    why = facts
                elif bias is None:
                    why = f"the server binary is not in /proc/{pid}/maps"
                else:
                    why = self._fill_thd(pid, fds, facts, bias)
        if why:
            self.thd_why[pid] = why
        return why

    def _fill_thd(self, pid: int, fds: tuple[int, int], facts: thd_stages.ServerStages, bias: int) -> str:
        layouts_fd, names_fd = fds
        slot, held = ctypes.c_uint32(pid & (TARGET_SLOTS - 1)), abi.ThdLayout()
        if libbpf.map_lookup(layouts_fd, slot, held) and held.tgid not in (0, pid) and held.tgid in self.thd_slots:
            return f"server {held.tgid} holds its slot of thd_layouts (pids equal modulo {TARGET_SLOTS})"
        keys: list[abi.ThdStageKey] = []
        self.thd_keys[pid] = keys  # so that _forget_thd removes what went in, whatever fails
        self.thd_slots.add(pid)
        try:
            for ptr, name in facts.names.items():
                key = abi.ThdStageKey(name=ptr + bias, tgid=pid)
                libbpf.map_update(names_fd, key, ctypes.c_uint8(int(thd_stages.stage_of(name))))
                keys.append(key)
            # the layout last: a program reads names only once it finds the layout
            libbpf.map_update(layouts_fd, slot, abi.ThdLayout(tls_off=facts.tls_off, stage_off=facts.stage_off,
                                                              tgid=pid))
        except (libbpf.LibbpfError, OSError) as e:
            self._forget_thd(pid)
            return f"cannot fill the THD stage maps: {e}"
        return ""

    def _mark_uprobes(self, pid: int) -> None:
        """--stages full on a server whose THD cannot be read: its slot says "stages from the
        uprobes" (stage_off 0), so IO before the first of them is parse; a server without a
        slot has no stages inside statements (--stages auto), and its IO there is `statement`.
        A slot held by another server leaves that IO `statement`; the uprobes' stages stand."""
        fds = self._thd_maps()
        if fds is None:
            return
        slot, held = ctypes.c_uint32(pid & (TARGET_SLOTS - 1)), abi.ThdLayout()
        if libbpf.map_lookup(fds[0], slot, held) and held.tgid not in (0, pid) and held.tgid in self.thd_slots:
            return
        libbpf.map_update(fds[0], slot, abi.ThdLayout(tgid=pid))
        self.thd_slots.add(pid)

    def _forget_thd(self, pid: int) -> None:
        keys = self.thd_keys.pop(pid, None) or []
        fds = self._thd_maps()
        if fds is None:
            return
        if pid in self.thd_slots:
            self.thd_slots.discard(pid)
            slot, held = ctypes.c_uint32(pid & (TARGET_SLOTS - 1)), abi.ThdLayout()
            if libbpf.map_lookup(fds[0], slot, held) and held.tgid == pid:
                libbpf.map_update(fds[0], slot, abi.ThdLayout())  # an array: emptied, not deleted
        for key in keys:
            libbpf.map_delete(fds[1], key)

    def learn_thd_names(self) -> list[str]:
        """Name the stage names the IO programs met and were not told about (proc_info set from
        a literal rather than a stage object: thd_stage_unknown), so later IO in them has its
        stage; returns one line per name learned. The IO that met a name first stays `statement`
        (counted in thd_misses()["name"])."""
        try:
            fd, names_fd = self.session.map_fd("thd_stage_unknown"), self.session.map_fd("thd_stage_names")
        except KeyError:
            return []
        said = []
        for key in list(libbpf.map_keys(fd, abi.ThdStageKey)):
            libbpf.map_delete(fd, key)
            keys = self.thd_keys.get(key.tgid)
            if keys is None:  # a server detached since
                continue
            name = thd_stages.read_name(key.tgid, key.name)
            stage = thd_stages.stage_of(name) if name is not None else abi.Stage.STATEMENT
            try:
                libbpf.map_update(names_fd, key, ctypes.c_uint8(int(stage)))
            except libbpf.LibbpfError:
                continue  # full: its IO stays `statement`, counted
            keys.append(key)
            self.thd_learned.setdefault(key.tgid, {})[name or f"0x{key.name:x}"] = stage.name.lower()
            said.append(f"server {key.tgid}: stage name {name!r} read from the server: {stage.name.lower()}")
        return said

    def thd_misses(self) -> dict[str, int]:
        """IO inside statements whose server stage was not read (stage `statement` instead):
        "name" a stage name not among the binary's stage_* objects, "read" no THD or no name."""
        try:
            fd = self.session.map_fd("thd_stage_misses")
        except KeyError:
            return {}
        return {m.name.lower(): percpu_sum(fd, int(m)) or 0 for m in abi.ThdMiss}

    def describe_stage_sources(self) -> dict[str, dict[str, object]]:
        """meta.json "stage_sources" (--stages auto and full): per MariaDB server pid, where its
        stages inside statements come from: "thd" (its THD, read at IO time; "learned": names
        learned from the server at run time and their stages), "uprobes" (full) or "none" (auto),
        and why not the THD."""
        if self.mode == "statement":
            return {}
        out: dict[str, dict[str, object]] = {}
        for pid in self.links:
            if pid in self.pg_pids:
                continue
            if pid in self.thd_keys:
                out[str(pid)] = {"source": "thd", "why": "",
                                 **({"learned": self.thd_learned[pid]} if pid in self.thd_learned else {})}
            else:
                out[str(pid)] = {"source": "uprobes" if pid in self.fine_uprobe_pids else "none",
                                 "why": self.thd_why.get(pid, "")}
        return out

    @property
    def recorded_mode(self) -> str | None:
        """meta.json "stages": "full" when the stages inside every server's statements are
        traced (a MariaDB server's from its THD or the stage uprobes, a PostgreSQL server's from
        its stage uprobes: ioattr/engines/postgres/stages.py), else "statement" (what report and explain
        read as "stage null inside statements: not traced"); None when nothing is attached."""
        if not self.links:
            return None
        if self.mode == "statement":
            return "statement"
        # MariaDB's from the THD or the stage uprobes, PostgreSQL's from its stage uprobes
        traced = all(pid in self.thd_keys or pid in self.fine_uprobe_pids or pid in self.pg_staged
                     for pid in self.links)
        return "full" if traced else "statement"

    def attach_postgres(self, pid: int, stages_why: str | None = None) -> str:
        """A PostgreSQL postmaster (the session sets PG_WIRE_FLAG on it and its children): its
        statements from the wire, the only source for PostgreSQL. stages_why: its stage uprobes
        (ioattr/engines/postgres/stages.py) were not asked for (None: --stages statement), attached (""),
        or why not. Returns the status line."""
        if self.loaded is None:
            return "statements: not traced (stage probes not loaded)"
        if self.requested == "uprobe":
            return ("statements: not traced (--statements uprobe: PostgreSQL has no statement uprobe here, "
                    "only the wire)")
        why = self._attach_wire()
        if why:
            return f"statements: not traced ({why})"
        self.links.setdefault(pid, [])  # nothing to detach but the wire reader, shared by all
        self.pg_pids.add(pid)
        self.sources[pid] = ("wire", "PostgreSQL protocol; TLS connections are not read")
        if stages_why == "":
            self.pg_staged.add(pid)
            stages = ("stages parse, optimize, execute (3 uprobes: standard_planner, ExecutorStart, "
                      "standard_ProcessUtility; 2 traps a planned statement)")
        elif stages_why is None:
            stages = "no stages inside statements (--stages statement)"
        else:
            stages = f"no stages inside statements ({stages_why})"
        return ("statements from the wire (recvfrom, PostgreSQL protocol: Simple Query and Execute; "
                f"TLS connections are not read); {stages}")

    def tls_connections(self) -> int:
        """PostgreSQL connections the wire reader saw switch to TLS (their statements unread)."""
        fd = next((m.fd for m in self.loaded.obj.maps() if m.name == "pg_tls"), None) if self.loaded else None
        v = ctypes.c_uint64(0)
        if fd is None or not libbpf.map_lookup(fd, ctypes.c_uint32(0), v):
            return 0
        return int(v.value)

    def _set_status(self, pid: int, missing: list[str] | None = None) -> None:
        source, why = self.sources[pid]
        what = {"wire": "statements from the wire (recvfrom)",
                "uprobe": "statements from the dispatch_command uprobe",
                "wire+uprobe": "statements from the wire, and the dispatch_command uprobe for what it "
                               "cannot see"}[source]
        stages = f"--stages {self.mode}"
        if pid in self.thd_keys:
            stages += ": stages from the server's THD at IO time"
        elif pid in self.fine_uprobe_pids:
            stages += f": stage uprobes, the THD's stage cannot be read: {self.thd_why.get(pid, '?')}"
        elif self.mode == "auto":
            stages += (f": no stages inside statements, the THD's stage cannot be read: "
                       f"{self.thd_why.get(pid, '?')}; --stages full attaches 4 stage uprobes instead")
        self.status[pid] = (f"attached {len(self.links.get(pid, []))} uprobes ({stages}); {what}"
                            + (f" ({why})" if source != "wire" or self.requested == "wire" else "")
                            + (f" (missing: {', '.join(missing)})" if missing else ""))

    def source(self, pid: int) -> str | None:
        """"wire", "uprobe" or "wire+uprobe": where server pid's statements start."""
        got = self.sources.get(pid)
        return got[0] if got else None

    def fallback(self, pid: int, why: str) -> str:
        """Attach the dispatch_command uprobe to a server whose statements the wire reader
        does not all see; returns the one line to say ("" if nothing changed)."""
        if self.source(pid) != "wire" or pid not in self._dispatch_at:
            return ""
        binary, offset = self._dispatch_at[pid]
        prog = next(p for p in self.loaded.obj.programs() if p.name == DISPATCH_PROGRAM)
        try:
            link = prog.attach_uprobe(pid, binary, offset)
        except libbpf.LibbpfError as e:
            return f"server {pid}: {why}, and the dispatch_command uprobe failed to attach: {e}"
        self.links.setdefault(pid, []).append(link)
        self.sources[pid] = ("wire+uprobe", why)
        self._set_status(pid)
        return f"server {pid}: statement source: {why}: dispatch_command uprobe attached as the fallback"

    def _wire_slot(self, pid: int) -> tuple[ctypes.c_uint32, WireSlot] | None:
        """pid's slot of the BPF array wire_slots and its value, when pid owns it."""
        if self._wire_slots_fd is None:
            return None
        key, slot = ctypes.c_uint32(pid & (TARGET_SLOTS - 1)), WireSlot()
        if libbpf.map_lookup(self._wire_slots_fd, key, slot) and slot.tgid == pid:
            return key, slot
        return None

    def wire_count(self, pid: int) -> int:
        """Statements the wire reader started in server pid (its own connections' included):
        its slot of wire_slots (if it owns it) plus its wire_stmts entry (if its slot was
        another's at some statement). Read in that order, the sum never goes back."""
        if self._wire_fd is None:
            return 0
        got = self._wire_slot(pid)
        n = int(got[1].count) if got else 0
        v = ctypes.c_uint64(0)
        return n + (int(v.value) if libbpf.map_lookup(self._wire_fd, ctypes.c_uint32(pid), v) else 0)

    def wire_long(self) -> int:
        """COM_QUERY texts whose statements the wire reader did not all look for (longer than
        WIRE_SCANNED bytes, or a read of their payload it could not scan), on every server."""
        v = ctypes.c_uint64(0)
        if self._wire_long_fd is None or not libbpf.map_lookup(self._wire_long_fd, ctypes.c_uint32(0), v):
            return 0
        return int(v.value)

    def check_wire(self, pid: int, questions: int, wire_before: int | None = None, connections: int = 0) -> str:
        """Under --statements auto: given server pid's Questions counter now, decide whether the
        wire shows its statements. The wire reader sees every statement a client sends in clear
        (more than Questions counts); when, over at least WIRE_CHECK_QUESTIONS Questions, it saw
        fewer than WIRE_CHECK_SHARE of them, clients use TLS or compression (or a protocol it
        cannot parse) and the uprobe is attached. Returns the line to say, or "".

        `wire_before`: the wire's count read just before Questions (the caller's); it is read
        again here, after. A window runs from the last verdict's `wire_before` to this read, so
        every statement Questions counted in it is in the wire's count of it however long the
        two reads were apart; `connections` (Threads_connected) bounds the statements the wire
        counted before the window and Questions inside it. Without `wire_before` both ends are
        this read (a stall between the caller's Questions and this read then looks like a
        shortfall: the pre-sandwich check, kept for callers that cannot read it first)."""
        if self.requested != "auto" or self.source(pid) != "wire":
            return ""
        wire = self.wire_count(pid)  # after Questions: every statement counted there was seen before
        start = wire if wire_before is None else wire_before
        long = self.wire_long()
        base = self._wire_base.get(pid)
        if base is None:
            self._wire_base[pid] = (start, questions)
            self._wire_long_base[pid] = long
            return ""
        dq, dw = questions - base[1], wire - base[0]
        if dq < WIRE_CHECK_QUESTIONS:
            return ""
        dl = long - self._wire_long_base.get(pid, long)
        self._wire_base[pid] = (start, questions)
        self._wire_long_base[pid] = long
        if dw + WIRE_SLACK + max(connections, 0) >= dq * WIRE_CHECK_SHARE:
            return ""
        # the wire counts every statement of a packet it read whole (docs/queries.md): what it
        # missed came unread (TLS, compression), unless texts too long to scan came meanwhile
        if dl:
            why = (f"{dl} COM_QUERY texts longer than {WIRE_SCANNED // 1024} KiB came meanwhile, whose "
                   "statements past that are not counted (multi-statement packets), or clients over TLS "
                   "or compression")
        else:
            why = "clients over TLS or compression, which the wire reader cannot read"
        return self.fallback(pid, f"the wire showed {dw} statements while the server counted {dq} Questions ({why})")

    @property
    def estimating(self) -> bool:
        """Whether the estimate stage (index dives) is traced on some server: a recording
        says so (meta.json "estimate_stage"), so explain knows a zero means none happened."""
        return bool(self.estimate_pids)

    def describe_sources(self) -> dict[str, dict[str, str]]:
        """meta.json "statement_sources": per server pid, the source and why."""
        return {str(pid): {"source": src, "why": why} for pid, (src, why) in self.sources.items()}

    def detach(self, pid: int) -> None:
        for link in self.links.pop(pid, []):
            link.destroy()
        self._forget_thd(pid)
        self.thd_why.pop(pid, None)
        self.thd_learned.pop(pid, None)
        self.fine_uprobe_pids.discard(pid)
        self.pg_pids.discard(pid)
        self.pg_staged.discard(pid)
        self._wire_base.pop(pid, None)
        if self._wire_fd is not None:
            libbpf.map_delete(self._wire_fd, ctypes.c_uint32(pid))
        got = self._wire_slot(pid)
        if got:  # free the slot for another server (a statement of pid's counted meanwhile is lost)
            libbpf.map_update(self._wire_slots_fd, got[0], WireSlot())

    def close(self) -> None:
        for pid in list(self.links):
            self.detach(pid)

    @property
    def attached(self) -> bool:
        return bool(self.links)

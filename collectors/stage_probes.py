"""Attach the stage uprobes (bpf/stage.bpf.c) to each traced server.

Symbols are looked up in the server's own binary (/proc/PID/exe, so an
upgraded-on-disk binary is not confused with the running one); uprobes are
attached for that process only and detached when it exits. A restarted
server is a new process and gets new probes. A binary without the symbols
(stripped, or a MySQL 8 whose dispatch_command takes other arguments)
degrades with a reason instead of failing.

Two modes (`--stages` of record, top and exporter). Every uprobe hit is a
trap (~1.8 us on a small VM) and a point select would hit five of nine, so:
  statement (default)  dispatch_command (digest, statement start), the purge
                       pair thd_attach_thd/thd_detach_thd (rare) and the
                       optimizer's index dives (entry and return of
                       handler::multi_range_read_info_const: stage `estimate`):
                       five uprobes, one hit per statement plus two per index
                       whose ranges the optimizer estimates -- a point select
                       by primary key estimates none. Other IO inside a
                       statement has its digest; its stage is not traced (null).
  full                 all nine: parse, optimize, execute, commit too (the
                       estimate stage nests inside optimize, or execute for
                       single-table UPDATE/DELETE and "range checked for each
                       record").
The cost rule: a probe that every statement would hit stays in `full`; a probe
that only the statements doing the traced work hit (index dives, purge) is on
by default.
"""
from __future__ import annotations

from dataclasses import dataclass

from ioattr.collectors import libbpf
from ioattr.collectors.elf import symbol_offsets
from ioattr.collectors.probes import ProbeSession


@dataclass(frozen=True)
class StageProbe:
    program: str
    symbols: tuple[str, ...]  # candidates, first found wins
    retprobe: bool = False
    required: bool = False
    fine: bool = False  # a stage probe proper: attached only with --stages full


STAGE_MODES = ("statement", "full")
DEFAULT_STAGE_MODE = "statement"


ESTIMATE_SYMBOLS = ("_ZN7handler27multi_range_read_info_constEjP15st_range_seq_ifPvjPjS3_P13Cost_estimate",
                    "_ZN7handler27multi_range_read_info_constEjP15st_range_seq_ifPvjPjS3_yP13Cost_estimate")


# MariaDB 10.x/11.x signatures (dispatch_command(command, thd, packet, length, blocking)).
# Entry probes only: a uretprobe costs about twice a uprobe, and the one that
# marked the end of a statement is not worth it (a connection thread does
# almost no IO between statements; the next statement resets the state).
STAGE_PROBES = (
    StageProbe("ioattr_dispatch_command", ("_Z16dispatch_command19enum_server_commandP3THDPcjb",
                                           "_Z16dispatch_command19enum_server_commandP3THDPcjbb"),
               required=True),
    StageProbe("ioattr_execute_command", ("_Z21mysql_execute_commandP3THDb", "_Z21mysql_execute_commandP3THD"),
               fine=True),
    StageProbe("ioattr_join_optimize", ("_ZN4JOIN8optimizeEv",), fine=True),
    StageProbe("ioattr_join_exec", ("_ZN4JOIN4execEv",), fine=True),
    StageProbe("ioattr_commit", ("_Z15ha_commit_transP3THDb",), fine=True),
    StageProbe("ioattr_thd_attach", ("_Z14thd_attach_thdP3THD",)),
    # index range estimates (bpf/stage.bpf.c): the base implementation, which InnoDB's
    # DsMrr_impl::dsmrr_info_const calls by name (ha_innobase::records_in_range, called by it
    # once per range, is not exported). 10.x/11.0, then 11.x with a row limit argument.
    StageProbe("ioattr_estimate_enter", ESTIMATE_SYMBOLS),
    StageProbe("ioattr_estimate_return", ESTIMATE_SYMBOLS, retprobe=True),
    StageProbe("ioattr_thd_detach", ("_Z14thd_detach_thdPv",)),
)


class StageProbes:
    def __init__(self, session: ProbeSession) -> None:
        # the mode follows the loaded objects' config, so the BPF side agrees: with
        # fine_stages off a statement runs in IOA_STAGE_STATEMENT, not parse
        self.mode = "full" if session.fine_stages else "statement"
        self.probes = tuple(p for p in STAGE_PROBES if self.mode == "full" or not p.fine)
        self.loaded = session.loaded_set("stage")
        self.links: dict[int, list[libbpf.Link]] = {}
        self.status: dict[int, str] = {}
        self.estimate_pids: set[int] = set()  # servers whose index-dive probes are attached

    @property
    def available(self) -> bool:
        return self.loaded is not None

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
        links: list[libbpf.Link] = []
        missing: list[str] = []
        for probe in self.probes:
            sym = next((s for s in probe.symbols if s in offsets), None)
            if sym is None:
                missing.append(probe.symbols[0])
                if probe.required:
                    for link in links:
                        link.destroy()
                    self.status[pid] = (f"no {probe.symbols[0]} in the server binary (stripped, or not "
                                        "MariaDB): query and stage attribution is off")
                    return self.status[pid]
                continue
            try:
                links.append(programs[probe.program].attach_uprobe(pid, binary, offsets[sym],
                                                                   retprobe=probe.retprobe))
            except libbpf.LibbpfError as e:
                for link in links:
                    link.destroy()
                self.status[pid] = f"uprobe attach failed: {e}"
                return self.status[pid]
        self.links[pid] = links
        if any(s in offsets for s in ESTIMATE_SYMBOLS):
            self.estimate_pids.add(pid)
        self.status[pid] = f"attached {len(links)} uprobes (--stages {self.mode})" + (
            f" (missing: {', '.join(missing)})" if missing else "")
        return self.status[pid]

    @property
    def estimating(self) -> bool:
        """Whether the estimate stage (index dives) is traced on some server: a recording
        says so (meta.json "estimate_stage"), so explain knows a zero means none happened."""
        return bool(self.estimate_pids)

    def detach(self, pid: int) -> None:
        for link in self.links.pop(pid, []):
            link.destroy()

    def close(self) -> None:
        for pid in list(self.links):
            self.detach(pid)

    @property
    def attached(self) -> bool:
        return bool(self.links)

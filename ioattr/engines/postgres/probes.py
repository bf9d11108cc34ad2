"""The probes a session adds for its PostgreSQL clusters (base.NativeProbes): statements from
the wire, read as PostgreSQL's protocol (bpf/pg_wire.bpf.h, through collectors/stage_probes.py),
the stages inside a statement (stages.py: parse, optimize, execute), and PostgreSQL 18's io
workers' IO charged to the backends that asked (aio.py). One per session,
shared by every traced cluster (the wire reader and the io-worker uprobes are per binary).
"""
from __future__ import annotations

from ioattr.collectors.stage_probes import StageProbes
from ioattr.engines.base import NativeServer
from ioattr.engines.postgres.aio import PgAioProbes
from ioattr.engines.postgres.stages import PG_STAGES_FLAG, PgStageProbes

NO_WIRE = ("statements: not traced (no PostgreSQL target when the recording started, so the wire reader "
           "was loaded without its PostgreSQL part; record again with --pid of the postmaster or --comm postgres)")


class PgProbes:
    """Statements and io workers of the session's PostgreSQL clusters."""

    def __init__(self, stage: StageProbes, wire: bool) -> None:
        self.stage = stage
        self.wire = wire  # the wire reader was loaded with its PostgreSQL part (ProbeSession pg_wire)
        self.aio = PgAioProbes(stage.loaded)
        self.stages = PgStageProbes(stage.loaded)
        # per postmaster: its stage uprobes not asked for (None: --stages statement), attached
        # (""), or why not
        self._stages_why: dict[int, str | None] = {}
        self._tls = 0  # connections seen going TLS, last said

    def prepare(self, pid: int) -> int:
        """The stage uprobes (on the server's binary) unless --stages statement; their flag
        (PG_STAGES_FLAG) when attached, for the server and every backend it forks."""
        why = None
        if self.stage.available and self.wire and self.stage.mode != "statement":
            why = self.stages.attach(pid)
        self._stages_why[pid] = why
        return PG_STAGES_FLAG if why == "" else 0

    def attach(self, server: NativeServer) -> str:
        """The cluster's statements from the wire (its processes carry the protocol flag, the
        adapter's target_flags), and its io workers' uprobes where it runs io workers."""
        if not self.stage.available:
            return server.stage_status
        status = self.stage.attach_postgres(server.pid, self._stages_why.get(server.pid)) if self.wire else NO_WIRE
        workers = sum(1 for c in server.children() if server.role(c) == "io_worker")
        return status + "; " + self.aio.attach(server.pid, workers)

    def detach(self, pid: int) -> None:
        self.aio.detach(pid)
        self.stages.detach(pid)
        self._stages_why.pop(pid, None)

    def degraded(self) -> str | None:
        """PostgreSQL connections in TLS: their statements are not read (the wire is PostgreSQL's
        only statement source), said once per change."""
        if not self.stage.available:
            return None
        tls = self.stage.tls_connections()
        if tls == self._tls:
            return None
        self._tls = tls
        return (f"{tls} PostgreSQL connection(s) switched to TLS: their statements are not read from the wire "
                "(no digest, not counted; connect with sslmode=disable or over the unix socket to count them)")

    def close(self) -> None:
        self.aio.close()
        self.stages.close()

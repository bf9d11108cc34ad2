"""A toy storage engine adapter, to prove that an engine is one folder (ioattr/engines/base.py).

It lives with the tests, not in ioattr/engines/: no user has a toy store, so ioattr never
ships it; the test plugs it in with IOATTR_ENGINES=tests.toy_engine:ToyAdapter
(ioattr/engines/registry.py), editing no file of ioattr's. The engine is store.py, a
file-backed store run by the test: its server is the `toy-store` process (owns_server), its
files are `*.tdat` (data, class toy_data: its own, declared in this folder's file_classes.toml
and numbered when ioattr loads it) and `*.tlog` (its log, the shared class wal), its threads'
roles come from their names, its counters from its stats file, and explain gets one finding
of its own (toy_log_reads).
"""
from __future__ import annotations

import json
import os
from typing import Any, ClassVar, Mapping, Sequence

from ioattr.collectors import abi
from ioattr.collectors.engine import EngineError
from ioattr.engines.base import (Connection, CounterRow, CounterSource, EngineAdapter, Finding, NativeServer,
                                 PageFile, StatusCounter)
from ioattr.model.evidence import I_CLASS, Evidence, by_share, finding, pct

COMM = "toy-store"
ROLES = {"toy-writer": "writer", "toy-reader": "reader"}


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


class ToyConnection:
    """The store's counters, read from its stats file (base.ServerConnection)."""

    flavor = "toy"

    def __init__(self, datadir: str | None) -> None:
        self.datadir = datadir
        self.conn = self  # always open: a file (what collectors/counters.py asks of a connection)

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def query(self, sql: str) -> list[tuple]:
        try:
            with open(os.path.join(self.datadir or "", "toy.stats")) as f:
                stats = json.load(f)
        except (OSError, ValueError) as e:
            raise EngineError(f"no toy.stats: {e}") from None
        return [(str(k), v) for k, v in stats.items()]


class ToyCounters(CounterSource):
    """The workload's queries as every engine's (status:Com_select: explain's per-query unit) and
    the store's records written."""

    source = "status"

    def read(self, conn: Connection) -> list[CounterRow]:
        stats = dict(conn.query("stats"))
        return [("Com_select", float(stats.get("queries", 0)), None),
                ("toy_records_written", float(stats.get("records_written", 0)), None)]


class ObjectNamesNone:
    """The toy store has no objects inside its files."""

    error: str | None = None

    def refresh(self, conn: Connection) -> bool:
        return True

    def lookup(self, object_id: int) -> str | None:
        return None


class ToyServer:
    """One running toy store (base.NativeServer)."""

    native = True

    def __init__(self, pid: int, adapter: "ToyAdapter") -> None:
        self.pid = pid
        self.engines: tuple[EngineAdapter, ...] = (adapter,)
        try:
            self.datadir: str | None = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            self.datadir = None
        self.error: str | None = None
        self.stage_status = "statements: none (the toy store has no statements to trace)"
        self.own_pids: set[int] = set()
        self._conn = ToyConnection(self.datadir)

    @property
    def engine(self) -> ToyConnection:
        return self._conn

    @property
    def engine_error(self) -> str | None:
        return None

    def status_rows(self) -> list[tuple[str, Any]]:
        stats = dict(self._conn.query("stats"))
        return [("Com_select", stats.get("queries", 0))]

    def start(self) -> None:
        pass

    def children(self) -> list[int]:
        return []

    def knows(self, pid: int) -> bool:
        return pid == self.pid

    def role(self, pid: int) -> str | None:
        return "store" if pid == self.pid else None

    def forget(self, pid: int) -> None:
        pass

    def refresh_names(self, force: bool = False) -> None:
        pass

    def describe_path(self, path: str) -> dict[str, Any] | None:
        return None

    def attach_pages(self, map_fd: int | None) -> None:
        pass

    def poll_pages(self) -> None:
        pass

    def page_name(self, space_id: int, index_id: int) -> tuple[PageFile, str | None] | None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"pid": self.pid, "engine": ToyAdapter.name, "datadir": self.datadir, "connected": True,
                "version": None, "flavor": "toy", "error": None, "names_error": None, "roles_error": None,
                "stage_probes": self.stage_status, "settings": {}}

    def close(self) -> None:
        pass


def toy_log_reads(e: Evidence) -> dict[str, Any]:
    """Reads of the store's log (a recovery re-reading it) as the cause of a change in reads."""
    title = "The toy store re-reads its log"
    if not e.reads:
        return finding("toy_log_reads", title, "not_applicable", "a read cause; this metric counts writes")

    def pred(k: tuple) -> bool:
        return k[I_CLASS] == "wal"

    b, t, share = e.per_op("base", pred), e.per_op("target", pred), e.share(pred)
    return finding("toy_log_reads", title, "refuted" if t <= b else by_share(share),
                   f"log reads: {b:.4f} -> {t:.4f} per op, {pct(share)} of the gross change",
                   share_of_change=share, baseline_per_op=b, target_per_op=t)


class ToyAdapter(EngineAdapter):
    name = "toy"
    own_server: ClassVar[str | None] = "toy"
    server_comms: ClassVar[frozenset[str]] = frozenset({COMM})
    findings: ClassVar[Sequence[Finding]] = (toy_log_reads,)
    next_steps: ClassVar[Mapping[str, tuple[str, str]]] = {
        "toy_log_reads": ("the store read its log back", "keep the log out of the read path")}
    status_counters: ClassVar[Mapping[str, StatusCounter]] = {}

    def classify_path(self, path: str) -> abi.FileClass | None:
        if path.endswith(".tdat"):
            return abi.FileClass.TOY_DATA  # file_classes.toml here (IOATTR_ENGINES names this adapter)
        if path.endswith(".tlog"):
            return abi.FileClass.WAL
        return None

    def is_page_file(self, path: str) -> bool:
        return False

    def object_names(self) -> ObjectNamesNone:
        return ObjectNamesNone()

    def claims(self, conn: Connection | None) -> bool:
        return conn is not None and getattr(conn, "flavor", None) == "toy"

    def owns_server(self, pid: int) -> bool:
        return _comm(pid) == COMM

    def server_context(self, pid: int) -> NativeServer:
        return ToyServer(pid, self)

    def role_of_comm(self, comm: str) -> str | None:
        return ROLES.get(comm)

    def counter_sources(self) -> list[CounterSource]:
        return [ToyCounters()]

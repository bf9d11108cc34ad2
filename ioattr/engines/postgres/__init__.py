"""The PostgreSQL adapter: PostgreSQL's files and their classes, relation names, and the roles
of its processes behind ioattr.engines.base.EngineAdapter.

What it does: every backend and auxiliary process is traced from its fork (the session
follows forks when a target is a postmaster); files are classified (files.py) and data files
named database.schema.relation with fork and segment (names.py, over a psycopg connection);
relation pages are classified in BPF as heap or btree meta/root/internal/leaf with their level
(pages.py, bpf/pg_page.h); processes get roles from pg_stat_activity.backend_type, their titles
as the fallback (roles.py); statements come from the wire protocol (bpf/stage.bpf.c's
PostgreSQL branch, collectors/stage_probes.py); the cluster's own counters (pg_statio_*,
pg_stat_bgwriter, pg_stat_database, pg_stat_wal, pg_stat_io, 18's per-backend
pg_stat_get_backend_io, pg_stat_statements) go beside ours (counters.py); explain has
checkpoint_writes, full_page_writes and heap_fetches (findings.py), planning_reads (planning.py,
over the parse/optimize/execute stages of ioattr/engines/postgres/stages.py). Not yet: a bloat
finding.

A PostgreSQL cluster is not a MySQL/MariaDB server: it has no ServerContext; the session
keeps a server.PostgresServer per postmaster (server_context()).
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping, Sequence

from ioattr.collectors import abi
from ioattr.collectors.stage_probes import PG_WIRE_FLAG, StageProbes
from ioattr.engines.base import (AdviceField, Connection, CounterSource, EngineAdapter, Finding, NativeProbes,
                                 StatusCounter)
from ioattr.engines.postgres import counters, files, names, pages, probes, roles, server
from ioattr.engines.postgres import counters as counters_mod
from ioattr.engines.postgres import findings as pg_findings

#: what a PostgreSQL phase's transactions are (the denominator of its per-transaction rates)
TRANSACTIONS_SOURCE = "pg_stat_database xact_commit + xact_rollback, less ioattr's own"
#: what a PostgreSQL phase's statements are (the denominator of its statement rate, stmt/s)
STATEMENTS_SOURCE = "Simple Query and Execute messages the clients sent, less ioattr's own"


class PostgresAdapter(EngineAdapter):
    """PostgreSQL (15 here; the file layout is the same since 10)."""

    name = "postgres"
    # recorded in meta.json servers[].settings by server.PostgresServer (bytes for sizes)
    run_settings = {"cache": "shared_buffers", "io": "wal_sync_method", "page": "block_size"}

    def classify_path(self, path: str) -> abi.FileClass | None:
        return files.classify_path(path)

    # relation main forks are registered in InnoDB's page-file map (the value's engine byte says
    # whose) by the cluster's context (server.PostgresServer.attach_pages), not by path: the
    # kind of a relation's pages needs the catalogs
    file_map_name = "page_files"
    page_file_classes = frozenset({int(abi.FileClass.RELATION)})

    def is_page_file(self, path: str) -> bool:
        return False  # registered from the catalogs, never by a MySQL server's file registry

    def page_object_id(self, index_id: int) -> int:
        return pages.split_index_id(index_id)[0]  # relfilenode (the high half is the segment)

    def page_type_name(self, page_type: int, flavor: str = "mariadb") -> str:
        return pages.page_type_name(page_type)

    def is_index_page(self, page_type: int, flavor: str = "mariadb") -> bool:
        """Pages with a btree level (every page of a relation file has its relation)."""
        return pages.is_level_page(page_type)

    def object_names(self) -> names.RelationNames:
        return names.RelationNames()

    def claims(self, conn: Connection | None) -> bool:
        # never a MySQL/MariaDB server's engine (its files are never there); PostgreSQL's own
        # servers are found by owns_server()
        return conn is not None and getattr(conn, "flavor", None) == "postgresql"

    def owns_server(self, pid: int) -> bool:
        """Process pid is a PostgreSQL postmaster."""
        return server.is_postmaster(pid)

    def server_context(self, pid: int) -> server.PostgresServer:
        return server.PostgresServer(pid, engines=(self,))

    # the postmaster's binary names its processes (a --comm naming one may bring a cluster later)
    server_comms: ClassVar[frozenset[str]] = frozenset(server.SERVER_BINARIES)
    # its processes speak PostgreSQL's wire protocol: the wire reader parses their recvfrom()s so
    target_flags: ClassVar[int] = PG_WIRE_FLAG

    def native_probes(self, stage: StageProbes, wire: bool) -> NativeProbes:
        return probes.PgProbes(stage, wire)

    # -- findings ----------------------------------------------------------------------------
    own_server: ClassVar[str | None] = server.PostgresServer.engine_name  # meta.json servers[].engine
    # pg_stat_database's tup_inserted summed over the cluster's databases (counters.TOTALS)
    rows_inserted: ClassVar[Sequence[str]] = ("pg_stat_database:tup_inserted",)
    # blocks read into shared buffers, the cluster's sum: a page read each, as ours count pages
    storage_reads: ClassVar[str | None] = "pg_stat_database:blks_read"
    findings: ClassVar[Sequence[Finding]] = pg_findings.FINDINGS
    next_steps: ClassVar[Mapping[str, tuple[str, str]]] = pg_findings.NEXT_STEPS
    advice_fields: ClassVar[Mapping[str, AdviceField]] = pg_findings.ADVICE_FIELDS

    # -- counters --------------------------------------------------------------------------
    def phase_terms(self, counters: Mapping[str, float],
                    io_rows: Callable[[], list[dict[str, Any]]],
                    statement_counts: Mapping[str, float] | None = None) -> dict[str, Any] | None:
        """The phase's transactions: pg_stat_database xact_commit + xact_rollback (every database)
        less the ones ioattr's own connections committed; and its statements: the Simple Query
        and Execute messages the wire reader counted (ioattr's own backends' left out when
        recorded), every kind summed. None without pg_stat_database (no PostgreSQL cluster
        connected in this recording)."""
        commits = counters.get("pg_stat_database:xact_commit")
        if commits is None:
            return None
        rollbacks = counters.get("pg_stat_database:xact_rollback", 0.0)
        own = counters.get(f"pg_stat_database:{counters_mod.OWN_COMMITS}", 0.0)
        out: dict[str, Any] = {"transactions": max(commits + rollbacks - own, 0.0), "commits": commits,
                               "rollbacks": rollbacks, "own_transactions": own,
                               "transactions_source": TRANSACTIONS_SOURCE}
        if statement_counts is not None:
            out["statements"] = float(sum(statement_counts.values()))
            out["statements_source"] = STATEMENTS_SOURCE
        out.update(counters_mod.wal_terms(counters))
        backend_io = counters_mod.backend_io_terms(counters)
        if backend_io is not None:
            out["backend_io"] = backend_io
        return out

    def phase_line(self, terms: Mapping[str, Any]) -> str | None:
        n = terms.get("transactions")
        if n is None:
            return None
        line = f"PostgreSQL: {n:,.0f} transactions ({terms.get('transactions_source')})"
        s = terms.get("statements")
        if s is not None:
            line += f", {s:,.0f} statements ({terms.get('statements_source')})"
        for more in (counters_mod.wal_line(terms), counters_mod.backend_io_line(terms.get("backend_io"))):
            if more:
                line += "; " + more
        return line

    def object_sizes(self, conn: Connection) -> dict[str, int]:
        """Every user table's bytes on disk (indexes, TOAST and forks included), per database."""
        return counters.object_sizes(conn)

    def counter_sources(self) -> list[CounterSource]:
        return [counters.PgStatio(), counters.PgStatBgwriter(), counters.PgStatDatabase(), counters.PgStatWal(),
                counters.PgStatIo(), counters.PgStatBackendIo(), counters.PgStatStatements()]

    # a backend's own counters start at 0 and are listed while it lives
    counters_from_zero: ClassVar[frozenset[str]] = frozenset({counters.PgStatBackendIo.source})

    # shared buffers are PostgreSQL's cache: a miss is a block read with one pread (which the
    # page cache may serve); cluster-wide sums of pg_stat_database (server.PostgresServer.status_rows)
    status_counters: ClassVar[Mapping[str, StatusCounter]] = {
        "cache_misses": StatusCounter("blks_read", "blocks PostgreSQL read into shared buffers (misses)"),
        "cache_requests": StatusCounter("blks_hit", "blocks PostgreSQL asked its shared buffers for",
                                        also=("blks_read",)),
    }
    report_counters: ClassVar[Sequence[tuple[str, tuple[str, ...]]]] = (
        ("shared buffers reads (misses)", ("pg_stat_database:blks_read",)),
        ("shared buffers hits", ("pg_stat_database:blks_hit",)),
        ("buffers written by the checkpointer", ("pg_stat_bgwriter:buffers_checkpoint",)),
        ("buffers written by the background writer", ("pg_stat_bgwriter:buffers_clean",)),
        ("buffers written by backends", ("pg_stat_bgwriter:buffers_backend",)),
    )

    def server_of(self, pid: int) -> int | None:
        """A backend's (or auxiliary process's) postmaster."""
        return server.postmaster_of(pid)

    def forks_servers(self, pid: int) -> bool:
        """The server forks a process per connection: targets must follow forks."""
        return server.is_postgres_process(pid)


__all__ = ["PostgresAdapter", "counters", "files", "names", "pages", "probes", "roles", "server"]

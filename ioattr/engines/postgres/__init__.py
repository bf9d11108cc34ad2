"""The PostgreSQL adapter: PostgreSQL's files and their classes, relation names, and the roles
of its processes behind ioattr.engines.base.EngineAdapter.

What it does: every backend and auxiliary process is traced from its fork (the session
follows forks when a target is a postmaster); files are classified (files.py) and data files
named database.schema.relation with fork and segment (names.py, over a psycopg connection);
relation pages are classified in BPF as heap or btree meta/root/internal/leaf with their level
(pages.py, bpf/pg_page.h); processes get roles from pg_stat_activity.backend_type, their titles
as the fallback (roles.py); statements come from the wire protocol (bpf/stage.bpf.c's
PostgreSQL branch, collectors/stage_probes.py); the cluster's own counters (pg_statio_*,
pg_stat_bgwriter, pg_stat_database, pg_stat_wal) go beside ours (counters.py); explain has
checkpoint_writes, full_page_writes and heap_fetches (findings.py), planning_reads (planning.py,
over the parse/optimize/execute stages of collectors/pg_stages.py). Not yet: pg_stat_io
(PostgreSQL 16+), a bloat finding.

A PostgreSQL cluster is not a MySQL/MariaDB server: it has no ServerContext; the session
keeps a server.PostgresServer per postmaster (server_context()).
"""
from __future__ import annotations

from typing import Any, ClassVar, Mapping, Sequence

from ioattr.collectors import abi
from ioattr.engines.base import AdviceField, Connection, CounterSource, EngineAdapter, Finding, StatusCounter
from ioattr.engines.postgres import counters, files, names, pages, roles, server
from ioattr.engines.postgres import findings as pg_findings


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

    def server_context(self, pid: int) -> Any:
        return server.PostgresServer(pid, engines=(self,))

    # -- findings ----------------------------------------------------------------------------
    own_server: ClassVar[str | None] = server.PostgresServer.engine_name  # meta.json servers[].engine
    findings: ClassVar[Sequence[Finding]] = pg_findings.FINDINGS
    next_steps: ClassVar[Mapping[str, tuple[str, str]]] = pg_findings.NEXT_STEPS
    advice_fields: ClassVar[Mapping[str, AdviceField]] = pg_findings.ADVICE_FIELDS

    # -- counters --------------------------------------------------------------------------
    def counter_sources(self) -> list[CounterSource]:
        return [counters.PgStatio(), counters.PgStatBgwriter(), counters.PgStatDatabase(), counters.PgStatWal()]

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

    def forks_servers(self, pid: int) -> bool:
        """The server forks a process per connection: targets must follow forks."""
        return server.is_postgres_process(pid)


__all__ = ["PostgresAdapter", "counters", "files", "names", "pages", "roles", "server"]

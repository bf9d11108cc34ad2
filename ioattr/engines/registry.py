"""Which engine adapters a traced server gets, and the engine-wide questions the core asks.

ENGINES lists every adapter ioattr has, in the order they are asked; a new engine is one
line here. The core never tests an engine's name: it asks the adapters (for a path's
file_class, a page kind's name, a thread's role) or iterates the ones a server uses.
"""
from __future__ import annotations

import importlib
from typing import Any, Mapping

from ioattr import environment
from ioattr.collectors import abi
from ioattr.engines.base import AdviceField, Connection, EngineAdapter, StatusCounter, first_class
from ioattr.engines.innodb import InnodbAdapter
from ioattr.engines.myrocks import MyrocksAdapter
from ioattr.engines.postgres import PostgresAdapter
from ioattr.model import storage
from ioattr.model.labels import FILE_CLASS_NAMES



def plugged_engines() -> tuple[EngineAdapter, ...]:
    """The adapters $IOATTR_ENGINES names (module:Class, comma-separated): an engine kept outside
    ioattr's tree (the test suite's toy engine, tests/toy_engine/) plugged in without editing it."""
    out = []
    for spec in filter(None, (s.strip() for s in environment.get("IOATTR_ENGINES").split(","))):
        module, _, cls = spec.partition(":")
        adapter = getattr(importlib.import_module(module), cls)()
        if not isinstance(adapter, EngineAdapter):
            raise TypeError(f"IOATTR_ENGINES: {spec} is not an ioattr.engines.base.EngineAdapter")
        out.append(adapter)
    return tuple(out)


#: every engine adapter, in the order they are asked
ENGINES: tuple[EngineAdapter, ...] = (InnodbAdapter(), MyrocksAdapter(), PostgresAdapter()) + plugged_engines()


def engines_for(conn: Connection | None) -> tuple[EngineAdapter, ...]:
    """The adapters of a server (through its connection; None: not connected yet, then every
    adapter whose files may be there: file classification needs no connection)."""
    return tuple(e for e in ENGINES if e.claims(conn))


def by_name(name: str) -> EngineAdapter:
    """The adapter called `name` (KeyError if ioattr has none)."""
    for e in ENGINES:
        if e.name == name:
            return e
    raise KeyError(name)


def page_engine() -> EngineAdapter:
    """The adapter whose page kinds the pages table holds (the one BPF page classifier)."""
    return next(e for e in ENGINES if e.file_map_name is not None)


def page_engine_for(file_class: int) -> EngineAdapter:
    """The adapter whose page kinds a page row of this file class holds (PostgreSQL's relation
    files share the BPF page map with InnoDB's tablespaces; their rows say so by file class)."""
    return next((e for e in ENGINES if file_class in e.page_file_classes), page_engine())


def classify_path(path: str) -> abi.FileClass:
    """A server file's file_class by its name, asking every engine ('other' if none owns it)."""
    return first_class(ENGINES, path)


def file_class_name(path: str) -> str:
    """classify_path as the name the file_class dimension shows."""
    return FILE_CLASS_NAMES[classify_path(path)]


def is_page_file(path: str) -> bool:
    """Whether some engine classifies the pages of this file (registers it in BPF)."""
    return any(e.is_page_file(path) for e in ENGINES)


def role_of_comm(comm: str | None) -> str | None:
    """A thread's role from its name (comm), the first engine's that names it (None: none does)."""
    if comm is None:
        return None
    return next((r for r in (e.role_of_comm(comm) for e in ENGINES) if r is not None), None)


def statement_probes() -> tuple:
    """Every engine's stage probes (collectors/stage_probes.StageProbe), attached beside the
    server's statement probes; one engine's probe is not attached twice."""
    out: dict[str, object] = {}
    for e in ENGINES:
        for p in e.statement_probes:
            out.setdefault(p.program, p)
    return tuple(out.values())


def status_counters(name: str) -> list[StatusCounter]:
    """The server status counters that answer base.SERVER_COUNTERS[name], one per engine that has one."""
    return [e.status_counters[name] for e in ENGINES if name in e.status_counters]


def advice_fields() -> dict[str, AdviceField]:
    """Every engine's {name} fields of explain's texts (the first engine that declares a name wins)."""
    out: dict[str, AdviceField] = {}
    for e in ENGINES:
        for name, spec in e.advice_fields.items():
            out.setdefault(name, spec)
    return out


def cache_setting(settings: Mapping[str, Any]) -> str | None:
    """The name of the cache-size setting (EngineAdapter.run_settings "cache") of the storage
    engines inside a MySQL/MariaDB server (own_server None) that a text about such a server's
    cache names: the first such engine's whose setting `settings` (meta.json "settings") has,
    else the first such engine's (None: no engine has one)."""
    names = [e.run_settings["cache"] for e in ENGINES if e.own_server is None and "cache" in e.run_settings]
    return next((n for n in names if settings.get(n)), names[0] if names else None)


def rows_inserted_keys() -> tuple[str, ...]:
    """The counters of rows inserted, preferred first: the storage engines' inside a MySQL/MariaDB
    server, the server's own (storage.SERVER_ROWS_INSERTED), then those of engines that are their
    own server (EngineAdapter.rows_inserted)."""
    inside = [k for e in ENGINES if e.own_server is None for k in e.rows_inserted]
    own = [k for e in ENGINES if e.own_server is not None for k in e.rows_inserted]
    return (*inside, *storage.SERVER_ROWS_INSERTED, *own)


def storage_reads_keys() -> tuple[str, ...]:
    """The engines' own counts of their storage reads (EngineAdapter.storage_reads), in ENGINES' order."""
    return tuple(e.storage_reads for e in ENGINES if e.storage_reads)


def recorded_in(*metas: dict) -> tuple[EngineAdapter, ...]:
    """The engines of the servers some of these recordings (meta.json) traced; every engine when
    none of them lists its servers (an older recording: nothing rules an engine out)."""
    verdicts = [[e.recorded_in(m) for m in metas] for e in ENGINES]
    if all(v is None for vs in verdicts for v in vs):
        return ENGINES
    return tuple(e for e, vs in zip(ENGINES, verdicts) if any(vs))


def server_engine(pid: int) -> EngineAdapter | None:
    """The engine whose own server process pid is (PostgreSQL's postmaster); None for anything
    else, a MySQL/MariaDB server included (collectors.mysqld.is_server answers for those)."""
    return next((e for e in ENGINES if e.owns_server(pid)), None)


def server_of(pid: int) -> tuple[EngineAdapter, int] | None:
    """(engine, server pid) when process pid is a worker a server of an engine's own forked
    (a PostgreSQL backend: its postmaster), else None."""
    for e in ENGINES:
        parent = e.server_of(pid)
        if parent is not None:
            return e, parent
    return None


def forks_servers(pids: list[int]) -> bool:
    """Whether one of these processes is a server that forks its workers (PostgreSQL), so its
    targets' children must be followed from their fork on."""
    return any(e.forks_servers(p) for p in pids for e in ENGINES)


def counters_from_zero() -> frozenset[str]:
    """Every engine's counter sources whose counters start at 0 when first listed
    (EngineAdapter.counters_from_zero)."""
    return frozenset().union(*(e.counters_from_zero for e in ENGINES))

"""The interface a storage engine implements, and all the rest of ioattr knows about engines.

ioattr's model is engine-neutral: file -> object inside it (index, relation, SST) -> page or
block kind -> thread role -> statement and stage -> phase. What only an engine knows sits
behind `EngineAdapter`:

    files       which of a server's files are the engine's, and their file_class
                (the vocabulary is ioattr.model.labels.FILE_CLASS_NAMES, shared by all engines)
    objects     naming the objects inside those files from the server (ObjectNames), and for
                an engine whose files each hold a known set of objects (an LSM's SSTs) a
                per-file catalog (FileCatalog, meta.json "files")
    pages       the page/block kinds it classifies: the userspace half of a BPF classifier,
                with the table of kinds defined once (a unit test checks it against the
                BPF header it mirrors)
    roles       thread/process roles (performance_schema instruments, thread names)
    statements  the uprobes of its own work inside a statement (InnoDB: index dives, purge),
                attached beside the server's statement probes by collectors/stage_probes.py
    counters    its counter sources for the counters table (CounterSource); which server
                status counters are its cache misses and requests (status_counters, for
                `top` and the exporter); its headline rows of the HTML report (report_counters)
    advice      the {name} fields of explain's texts it fills from its settings (advice_fields)
    findings    the explain findings only it can test

The core (ioattr.live, ioattr.analysis, topview, prometheus) uses adapters through this
interface and ioattr.engines.registry, never an engine's modules by name, so adding MyRocks or
PostgreSQL is one new package under ioattr/engines/ plus one line in the registry.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping, Protocol, Sequence

from ioattr.collectors import abi

if TYPE_CHECKING:
    from ioattr.collectors.stage_probes import StageProbe, StageProbes
    from ioattr.model.evidence import Evidence

#: one counters-table row from a source: (name, value, text) -- text only for non-numbers
CounterRow = tuple[str, "float | None", "str | None"]
#: a finding: explain's evidence -> {"id", "title", "verdict", "evidence"} (ioattr.analysis.findings)
Finding = Callable[["Evidence"], dict[str, Any]]


class Connection(Protocol):
    """What an adapter needs of a server connection (collectors.engine.EngineConnection)."""

    flavor: str

    def query(self, sql: str) -> list[tuple]: ...


class ServerConnection(Connection, Protocol):
    """The connection a server's counters are read through (collectors/counters.py): `conn` is
    the open client (None: lost, then close() and connect() are tried now and then)."""

    @property
    def conn(self) -> object | None: ...

    def connect(self) -> None: ...

    def close(self) -> None: ...


class ObjectNames(Protocol):
    """Names of the objects inside an engine's files (index id -> schema.table.INDEX, ...).

    Unknown ids stay unknown (None), never guessed; `error` says why names are missing."""

    error: str | None

    def refresh(self, conn: Connection) -> bool: ...

    def lookup(self, object_id: int) -> str | None: ...


class FileRegistry(Protocol):
    """Keeps the engine's BPF file map equal to the page files a server has open."""

    pending: bool

    def sync(self, pid: int, directories: list[str] | None = None) -> list: ...

    def end_interval(self) -> None:
        """The interval's rows are named: files dropped from the map since the last call (a
        table dropped or rebuilt while its IO was being drained) need not name them any longer."""


class FileCatalog(Protocol):
    """What an engine's files hold, per file (path -> facts), for meta.json "files": an LSM's
    SST files change all the time (flushes and compactions create and delete them), and what
    each holds (its level, the indexes whose key ranges it has) is the engine's to say, not
    the page classifier's. InnoDB has none (its files are named by their pages' index ids).
    refresh() re-reads only when the files changed unless `force` (a phase boundary) or `final`
    (the end of a recording, after its last counters snapshot: a catalog may read more then);
    entries of files that vanished stay, marked "deleted", so their earlier IO keeps a name."""

    error: str | None

    def refresh(self, conn: Connection, force: bool = False, final: bool = False) -> bool: ...

    def entries(self) -> dict[str, dict[str, Any]]: ...


class PageFile(Protocol):
    """A page file an engine's own server registered in the BPF page map (a page row's file)."""

    path: str
    dev: int
    ino: int


class NativeServer(Protocol):
    """One traced server of an engine's own (not a MySQL/MariaDB server: PostgreSQL's postmaster
    and the processes it forks), as the live session, the counters and the rows use it;
    EngineAdapter.server_context() makes one per server process."""

    pid: int
    datadir: str | None      # where its processes run (the names of files a gone process opened)
    error: str | None        # why it is not connected (None: connected, or not tried yet)
    stage_status: str        # one line: how its statements are traced (meta.json servers[].stage_probes)
    own_pids: set[int]       # its processes that are ioattr's own (catalog reads): not the workload's
    native: bool             # True: collectors/counters.py reads its engines' sources only
    engines: tuple["EngineAdapter", ...]  # its adapters (their counter sources)

    @property
    def engine(self) -> ServerConnection | None:
        """The connection its counters are read through (None: not connected)."""

    @property
    def engine_error(self) -> str | None: ...

    def status_rows(self) -> list[tuple[str, Any]]:
        """Its status counters (the engine's status_counters' variables) for top and the exporter."""

    def start(self) -> None:
        """Connect and read the object names once (errors kept in `error`, never raised)."""

    def children(self) -> list[int]:
        """Its live child processes (the ones it forked before the session attached)."""

    def knows(self, pid: int) -> bool:
        """Whether process pid is one of its own with a role known (which cluster a pid is of)."""

    def role(self, pid: int) -> str | None:
        """The role of one of its processes (None: unknown, or not its process)."""

    def forget(self, pid: int) -> None:
        """pid is a new process: what was known of an earlier one with that pid no longer applies."""

    def refresh_names(self, force: bool = False) -> None:
        """Re-read the names of the objects in its files (throttled unless forced)."""

    def describe_path(self, path: str) -> dict[str, Any] | None:
        """meta.json "relations" entry of one of its object files (None: not such a file)."""

    def attach_pages(self, map_fd: int | None) -> None:
        """Register its page files in the BPF map (before start()): page classification on."""

    def poll_pages(self) -> None:
        """Often (the session's poll): register its new page files (throttled)."""

    def page_name(self, space_id: int, index_id: int) -> tuple[PageFile, str | None] | None:
        """A page row's file and the name of the object it holds (None: not its page file)."""

    def describe(self) -> dict[str, Any]:
        """meta.json "servers" entry."""

    def close(self) -> None: ...


class NativeProbes(Protocol):
    """The probes an engine's own servers need beside the shared ones, for one session (statements
    from its wire protocol, its async IO workers), shared by all its servers:
    EngineAdapter.native_probes()."""

    def prepare(self, pid: int) -> int:
        """Before server pid's context starts: attach what its processes must carry a flag for
        from their fork on (PostgreSQL: the stage uprobes); the bits of the targets map value
        (collectors/targets.py) to add to the adapter's target_flags (0: none)."""

    def attach(self, server: NativeServer) -> str:
        """Attach for a server just started: the line saying how its statements are traced."""

    def detach(self, pid: int) -> None:
        """Server pid is gone."""

    def degraded(self) -> str | None:
        """A new reason some of its statements are not read, since the last call (None: no change)."""

    def close(self) -> None: ...


#: the engine-neutral server counters `top` and the exporter read once per interval (the keys of
#: EngineAdapter.status_counters): what each means whatever the engine
SERVER_COUNTERS: Mapping[str, str] = {
    "cache_misses": "pages or blocks the engine read from storage because its cache lacked them",
    "cache_requests": "pages or blocks the engine asked its cache for (hits and misses)",
}


@dataclass(frozen=True)
class StatusCounter:
    """One server status counter (SHOW GLOBAL STATUS) that answers an engine-neutral question."""

    variable: str  # its SHOW GLOBAL STATUS name
    meaning: str   # what it counts, in the engine's words (help texts: "pages InnoDB read from storage")
    #: further SHOW GLOBAL STATUS names added to `variable`: an engine may have no single counter
    #: for the question (MyRocks counts block-cache hits and misses, not requests: its
    #: cache_requests is Rocksdb_block_cache_hit + Rocksdb_block_cache_miss)
    also: tuple[str, ...] = ()

    @property
    def variables(self) -> tuple[str, ...]:
        """Every status variable whose values add up to this counter."""
        return (self.variable, *self.also)


@dataclass(frozen=True)
class AdviceField:
    """One {name} field of explain's texts: the first truthy of the finding's evidence keys, then
    the target's settings, as `evidence or ... or settings` (so the last candidate when none is);
    shown as prefix + value + suffix, or left out ('') when that is None."""

    evidence: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()
    prefix: str = " (now "
    suffix: str = ")"
    mib: bool = False  # a byte count shown as "N MiB" (unknown unless positive)



class CounterSource(ABC):
    """One engine counter source of one server: a `source` of the counters table.

    Instances are per server (they may keep state, e.g. monitors they switched on)."""

    source: ClassVar[str]

    def first_sight(self, conn: Connection, settings: dict[str, Any] | None,
                    note: Callable[..., None]) -> None:
        """Once per server process (and after a reconnect): switch on what the source needs,
        add derived settings to `settings` (meta.json; None when the server's settings could
        not be read). note(key, text, detail="") says, once per key, what went wrong or what was
        changed on the server: text in one short line (the terminal shows it), detail kept in
        the recording only. Default: nothing to do."""

    @abstractmethod
    def read(self, conn: Connection) -> list[CounterRow]:
        """The source's rows now. Raises collectors.engine.EngineError when unreadable."""


class EngineAdapter(ABC):
    """A storage engine as ioattr sees it. One stateless instance per engine (the registry's);
    per-server and per-session state lives in the objects its factory methods return."""

    #: the engine's name as servers say it (information_schema.ENGINES, lower case)
    name: ClassVar[str]
    #: the BPF map its page files are registered in (None: no page classification in BPF)
    file_map_name: ClassVar[str | None] = None

    # -- files -------------------------------------------------------------------------
    @abstractmethod
    def classify_path(self, path: str) -> abi.FileClass | None:
        """The file_class of a file of this engine, None if the file is not the engine's."""

    @abstractmethod
    def is_page_file(self, path: str) -> bool:
        """Whether the file holds pages this engine classifies (registered in file_map_name)."""

    def file_registry(self, map_fd: int | None) -> FileRegistry | None:
        """The session's registrar of page files into the BPF map (None: nothing to register)."""
        return None

    #: server variables naming directories where the engine keeps files besides the datadir
    #: (read with @@datadir in one query when a server is connected)
    directory_variables: ClassVar[Sequence[str]] = ()

    def on_connect(self, conn: Connection, files: FileRegistry | None) -> None:
        """A server was just connected: learn what the file registry needs from it (e.g. which
        spaces are encrypted). Must not raise for a server that lacks what it asks."""

    # -- objects -----------------------------------------------------------------------
    @abstractmethod
    def object_names(self) -> ObjectNames:
        """A fresh per-server name cache of the objects inside the engine's files."""

    def object_sizes(self, conn: Connection) -> dict[str, int]:
        """Bytes on disk per table (schema.table), for explain's working-set finding.
        Raises collectors.engine.EngineError. Default: unknown (empty)."""
        return {}

    def file_catalog(self) -> FileCatalog | None:
        """A fresh per-server catalog of the objects inside the engine's files, by file (an LSM:
        each SST's level and indexes), or None where the objects are named per page instead
        (InnoDB: index ids in page headers, ObjectNames). The LSM's answer to "which index is
        this IO": an SST holds key ranges of one or several indexes, so IO is charged to an
        index only when its file holds exactly one."""
        return None

    # -- pages / blocks ------------------------------------------------------------------
    #: file classes (page_key.file_class) of page rows this engine's files give, where the engine
    #: is not the default page engine (registry.page_engine_for: PostgreSQL's relation files)
    page_file_classes: ClassVar[frozenset[int]] = frozenset()

    def page_object_id(self, index_id: int) -> int:
        """The object id (index id, relfilenode) a page row's index_id holds."""
        return index_id

    def page_type_name(self, page_type: int, flavor: str = "mariadb") -> str:
        """The name of a page/block kind number the BPF classifier counted."""
        return f"type_{page_type}"

    def is_index_page(self, page_type: int, flavor: str = "mariadb") -> bool:
        """Whether the kind belongs to an index (has an index id and a level)."""
        return False

    def space_page_name(self, page_type: int, space_id: int, object_names: ObjectNames,
                        flavor: str = "mariadb") -> str | None:
        """The `index` a page of a kind that holds no object id is charged to, from its space
        (InnoDB: a PAGE_COMPRESSED page, to its table), else None. Default: None."""
        return None

    # -- roles -----------------------------------------------------------------------------
    #: performance_schema instrument NAME -> role, for the engine's own threads
    instrument_roles: ClassVar[Mapping[str, str]] = {}

    def role_of_comm(self, comm: str) -> str | None:
        """A role from a thread's name (comm) where the engine names its threads."""
        return None

    # -- statements -------------------------------------------------------------------------
    #: uprobes on the engine's own work inside (or beside) a statement, attached with the server's
    #: statement probes by collectors/stage_probes.py: by default only probes that the statements
    #: doing that work hit (index dives, purge), `fine=True` ones only with --stages full
    statement_probes: ClassVar[Sequence[StageProbe]] = ()

    # -- counters ------------------------------------------------------------------------------
    #: server variables the engine's findings need, recorded in meta.json "settings" (null when
    #: the server has none), and more recorded when the server has them
    settings: ClassVar[Sequence[str]] = ()
    extra_settings: ClassVar[Sequence[str]] = ()
    #: what `ioattr compare` shows of a run for this engine, by role: "cache" (the engine's cache
    #: size, bytes), "io" (how it reads/writes its files: flush method, direct reads, WAL sync),
    #: "page" (page or block size, bytes) -- each a settings name as meta.json keeps it (the
    #: server's "settings", or a native server's servers[].settings); one the recording lacks is
    #: shown as "-". An engine is listed for a run when its "cache" setting was recorded.
    run_settings: ClassVar[Mapping[str, str]] = {}

    def counter_sources(self) -> list[CounterSource]:
        """Fresh per-server counter sources, in the order they are read."""
        return []

    #: SERVER_COUNTERS name -> the server status counter that answers it for this engine (an
    #: engine that has none leaves it out; where several engines of one server answer, `top` and
    #: the exporter add them up). MyRocks answers cache_misses with its block-cache misses and
    #: cache_requests with hits + misses (StatusCounter.also).
    status_counters: ClassVar[Mapping[str, StatusCounter]] = {}
    #: the engine's headline rows of the HTML report's per-phase counters table, shown between
    #: the server's statement counts and the process/host ones: (label, counter keys
    #: "source:name" of the counters table, the first one recorded is shown)
    report_counters: ClassVar[Sequence[tuple[str, tuple[str, ...]]]] = ()

    #: counter sources whose counters each start at 0 when first listed (a process's own counters,
    #: listed only while it lives, e.g. PostgreSQL's per-backend IO): a counter first listed after
    #: its source's first reading grew from 0, so its phase delta is its last value, not last - first
    counters_from_zero: ClassVar[frozenset[str]] = frozenset()
    #: its counters of rows inserted ("source:name" keys of the counters table), preferred first:
    #: the benchmark's unit for inserts (report --by phase "ips", explain's per-insert terms, the
    #: HTML report's row). A storage engine's come before its MySQL/MariaDB server's own count
    #: (ioattr.model.storage.SERVER_ROWS_INSERTED), an engine that is its own server's after
    #: (registry.rows_inserted_keys)
    rows_inserted: ClassVar[Sequence[str]] = ()
    #: its own count of its storage reads ("source:name"; None: none), the interval-by-interval
    #: reads explain's noise model and report --by phase's engine_reads_per_query take
    storage_reads: ClassVar[str | None] = None

    def phase_terms(self, counters: Mapping[str, float],
                    io_rows: Callable[[], list[dict[str, Any]]],
                    statement_counts: Mapping[str, float] | None = None) -> dict[str, Any] | None:
        """The engine's own per-phase terms (report --by phase "summary" and explain's
        baseline/target carry them under the engine's name): for an LSM, flush and compaction
        bytes, WAL per transaction, write amplification, its counters beside ours. `counters`
        are the phase's counter deltas (analysis.phase_stats); io_rows() the phase's syscall-layer
        report rows by file_class and role (asked only if needed: the core builds them);
        statement_counts the statements the probes counted in the phase, by kind (None: the
        recording has no statements table). An engine that is its own server may give
        "transactions" and "statements" (the denominators the server's MySQL counters give
        otherwise). None: nothing for this phase (e.g. the server did not have the engine).
        Default: None."""
        return None

    def phase_line(self, terms: Mapping[str, Any]) -> str | None:
        """One readable line of phase_terms for explain's and report's text (None: none)."""
        return None

    # -- findings ---------------------------------------------------------------------------------
    # explain asks the engines of the recordings it compares (recorded_in) for their findings and
    # advice; one engine's findings and texts never show on another engine's recording.
    #: explain findings only this engine can test (ioattr.analysis.findings runs them)
    findings: ClassVar[Sequence[Finding]] = ()
    #: finding id -> (what it means, what to try next), for this engine's findings (ids may repeat
    #: across engines: each engine's "working_set" names its own cache and settings)
    next_steps: ClassVar[Mapping[str, tuple[str, str]]] = {}
    #: the {name} fields explain's texts (its own next_steps and the server's) take from this
    #: engine's settings and its findings' evidence, e.g. the cache size a text tells to raise
    advice_fields: ClassVar[Mapping[str, AdviceField]] = {}

    #: the "engine" meta.json "servers" entries of this engine's servers carry: None for a storage
    #: engine inside a MySQL/MariaDB server (whose entries carry none), so that the server's own
    #: findings (its optimizer's: ioattr.analysis.findings.SERVER_FINDINGS) apply to its recordings
    own_server: ClassVar[str | None] = None

    def recorded_in(self, meta: Mapping[str, Any]) -> bool | None:
        """Whether a recording (its meta.json) traced a server of this engine; None when the
        recording lists no servers (then no engine is ruled out)."""
        servers = [s for s in meta.get("servers") or [] if isinstance(s, dict)]
        if not servers:
            return None
        return any(s.get("engine") == self.own_server for s in servers)

    def claims(self, conn: Connection | None) -> bool:
        """Whether a server (through its connection; None: not connected) uses this engine."""
        return True

    # -- servers of its own ----------------------------------------------------------------------
    # An engine that is its own server (PostgreSQL), not a storage engine inside a MySQL/MariaDB
    # server (those get a collectors.mysqld.ServerContext and the statement probes).
    def owns_server(self, pid: int) -> bool:
        """Whether process pid is a server of this engine's own (PostgreSQL's postmaster)."""
        return False

    #: names (comm) of such a server's processes: a --comm naming one may bring such a server later,
    #: so the probes its statements need are loaded (native_probes)
    server_comms: ClassVar[frozenset[str]] = frozenset()
    #: bits of the targets map value (collectors/targets.py) its server and every process it forks
    #: carry: what the BPF programs need to know of them (PostgreSQL: its wire protocol)
    target_flags: ClassVar[int] = 0

    def server_context(self, pid: int) -> NativeServer:
        """The session's context of such a server (asked only when owns_server(pid))."""
        raise NotImplementedError

    def server_of(self, pid: int) -> int | None:
        """The server process that forked process pid to do its work (a PostgreSQL backend's
        postmaster), where tracing pid alone misses what the server knows (names, roles,
        statements); None otherwise. Default: None."""
        return None

    def native_probes(self, stage: StageProbes, wire: bool) -> NativeProbes | None:
        """The session's probes of this engine's servers (None: none), made at the first such
        server; `stage` the session's statement probes, `wire` whether the probes were loaded
        able to read this engine's wire protocol (a server that may be traced was known then)."""
        return None

    def forks_servers(self, pid: int) -> bool:
        """Whether process pid is a server that forks a process per connection or job, whose
        children the session must follow from their fork on (mysqld/mariadbd use threads)."""
        return False

    def __repr__(self) -> str:
        return f"<engine {self.name}>"


def first_class(adapters: Iterable[EngineAdapter], path: str) -> abi.FileClass:
    """The file_class the first adapter that owns `path` gives it ('other' if none does)."""
    for a in adapters:
        fc = a.classify_path(path)
        if fc is not None:
            return fc
    return abi.FileClass.OTHER

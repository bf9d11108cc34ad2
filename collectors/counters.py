"""Engine and host counters: one snapshot per interval, the `counters` table.

Columns (ioattr.format.schema.COUNTERS_SCHEMA), one row per (snapshot, name):

    ts      DOUBLE   unix time the source was read
    phase   VARCHAR  the phase the snapshot belongs to
    pid     INTEGER  the server (or, for 'proc', the traced process); NULL for 'host'
    source  VARCHAR  see below
    name    VARCHAR
    value   DOUBLE   the value as read: cumulative counters are cumulative, gauges are gauges
    text    VARCHAR  NULL except for values that are not numbers (then value is NULL)

Sources:

    status          SHOW GLOBAL STATUS, every variable under its own name ("Com_select",
                    "Innodb_buffer_pool_reads", ...). Plus "ioattr:Com_select": the SELECTs
                    ioattr itself ran on that server (its connection's session Com_select,
                    read just after SHOW GLOBAL STATUS and summed over reconnects), which
                    Com_select includes: INFORMATION_SCHEMA and performance_schema reads are
                    SELECTs. Subtract it for the workload's own count. Likewise
                    "ioattr:Questions": the statements ioattr sent on that connection
                    (its session Questions, read with Com_select), which Questions counts.
    <engine>        each of the server's engine adapters adds its own sources
                    (ioattr/engines/*: EngineAdapter.counter_sources, read in that order
                    after 'status'). InnoDB's (ioattr/engines/innodb/counters.py):
    innodb_metrics  INFORMATION_SCHEMA.INNODB_METRICS COUNT of every enabled counter, by NAME.
                    When a server is first seen these modules are enabled if they are not
                    (SET GLOBAL innodb_monitor_enable, needs SUPER): module_buffer_page
                    (buffer_page_read_* / buffer_page_written_* by page type and level),
                    module_ibuf_system (ibuf_merges*, change buffer size), module_purge
                    (purge_*), module_index (index_page_splits/merges/reorgs/discards).
                    They are left on afterwards (each costs an atomic increment where it
                    counts): switching them off at the end would pull them from under any
                    other ioattr session on that server (an exporter, a second recording).
                    A note in the recording says what was switched on, and how to undo it.
    innodb_status   SHOW ENGINE INNODB STATUS parsed: ioattr/engines/innodb/status.py lists the
                    names (history_list_length, ibuf_*, file_pending_*, log_*, checkpoint_age,
                    buffer_pool_*, ...). Needs PROCESS.
    ps_file         performance_schema.file_summary_by_instance summed per file:
                    "<file path>:<COLUMN>" for COUNT_READ SUM_NUMBER_OF_BYTES_READ SUM_TIMER_READ
                    COUNT_WRITE SUM_NUMBER_OF_BYTES_WRITE SUM_TIMER_WRITE COUNT_MISC
                    SUM_TIMER_MISC (timers in picoseconds; split the name at its last ':')
    ps_table        performance_schema.table_io_waits_summary_by_table:
                    "<schema>.<table>:<COLUMN>" for COUNT_STAR COUNT_READ COUNT_WRITE
                    COUNT_FETCH COUNT_INSERT COUNT_UPDATE COUNT_DELETE SUM_TIMER_WAIT
                    SUM_TIMER_READ SUM_TIMER_WRITE; and from
                    table_io_waits_summary_by_index_usage "<schema>.<table>.<index>:INDEX_FETCH"
                    (rows fetched through each index, named as ioattr names indexes: which
                    index a table's rows were reached through, for explain's clustered-lookup
                    finding when the secondary index itself never missed)
                    Both P_S sources list only files/tables with some IO (COUNT_STAR > 0): an
                    absent earlier row means zero. They are read every `ps_every`-th interval
                    (default 5) and at every forced snapshot (start, phase changes, the end),
                    so phase boundaries stay exact while the table stays small.
    host            /proc/diskstats and /proc/stat (collectors/counters_host.py)
    proc            /proc/PID/io, /proc/PID/stat, thread context switches of each target

When snapshots are taken (the recorder): at the start (the baseline), after
every interval's drain, at every phase change (tagged with the phase that
ends), and in the final drain. So the delta of a cumulative counter over
phase P is its last value in P minus its last value before P (for the first
phase, minus its first value), and that is exact at phase boundaries.

Per-recording settings (meta.json "settings", keyed by server pid): the
variables in the engines' settings and SETTINGS (null when the server has
no such variable) plus those of their EXTRA_SETTINGS that exist, numbers
as integers, plus
change_buffer_size_pages (INNODB_METRICS ibuf_size when first seen) and
buffer_pool_pages (pool size / page size). Read when the
server is first seen and again after every reconnect (the latest wins), so
`explain` has what the server knew: pool and page size, change buffering,
redo capacity, read-ahead, doublewrite, index-dive limit, optimizer switches.

Robustness: every source of every server is tried on its own; a failure
(no privilege, performance_schema off, the server gone, a parse error) is
reported once through `note` and the other sources continue. A lost
connection is re-established at most every 10 s. A restarted server is a
new pid, with its own settings and monitors.

Cost: see `cost_ms` (per source, last snapshot). On MariaDB 10.11 here
(tests/test_counters.py::test_snapshot_cost) a snapshot is ~760 rows and
~4 ms of ioattr CPU, ~1350 rows and ~5 ms with the P_S summaries; wall time
12-25 ms on a busy 2-CPU machine, most of it the server answering SHOW
GLOBAL STATUS and pymysql decoding rows. Note that SHOW ENGINE INNODB
STATUS makes the server write and read back ~2 KB of an anonymous temp file
(its monitor file): that IO shows up in the io table under ioattr's own
statement.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ioattr.collectors.counters_host import HostCounters, ProcCounters
from ioattr.collectors.engine import EngineError

# the server's settings (the engines' come first, from their adapters: EngineAdapter.settings
# and .extra_settings); SETTINGS are recorded null when missing, EXTRA_SETTINGS when present
SETTINGS = ("log_bin", "sync_binlog", "performance_schema", "version")
EXTRA_SETTINGS = ("binlog_format", "version_comment",
                  # what explain's findings bound their causes by (issue 12): index dives, optimizer
                  "eq_range_index_dive_limit", "optimizer_switch")

PS_FILE_COLUMNS = ("COUNT_READ", "SUM_NUMBER_OF_BYTES_READ", "SUM_TIMER_READ", "COUNT_WRITE",
                   "SUM_NUMBER_OF_BYTES_WRITE", "SUM_TIMER_WRITE", "COUNT_MISC", "SUM_TIMER_MISC")
PS_TABLE_COLUMNS = ("COUNT_STAR", "COUNT_READ", "COUNT_WRITE", "COUNT_FETCH", "COUNT_INSERT", "COUNT_UPDATE",
                    "COUNT_DELETE", "SUM_TIMER_WAIT", "SUM_TIMER_READ", "SUM_TIMER_WRITE")
OWN_SELECTS = "ioattr:Com_select"
# the statements ioattr sent that server (its connection's session Questions, read with its
# Com_select, summed over reconnects): Questions less this is the workload's (ioattr/model/per.py)
OWN_STATEMENTS = "ioattr:Questions"
# every global status variable in one value: name 0x1f value, 0x1e between (see _status).
# A SELECT, so the server counts it in Com_select, as OWN_SELECTS does too.
STATUS_PACKED = ("SET STATEMENT group_concat_max_len = 4194304 FOR "
                 "SELECT GROUP_CONCAT(VARIABLE_NAME, 0x1f, VARIABLE_VALUE SEPARATOR 0x1e) "
                 "FROM information_schema.GLOBAL_STATUS")
RECONNECT_SECONDS = 10.0
MAX_PROCS = 64

_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")

# (ts, pid, source, name, value, text)
Row = tuple[float, "int | None", str, str, "float | None", "str | None"]


def _value(v: Any) -> tuple[float | None, str | None]:
    """A server value as (number, None) or (None, text)."""
    if v is None:
        return None, None
    if isinstance(v, (int, float)):
        return float(v), None
    if isinstance(v, bytes):
        v = v.decode(errors="replace")
    if isinstance(v, str):
        return (float(v), None) if _NUMBER.match(v) else (None, v)
    try:
        return float(v), None  # Decimal and the like
    except (TypeError, ValueError):
        return None, str(v)


def setting_value(v: Any) -> Any:
    """A server variable's value as meta.json's settings keep it: integers as int, else text."""
    if v is None:
        return None
    s = v.decode(errors="replace") if isinstance(v, bytes) else str(v)
    return int(s) if re.fullmatch(r"-?\d+", s) else s


@dataclass
class _Server:
    pid: int
    flavor: str = "mariadb"
    seen: bool = False              # settings and monitors done
    ps_on: bool = True
    engines: tuple = ()                          # the server's engine adapters (ioattr.engines.base)
    sources: list = field(default_factory=list)  # their CounterSources
    own_base: float = 0.0           # session Com_select of earlier connections
    own_last: float = 0.0
    own_q_base: float = 0.0         # session Questions of earlier connections
    own_q_last: float = 0.0
    next_reconnect: float = 0.0
    # SHOW GLOBAL STATUS's names by their upper-case form (INFORMATION_SCHEMA spells them so),
    # for the packed read (CounterCollector._status); None: read with SHOW only
    status_names: dict[str, str] | None = field(default_factory=dict)
    eng: Any = None                 # its connection, as last read (CounterCollector._lost)


class CounterCollector:
    """Takes counter snapshots of the traced servers, their processes and the host."""

    def __init__(self, note: Callable[[str, str], None] | None = None, *, ps_every: int = 5,
                 max_procs: int = MAX_PROCS, proc_root: str = "/proc") -> None:
        # note(text, detail): text is one short line for the terminal, detail ("" or more) is
        # for the recording's notes only
        self.note_fn = note or (lambda text, detail: None)
        self.ps_every = max(1, int(ps_every))
        self.max_procs = max_procs
        self.host = HostCounters(proc_root)
        self.procs = ProcCounters(proc_root)
        self.settings: dict[str, dict[str, Any]] = {}
        self.cost_ms: dict[str, float] = {}
        self.snapshots = 0
        self._servers: dict[int, _Server] = {}
        self._noted: set[tuple] = set()

    # -- the public entry points ---------------------------------------------------
    def collect(self, servers: dict[int, Any], targets: Iterable[int], phase: str,
                force: bool = False) -> dict[str, list] | None:
        """One snapshot as counters-table columns (None if nothing could be read).

        servers: pid -> ServerContext (its .engine is the connection, None when not
        connected); targets: the traced process ids; force: include the sources that
        are read only every ps_every-th time (use at phase changes and at the end).
        """
        ps_due = force or self.snapshots % self.ps_every == 0
        self.snapshots += 1
        rows: list[Row] = []
        self.cost_ms = {}

        t0 = time.perf_counter()
        ts = time.time()
        rows += [(ts, None, "host", n, v, t) for n, v, t in self._safe("host", None, self.host.rows) or []]
        self.cost_ms["host"] = (time.perf_counter() - t0) * 1e3

        t0 = time.perf_counter()
        pids = sorted(set(targets), key=lambda p: (p not in servers, p))
        if len(pids) > self.max_procs:
            self._note_once(("proc", "many"), f"counters: {len(pids)} traced processes; /proc counters "
                                              f"are read for the first {self.max_procs} (servers first)")
            pids = pids[: self.max_procs]
        self.procs.forget(set(pids))
        for pid in pids:
            ts = time.time()
            rows += [(ts, pid, "proc", n, v, t) for n, v, t in self._safe("proc", pid, self.procs.rows, pid) or []]
        for pid, ctx in servers.items():
            if pid in pids and getattr(ctx, "native", False):
                # a server forking its connections' processes (PostgreSQL): the whole cluster's CPU,
                # without ioattr's own backends (compare's CPU per query)
                own = set(getattr(ctx, "own_pids", ()) or ())
                rows += [(ts, pid, "proc", n, v, t) for n, v, t in self.procs.tree_rows(pid, own)]
        self.cost_ms["proc"] = (time.perf_counter() - t0) * 1e3

        for pid in [p for p in self._servers if p not in servers]:
            del self._servers[pid]  # exited (a restart comes back as a new pid)
        for pid, ctx in servers.items():
            rows += self._server_rows(pid, ctx, ps_due)
        if not rows:
            return None
        return {
            "ts": [r[0] for r in rows],
            "phase": [phase] * len(rows),
            "pid": [r[1] for r in rows],
            "source": [r[2] for r in rows],
            "name": [r[3] for r in rows],
            "value": [r[4] for r in rows],
            "text": [r[5] for r in rows],
        }

    # -- one server ------------------------------------------------------------------
    def _note_once(self, key: tuple, text: str, detail: str = "") -> None:
        if key in self._noted:
            return
        self._noted.add(key)
        try:
            self.note_fn(text, detail)
        except Exception:
            pass

    def _safe(self, source: str, pid: int | None, fn: Callable, *args: Any) -> Any:
        """fn(*args); a failure is noted once per (server, source) and gives None."""
        try:
            return fn(*args)
        except EngineError as e:
            err = str(e)
        except Exception as e:  # a parser or /proc surprise must not stop the recording
            err = f"{type(e).__name__}: {e}"
        who = f"server {pid}" if source not in ("host", "proc") else (f"process {pid}" if pid else "host")
        if source not in ("host", "proc") and pid is not None and self._lost(pid):
            # the server went away (exited, restarted, shutting down): one line, not one per source
            self._note_once((pid, "lost"), f"counters: {who}: connection lost ({err}); its counters stop "
                                           "until it accepts connections again")
            return None
        self._note_once((pid, source), f"counters: {who}: cannot read '{source}' counters ({err}); "
                                       "the other counters continue and this one is retried each interval")
        return None

    def _lost(self, pid: int) -> bool:
        """Whether server pid is gone or its connection was closed under us (a connection that
        could not be reopened stays closed), rather than one counter source failing."""
        if not os.path.exists(f"/proc/{pid}"):
            return True
        st = self._servers.get(pid)
        conn = getattr(getattr(st, "eng", None), "conn", None) if st is not None else None
        return bool(getattr(conn, "closed", False))

    def _server_rows(self, pid: int, ctx: Any, ps_due: bool) -> list[Row]:
        eng = getattr(ctx, "engine", None)
        if eng is None:
            why = getattr(ctx, "engine_error", None) or "not connected"
            self._note_once((pid, "connect"), f"counters: server {pid}: no engine counters ({why})")
            return []
        st = self._servers.get(pid)
        if st is None:
            engines = tuple(getattr(ctx, "engines", ()))
            st = self._servers[pid] = _Server(pid, engines=engines,
                                              sources=[src for adapter in engines for src in adapter.counter_sources()])
        st.eng = eng
        if not self._connected(st, eng):
            return []
        native = getattr(ctx, "native", False)  # an engine's own server (PostgreSQL): its sources only
        if not st.seen:
            st.seen = True
            st.flavor = getattr(eng, "flavor", "mariadb")
            if native:
                for src in st.sources:
                    src.first_sight(eng, None, lambda key, text, detail="": self._note_once(
                        (pid, *key), f"counters: server {pid}: {text}", detail))
            else:
                self._first_sight(st, eng)
        rows: list[Row] = []

        def run(source: str, fn: Callable[[], list[tuple[str, float | None, str | None]]]) -> None:
            t0 = time.perf_counter()
            ts = time.time()
            got = self._safe(source, pid, fn)
            self.cost_ms[source] = self.cost_ms.get(source, 0.0) + (time.perf_counter() - t0) * 1e3
            if got:
                rows.extend((ts, pid, source, n, v, t) for n, v, t in got)

        if not native:
            def status() -> list[tuple[str, float | None, str | None]]:
                got = self._status(st, eng)
                # after the global read: see _own_selects
                return got + (self._safe("status", pid, self._own_selects, st, eng) or [])

            run("status", status)
        for src in st.sources:
            run(src.source, lambda src=src: src.read(eng))
        if ps_due and st.ps_on and not native:
            run("ps_file", lambda: self._ps_file(eng))
            run("ps_table", lambda: self._ps_table(eng))
        return rows

    def _connected(self, st: _Server, eng: Any) -> bool:
        """Whether the connection is usable; re-connect a lost one now and then."""
        conn = getattr(eng, "conn", None)
        if conn is not None and getattr(conn, "open", True):
            return True
        now = time.monotonic()
        if now < st.next_reconnect:
            return False
        st.next_reconnect = now + RECONNECT_SECONDS
        try:
            eng.close()
            eng.connect()
            st.seen = False  # settings again: they may have been changed while we were away
            return True
        except EngineError as e:
            self._note_once((st.pid, "reconnect"), f"counters: server {st.pid}: connection lost, "
                                                   f"reconnecting failed ({e}); retrying every "
                                                   f"{RECONNECT_SECONDS:g} s")
            return False

    def _first_sight(self, st: _Server, eng: Any) -> None:
        """Settings snapshot and INNODB_METRICS modules, once per server process."""
        values: dict[str, Any] = {}
        required = tuple(n for e in st.engines for n in e.settings) + SETTINGS
        extra = tuple(n for e in st.engines for n in e.extra_settings) + EXTRA_SETTINGS
        names = required + extra
        try:
            in_list = ", ".join(f"'{n}'" for n in names)
            for name, value in eng.query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({in_list})"):
                values[str(name).lower()] = setting_value(value)
        except EngineError as e:
            self._note_once((st.pid, "settings"), f"counters: server {st.pid}: settings unknown ({e})")
        snap = {n: values.get(n) for n in required}
        snap.update({n: values[n] for n in extra if n in values})
        if values:
            self.settings[str(st.pid)] = snap
        ps = values.get("performance_schema")
        st.ps_on = ps is None or str(ps).upper() in ("ON", "1")
        if not st.ps_on:
            self._note_once((st.pid, "ps_off"), f"counters: server {st.pid}: performance_schema is off; "
                                                "no ps_file/ps_table counters (per-file and per-table "
                                                "IO summaries)")
        for src in st.sources:
            def note(key: tuple, text: str, detail: str = "") -> None:
                self._note_once((st.pid, *key), f"counters: server {st.pid}: {text}", detail)
            src.first_sight(eng, self.settings[str(st.pid)] if values else None, note)

    # -- the sources -------------------------------------------------------------------
    @staticmethod
    def _own_selects(st: _Server, eng: Any) -> list[tuple[str, float | None, str | None]]:
        """ioattr's own SELECTs and statements on the server (its session's Com_select and
        Questions, each summed over reconnects), read just after the global status: both then
        hold every own statement up to the status read, whichever form it took (SHOW, not a
        SELECT, the first time; the packed SELECT after), and this read's own Question is a
        constant that cancels in every delta."""
        rows = {str(k).lower(): float(v) for k, v in
                eng.query("SHOW SESSION STATUS WHERE Variable_name IN ('Com_select', 'Questions')")}
        out: list[tuple[str, float | None, str | None]] = []
        if "com_select" in rows:
            v = rows["com_select"]
            if v < st.own_last:  # a new connection: its count restarted
                st.own_base += st.own_last
            st.own_last = v
            out.append((OWN_SELECTS, st.own_base + v, None))
        if "questions" in rows:
            v = rows["questions"]
            if v < st.own_q_last:
                st.own_q_base += st.own_q_last
            st.own_q_last = v
            out.append((OWN_STATEMENTS, st.own_q_base + v, None))
        return out

    @staticmethod
    def _status(st: _Server, eng: Any) -> list[tuple[str, float | None, str | None]]:
        """Every global status variable. SHOW GLOBAL STATUS answers ~700 rows, and decoding
        them in pymysql was most of the recorder's CPU per interval (~10 ms): after the first
        SHOW, MariaDB is asked for the same table packed into one value (one row, split
        here), and the names are put back in SHOW's spelling. A name SHOW has not given yet
        (a plugin loaded meanwhile) sends that snapshot back to SHOW; a server that can't
        answer the packed query (not MariaDB) stays on SHOW."""
        if st.status_names and st.flavor == "mariadb":
            try:
                rows = eng.query(STATUS_PACKED)
            except EngineError:
                st.status_names = None
                rows = None
            packed = rows[0][0] if rows else None
            if isinstance(packed, (bytes, bytearray)):
                packed = packed.decode(errors="replace")
            if isinstance(packed, str):
                out = []
                for item in packed.split("\x1e"):
                    upper, _, value = item.partition("\x1f")
                    name = st.status_names.get(upper)
                    if name is None:
                        break  # a new variable: SHOW below says how it is spelled
                    v, t = _value(value)
                    out.append((name, v, t if v is None else None))
                else:
                    return out
        out = []
        names: dict[str, str] = {}
        for name, value in eng.query("SHOW GLOBAL STATUS"):
            v, t = _value(value)
            out.append((str(name), v, t if v is None else None))
            names[str(name).upper()] = str(name)
        if st.status_names is not None:
            st.status_names = names
        return out

    @staticmethod
    def _ps_file(eng: Any) -> list[tuple[str, float | None, str | None]]:
        sums = ", ".join(f"SUM({c})" for c in PS_FILE_COLUMNS)
        out = []
        for row in eng.query(f"SELECT FILE_NAME, {sums} FROM performance_schema.file_summary_by_instance "
                             "GROUP BY FILE_NAME HAVING SUM(COUNT_STAR) > 0"):
            path = row[0].decode(errors="replace") if isinstance(row[0], bytes) else str(row[0])
            for col, v in zip(PS_FILE_COLUMNS, row[1:]):
                if v is not None:
                    out.append((f"{path}:{col}", float(v), None))
        return out

    @staticmethod
    def _ps_table(eng: Any) -> list[tuple[str, float | None, str | None]]:
        cols = ", ".join(PS_TABLE_COLUMNS)
        out = []
        for row in eng.query(f"SELECT OBJECT_SCHEMA, OBJECT_NAME, {cols} "
                             "FROM performance_schema.table_io_waits_summary_by_table "
                             "WHERE OBJECT_TYPE = 'TABLE' AND COUNT_STAR > 0 "
                             "AND OBJECT_SCHEMA <> 'performance_schema'"):
            table = f"{row[0]}.{row[1]}"
            for col, v in zip(PS_TABLE_COLUMNS, row[2:]):
                if v is not None:
                    out.append((f"{table}:{col}", float(v), None))
        for schema, table, index, fetch in eng.query(
                "SELECT OBJECT_SCHEMA, OBJECT_NAME, INDEX_NAME, COUNT_FETCH "
                "FROM performance_schema.table_io_waits_summary_by_index_usage "
                "WHERE OBJECT_TYPE = 'TABLE' AND INDEX_NAME IS NOT NULL AND COUNT_FETCH > 0 "
                "AND OBJECT_SCHEMA <> 'performance_schema'"):
            name = ".".join(v.decode(errors="replace") if isinstance(v, bytes) else str(v)
                            for v in (schema, table, index))
            out.append((f"{name}:INDEX_FETCH", float(fetch), None))
        return out

#!/usr/bin/env python3
"""A miniature insert benchmark, shaped like the public one, that marks its phases for ioattr.

One table with an auto-increment primary key and three secondary indexes:

    CREATE TABLE ib.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, dt DATETIME, price FLOAT,
                       customerid INT, cashregisterid INT, productid INT, data VARCHAR(200))
    ix_price    (price, dt, id)
    ix_register (cashregisterid, price, customerid, id)
    ix_customer (customerid, price, dt, id)

Phases, each announced by a statement containing ``ioattr:phase=NAME`` on the
benchmark's own connection just before it starts (``ioattr record`` turns those
into phases):

    l.i0    load --rows rows in primary-key order, no secondary indexes yet,
            multi-row INSERTs
    l.x     create the three secondary indexes
    l.i1    insert --rows-l-i1 more rows with the indexes in place, batched
    q100    for --phase-seconds: one connection inserting at 100 rows/s plus one
    q500    running covering range queries on the secondary indexes as fast as it
    q1000   can (SELECT <index columns> FROM t FORCE INDEX (ix) WHERE col >= ?
            ORDER BY <index columns> LIMIT 10); then at 500 and 1000 rows/s

It reports, per phase: rows inserted, queries done, inserts and queries per
second, elapsed time, and the server's own counters (storage reads per query,
KB read per query, ...), as a table on stdout and with ``--json OUT`` as JSON.

Server: ``--private`` starts a throw-away MariaDB (ioattr.host.sandbox) with a small
buffer pool and stops it at the end; otherwise ``--socket`` / ``--defaults-file``
name an existing server (the table ib.t is only replaced with ``--replace``).

Run under ioattr:

    ioattr record -o /tmp/ib-small -- python3 examples/insert_benchmark.py --private --size small
    ioattr report /tmp/ib-small --by phase,index --layer syscall

Exit codes: 0 ok, 1 runtime failure, 2 bad usage.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import signal
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

PROG = "insert_benchmark"

# Make `import ioattr` work when run straight from a source checkout.
_REPO = Path(__file__).resolve().parent.parent
if (_REPO / "ioattr" / "__init__.py").exists() and str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

try:
    import pymysql
except ImportError:  # pragma: no cover - reported as a clean error in main()
    pymysql = None  # type: ignore[assignment]

DATABASE = "ib"
TABLE = "t"

#: (index name, columns). The columns are both the ORDER BY and the select list,
#: so the queries are covering: logically they never need the clustered index.
INDEXES: list[tuple[str, list[str]]] = [
    ("ix_price", ["price", "dt", "id"]),
    ("ix_register", ["cashregisterid", "price", "customerid", "id"]),
    ("ix_customer", ["customerid", "price", "dt", "id"]),
]

# Value domains.
PRICE_MAX = 500.0
CUSTOMERS = 100_000
CASHREGISTERS = 1_000
PRODUCTS = 10_000
DATA_MIN, DATA_MAX = 40, 80
BASE_TIME = _dt.datetime(2024, 1, 1)
ROWS_PER_TICK = 10  # logical clock: dt advances one second every 10 rows

#: Presets. small: table and indexes fit in a 16M buffer pool; large: several
#: times the buffer pool. Both finish quickly on a 2-core machine.
SIZES: dict[str, dict[str, float]] = {
    "small": {"rows": 30_000, "rows_l_i1": 10_000, "phase_seconds": 10},
    "large": {"rows": 300_000, "rows_l_i1": 30_000, "phase_seconds": 20},
}
Q_RATES = (100, 500, 1000)

#: Options for a --private server on top of ioattr.host.sandbox's. innodb_lru_scan_depth is how
#: many pages the page cleaner tries to keep free; its default (1536) is more than a 16M
#: pool holds (1014 pages), so the pool would stay mostly empty and even a small table
#: would be read from storage over and over. 100 is the minimum.
PRIVATE_OPTIONS = {"innodb_lru_scan_depth": "100"}

#: Server counters reported per phase (SHOW GLOBAL STATUS), when the server has them.
STATUS_COUNTERS = (
    "Com_insert", "Com_select", "Handler_write", "Innodb_pages_read",
    "Innodb_data_reads", "Innodb_data_read", "Innodb_data_writes", "Innodb_data_written",
    "Innodb_data_fsyncs", "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests",
    "Innodb_buffer_pool_read_ahead", "Innodb_pages_written",
)


class BenchError(Exception):
    """A runtime failure: printed as one line, exit status 1."""


class UsageError(Exception):
    """Bad usage: printed as one line, exit status 2."""


# ---------------------------------------------------------------------- data
class RowMaker:
    """Deterministic rows: the same seed gives the same table (ids come from auto-increment)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        self.pool = "".join(self.rng.choice(alphabet) for _ in range(8192))
        self.made = 0

    def values(self, n: int) -> str:
        """`(...),(...)` for n rows, as SQL literals (numbers and [A-Za-z0-9] only: nothing to escape)."""
        r = self.rng
        out = []
        for _ in range(n):
            if self.made % ROWS_PER_TICK == 0 or not out:
                dt = (BASE_TIME + _dt.timedelta(seconds=self.made // ROWS_PER_TICK)).strftime("%Y-%m-%d %H:%M:%S")
            off = r.randrange(0, len(self.pool) - DATA_MAX)
            data = self.pool[off: off + r.randint(DATA_MIN, DATA_MAX)]
            out.append(f"('{dt}',{r.random() * PRICE_MAX:.2f},{r.randrange(CUSTOMERS)},"
                       f"{r.randrange(CASHREGISTERS)},{r.randrange(PRODUCTS)},'{data}')")
            self.made += 1
        return ",".join(out)


INSERT_PREFIX = (f"INSERT INTO {DATABASE}.{TABLE} (dt, price, customerid, cashregisterid, productid, data) VALUES ")


def query_sql(index: str, columns: list[str]) -> str:
    cols = ", ".join(columns)
    return (f"SELECT {cols} FROM {DATABASE}.{TABLE} FORCE INDEX ({index}) "
            f"WHERE {columns[0]} >= %s ORDER BY {cols} LIMIT 10")


def query_start(rng: random.Random, column: str) -> float | int:
    if column == "price":
        return round(rng.random() * PRICE_MAX, 2)
    if column == "customerid":
        return rng.randrange(CUSTOMERS)
    if column == "cashregisterid":
        return rng.randrange(CASHREGISTERS)
    raise AssertionError(column)


# ------------------------------------------------------------------- results
@dataclass
class PhaseResult:
    name: str
    start: float = 0.0
    end: float = 0.0
    rows_inserted: int = 0
    insert_statements: int = 0
    queries: int = 0
    rows_returned: int = 0
    target_ips: int | None = None
    server: dict[str, int] = field(default_factory=dict)

    @property
    def elapsed(self) -> float:
        return max(self.end - self.start, 1e-9)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name, "start": self.start, "end": self.end,
            "elapsed_s": round(self.elapsed, 3),
            "rows_inserted": self.rows_inserted, "insert_statements": self.insert_statements,
            "queries": self.queries, "rows_returned": self.rows_returned,
            "ips": round(self.rows_inserted / self.elapsed, 1),
            "qps": round(self.queries / self.elapsed, 1),
            "target_ips": self.target_ips,
            "server": self.server,
        }
        per: dict[str, float | None] = {}
        s = self.server
        if self.queries and "Innodb_data_reads" in s:
            per["reads_per_query"] = round(s["Innodb_data_reads"] / self.queries, 4)
            per["kb_read_per_query"] = round(s.get("Innodb_data_read", 0) / 1024 / self.queries, 3)
        if self.rows_inserted and "Innodb_data_written" in s:
            per["kb_written_per_insert"] = round(s["Innodb_data_written"] / 1024 / self.rows_inserted, 3)
            per["reads_per_insert"] = round(s.get("Innodb_data_reads", 0) / self.rows_inserted, 4)
        d["per_op"] = per
        return d


# --------------------------------------------------------------------- bench
class Bench:
    def __init__(self, connect: Callable[[], Any], args: argparse.Namespace,
                 log: Callable[[str], None]) -> None:
        self.connect = connect
        self.args = args
        self.log = log
        self.conn = connect()
        self.rows = RowMaker(args.seed)
        self.results: list[PhaseResult] = []

    # -- helpers ----------------------------------------------------------------
    def execute(self, sql: str, params: Any = None, conn: Any = None) -> list[tuple]:
        with (conn or self.conn).cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []

    def status(self) -> dict[str, int]:
        out = {}
        for name, value in self.execute("SHOW GLOBAL STATUS"):
            if name in STATUS_COUNTERS:
                try:
                    out[name] = int(value)
                except ValueError:
                    pass
        return out

    def begin(self, name: str) -> tuple[PhaseResult, dict[str, int]]:
        """Announce the phase to ioattr (and to anyone reading stdout), then start its clock."""
        print(f"== phase {name}", flush=True)
        self.execute(f"SELECT 'ioattr:phase={name}' AS ioattr_phase")
        # ioattr's phase starts at the marker itself (in the kernel) and a recorder holds the
        # marker until its counters snapshot is taken; the pause only keeps this phase's clock
        # (rates printed by the benchmark) from starting before that snapshot is done.
        time.sleep(self.args.marker_pause)
        before = self.status()
        res = PhaseResult(name)
        res.start = time.time()
        return res, before

    def finish(self, res: PhaseResult, before: dict[str, int]) -> None:
        res.end = time.time()
        after = self.status()
        res.server = {k: after[k] - before[k] for k in after if k in before}
        self.results.append(res)
        d = res.as_dict()
        extra = ""
        if "reads_per_query" in d["per_op"]:
            extra = f", {d['per_op']['reads_per_query']:.3f} storage reads/query"
        self.log(f"{name_pad(res.name)} {res.elapsed:7.1f}s  {res.rows_inserted:8d} rows ({d['ips']:.0f}/s)  "
                 f"{res.queries:7d} queries ({d['qps']:.0f}/s){extra}")

    def insert(self, n: int, conn: Any = None) -> None:
        self.execute(INSERT_PREFIX + self.rows.values(n), conn=conn)

    # -- phases -----------------------------------------------------------------
    def setup(self) -> None:
        a = self.args
        self.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
        exists = self.execute("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s",
                              (DATABASE, TABLE))
        if exists and not a.replace:
            raise UsageError(f"table {DATABASE}.{TABLE} already exists on this server; "
                             "pass --replace to drop it (or use --private)")
        self.execute(f"DROP TABLE IF EXISTS {DATABASE}.{TABLE}")
        self.execute(f"""CREATE TABLE {DATABASE}.{TABLE} (
            id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            dt DATETIME NOT NULL,
            price FLOAT NOT NULL,
            customerid INT NOT NULL,
            cashregisterid INT NOT NULL,
            productid INT NOT NULL,
            data VARCHAR(200) NOT NULL
        ) ENGINE=InnoDB""")

    def insert_phase(self, phase: str, rows: int, batch: int) -> None:
        """A phase that inserts `rows` rows, `batch` per INSERT, as fast as it can."""
        res, before = self.begin(phase)
        left = rows
        while left > 0:
            n = min(batch, left)
            self.insert(n)
            res.rows_inserted += n
            res.insert_statements += 1
            left -= n
        self.finish(res, before)

    def load(self) -> None:
        self.insert_phase("l.i0", self.args.rows, self.args.load_batch)

    def create_indexes(self) -> None:
        res, before = self.begin("l.x")
        for name, cols in INDEXES:
            self.execute(f"CREATE INDEX {name} ON {DATABASE}.{TABLE} ({', '.join(cols)})")
        self.finish(res, before)

    def insert_more(self) -> None:
        self.insert_phase("l.i1", self.args.rows_l_i1, self.args.batch)

    def query_phase(self, rate: int) -> None:
        """One rate-limited inserter and one query connection, for --phase-seconds."""
        a = self.args
        ins_conn, q_conn = self.connect(), self.connect()
        stop = threading.Event()
        errors: list[BaseException] = []
        res = None
        try:
            res, before = self.begin(f"q{rate}")
            res.target_ips = rate
            deadline = time.monotonic() + a.phase_seconds

            def inserter() -> None:
                try:
                    batch = max(1, min(a.q_batch, rate))
                    period = batch / rate
                    due = time.monotonic()
                    while not stop.is_set():
                        now = time.monotonic()
                        if now >= deadline:
                            break
                        if due > now:
                            stop.wait(min(due - now, deadline - now))
                            continue
                        self.insert(batch, conn=ins_conn)
                        res.rows_inserted += batch
                        res.insert_statements += 1
                        due += period
                        if time.monotonic() - due > 1.0:
                            due = time.monotonic()  # fell behind by more than 1 s: don't burst
                except BaseException as e:  # noqa: BLE001 - re-raised by the main thread
                    errors.append(e)
                    stop.set()

            def querier() -> None:
                try:
                    rng = random.Random(a.seed * 1000 + rate)
                    sqls = [(query_sql(ix, cols), cols[0]) for ix, cols in INDEXES]
                    with q_conn.cursor() as cur:
                        while not stop.is_set() and time.monotonic() < deadline:
                            sql, col = sqls[rng.randrange(len(sqls))]
                            cur.execute(sql, (query_start(rng, col),))
                            res.rows_returned += len(cur.fetchall())
                            res.queries += 1
                except BaseException as e:  # noqa: BLE001
                    errors.append(e)
                    stop.set()

            threads = [threading.Thread(target=inserter, name=f"insert-{rate}", daemon=True),
                       threading.Thread(target=querier, name=f"query-{rate}", daemon=True)]
            for t in threads:
                t.start()
            try:
                while any(t.is_alive() for t in threads):
                    for t in threads:
                        t.join(0.2)
            finally:
                stop.set()
                for t in threads:
                    t.join(30)
            if errors:
                raise errors[0]
            self.finish(res, before)
        finally:
            stop.set()
            for c in (ins_conn, q_conn):
                try:
                    c.close()
                except Exception:  # noqa: BLE001
                    pass

    def table_size(self) -> dict[str, Any]:
        # No count(*): it would scan the table inside the last phase. The table was created
        # empty by setup(), so its rows are the ones inserted.
        out: dict[str, Any] = {"rows": sum(r.rows_inserted for r in self.results)}
        try:
            r = self.execute("SELECT FILE_SIZE, ALLOCATED_SIZE FROM information_schema.INNODB_SYS_TABLESPACES "
                             "WHERE NAME = %s", (f"{DATABASE}/{TABLE}",))
            if r:
                out["file_bytes"] = int(r[0][0])
                out["allocated_bytes"] = int(r[0][1])
        except pymysql.err.MySQLError:
            pass
        r = self.execute("SELECT DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES "
                         "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s", (DATABASE, TABLE))
        if r:  # from InnoDB's persistent statistics: approximate, may lag the last inserts
            out["data_bytes"] = int(r[0][0])
            out["index_bytes"] = int(r[0][1])
        r = self.execute("SELECT @@innodb_buffer_pool_size, @@innodb_flush_method, @@innodb_change_buffering, "
                         "@@version")
        out["buffer_pool_bytes"] = int(r[0][0])
        out["flush_method"] = r[0][1]
        out["change_buffering"] = r[0][2]
        out["server_version"] = r[0][3]
        return out

    def run(self) -> None:
        a = self.args
        self.setup()
        self.load()
        self.create_indexes()
        self.insert_more()
        for rate in a.rates:
            self.query_phase(rate)


def stderr_columns() -> int | None:
    """The width progress lines fold at: $COLUMNS, else stderr's terminal; None (one line per
    event, for grep) when stderr is a file or a pipe."""
    try:
        return max(40, int(os.environ["COLUMNS"]))
    except (KeyError, ValueError):
        pass
    try:
        return max(40, os.get_terminal_size(2).columns)
    except OSError:
        return None


def fold(line: str, width: int | None) -> list[str]:
    """A line folded at spaces to `width`, continuation lines indented (a word stays whole)."""
    if not width or len(line) <= width:
        return [line]
    return textwrap.wrap(line, width=width, subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False) or [line]


def name_pad(name: str) -> str:
    return f"{name:<6}"


# ------------------------------------------------------------ waiting for ioattr
def _ancestors() -> list[int]:
    out, pid = [], os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            break
        pid = int(stat[stat.rindex(b")") + 2:].split()[1])
        out.append(pid)
    return out


def _our_recording() -> Path | None:
    """The recording of an `ioattr record` that runs this benchmark (an ancestor process), if any."""
    try:
        from ioattr.format.control import active_recordings
    except ImportError:
        return None
    ancestors = set(_ancestors())
    for info in active_recordings():
        if info.get("pid") in ancestors and info.get("recording"):
            return Path(info["recording"])
    return None


def wait_for_recorder(server_pid: int | None, timeout: float, log: Callable[[str], None]) -> None:
    """When run by `ioattr record -- ...`, wait until it has attached to the server.

    Phase markers are statements the recorder sees through probes on mysqld; a
    server this benchmark started itself is picked up at the recorder's next
    target refresh (about a second), and the markers before that would be lost.
    """
    rec = _our_recording()
    if rec is None or timeout <= 0:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            meta = json.loads((rec / "meta.json").read_text())
        except (OSError, ValueError):
            meta = {}
        for srv in meta.get("servers") or []:
            if server_pid is not None and srv.get("pid") != server_pid:
                continue
            status = srv.get("stage_probes") or ""
            if status.startswith("attached"):
                return
            log(f"warning: ioattr is attached to the server but its statement probes are not "
                f"({status or 'unknown'}); the phase markers will be missed")
            return
        time.sleep(0.1)
    log(f"warning: ioattr is recording but has not attached to the server after {timeout:g}s; "
        "phase markers may be missed")


# ------------------------------------------------------------------- output
def print_table(results: list[PhaseResult], table: dict[str, Any], out=sys.stdout) -> None:
    bp = table.get("buffer_pool_bytes")
    size = (table.get("data_bytes") or 0) + (table.get("index_bytes") or 0)
    line = f"table {DATABASE}.{TABLE}: {table.get('rows')} rows"
    if size and bp:
        line += (f", ~{size / 2**20:.1f} MiB of data and indexes = {size / bp:.1f}x the "
                 f"{bp / 2**20:.0f} MiB buffer pool")
    if table.get("file_bytes"):
        line += f" (file {table['file_bytes'] / 2**20:.1f} MiB)"
    print(line, file=out)
    hdr = f"{'phase':<6} {'secs':>7} {'rows':>8} {'ips':>8} {'queries':>8} {'qps':>8} {'rpq':>8} " \
          f"{'KBr/q':>8} {'KBw/i':>8}"
    print(hdr, file=out)
    for r in results:
        d = r.as_dict()
        p = d["per_op"]

        def f(key: str, fmt: str) -> str:
            v = p.get(key)
            return format(v, fmt) if v is not None else "-"
        print(f"{r.name:<6} {r.elapsed:7.1f} {r.rows_inserted:8d} {d['ips']:8.0f} {r.queries:8d} {d['qps']:8.0f} "
              f"{f('reads_per_query', '8.3f'):>8} {f('kb_read_per_query', '8.2f'):>8} "
              f"{f('kb_written_per_insert', '8.2f'):>8}", file=out)
    print("rpq: storage reads (Innodb_data_reads) per query; KBr/q: KB read per query; "
          "KBw/i: KB written per inserted row", file=out)


# --------------------------------------------------------------------- CLI
class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise UsageError(message)


def _number(conv: type, zero_ok: bool):
    """An argparse type: a number (int or float) above zero, or at least zero if zero_ok."""
    def parse(text: str):
        try:
            v = conv(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not {'an integer' if conv is int else 'a number'}: {text!r}") from None
        if not (v >= 0 if zero_ok else v > 0):
            raise argparse.ArgumentTypeError(f"must {'not be negative' if zero_ok else 'be positive'}: {text}")
        return v
    return parse


_positive_int = _number(int, zero_ok=False)
_nonneg_int = _number(int, zero_ok=True)
_positive_float = _number(float, zero_ok=False)


def _rates(text: str) -> list[int]:
    try:
        rates = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not rates or any(r <= 0 for r in rates):
        raise argparse.ArgumentTypeError(f"rates must be positive integers: {text!r}")
    return rates


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = _Parser(prog=PROG, description="A miniature insert benchmark (l.i0, l.x, l.i1, q100, q500, q1000) "
                "that marks its phases for ioattr.")
    srv = p.add_argument_group("server")
    srv.add_argument("--private", action="store_true",
                     help="start a private MariaDB for the run and stop it at the end")
    srv.add_argument("--socket", help="unix socket of an existing server")
    srv.add_argument("--defaults-file", help="client option file ([client] section) of an existing server")
    srv.add_argument("--user", help="user (default: from the option file, else root); password from "
                     "the option file or MYSQL_PWD")
    srv.add_argument("--replace", action="store_true", help=f"drop an existing {DATABASE}.{TABLE}")
    srv.add_argument("--buffer-pool", default="16M", help="--private: innodb_buffer_pool_size (default 16M)")
    srv.add_argument("--server-option", action="append", default=[], metavar="KEY=VALUE",
                     help="--private: extra mariadbd option, e.g. innodb_change_buffering=all (repeatable)")
    srv.add_argument("--keep-server", action="store_true",
                     help="--private: leave the server's directory behind (the server is stopped)")
    size = p.add_argument_group("size (a preset; the options below override it)")
    size.add_argument("--size", choices=sorted(SIZES), default="small",
                      help="small: fits in a 16M buffer pool; large: several times bigger (default small)")
    size.add_argument("--rows", type=_positive_int, help="rows loaded in l.i0 (the table size after it)")
    size.add_argument("--rows-l-i1", type=_nonneg_int, help="rows inserted in l.i1")
    size.add_argument("--phase-seconds", type=_positive_float, help="seconds per q phase")
    size.add_argument("--rates", type=_rates, default=list(Q_RATES),
                      help="insert rates of the q phases, rows/s (default 100,500,1000)")
    run = p.add_argument_group("run")
    run.add_argument("--load-batch", type=_positive_int, default=1000, help="rows per INSERT in l.i0 (1000)")
    run.add_argument("--batch", type=_positive_int, default=100, help="rows per INSERT in l.i1 (100)")
    run.add_argument("--q-batch", type=_positive_int, default=10, help="rows per INSERT in the q phases (10)")
    run.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    run.add_argument("--marker-pause", type=float, default=0.3,
                     help="seconds between a phase marker and the phase's work (default 0.3)")
    run.add_argument("--wait-recorder", type=float, default=10.0,
                     help="under `ioattr record -- ...`: seconds to wait for it to attach to the "
                          "server before the first marker (default 10; 0: don't wait)")
    run.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT ('-' = stdout)")
    args = p.parse_args(argv)

    preset = SIZES[args.size]
    if args.rows is None:
        args.rows = int(preset["rows"])
    if args.rows_l_i1 is None:
        args.rows_l_i1 = int(preset["rows_l_i1"])
    if args.phase_seconds is None:
        args.phase_seconds = float(preset["phase_seconds"])
    if args.marker_pause < 0:
        raise UsageError("--marker-pause must not be negative")
    if args.private and (args.socket or args.defaults_file):
        raise UsageError("--private starts its own server: don't combine it with --socket/--defaults-file")
    if not args.private and not (args.socket or args.defaults_file):
        raise UsageError("say which server: --private, --socket PATH or --defaults-file FILE")
    if args.socket and not Path(args.socket).exists():
        raise UsageError(f"no such socket: {args.socket}")
    if args.defaults_file and not os.access(args.defaults_file, os.R_OK):
        raise UsageError(f"cannot read option file {args.defaults_file}")
    if args.server_option and not args.private:
        raise UsageError("--server-option only applies to --private")
    opts = {}
    for item in args.server_option:
        key, sep, value = item.partition("=")
        if not key.strip():
            raise UsageError(f"--server-option wants KEY=VALUE, got {item!r}")
        opts[key.strip()] = value.strip() if sep else ""
    args.server_options = opts
    if args.json and args.json != "-":
        parent = Path(args.json).resolve().parent
        if not parent.is_dir():
            raise UsageError(f"--json: no such directory: {parent}")
    return args


def _connector(args: argparse.Namespace, socket_path: str | None) -> Callable[[], Any]:
    params: dict[str, Any] = {"autocommit": True, "connect_timeout": 10}
    if args.defaults_file:
        params["read_default_file"] = args.defaults_file
    if socket_path:
        params["unix_socket"] = socket_path
        # No TLS over a local socket. PyMySQL 2 would otherwise build a TLS context (reading
        # the system CA bundle) for every connection: IO of ours that would show in recordings.
        params["ssl_disabled"] = True
    if args.user:
        params["user"] = args.user
    elif not args.defaults_file:
        params["user"] = "root"
    if os.environ.get("MYSQL_PWD"):
        params["password"] = os.environ["MYSQL_PWD"]

    def connect() -> Any:
        return pymysql.connect(**params)
    return connect


def main(argv: list[str] | None = None) -> int:
    def log(msg: str) -> None:
        # progress folds to the terminal; an error or a warning stays one line (grep, scripts)
        width = None if msg.startswith(("error:", "warning:")) else stderr_columns()
        print("\n".join(fold(f"{PROG}: {msg}", width)), file=sys.stderr, flush=True)

    try:
        args = parse_args(argv)
    except UsageError as e:
        log(f"error: {e}")
        return 2
    if pymysql is None:
        log("error: PyMySQL is not installed (pip install pymysql, or use the ioattr venv)")
        return 1

    # SIGTERM (e.g. from a test or a supervisor) ends the run like Ctrl-C: servers get stopped.
    def _term(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, _term)

    server = None
    code = 0
    try:
        socket_path = args.socket
        server_pid = None
        if args.private:
            try:
                from ioattr.host.sandbox import PrivateMariaDB, SandboxError
            except ImportError:
                log("error: --private needs the ioattr package (run with the ioattr venv's python)")
                return 1
            server = PrivateMariaDB(buffer_pool=args.buffer_pool,
                                    extra_options={**PRIVATE_OPTIONS, **args.server_options},
                                    keep=args.keep_server)
            try:
                server.start()
            except SandboxError as e:
                raise BenchError(f"could not start a private MariaDB: {str(e).splitlines()[0]}") from e
            except FileNotFoundError as e:
                raise BenchError(f"could not start a private MariaDB: {e.strerror}: {e.filename}") from e
            socket_path = str(server.socket)
            server_pid = server.pid
            log(f"private MariaDB pid {server.pid}, buffer pool {args.buffer_pool}, socket {socket_path}")
        connect = _connector(args, socket_path)
        try:
            bench = Bench(connect, args, log)
        except pymysql.err.MySQLError as e:
            raise BenchError(f"cannot connect to the server: {e.args[-1] if e.args else e}") from e
        wait_for_recorder(server_pid, args.wait_recorder, log)
        log(f"{args.rows} rows, then {args.rows_l_i1} more, then q phases of {args.phase_seconds:g}s at "
            f"{', '.join(map(str, args.rates))} rows/s")
        t0 = time.time()
        bench.run()
        table = bench.table_size()
        print_table(bench.results, table)
        if args.json:
            doc = {
                "benchmark": "ioattr-example-insert-benchmark",
                "version": 1,
                "settings": {
                    "size": args.size, "rows": args.rows, "rows_l_i1": args.rows_l_i1,
                    "phase_seconds": args.phase_seconds, "rates": args.rates,
                    "load_batch": args.load_batch, "batch": args.batch, "q_batch": args.q_batch,
                    "seed": args.seed, "private": args.private,
                    "buffer_pool": args.buffer_pool if args.private else None,
                    "server_options": args.server_options,
                },
                "server_pid": server_pid,
                "table": {"name": f"{DATABASE}.{TABLE}", **table,
                          "indexes": {name: cols for name, cols in INDEXES}},
                "elapsed_s": round(time.time() - t0, 3),
                "phases": [r.as_dict() for r in bench.results],
            }
            text = json.dumps(doc, indent=2) + "\n"
            if args.json == "-":
                sys.stdout.write(text)
            else:
                Path(args.json).write_text(text)
    except UsageError as e:
        log(f"error: {e}")
        code = 2
    except BenchError as e:
        log(f"error: {e}")
        code = 1
    except pymysql.err.MySQLError as e:
        msg = e.args[-1] if e.args else str(e)
        log(f"error: server error: {msg}")
        code = 1
    except KeyboardInterrupt:
        log("interrupted")
        code = 1
    finally:
        if server is not None:
            try:
                server.stop()
            except Exception as e:  # noqa: BLE001
                log(f"warning: could not stop the private server cleanly: {e}")
                code = code or 1
    return code


if __name__ == "__main__":
    sys.exit(main())

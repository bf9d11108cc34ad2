#!/usr/bin/env python3
"""The seed reports' engine comparisons in miniature: the recordings behind examples/*.sh.

Each scenario runs the same workload on private servers (ioattr.host.sandbox: own datadir,
socket and port under a temp dir, stopped by pid; never the host's service), records each
run with `ioattr record --pid` into OUT/<run>, and starts every phase with an
`ioattr mark NAME`, waiting until the recorder has
started that phase (meta.json lists it last) before the phase's work begins, so what
follows is all that phase's. The shell scripts then put the runs side by side with
`ioattr compare`.

    seed_runs.py scans --size tiny|small --out DIR    InnoDB vs MyRocks full scans, fresh and fragmented
    seed_runs.py sweep --size tiny|small --out DIR    oltp_read_write at three cache sizes per engine
    seed_runs.py bulk  --size tiny|small --out DIR    LOAD DATA into four engines, indexes after and before
    seed_runs.py pg    --size tiny|small --out DIR    the miniature insert benchmark on InnoDB and PostgreSQL

It prints one `RUN=<label>` line per recording it wrote (stdout) and progress on stderr.
Exit codes: 0 ok, 1 runtime failure, 2 bad usage. Errors are one line on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

PROG = "seed_runs"
_REPO = Path(__file__).resolve().parent.parent
if (_REPO / "ioattr" / "__init__.py").exists() and str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

ROCKSDB_PLUGIN = Path("/usr/lib/mysql/plugin/ha_rocksdb.so")


class Failure(Exception):
    """A runtime failure: reported as one line, exit status 1."""


def log(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def ioattr_program() -> str:
    """The checkout's ioattr (./.venv), else $IOATTR, else the one on PATH."""
    env = os.environ.get("IOATTR")
    if env:
        return env
    venv = _REPO / ".venv" / "bin" / "ioattr"
    if venv.exists():
        return str(venv)
    found = shutil.which("ioattr")
    if not found:
        raise Failure("ioattr not found: run 'make build' or set IOATTR")
    return found


# ------------------------------------------------------------------ recorder
class Recorder:
    """`ioattr record -o REC --pid PID` on one private server, phases started by SQL markers.

    Its output goes to REC.log beside the recording (the recording directory itself must
    not exist before the recorder creates it)."""

    def __init__(self, rec: Path, db: Any, first_phase: str = "setup", mysql: bool = True) -> None:
        self.rec = rec
        self.log_path = rec.parent / f"{rec.name}.record.log"
        self._log = open(self.log_path, "w")
        client = ["--mysql-defaults-file", str(db.client_defaults_file)] if mysql else []
        self.proc = subprocess.Popen(
            [ioattr_program(), "record", "-o", str(rec), "--pid", str(db.pid), *client, "--phase", first_phase],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, start_new_session=True)
        self._wait(lambda: "recording " in self.log_path.read_text() and (rec / "control").is_dir(),
                   "start recording")

    def _tail(self) -> str:
        lines = [x for x in self.log_path.read_text(errors="replace").splitlines() if x.strip()]
        return lines[-1] if lines else "(no output)"

    def _wait(self, ready: Callable[[], bool], what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            if self.proc.poll() is not None:
                raise Failure(f"ioattr record exited {self.proc.returncode} before it could {what}: {self._tail()}")
            time.sleep(0.05)
        raise Failure(f"ioattr record did not {what} within {timeout:.0f}s (log: {self.log_path})")

    def phases(self) -> list[str]:
        try:
            return [p["name"] for p in json.loads((self.rec / "meta.json").read_text()).get("phases", [])]
        except (OSError, ValueError):
            return []

    def phase(self, name: str) -> None:
        """Start phase `name` (`ioattr mark`); return once the recorder has started it.

        `ioattr mark` rather than an `ioattr:phase=` statement: it needs no statement probes
        on the server, and it adds no SELECT to the phase's query count."""
        r = subprocess.run([ioattr_program(), "mark", name, "--recording", str(self.rec)],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"ioattr mark {name} failed: {(r.stderr.strip() or 'no output').splitlines()[-1]}")
        self._wait(lambda: self.phases()[-1:] == [name], f"start phase {name!r}")
        log(f"  phase {name}")

    def stop(self) -> None:
        """SIGINT (the recorder drains once more and writes its last chunk), by our pid."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failure(f"ioattr record did not stop within 60s (log: {self.log_path})")
        self._log.close()
        if self.proc.returncode != 0:
            raise Failure(f"ioattr record exited {self.proc.returncode}: {self._tail()}")


class Servers:
    """Every private server a scenario starts, stopped (by pid) at the end whatever happens."""

    def __init__(self) -> None:
        self.live: list[Any] = []

    def start(self, *, rocksdb: bool = False, buffer_pool: str = "8M", block_cache: str = "8M",
              extra: dict[str, str] | None = None) -> Any:
        from ioattr.host.sandbox import PrivateMariaDB, SandboxError

        opts = {"innodb_lru_scan_depth": "100",  # a small pool stays full (see examples/README.md)
                "innodb_stats_persistent": "OFF",  # no stats-table writes inside the phases
                **(extra or {})}
        if rocksdb and not ROCKSDB_PLUGIN.exists():
            raise Failure("MyRocks is not installed (apt-get install mariadb-plugin-rocksdb)")
        db = PrivateMariaDB(buffer_pool=buffer_pool, extra_options=opts, rocksdb=rocksdb,
                            rocksdb_block_cache=block_cache, rocksdb_direct_reads=rocksdb)
        self.live.append(db)
        try:
            db.start()
        except (SandboxError, OSError) as e:
            raise Failure(f"could not start a private MariaDB: {str(e).splitlines()[0]}") from None
        return db

    def resize(self, db: Any, *, buffer_pool: str | None = None, block_cache: str | None = None) -> None:
        """Restart `db` on the same datadir with another cache size (a cold cache; new pid).

        PrivateMariaDB writes its option file only in start(), so the new size is written
        here before the server is launched again."""
        from ioattr.host.sandbox import SandboxError

        if buffer_pool:
            db.buffer_pool = buffer_pool
        if block_cache:
            db.rocksdb_block_cache = block_cache
        try:
            db._shutdown(60)          # noqa: SLF001 - the sandbox's own stop path, by pid
            db._write_config()        # noqa: SLF001
            db._launch_and_wait()     # noqa: SLF001
        except (SandboxError, OSError) as e:
            raise Failure(f"could not restart the private MariaDB: {str(e).splitlines()[0]}") from None

    def stop_all(self) -> None:
        for db in self.live:
            try:
                db.stop()
            except Exception as e:  # noqa: BLE001 - keep stopping the others
                log(f"warning: stopping a private server: {e}")
        self.live.clear()


def new_rec(out: Path, label: str) -> Path:
    rec = out / label
    if rec.exists():
        raise Failure(f"{rec} already exists: give another --out")
    return rec


# ------------------------------------------------------------------ scans
SCAN_SIZES = {  # rows, rows updated, innodb pool, rocksdb block cache
    "tiny": (40_000, 10_000, "6M", "4M"),
    "small": (400_000, 100_000, "16M", "8M"),
}
SCAN_CHUNKS = 40


def full_scan(cur: Any, rows: int) -> None:
    """One pass over the whole table in primary-key order, as SCAN_CHUNKS consecutive range
    queries rather than one statement: explain judges a change per query and calls a phase
    with fewer than 30 queries inconclusive. The engines read the same pages either way."""
    step = -(-rows // SCAN_CHUNKS)
    for lo in range(1, rows + 1, step):
        cur.execute("SELECT COUNT(*), SUM(LENGTH(pad)), MAX(k) FROM s.t WHERE id BETWEEN %s AND %s",
                    (lo, lo + step - 1))
        cur.fetchall()


def scans(out: Path, size: str, servers: Servers) -> Iterator[str]:
    """The same table in InnoDB and in MyRocks, scanned right after the load and
    again after random updates that grow rows (InnoDB: page splits, the leaves no longer in key
    order on disk; MyRocks: the updated keys in newer SSTs, so a scan merges levels)."""
    rows, updates, pool, cache = SCAN_SIZES[size]
    rng = random.Random(15)
    ids = rng.sample(range(1, rows + 1), updates)
    for label, engine in (("innodb", "InnoDB"), ("myrocks", "ROCKSDB")):
        log(f"{label}: {rows:,} rows, buffer pool {pool}" + (f", block cache {cache}, direct reads"
                                                            if engine == "ROCKSDB" else ""))
        db = servers.start(rocksdb=engine == "ROCKSDB", buffer_pool=pool, block_cache=cache)
        rec = Recorder(new_rec(out, label), db)
        conn = db.connect()
        try:
            with conn.cursor() as cur:
                rec.phase("load")
                cur.execute("CREATE DATABASE s")
                cur.execute("CREATE TABLE s.t (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, "
                            f"pad VARCHAR(255) NOT NULL) ENGINE={engine}")
# 96 hex digits + 4: compresses about as well as real text (MyRocks compresses its SSTs)
                cur.execute(f"INSERT INTO s.t SELECT seq, seq * 7 % 1000003, "
                            f"CONCAT(MD5(seq), MD5(seq + 1), MD5(seq + 2), 'pad.') "
                            f"FROM s.seq_1_to_{rows}")
                if engine == "ROCKSDB":  # the rows in SSTs, so the scan reads them from there
                    cur.execute("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
                    cur.execute("SET GLOBAL rocksdb_compact_cf = 'default'")
                rec.phase("scan.fresh")
                full_scan(cur, rows)
                rec.phase("update")
                for i in range(0, len(ids), 200):  # each row grows from 100 to 200 bytes
                    batch = ",".join(str(x) for x in ids[i:i + 200])
                    cur.execute("BEGIN")  # a transaction each: compare's writes per transaction
                    cur.execute(f"UPDATE s.t SET pad = CONCAT(pad, pad), k = k + 1 "
                                f"WHERE id IN ({batch})")
                    cur.execute("COMMIT")
                if engine == "ROCKSDB":  # the updates in an L0 file over the compacted one
                    cur.execute("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
                rec.phase("scan.frag")
                full_scan(cur, rows)
                rec.phase("end")
        finally:
            conn.close()
            rec.stop()
        yield label


# ------------------------------------------------------------------ memory sweep
SWEEP_SIZES = {  # tables, rows per table, seconds per run, sysbench threads, three cache sizes
    # tiny runs one thread: no deadlocks, so every transaction commits and the tests can
    # count exactly (14 SELECTs and 1 inserted row per oltp_read_write transaction)
    "tiny": (2, 30_000, 2, 1, ("6M", "16M", "64M")),
    "small": (4, 100_000, 15, 2, ("8M", "32M", "128M")),
}


def sysbench(db: Any, test: str, tables: int, rows: int, engine: str, *extra: str, threads: int = 2) -> None:
    cmd = ["sysbench", test, "--db-driver=mysql", f"--mysql-socket={db.socket}", "--mysql-user=root",
           "--mysql-db=sbtest", f"--tables={tables}", f"--table-size={rows}", f"--threads={threads}",
           "--db-ps-mode=disable", f"--mysql-storage-engine={engine}", *extra]
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip() or r.stdout.strip() or "no output").splitlines()[-1]
        raise Failure(f"sysbench {test} {extra[-1] if extra else ''} failed: {last}")


def sweep(out: Path, size: str, servers: Servers) -> Iterator[str]:
    """sysbench oltp_read_write on InnoDB and on MyRocks at three cache sizes each
    (the buffer pool, or MyRocks' block cache), the same data each time: prepared once per
    engine, the server restarted cold at each size. One recording per engine and size, phase
    `rw` (the run) after `warm` (a first short run that fills the cache)."""
    if not shutil.which("sysbench"):
        raise Failure("sysbench is not installed (apt-get install sysbench)")
    tables, rows, seconds, threads, caches = SWEEP_SIZES[size]
    for engine, sb_engine in (("innodb", "innodb"), ("myrocks", "rocksdb")):
        log(f"{engine}: sysbench prepare, {tables} tables x {rows:,} rows")
        rocks = engine == "myrocks"
        db = servers.start(rocksdb=rocks, buffer_pool="8M" if rocks else caches[0], block_cache=caches[0])
        db.query("CREATE DATABASE sbtest")
        sysbench(db, "oltp_read_write", tables, rows, sb_engine, "prepare")
        if rocks:
            db.query("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
        for cache in caches:
            label = f"{engine}-{cache.lower()}"
            if rocks:
                servers.resize(db, block_cache=cache)
            else:
                servers.resize(db, buffer_pool=cache)
            # open the tables before recording: after a restart MyRocks names a table's indexes
            # (ROCKSDB_DDL) only once someone opened it, and the recorder reads the names at start
            for i in range(1, tables + 1):
                db.query(f"SELECT id FROM sbtest.sbtest{i} LIMIT 1")
            log(f"{label}: oltp_read_write {seconds}s, {threads} thread(s)")
            rec = Recorder(new_rec(out, label), db)
            conn = db.connect()
            try:
                with conn.cursor() as cur:
                    rec.phase("warm")
                    sysbench(db, "oltp_read_write", tables, rows, sb_engine, "--time=1", "--report-interval=0", "run",
                             threads=threads)
                    rec.phase("rw")
                    sysbench(db, "oltp_read_write", tables, rows, sb_engine, f"--time={seconds}",
                             "--report-interval=0", "run", threads=threads)
                    rec.phase("end")
            finally:
                conn.close()
                rec.stop()
            yield label


# ------------------------------------------------------------------ bulk load
BULK_SIZES = {"tiny": 40_000, "small": 300_000}
BULK_TABLES = (  # run label, engine clause, can it have a secondary index
    ("innodb", "ENGINE=InnoDB", True),
    ("innodb_kbs8", "ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8", True),
    ("archive", "ENGINE=ARCHIVE", False),
    ("myrocks", "ENGINE=ROCKSDB", True),
)


def write_rows(path: Path, rows: int) -> None:
    """The load file: the same rows (seeded) every time, tab-separated: id, a (random up to
    10^6), c (random up to 10^4), an 80-byte string (20 random letters of ten, then 60 x)."""
    rng = random.Random(17)
    with open(path, "w") as f:
        for i in range(1, rows + 1):
            f.write(f"{i}\t{rng.randrange(1_000_000)}\t{rng.randrange(10_000)}\t"
                    f"{''.join(rng.choices('abcdefghij', k=20))}{'x' * 60}\n")


def bulk(out: Path, size: str, servers: Servers) -> Iterator[str]:
    """LOAD DATA of one generated file into InnoDB, compressed InnoDB, Archive and
    MyRocks, one private server (16M buffer pool; MyRocks 8M block cache) and one recording per
    engine, so that each run's data on disk is its own, with the same phases: `load` (no
    secondary index), `add_index` (ALTER TABLE ADD INDEX on the loaded table), `load_ix` (the
    same file into a fresh table that has the indexes already); MyRocks adds `flush` (its
    memtable into SSTs). Archive has no secondary indexes: its run has `load` only."""
    rows = BULK_SIZES[size]
    cols = "id INT NOT NULL, a INT NOT NULL, c INT NOT NULL, pad VARCHAR(100) NOT NULL"
    index = "ADD INDEX ix_a (a), ADD INDEX ix_c_a (c, a)"
    load = "LOAD DATA INFILE '{}' INTO TABLE b.{}"
    for label, clause, indexable in BULK_TABLES:
        log(f"{label}: {rows:,} rows, {clause}")
        db = servers.start(rocksdb=label == "myrocks", buffer_pool="16M", block_cache="8M",
                           extra={"plugin-load-add": "ha_archive.so"} if label == "archive" else None)
        data = Path(db.tmpdir) / "rows.tsv"   # the server may read only its tmpdir (secure-file-priv)
        write_rows(data, rows)
        pk = "" if label == "archive" else ", PRIMARY KEY (id)"
        db.query("CREATE DATABASE b")
        db.query(f"CREATE TABLE b.{label} ({cols}{pk}) {clause}")
        if indexable:
            db.query(f"CREATE TABLE b.{label}_ix ({cols}{pk}, KEY ix_a (a), KEY ix_c_a (c, a)) {clause}")
        rec = Recorder(new_rec(out, label), db)
        conn = db.connect()
        try:
            with conn.cursor() as cur:
                rec.phase("load")
                cur.execute(load.format(data, label))
                if indexable:
                    rec.phase("add_index")
                    cur.execute(f"ALTER TABLE b.{label} {index}")
                    rec.phase("load_ix")
                    cur.execute(load.format(data, f"{label}_ix"))
                if label == "myrocks":  # the memtable's rows into SSTs before the run ends
                    rec.phase("flush")
                    cur.execute("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
                rec.phase("end")
        finally:
            conn.close()
            rec.stop()
        servers.stop_all()  # the next engine on a server of its own
        yield label


# ------------------------------------------------------------------ PostgreSQL vs InnoDB
PGIB_SIZES = {  # rows in l.i0, rows in l.i1, seconds of the q phase
    "tiny": (20_000, 5_000, 3),
    "small": (200_000, 20_000, 15),
}
PGIB_INDEXES = {"ix_price": "price, dt, id", "ix_register": "cashregisterid, price, customerid, id",
                "ix_customer": "customerid, price, dt, id"}


def _pgib_rows(rng: random.Random, n: int) -> list[tuple]:
    """n rows (dt, price, customerid, cashregisterid, productid, data), like insert_benchmark.py's."""
    return [(f"2026-01-01 00:00:{i % 60:02d}", round(rng.uniform(1, 500), 2), rng.randrange(100_000),
             rng.randrange(1_000), rng.randrange(10_000), "".join(rng.choices("abcdefgh", k=100)))
            for i in range(n)]


def _insert(cur: Any, rows: list[tuple], batch: int) -> None:
    for i in range(0, len(rows), batch):
        part = rows[i:i + batch]
        marks = ",".join(["(%s,%s,%s,%s,%s,%s)"] * len(part))
        cur.execute("INSERT INTO ib.t (dt, price, customerid, cashregisterid, productid, data) "
                    f"VALUES {marks}", [v for r in part for v in r])


def pg_vs_innodb(out: Path, size: str, servers: Servers) -> Iterator[str]:
    """The miniature insert benchmark's shape (examples/insert_benchmark.py) on InnoDB
    (8M buffer pool) and PostgreSQL (8MB shared_buffers), one recording each, phases l.i0 (load
    in primary-key order, 1000-row INSERTs), l.x (the three secondary indexes), l.i1 (more rows,
    100-row INSERTs) and q (for a few seconds, one connection: a 10-row INSERT, then ten
    covering range queries on a random secondary index, over and over). Same seeded data and
    queries on both."""
    from ioattr.host.pg_sandbox import PrivatePostgres

    n0, n1, seconds = PGIB_SIZES[size]
    for label in ("innodb", "postgres"):
        rng = random.Random(16)
        if label == "innodb":
            db = servers.start(buffer_pool="8M")
            db.query("CREATE DATABASE ib")
            ddl = ("CREATE TABLE ib.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, dt DATETIME, price FLOAT, "
                   "customerid INT, cashregisterid INT, productid INT, data VARCHAR(200)) ENGINE=InnoDB")
            conn = db.connect()
        else:
            db = PrivatePostgres(shared_buffers="8MB")
            servers.live.append(db)
            try:
                db.start()
            except Exception as e:  # noqa: BLE001 - the sandbox's errors: one line
                raise Failure(f"could not start a private PostgreSQL: {str(e).splitlines()[0]}") from None
            ddl = ("CREATE SCHEMA ib; CREATE TABLE ib.t (id BIGSERIAL PRIMARY KEY, dt TIMESTAMP, price FLOAT, "
                   "customerid INT, cashregisterid INT, productid INT, data VARCHAR(200))")
            conn = db.connect()
        log(f"{label}: {n0:,} + {n1:,} rows, q for {seconds}s")
        with conn.cursor() as cur:
            for stmt in ddl.split("; "):
                cur.execute(stmt)
        rec = Recorder(new_rec(out, label), db, mysql=label == "innodb")
        try:
            with conn.cursor() as cur:
                def phase(name: str) -> None:
                    """PostgreSQL flushes a backend's statistics (pg_stat_database's tup_inserted,
                    the rows compare counts) when it goes idle, but at most once a second: without
                    a forced flush a phase's rows would land in the next phase."""
                    if label == "postgres":
                        cur.execute("SELECT pg_stat_force_next_flush()")
                        cur.fetchall()
                        cur.execute("SELECT 1")  # idle once more after the force: flushed now
                        cur.fetchall()
                    rec.phase(name)

                phase("l.i0")
                _insert(cur, _pgib_rows(rng, n0), 1000)
                phase("l.x")
                for name, cols in PGIB_INDEXES.items():
                    cur.execute(f"CREATE INDEX {name} ON ib.t ({cols})")
                phase("l.i1")
                _insert(cur, _pgib_rows(rng, n1), 100)
                if label == "postgres":
                    cur.execute("ANALYZE ib.t")  # so the planner picks the index scans asked for
                phase("q")
                end = time.monotonic() + seconds
                names = list(PGIB_INDEXES)
                while time.monotonic() < end:
                    _insert(cur, _pgib_rows(rng, 10), 10)
                    for _ in range(10):
                        name = rng.choice(names)
                        cols = PGIB_INDEXES[name]
                        first = cols.split(",")[0]
                        start = rng.uniform(1, 500) if first == "price" else rng.randrange(100_000)
                        hint = f" FORCE INDEX ({name})" if label == "innodb" else ""
                        cur.execute(f"SELECT {cols} FROM ib.t{hint} WHERE {first} >= %s ORDER BY {cols} LIMIT 10",
                                    (start,))
                        cur.fetchall()
                phase("end")
        finally:
            conn.close()
            rec.stop()
        servers.stop_all()
        yield label


# ------------------------------------------------------------------ main
SCENARIOS = {"scans": scans, "sweep": sweep, "bulk": bulk, "pg": pg_vs_innodb}


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr and status 2 (argparse's default adds the usage)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{PROG}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    p = _Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--size", choices=("tiny", "small"), default="small")
    p.add_argument("--out", required=True, type=Path, help="directory for the recordings (created)")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if os.geteuid() != 0:
        print(f"{PROG}: error: needs root (ioattr loads BPF programs)", file=sys.stderr)
        return 2
    if not args.out.parent.is_dir():
        print(f"{PROG}: error: no such directory: {args.out.parent}", file=sys.stderr)
        return 2
    servers = Servers()
    prev = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        args.out.mkdir(exist_ok=True)
        for label in SCENARIOS[args.scenario](args.out, args.size, servers):
            print(f"RUN={label}", flush=True)
    except Failure as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a server error mid-scenario: one line, not a traceback
        print(f"{PROG}: error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        return 1
    finally:
        servers.stop_all()
        signal.signal(signal.SIGTERM, prev)
    return 0


if __name__ == "__main__":
    sys.exit(main())

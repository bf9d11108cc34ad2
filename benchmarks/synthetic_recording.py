#!/usr/bin/env python3
"""A synthetic recording shaped like a long `ioattr record` of a MariaDB benchmark.

Written the way the recorder writes it: RecordingWriter, one row per active
key per interval (1 s), one chunk per --chunk-seconds (10 s), so a 24-hour
recording is 8640 chunks per table and ~40M io rows. Vectorised (numpy +
pyarrow): the cost is mostly Parquet encoding.

The keys are a MariaDB's: 32 connection threads reading a few of 20
tablespaces each (syscall, block and page-cache layers, two statement
digests, execute/optimize stages) and writing the binlog, a page cleaner
writing every tablespace plus the doublewrite buffer, a log writer on the
redo log, two purge threads on undo and tablespaces, filesystem journal /
metadata / cache flushes at the block layer. Activity and sizes are skewed
(a few keys carry most of the IO); latencies fall in three adjacent
histogram buckets around a per-key typical latency; the phases follow the
insert benchmark (l.i0, l.x, l.i1, q100, q500, q1000), 4 hours each at full
scale, and change the read/write mix. The pages table (InnoDB page classes)
gets ~1/4 as many rows; the statements table a row per digest and second;
the counters table a snapshot per interval like collectors/counters.py
takes (~770 names, ~440 performance_schema names every 5th, forced
snapshots at phase changes): ~74M rows a day, more than io (--no-counters
leaves it out). At full scale: 40.0M io, 11.6M pages, 0.2M statements and
73.7M counter rows in 33k files, 1.26 GB.

    .venv/bin/python benchmarks/synthetic_recording.py -o /tmp/syn24          # 24 h, raw chunks
    .venv/bin/python benchmarks/synthetic_recording.py -o /tmp/syn24c --compact  # + online compaction

`--compact` runs the compactor after every chunk exactly as the recorder
does (RecordingWriter's automatic compaction), so the result is the state
a real 24-hour recording is left in. Without it, the recording is what the
recorder wrote before compaction existed. Prints (and with --json writes)
rows, files, bytes on disk and the time taken.

`generate()` is importable: tests/test_recording_scale.py uses it at a
small scale.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # harmless when ioattr is installed (editable)

from ioattr.format.recording import RecordingWriter  # noqa: E402
from ioattr.format.schema import HIST_COLUMNS, IO_SCHEMA, PAGES_SCHEMA, TABLES  # noqa: E402

START = 1_704_067_200.0          # 2024-01-01 00:00:00 UTC: fixed, so runs are reproducible
PID = 4242
DATADIR = "/var/lib/mysql"
PHASES = ["l.i0", "l.x", "l.i1", "q100", "q500", "q1000"]
# per phase: (read multiplier, write multiplier, activity multiplier)
PHASE_MIX = {
    "l.i0": (0.05, 1.6, 0.85), "l.x": (1.2, 1.0, 0.95), "l.i1": (0.6, 1.4, 1.0),
    "q100": (1.0, 0.4, 1.0), "q500": (1.3, 0.8, 1.0), "q1000": (1.6, 1.0, 1.0),
}
QUERIES = [
    (0x1A2B3C4D5E6F7081, "INSERT INTO t VALUES (...)"),
    (0x2B3C4D5E6F708192, "SELECT c1, c2 FROM t WHERE c1 >= ? ORDER BY c1, c2 LIMIT ?"),
    (0x3C4D5E6F708192A3, "SELECT pk FROM t WHERE c3 >= ? ORDER BY c3 LIMIT ?"),
    (0x4D5E6F708192A3B4, "UPDATE t SET c2 = ? WHERE pk = ?"),
]
NHIST = len(HIST_COLUMNS)


def slot_of_ns(ns: float) -> int:
    """hist_slot() of bpf/maps.bpf.h: < 256 ns is slot 0, then two slots per power of two."""
    if ns < 256:
        return 0
    msb = int(np.floor(np.log2(ns)))
    half = 1 if ns >= (1 << msb) + (1 << (msb - 1)) else 0
    return min(1 + 2 * (msb - 8) + half, NHIST - 1)


@dataclass
class Keys:
    """A table's key universe: the static columns (an Arrow table) and per-key parameters."""
    static: pa.Table
    p_active: np.ndarray     # probability a key has a row in a given second
    rate: np.ndarray         # mean count per active second
    size: np.ndarray         # bytes per operation
    slot: np.ndarray         # typical latency bucket (io only)
    is_read: np.ndarray      # reads scale with the phase's read multiplier, the rest with writes


def _thread(tid: int | None, name: str | None, role: str | None) -> dict:
    return {"pid": PID if tid else None, "tid": tid, "process": "mariadbd" if tid else None,
            "thread": name, "role": role, "cgroup": "/system.slice/mariadb.service" if tid else None}


def io_keys(rng: np.random.Generator, tables: int = 20, connections: int = 32) -> Keys:
    files = {f"t{i:02d}": (f"{DATADIR}/db/t{i:02d}.ibd", 1000 + i, "tablespace") for i in range(tables)}
    other = {
        "redo": (f"{DATADIR}/ib_logfile0", 10, "redo_log"),
        "sys": (f"{DATADIR}/ibdata1", 11, "system_tablespace"),
        "undo1": (f"{DATADIR}/undo001", 12, "undo"), "undo2": (f"{DATADIR}/undo002", 13, "undo"),
        "tmp": (f"{DATADIR}/ibtmp1", 14, "tmp"), "binlog": (f"{DATADIR}/mariadb-bin.000001", 15, "binlog"),
    }
    files.update(other)
    rows: list[dict] = []
    par: list[tuple[float, float, float, float, bool]] = []   # p_active, rate, size, latency ns, read

    def add(layer, op, api, f, thr, *, stage=None, q=None, kind="file", p=0.9, rate=10.0, size=16384,
            lat_ns=100_000.0, label=None):
        if f is not None:
            path, ino, fc = files[f]
        else:
            path, ino, fc = label, None, None
        rows.append({"layer": layer, "op": op, "api": api, "kind": kind, **thr, "stage": stage,
                     "digest": q[0] if q else None, "query": q[1] if q else None, "file_class": fc,
                     "dev": "253:0" if layer != "block" else "8:0",
                     "device": "vda" if layer == "block" else "dm-0", "ino": ino, "file": path})
        par.append((p, rate, size, lat_ns, op == "read"))

    tnames = list(files)[:tables]
    zipf = 1.0 / np.arange(1, tables + 1) ** 1.1          # hot tables first
    for c in range(connections):
        thr = _thread(5000 + c, "mariadbd", "connection")
        mine = rng.choice(tables, size=4, replace=False, p=zipf / zipf.sum())
        for t in mine:
            f = tnames[t]
            heat = float(zipf[t] / zipf[0])
            for stage, share in (("execute", 0.9), ("optimize", 0.1)):
                q = QUERIES[1 + (t % 2)]
                add("syscall", "read", "sync", f, thr, stage=stage, q=q, p=min(0.99, 0.75 + 0.4 * heat),
                    rate=60 * heat * share + 0.5, lat_ns=float(rng.uniform(60e3, 250e3)))
            add("block", "read", "direct", f, thr, stage="execute", q=QUERIES[1 + (t % 2)],
                p=min(0.99, 0.75 + 0.4 * heat), rate=50 * heat + 0.5, lat_ns=float(rng.uniform(50e3, 200e3)))
            add("pagecache", "read", "readahead", f, thr, stage="execute", q=QUERIES[1 + (t % 2)],
                p=0.3 * heat + 0.2, rate=8 * heat + 0.2, size=4096, lat_ns=0.0)
        add("syscall", "write", "sync", "binlog", thr, stage="commit", q=QUERIES[0], p=0.95, rate=30,
            size=700, lat_ns=8e3)
        add("syscall", "fsync", "sync", "binlog", thr, stage="commit", q=QUERIES[0], p=0.5, rate=2,
            size=0, lat_ns=400e3)
        add("syscall", "write", "sync", "tmp", thr, stage="execute", q=QUERIES[3], p=0.2, rate=3,
            lat_ns=20e3)
    cleaner = _thread(4300, "mariadbd", "page_cleaner")
    for f in tnames:
        add("syscall", "write", "io_uring", f, cleaner, stage="background", p=0.9, rate=25, lat_ns=300e3)
        add("block", "write", "direct", f, cleaner, stage="background", p=0.9, rate=25, lat_ns=250e3)
    add("syscall", "write", "io_uring", "sys", cleaner, stage="background", p=0.95, rate=80, size=1 << 20,
        lat_ns=1.5e6)
    add("block", "write", "direct", "sys", cleaner, stage="background", p=0.95, rate=80, size=1 << 20,
        lat_ns=1.2e6)
    logw = _thread(4310, "mariadbd", "log_writer")
    add("syscall", "write", "sync", "redo", logw, stage="background", p=0.99, rate=200, size=4096, lat_ns=15e3)
    add("syscall", "fsync", "sync", "redo", logw, stage="background", p=0.99, rate=100, size=0, lat_ns=500e3)
    add("block", "write", "buffered", "redo", logw, stage="background", p=0.99, rate=180, size=4096,
        lat_ns=200e3)
    add("syscall", "read", "sync", "redo", logw, stage="background", p=0.05, rate=5, size=65536, lat_ns=90e3)
    for k in range(2):
        purge = _thread(4320 + k, "mariadbd", "purge")
        for u in ("undo1", "undo2"):
            add("syscall", "read", "sync", u, purge, stage="background", p=0.7, rate=15, lat_ns=120e3)
            add("block", "read", "direct", u, purge, stage="background", p=0.7, rate=15, lat_ns=100e3)
        for t in range(min(8, tables)):
            add("syscall", "read", "sync", tnames[t], purge, stage="background", p=0.5, rate=5, lat_ns=150e3)
    for label, op in (("[journal]", "write"), ("[metadata]", "write"), ("[metadata]", "read"),
                      ("[cache flush]", "fsync")):
        add("block", op, "other", None, _thread(None, None, None), kind=label.strip("[]").split()[0]
            if label != "[cache flush]" else "flush", p=0.8, rate=20, size=4096 if op != "fsync" else 0,
            lat_ns=300e3, label=label)
    static = _static_table(rows, IO_SCHEMA)
    p, rate, size, lat, rd = (np.array(x) for x in zip(*par))
    slot = np.array([slot_of_ns(v) if v > 0 else 0 for v in lat], dtype=np.int64)
    return Keys(static, p.astype(float), rate.astype(float), size.astype(np.int64), slot, rd.astype(bool))


def page_keys(rng: np.random.Generator, tables: int = 20, connections: int = 32) -> Keys:
    rows: list[dict] = []
    par: list[tuple[float, float, bool]] = []
    zipf = 1.0 / np.arange(1, tables + 1) ** 1.1
    for t in range(tables):
        heat = float(zipf[t] / zipf[0])
        for ix, iname in enumerate(("PRIMARY", "k1", "k2", "k3")):
            for level in (0, 1):
                readers = [5000 + int(c) for c in rng.choice(connections, size=1, replace=False)]
                for tid in readers + [4300]:
                    op = "write" if tid == 4300 else "read"
                    if op == "write" and level == 1:
                        continue
                    q = QUERIES[1 + (t % 2)] if op == "read" else None
                    rows.append({"op": op, "api": "sync" if op == "read" else "io_uring", "pid": PID, "tid": tid,
                                 "process": "mariadbd", "thread": "mariadbd",
                                 "role": "connection" if op == "read" else "page_cleaner",
                                 "stage": "execute" if op == "read" else "background",
                                 "digest": q[0] if q else None, "query": q[1] if q else None,
                                 "space_id": 5 + t, "file": f"{DATADIR}/db/t{t:02d}.ibd",
                                 "dev": "253:0", "ino": 1000 + t,     # the tablespace's, as io_keys
                                 "file_class": "tablespace", "index_id": 100 + 4 * t + ix,
                                 "index": f"db.t{t:02d}.{iname}", "level": level, "page_type": "index",
                                 "flags": None})
                    par.append((min(0.99, (0.6 if level == 0 else 0.35) + 0.4 * heat),
                                (30 if level == 0 else 3) * heat + 0.3, op == "read"))
    static = _static_table(rows, PAGES_SCHEMA)
    p, rate, rd = (np.array(x) for x in zip(*par))
    n = len(p)
    return Keys(static, p.astype(float), rate.astype(float), np.full(n, 16384, np.int64),
                np.zeros(n, np.int64), rd.astype(bool))


def _static_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    fields = [f for f in schema if f.name in rows[0]]
    return pa.table({f.name: pa.array([r[f.name] for r in rows], type=f.type) for f in fields})


def _interval_rows(rng: np.random.Generator, keys: Keys, t0: int, seconds: int, phase: str,
                   scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which keys are active in each of `seconds` seconds from t0, and their counts."""
    rmul, wmul, amul = PHASE_MIX[phase]
    p = np.clip(keys.p_active * amul, 0, 1)
    active = rng.random((seconds, len(p))) < p
    sec, key = np.nonzero(active)
    mul = np.where(keys.is_read[key], rmul, wmul)
    # a slow diurnal-ish wave so that time series have shape
    wave = 1.0 + 0.3 * np.sin((t0 + sec) / 5400.0)
    count = rng.poisson(keys.rate[key] * mul * wave * scale) + 1
    return sec, key, count.astype(np.int64)


def _io_batch(rng, keys: Keys, t0: float, sec, key, count, phase: str, interval: float) -> pa.RecordBatch:
    n = len(key)
    idx = pa.array(key)
    static = keys.static.take(idx)
    ts = t0 + sec * interval
    nbytes = count * keys.size[key]
    # latency: 70 % in the key's bucket, ~25 % one above, the rest three above
    c1 = rng.binomial(count, 0.25)
    c2 = rng.binomial(count - c1, 0.15)
    c0 = count - c1 - c2
    hist = np.zeros((n, NHIST), dtype=np.int64)
    base = keys.slot[key]
    rows = np.arange(n)
    hist[rows, base] += c0
    hist[rows, np.minimum(base + 1, NHIST - 1)] += c1
    hist[rows, np.minimum(base + 3, NHIST - 1)] += c2
    mid = (2.0 ** ((np.maximum(base, 1) - 1) // 2 + 8)) * 1.25
    lat = (mid * (c0 + 1.2 * c1 + 2.4 * c2)).astype(np.int64)
    cols = {"ts_start": pa.array(ts, pa.float64()), "ts_end": pa.array(ts + interval, pa.float64()),
            "phase": pa.array(np.full(n, phase, dtype=object), pa.string()),
            "count": pa.array(count), "bytes": pa.array(nbytes), "lat_sum_ns": pa.array(lat)}
    for i, c in enumerate(HIST_COLUMNS):
        cols[c] = pa.array(hist[:, i])
    arrays = [cols[f.name] if f.name in cols else static.column(f.name).combine_chunks().cast(f.type)
              for f in IO_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=IO_SCHEMA)


def _pages_batch(keys: Keys, t0: float, sec, key, count, phase: str, interval: float) -> pa.RecordBatch:
    n = len(key)
    static = keys.static.take(pa.array(key))
    ts = t0 + sec * interval
    cols = {"ts_start": pa.array(ts, pa.float64()), "ts_end": pa.array(ts + interval, pa.float64()),
            "phase": pa.array(np.full(n, phase, dtype=object), pa.string()),
            "pages": pa.array(count), "bytes": pa.array(count * keys.size[key])}
    arrays = [cols[f.name] if f.name in cols else static.column(f.name).combine_chunks().cast(f.type)
              for f in PAGES_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=PAGES_SCHEMA)


# -- statements and engine counters -------------------------------------------------------------
# statements per second per phase: (selects, inserts, updates)
STMT_RATES = {"l.i0": (0, 20000, 0), "l.x": (0, 0, 0), "l.i1": (0, 8000, 0),
              "q100": (3000, 100, 50), "q500": (2500, 500, 50), "q1000": (2000, 1000, 50)}


def _statements_batch(rng, t0: float, seconds: int, phase: str, interval: float) -> pa.RecordBatch | None:
    sel, ins, upd = STMT_RATES[phase]
    rows = []
    for s_ in range(seconds):
        for (dg, q), rate, kind in ((QUERIES[0], ins, "insert"), (QUERIES[1], sel * 0.6, "select"),
                                    (QUERIES[2], sel * 0.4, "select"), (QUERIES[3], upd, "update")):
            if rate > 0:
                n_ = int(rng.poisson(rate * interval))
                # the range select (QUERIES[2]) estimates one index per statement (stage estimate)
                rows.append((t0 + s_ * interval, dg, q, kind, n_, n_ if dg == QUERIES[2][0] else 0))
    if not rows:
        return None
    ts, dg, q, kind, count, estimates = zip(*rows)
    ts = np.array(ts)
    n = len(rows)
    cols = {"ts_start": pa.array(ts), "ts_end": pa.array(ts + interval), "phase": pa.array([phase] * n),
            "pid": pa.array([PID] * n, pa.int32()), "process": pa.array(["mariadbd"] * n),
            "digest": pa.array(dg, pa.uint64()), "command": pa.array(["query"] * n), "kind": pa.array(kind),
            "query": pa.array(q), "count": pa.array(count, pa.int64()),
            "estimates": pa.array(estimates, pa.int64())}
    schema = TABLES["statements"]
    return pa.RecordBatch.from_arrays([cols[f.name].cast(f.type) for f in schema], schema=schema)


class Counters:
    """Engine and host counter snapshots shaped like collectors/counters.py writes them: ~770
    names every interval (SHOW GLOBAL STATUS, INNODB_METRICS, INNODB STATUS, host, proc) and
    ~440 performance_schema names every 5th, cumulative counters rising, gauges wandering."""

    def __init__(self, rng: np.random.Generator, tables: int) -> None:
        self.rng = rng
        status = ["Com_select", "Com_insert", "Com_update", "Innodb_data_reads", "Innodb_data_writes",
                  "Innodb_rows_inserted", "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests",
                  "ioattr:Com_select"] + [f"Status_var_{i:03d}" for i in range(440)]
        metrics = ["buffer_page_read_index_leaf", "buffer_page_read_index_non_leaf", "ibuf_merges"] + \
            [f"metric_{i:03d}" for i in range(247)]
        innodb = ["history_list_length", "checkpoint_age", "buffer_pool_pages", "ibuf_size_pages",
                  "log_capacity"] + [f"status_{i:02d}" for i in range(35)]
        host = [f"vda:{c}" for c in ("reads", "writes", "sectors_read", "sectors_written", "io_ms")] + \
            ["cpu_user", "cpu_system", "cpu_iowait", "cpu_idle", "ctxt"] + [f"host_{i}" for i in range(10)]
        proc = ["cpu_seconds", "ctx_switches", "read_bytes", "write_bytes", "syscr", "syscw"]
        ps_file = [f"{DATADIR}/db/t{t % tables:02d}.ibd:{c}" for t in range(30) for c in
                   ("COUNT_READ", "SUM_NUMBER_OF_BYTES_READ", "SUM_TIMER_READ", "COUNT_WRITE",
                    "SUM_NUMBER_OF_BYTES_WRITE", "SUM_TIMER_WRITE", "COUNT_MISC", "SUM_TIMER_MISC")]
        ps_table = [f"db.t{t:02d}:{c}" for t in range(20) for c in
                    ("COUNT_STAR", "COUNT_READ", "COUNT_WRITE", "COUNT_FETCH", "COUNT_INSERT", "COUNT_UPDATE",
                     "COUNT_DELETE", "SUM_TIMER_WAIT", "SUM_TIMER_READ", "SUM_TIMER_WRITE")]
        every = [("status", n, PID) for n in status] + [("innodb_metrics", n, PID) for n in metrics] + \
            [("innodb_status", n, PID) for n in innodb] + [("host", n, None) for n in host] + \
            [("proc", n, PID) for n in proc]
        self.sets = [self._set(every), self._set([("ps_file", n, PID) for n in ps_file] +
                                                  [("ps_table", n, PID) for n in ps_table])]
        self.snapshots = 0
        names = list(self.sets[0]["name"].to_pylist())
        # counters the per-phase summary reads follow the phase's statement mix (reads per query ~4)
        self.by_phase = {"Com_select": lambda r: r[0] + 3, "Com_insert": lambda r: r[1], "Com_update": lambda r: r[2],
                         "Innodb_rows_inserted": lambda r: r[1], "Innodb_data_reads": lambda r: 4 * r[0] + 0.1 * r[1],
                         "ioattr:Com_select": lambda r: 3, "cpu_seconds": lambda r: 1.2, "ctx_switches": lambda r: 9e3}
        self.by_phase = {names.index(k): f for k, f in self.by_phase.items()}

    def _set(self, keys):
        src, name, pid = zip(*keys)
        n = len(keys)
        gauge = np.array([s_ == "innodb_status" for s_ in src])
        return {"source": pa.array(src), "name": pa.array(name), "pid": pa.array(pid, pa.int32()),
                "n": n, "gauge": gauge, "rate": self.rng.lognormal(3, 2, n), "value": np.zeros(n)}

    def snapshot(self, ts: float, phase: str, seconds: float, force: bool = False) -> list[pa.RecordBatch]:
        out = []
        due = [self.sets[0]] + ([self.sets[1]] if force or self.snapshots % 5 == 0 else [])
        self.snapshots += 1
        for st in due:
            rate = st["rate"]
            if st is self.sets[0]:
                rate = rate.copy()
                for i, f in self.by_phase.items():
                    rate[i] = f(STMT_RATES[phase])
            inc = self.rng.poisson(rate * max(seconds, 0.0))
            st["value"] = np.where(st["gauge"], self.rng.uniform(0, 1e6, st["n"]), st["value"] + inc)
            n = st["n"]
            cols = {"ts": pa.array(np.full(n, ts)), "phase": pa.array([phase] * n), "pid": st["pid"],
                    "source": st["source"], "name": st["name"], "value": pa.array(st["value"].astype(float)),
                    "text": pa.nulls(n, pa.string())}
            schema = TABLES["counters"]
            out.append(pa.RecordBatch.from_arrays([cols[f.name].cast(f.type) for f in schema], schema=schema))
        return out


def generate(out: Path, *, hours: float = 24.0, interval: float = 1.0, chunk_seconds: float = 10.0,
             seed: int = 1, compact: bool = False, scale: float = 1.0, tables: int = 20,
             connections: int = 32, counters: bool = True, progress=None) -> dict:
    """Write the recording; returns what was written (rows, chunks, seconds taken)."""
    t_begin = time.perf_counter()
    rng = np.random.default_rng(seed)
    ik = io_keys(rng, tables, connections)
    pk = page_keys(rng, tables, connections)
    total_s = int(round(hours * 3600 / interval))          # intervals
    per_chunk = max(1, int(round(chunk_seconds / interval)))
    phase_len = max(1, total_s // len(PHASES))
    w = RecordingWriter.create(out, targets=[f"mariadbd[{PID}]"], interval=interval, phase=PHASES[0],
                               probe_sets=["syscalls", "uring", "block", "pagecache", "innodb"], degraded={})
    w.auto_compact = compact
    w.meta.update(started=START, host="synthetic", phases=[{"name": PHASES[0], "start": START, "end": None}],
                  synthetic={"hours": hours, "seed": seed, "keys_io": len(ik.p_active),
                             "keys_pages": len(pk.p_active)})
    rows = {"io": 0, "pages": 0, "statements": 0, "counters": 0}
    ctr = Counters(rng, tables) if counters else None

    def snap(ts, phase, seconds, force=False):
        if ctr is not None and "counters" in TABLES:
            for b in ctr.snapshot(ts, phase, seconds, force):
                w.batches.setdefault("counters", []).append(b)
                rows["counters"] += b.num_rows

    snap(START, PHASES[0], 0.0, force=True)      # the recorder's baseline snapshot
    cur_phase = 0
    for c0 in range(0, total_s, per_chunk):
        n = min(per_chunk, total_s - c0)
        # split the chunk where a phase starts, like the recorder does on a phase switch
        bounds = sorted({c0, c0 + n} | {k * phase_len for k in range(1, len(PHASES))
                                        if c0 < k * phase_len < c0 + n})
        for a, b in zip(bounds, bounds[1:]):
            ph = min(a // phase_len, len(PHASES) - 1)
            if ph != cur_phase:
                snap(START + a * interval, PHASES[cur_phase], 0.0, force=True)   # tagged with the phase that ends
                cur_phase = ph
                w.meta["phases"][-1]["end"] = START + a * interval
                w.meta["phases"].append({"name": PHASES[ph], "start": START + a * interval, "end": None,
                                         "source": "mark"})
            name = PHASES[ph]
            sec, key, count = _interval_rows(rng, ik, a, b - a, name, scale)
            w.batches.setdefault("io", []).append(_io_batch(rng, ik, START + a * interval, sec, key, count,
                                                            name, interval))
            rows["io"] += len(key)
            sec, key, count = _interval_rows(rng, pk, a, b - a, name, scale)
            w.batches.setdefault("pages", []).append(_pages_batch(pk, START + a * interval, sec, key, count,
                                                                  name, interval))
            rows["pages"] += len(key)
            if "statements" in TABLES:
                sb = _statements_batch(rng, START + a * interval, b - a, name, interval)
                if sb is not None:
                    w.batches.setdefault("statements", []).append(sb)
                    rows["statements"] += sb.num_rows
            for k in range(a, b):     # a snapshot after every interval's drain
                snap(START + (k + 1) * interval, name, interval)
        w.flush({})
        if progress and w.chunk_no % 360 == 0:
            progress(w.chunk_no, rows, time.perf_counter() - t_begin)
    w.meta["phases"][-1]["end"] = START + total_s * interval
    snap(START + total_s * interval, PHASES[cur_phase], 0.0, force=True)   # the final drain's
    w.close("complete")
    w.meta["ended"] = START + total_s * interval
    w.write_meta()
    return {"rows": rows, "chunks": w.chunk_no, "seconds": round(time.perf_counter() - t_begin, 1)}


def disk_usage(path: Path) -> dict:
    files, size = 0, 0
    per_table: dict[str, dict] = {}
    for root, _dirs, names in os.walk(path):
        for name in names:
            st = os.stat(os.path.join(root, name))
            files += 1
            size += st.st_blocks * 512
            t = per_table.setdefault(os.path.relpath(root, path), {"files": 0, "bytes": 0})
            t["files"] += 1
            t["bytes"] += st.st_blocks * 512
    return {"files": files, "bytes": size, "tables": per_table}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="recording directory to create")
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds per aggregate row (recorder default 1)")
    ap.add_argument("--chunk-seconds", type=float, default=10.0, help="recorder default 10")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies operation counts, not rows")
    ap.add_argument("--compact", action="store_true", help="compact as the recorder does while recording")
    ap.add_argument("--no-counters", action="store_true", help="no engine/host counters table")
    ap.add_argument("--json", help="also write the summary here")
    a = ap.parse_args()

    def progress(chunk, rows, secs):
        print(f"  chunk {chunk}: {rows['io']:,} io rows, {rows['pages']:,} page rows, "
              f"{rows['counters']:,} counter rows, {secs:.0f} s",
              file=sys.stderr, flush=True)

    res = generate(Path(a.output), hours=a.hours, interval=a.interval, chunk_seconds=a.chunk_seconds,
                   seed=a.seed, compact=a.compact, scale=a.scale, counters=not a.no_counters,
                   progress=progress)
    res.update(output=a.output, hours=a.hours, compact=a.compact, disk=disk_usage(Path(a.output)))
    print(json.dumps(res, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

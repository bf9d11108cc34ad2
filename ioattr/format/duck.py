"""Every DuckDB connection ioattr opens, with its memory and threads bounded.

DuckDB's defaults are 80% of the machine's RAM and one thread per core: a
report on a benchmark host would compete with the benchmark, and a damaged
recording could make it allocate most of the machine (issue 10: 24 GB).
So ioattr opens every connection (reader.py, compact.py) here, with

    memory_limit   512MB   IOATTR_DUCKDB_MEMORY_LIMIT (a DuckDB size: 256MB, 2GB, 1.5GiB)
    threads        min(4, cores), or what the caller asks (the compactor: 1)
                           IOATTR_DUCKDB_THREADS (1..256) overrides both

A query that needs more than the limit spills to a private temporary
directory (removed with the connection) rather than growing. A bad value in
either variable is a UsageError (one line, exit 2), raised before anything is
read. The limit bounds DuckDB's buffer manager; what DuckDB allocates outside
it (decoding a Parquet footer or page header) is bounded by checking those
sizes first (partcheck.py).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref

from ioattr.errors import UsageError
from ioattr import environment

DEFAULT_MEMORY_LIMIT = "512MB"
MAX_DEFAULT_THREADS = 4
MEMORY_ENV = "IOATTR_DUCKDB_MEMORY_LIMIT"
THREADS_ENV = "IOATTR_DUCKDB_THREADS"
_SIZE_RE = re.compile(r"\d+(\.\d+)?\s*(b|kb|mb|gb|tb|kib|mib|gib|tib)", re.IGNORECASE)
_MIN_BYTES = 64 * 10**6     # below this DuckDB can't even scan a recording's row group
_UNIT = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def limits(threads: int | None = None) -> tuple[str, int]:
    """(memory_limit, threads) for a new connection: the environment's if set (checked),
    else `threads` (a caller's own choice) and the defaults."""
    mem = environment.get(MEMORY_ENV).strip() or DEFAULT_MEMORY_LIMIT
    m = _SIZE_RE.fullmatch(mem)
    if m is None:
        raise UsageError(f"{MEMORY_ENV}={mem[:40]!r}: not a size (e.g. 512MB, 2GB)")
    unit = re.sub(r"[\d.\s]", "", mem).lower()
    if float(mem[:len(mem) - len(unit)]) * _UNIT[unit] < _MIN_BYTES:
        raise UsageError(f"{MEMORY_ENV}={mem!r}: too small (at least 64MB)")
    env_threads = environment.get(THREADS_ENV).strip()
    if env_threads:
        if not re.fullmatch(r"\d{1,3}", env_threads) or not 1 <= int(env_threads) <= 256:
            raise UsageError(f"{THREADS_ENV}={env_threads[:40]!r}: not a number of threads (1..256)")
        n = int(env_threads)
    elif threads is not None:
        n = threads
    else:
        n = max(1, min(MAX_DEFAULT_THREADS, os.cpu_count() or 1))
    return mem, n


def connect(threads: int | None = None):
    """An in-memory DuckDB connection with ioattr's limits (see the module's doc)."""
    import duckdb  # lazy: weight (duckdb: `ioattr record` uses only limits())

    mem, n = limits(threads)
    spill = tempfile.mkdtemp(prefix="ioattr-duckdb-")      # private (0700), ours alone
    try:
        con = duckdb.connect(":memory:", config={"memory_limit": mem, "threads": n, "temp_directory": spill})
        con.execute("SET enable_progress_bar = false")      # stderr is for one-line messages
    except BaseException:
        shutil.rmtree(spill, ignore_errors=True)
        raise
    # the spill directory goes with the connection (or at exit), whichever comes first
    weakref.finalize(con, shutil.rmtree, spill, True)
    return con

"""PostgreSQL 18's asynchronous IO charged to the backend and statement that asked for it
(bpf/pg_aio.bpf.h, ioattr/engines/postgres/aio.py), against a private 18 cluster (the Makefile's pg18
step: the Maven Central binaries).

With io_method=worker (18's default) a cold sequential scan's reads are done by the
`postgres: io worker N` processes (preadv of up to io_combine_limit blocks). ioattr charges
them to the scanning backend, its statement and phase, with api `io_worker`; the io workers
keep none of the table's reads. With io_method=sync the backend reads itself; the statement's
total is the same.

Ground truth: pg_statio_user_tables.heap_blks_read of the scanned table (each block read from
outside shared_buffers; the server restarted before each scan, so shared_buffers is empty) x
8 KiB = the statement's syscall-layer read bytes on the table's files, exactly (buffered reads
of whole blocks: no short reads). The table's file is dropped from the page cache before each
scan, so the block layer reads it all too: its block read bytes, all on the backend, = the same.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Iterator

import pytest

from ioattr.host.pg_sandbox import PrivatePostgres
from tests.fixtures_postgres import cold_seq_scan, started_cluster
from tests.helpers import recording, report_json

PAGE = 8192
SCAN = "SELECT sum(length(v)) FROM aio WHERE v <> 'scan'"
SCAN_DIGEST_TEXT = "SELECT sum(length(v)) FROM aio WHERE v <> ?"


@pytest.fixture(scope="module")
def pg18() -> Iterator[PrivatePostgres]:
    """An 18 cluster (4MB shared_buffers) with a ~7 MB table (100,000 rows, ~930 heap pages):
    far larger than shared_buffers, so every scan after a restart reads it all from outside."""
    for pg in started_cluster(18, shared_buffers="4MB"):
        pg.execute("CREATE TABLE aio (id int, v text); "
                   "INSERT INTO aio SELECT g, md5(g::text) FROM generate_series(1, 100000) g; CHECKPOINT")
        yield pg


def _pid_of(process: str) -> int:
    return int(re.search(r"\[(\d+)\]$", process).group(1))  # type: ignore[union-attr]


def _cold_scan(pg: PrivatePostgres, io_method: str, rec: Path) -> tuple[int, int]:
    """Restart pg with io_method, record one cold scan; (heap_blks_read, the backend's pid)."""
    pg.execute(f"ALTER SYSTEM SET io_method = '{io_method}'")
    pg.restart()  # io_method is read at start; shared_buffers empty
    assert pg.query("SHOW io_method") == [(io_method,)]
    # and the table's file out of the page cache (written: the CHECKPOINT at creation), so every
    # block it reads goes to the device
    (path,) = pg.query("SELECT pg_relation_filepath('aio')")[0]
    fd = os.open(pg.datadir / path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    with recording(pg.pid, rec) as bg:
        heap_read, backend = cold_seq_scan(pg, SCAN, "aio")
    if io_method == "worker":
        assert re.search(rf"server {pg.pid} \(postgres\): .*async IO: 3 io workers; their IO is charged to "
                         r"the backend that asked", bg.stderr), bg.stderr
    else:
        assert "async IO: no io workers" in bg.stderr, bg.stderr
    return heap_read, backend


def _table_reads(rec: Path, layer: str = "syscall") -> list[dict]:
    relations = json.loads((rec / "meta.json").read_text())["relations"]
    by = "process,role,query,api,file" if layer == "syscall" else "process,role,file"
    rows = report_json(rec, "--by", by, "--layer", layer)["rows"]
    return [r for r in rows if r["op"] == "read"
            and (relations.get(r["file"]) or {}).get("relation") == "postgres.public.aio"]


def test_io_worker_reads_charged_to_the_statement(pg18: PrivatePostgres, tmp_path: Path) -> None:
    totals: dict[str, int] = {}
    for method in ("worker", "sync"):
        rec = tmp_path / method
        heap_read, backend = _cold_scan(pg18, method, rec)
        assert heap_read > 800, heap_read  # the whole table, from outside shared_buffers
        rows = _table_reads(rec)
        # every read of the table is the scanning backend's, under the scan's statement
        assert {(_pid_of(r["process"]), r["role"], r["query"]) for r in rows} == \
            {(backend, "connection", SCAN_DIGEST_TEXT)}, rows
        total = sum(r["bytes"] for r in rows)
        assert total == heap_read * PAGE, (method, total, heap_read)
        via_workers = sum(r["bytes"] for r in rows if r["api"] == "io_worker")
        if method == "worker":
            # the io workers did (nearly) all of it; what the backend read itself (a read it
            # ran synchronously) stays sync/vector
            assert via_workers >= 0.9 * total, (via_workers, total, rows)
        else:
            assert via_workers == 0, rows
        totals[method] = total
        # the block layer: the reads reached the device (the file was out of the page cache) in
        # the io workers' context, and are the backend's too, all of the table's blocks
        blocks = _table_reads(rec, "block")
        assert {(_pid_of(r["process"]), r["role"]) for r in blocks} == {(backend, "connection")}, blocks
        assert sum(r["bytes"] for r in blocks) == heap_read * PAGE, (method, blocks, heap_read)
    assert totals["worker"] == totals["sync"], totals

"""PostgreSQL statements from the wire protocol (issue 16; bpf/stage.bpf.c pg_recv, the same
program on syscalls:sys_exit_recvfrom as MySQL's wire reader): a postmaster's backends get
IOA_TARGET_PG_WIRE, and their reads are parsed as PostgreSQL messages. Against a private
cluster (tests/fixtures_postgres.py), over the unix socket (in clear: libpq never uses TLS
there), with psycopg in autocommit:

- Simple Query ('Q'): N statements of three shapes, literals varying, counted per digest
  exactly as sent; their texts sampled with the literals stripped;
- extended protocol: unnamed statements (Parse/Bind/Describe/Execute/Sync every time) and a
  named prepared statement (Parse once, then Bind/Execute) counted once per Execute under the
  digest of their Parse's text;
- a phase marker `SELECT 'ioattr:phase=p2' AS marker` splits the recording: the statements after it
  are p2's;
- pgbench -S -M extended and -M prepared (Parse/Bind/Describe/Execute/Sync batches in one read;
  a named statement per connection): the select counted once per transaction;
- a TLS connection (TCP, sslmode=require) is seen switching to TLS: meta.json
  degraded.statements says so, its statements are not counted, clear ones still are;
- a backend's reads of a table (a scan after a restart, so not in shared_buffers) are charged
  to the scan's statement: `report --by query` shows its text, bytes = pg_statio's
  heap_blks_read x 8 KiB (one 8 KiB pread per block read).

Ground truth: the statements sent (each known), pg_statio_user_tables.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from ioattr.collectors.sqltext import digest
from ioattr.host.pg_sandbox import PG_BINDIR, PrivatePostgres
from tests import fixtures_mariadb
from tests.conftest import need_tool
from tests.fixtures_postgres import ON_15, ON_15_AND_18, cold_seq_scan, need_postgres
from tests.helpers import Background, recording, report_json, wait_phase

PAGE = 8192
N = 40  # statements of each shape


@pytest.fixture(scope="module")
def cluster(postgres_versions: PrivatePostgres) -> PrivatePostgres:
    """The module's cluster with a table (20,000 rows, ~170 heap pages)."""
    postgres_versions.execute("CREATE TABLE pgs (id int PRIMARY KEY, v text); "
                     "INSERT INTO pgs SELECT g, md5(g::text) FROM generate_series(1, 20000) g; CHECKPOINT")
    return postgres_versions


def _counted(rec: Path) -> dict[tuple[str, str], int]:
    """The recording's statements table: (phase, digest hex) -> count."""
    import duckdb

    rows = duckdb.connect().execute(
        "SELECT phase, digest, sum(count) FROM read_parquet(?, union_by_name = true) GROUP BY ALL",
        [str(rec / "statements" / "*.parquet")]).fetchall()
    return {(p, f"{int(d) & 0xFFFFFFFFFFFFFFFF:016x}"): int(n) for p, d, n in rows}


def _counted_by_digest(rec: Path) -> dict[str, int]:
    """_counted summed over phases: digest hex -> count."""
    out: dict[str, int] = {}
    for (_, d), n in _counted(rec).items():
        out[d] = out.get(d, 0) + n
    return out


def _hex(text: str) -> str:
    return f"{digest(text):016x}"


def _record(pg: PrivatePostgres, rec: Path) -> Background:
    bg = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--interval", "0.3")
    bg.wait_recording()
    return bg


@ON_15_AND_18
def test_simple_and_extended_statements_counted_per_digest(cluster: PrivatePostgres, tmp_path: Path) -> None:
    pg = cluster
    rec = tmp_path / "rec"
    shapes = ["SELECT {i}", "SELECT v FROM pgs WHERE id = {i}", "SELECT count(*) FROM pgs WHERE id < {i} AND v <> 'x'"]
    unnamed = "SELECT id FROM pgs WHERE id = $1"
    named = "SELECT v FROM pgs WHERE id > $1 LIMIT 1"
    bg = _record(pg, rec)
    try:
        assert f"server {pg.pid} (postgres): statements from the wire" in bg.stderr
        with pg.connect(sslmode="disable") as c:
            for shape in shapes:
                for i in range(N):
                    c.execute(shape.format(i=i + 1))  # no parameters: psycopg sends a Simple Query
            for i in range(N):  # extended, unnamed statement: Parse/Bind/Describe/Execute/Sync each time
                c.execute(unnamed.replace("$1", "%s"), (i,), prepare=False)
            for i in range(N):  # extended, named: Parse once (_pg3_0), then Bind/Describe/Execute/Sync
                c.execute(named.replace("$1", "%s"), (i,), prepare=True)
            c.execute("SELECT 'ioattr:phase=p2' AS marker")
            wait_phase(rec, "p2")
            for i in range(N // 2):
                c.execute(shapes[0].format(i=1000 + i))
        code, err = bg.stop()
        assert code == 0, err
    finally:
        bg.stop()
    counted = _counted(rec)
    meta = json.loads((rec / "meta.json").read_text())
    assert [p["name"] for p in meta["phases"]] == ["main", "p2"], meta["phases"]
    assert meta["statement_sources"][str(pg.pid)]["source"] == "wire"
    for shape in shapes:
        assert counted.get(("main", _hex(shape.format(i=1)))) == N, (shape, counted)
    assert counted.get(("main", _hex(unnamed))) == N, counted
    assert counted.get(("main", _hex(named))) == N, counted
    assert counted.get(("p2", _hex(shapes[0].format(i=1)))) == N // 2, counted
    # the marker itself starts p2 and is counted there, once
    assert counted.get(("p2", _hex("SELECT 'ioattr:phase=p2' AS marker"))) == 1, counted
    # ioattr's own queries (its backends: catalogs, counters) are not the workload's: tagged as
    # ioattr's own, the counters it read from pg_stat_bgwriter are neither counted nor sampled
    own = [d for d, q in meta["queries"].items() if "checkpoints_timed" in q]
    assert not own, own
    # no Execute without its Parse's digest (all of them were seen)
    assert not any(d == f"{0x17:016x}" for _, d in counted), counted
    # texts sampled, literals stripped
    queries = meta["queries"]
    assert queries[_hex(shapes[1].format(i=1))] == "SELECT v FROM pgs WHERE id = ?", queries
    # a parameter is a literal: the text as the vectors normalise it, the digest of the same
    # statement sent with its value (tests/vectors/sql_digest.json)
    assert queries[_hex(unnamed)] == "SELECT id FROM pgs WHERE id = ?", queries
    assert _hex(unnamed) == _hex("SELECT id FROM pgs WHERE id = 7")


@ON_15  # 18 (io workers, and sync): tests/test_pg_aio.py
def test_scan_reads_charged_to_its_statement(cluster: PrivatePostgres, tmp_path: Path) -> None:
    pg = cluster
    pg.restart()  # empty shared_buffers: the scan reads the table with one pread per block
    rec = tmp_path / "rec"
    scan = "SELECT sum(length(v)) FROM pgs WHERE v <> 'scan'"
    with recording(pg.pid, rec):
        heap_read, _ = cold_seq_scan(pg, scan, "pgs")
    assert heap_read > 0
    meta = json.loads((rec / "meta.json").read_text())
    relations = meta["relations"]
    rows = report_json(rec, "--by", "query,file", "--layer", "syscall")["rows"]
    mine = [r for r in rows if r["op"] == "read"
            and (relations.get(r["file"]) or {}).get("relation") == "postgres.public.pgs"]
    by_query: dict[str | None, int] = {}
    for r in mine:
        by_query[r["query"]] = by_query.get(r["query"], 0) + r["bytes"]
    assert by_query == {"SELECT sum(length(v)) FROM pgs WHERE v <> ?": heap_read * PAGE}, by_query


@ON_15
def test_mixed_recording_keeps_both_protocols_exact(cluster: PrivatePostgres, mariadb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """MariaDB and PostgreSQL traced together: each target's reads are parsed by its own protocol
    (the flag, per process), so both servers' statements are counted exactly as sent."""
    pg = cluster
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(pg.pid), "--pid", str(mariadb.pid), "--interval", "0.3")
    bg.wait_recording()
    try:
        my = mariadb.connect(ssl_disabled=True)  # in clear on the unix socket
        try:
            with my.cursor() as cur, pg.connect(sslmode="disable") as c:
                for i in range(N):
                    cur.execute(f"SELECT {i} + 1 AS mysql_side")
                    cur.fetchall()
                    c.execute(f"SELECT {i} + 2 AS pg_side")
        finally:
            my.close()
        code, err = bg.stop()
        assert code == 0, err
    finally:
        bg.stop()
    counted = _counted_by_digest(rec)
    assert counted.get(_hex("SELECT 1 + 1 AS mysql_side")) == N, counted
    assert counted.get(_hex("SELECT 1 + 2 AS pg_side")) == N, counted
    sources = json.loads((rec / "meta.json").read_text())["statement_sources"]
    assert sources[str(mariadb.pid)]["source"] == "wire" and sources[str(pg.pid)]["source"] == "wire", sources


def _pgbench(pg: PrivatePostgres, *args: str) -> None:
    res = subprocess.run([str(PG_BINDIR / "pgbench"), "-h", str(pg.socket_dir), "-p", str(pg.port), "-U", "postgres",
                          *args, "postgres"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PGSSLMODE": "disable"})
    assert res.returncode == 0, res.stderr


@ON_15
@pytest.mark.parametrize("mode", ["extended", "prepared"])
def test_pgbench_extended_protocol_counted_per_execute(cluster: PrivatePostgres, tmp_path: Path, mode: str) -> None:
    pg = cluster
    _pgbench(pg, "-i", "-q", "-s", "1")
    rec = tmp_path / "rec"
    transactions = 300
    bg = _record(pg, rec)
    try:
        _pgbench(pg, "-S", "-n", "-M", mode, "-c", "2", "-t", str(transactions))
        code, err = bg.stop()
        assert code == 0, err
    finally:
        bg.stop()
    counted = _counted_by_digest(rec)
    # pgbench -S: one select per transaction, 2 clients
    assert counted.get(_hex("SELECT abalance FROM pgbench_accounts WHERE aid = $1;")) == 2 * transactions, counted
    assert f"{0x17:016x}" not in counted, counted


def test_tls_connections_said_degraded(tmp_path: Path) -> None:
    """A cluster with TLS on TCP: a client with sslmode=require is read as far as its SSLRequest,
    then seen switching to TLS: said (stderr, meta.json degraded.statements) and not counted;
    clear clients on the unix socket of the same cluster are counted exactly."""
    need_postgres()
    need_tool("openssl")
    pw = pwd.getpwnam("postgres")
    certdir = Path(tempfile.mkdtemp(prefix="ioattr-pgtls-"))
    crt, key = certdir / "server.crt", certdir / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
                    "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=120)
    for path in (certdir, crt, key):
        os.chown(path, pw.pw_uid, pw.pw_gid)
    key.chmod(0o600)
    pg = PrivatePostgres(extra_options={"listen_addresses": "'127.0.0.1'", "ssl": "on",
                                        "ssl_cert_file": f"'{crt}'", "ssl_key_file": f"'{key}'"})
    fixtures_mariadb._SESSION_SERVERS.append(pg)  # type: ignore[arg-type]  # the leftover guard needs .pid
    rec = tmp_path / "rec"
    try:
        pg.start()
        bg = _record(pg, rec)
        try:
            import psycopg

            with psycopg.connect(host="127.0.0.1", port=pg.port, user="postgres", dbname="postgres",
                                 sslmode="require", autocommit=True, connect_timeout=5) as t:
                assert t.pgconn.ssl_in_use
                for i in range(N):
                    t.execute(f"SELECT {i} AS over_tls")
            with pg.connect(sslmode="disable") as c:
                for i in range(N):
                    c.execute(f"SELECT {i} AS in_clear")
            code, err = bg.stop()
            assert code == 0, err
        finally:
            bg.stop()
    finally:
        pg.stop()
        fixtures_mariadb.forget_server(pg)
        shutil.rmtree(certdir, ignore_errors=True)
    assert "switched to TLS" in bg.stderr, bg.stderr
    meta = json.loads((rec / "meta.json").read_text())
    assert "1 PostgreSQL connection(s) switched to TLS" in meta["degraded"]["statements"], meta["degraded"]
    counted = _counted_by_digest(rec)
    assert counted.get(_hex("SELECT 1 AS in_clear")) == N, counted
    assert _hex("SELECT 1 AS over_tls") not in counted, counted

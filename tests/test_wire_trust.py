"""The wire reader's skipped header reads (bpf/stage.bpf.c, WIRE_COMMAND): after a command whose
exchange has no other client packet (COM_PING here; COM_STMT_EXECUTE in sysbench's runs, held to
Com_stmt_* in test_wire_statements.py), the reader no longer reads the next packet's 4-byte
header on that connection. These tests send what would break that if it were trusted too far,
and check the statements counted against what was sent:

- a killed connection whose thread, from the thread cache, then serves a new connection on the
  same fd number: the new client's handshake response (first byte: its capability flags, 0x05
  or 0x0d for pymysql, which look like command numbers) must not count as a command;
- LOAD DATA LOCAL after pings and a plain COM_QUERY (after which headers are skipped too): the
  file's packets (sequence ids 2, 3) start with bytes that are command numbers (0x0e COM_PING,
  0x17 COM_STMT_EXECUTE, 0x03 COM_QUERY) and must count as nothing.

Ground truth: the commands each test sent.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers import Background

COM_QUIT, COM_PING = 0x01, 0x0E


@pytest.fixture(scope="module")
def server() -> Iterator:
    from tests.fixtures_mariadb import private_server

    with private_server("CREATE DATABASE IF NOT EXISTS wt",
                        "CREATE TABLE wt.f (line VARBINARY(64)) ENGINE=InnoDB",
                        extra_options={"local_infile": "1"}) as db:
        yield db


def _counted(rec: Path) -> tuple[Counter, Counter]:
    """(command numbers -> count, COM_QUERY texts -> count) of the recording."""
    import duckdb

    rows = duckdb.connect().execute(
        "SELECT digest, sum(count) FROM read_parquet(?, union_by_name = true) GROUP BY digest",
        [str(rec / "statements" / "*.parquet")]).fetchall()
    texts = json.loads((rec / "meta.json").read_text())["queries"]
    commands: Counter = Counter()
    queries: Counter = Counter()
    for d, n in rows:
        d = int(d) & 0xFFFFFFFFFFFFFFFF
        if d < 256:
            commands[d] += int(n)
        else:
            queries[texts.get(f"{d:016x}")] += int(n)
    return commands, queries


def _gone(conn, conn_id: int) -> int:  # type: ignore[no-untyped-def]
    """Wait (on connection conn: a new one would take the cached thread) until connection
    conn_id has left the processlist (its thread is back in the cache); the queries it took."""
    n = 1
    with conn.cursor() as cur:
        while cur.execute(f"SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = {conn_id}"):
            n += 1
    return n


def test_trusted_headers_do_not_count_a_handshake_or_a_local_file(server, tmp_path: Path) -> None:
    data = tmp_path / "lines.bin"
    data.write_bytes(b"\x0e\x17\x03 ping-like\n\x17execute-like\n\x03query-like\n")
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "0.3",
                    "--statements", "wire")
    bg.wait_recording()
    try:
        a = server.connect(ssl_disabled=True)
        for _ in range(5):
            a.ping(reconnect=False)
        a_id = a.thread_id()
        b = server.connect(ssl_disabled=True)
        with b.cursor() as cur:
            cur.execute(f"KILL CONNECTION {a_id}")
        polls = _gone(b, a_id)
        # most likely served by a's cached thread, on a's fd number; no local_infile: pymysql's
        # capability flags then start with 0x05, a command number
        c = server.connect(ssl_disabled=True)
        for _ in range(3):
            c.ping(reconnect=False)
        c.close()
        d = server.connect(ssl_disabled=True, local_infile=True)
        for _ in range(3):
            d.ping(reconnect=False)
        with d.cursor() as cur:
            cur.execute("SELECT 'no l-o-c-a-l here', 1")  # a COM_QUERY after which headers are skipped
            cur.execute(f"load data /* any case */ LoCaL infile '{data}' INTO TABLE wt.f")
        for _ in range(2):
            d.ping(reconnect=False)
        d.close()
        b.close()
    finally:
        code, err = bg.stop()
        assert code == 0, err
    commands, queries = _counted(rec)
    assert commands == {COM_PING: 13, COM_QUIT: 3}, (commands, queries)
    loads = {t: n for t, n in queries.items() if t and t.startswith("load data")}
    assert list(loads.values()) == [1], queries
    assert None not in queries, queries  # no digest without its text: no statement made of file bytes
    # the rest: the KILL, the processlist polls, pymysql's SET NAMES at each connect
    assert queries["SELECT ?, ?"] == 1, queries
    assert sum(queries.values()) == 3 + polls + 4 - (0 if "SET NAMES utf8mb4" in queries else 4), \
        (queries, polls)

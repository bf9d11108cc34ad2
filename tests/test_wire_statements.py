"""Statement boundaries from the MySQL wire protocol (issue 13, bpf/stage.bpf.c ioattr_wire_recv):
the default statement source reads each command packet as mariadbd receives it, instead of a
uprobe trap on dispatch_command per statement. These tests hold it to the uprobe's results on
the same statements, and to the server's own counters:

- digests, per-digest counts and sampled texts of ~40 statements equal the uprobe's;
- prepared statements' prepares and closes are counted by command number (COM_STMT_PREPARE 22,
  COM_STMT_CLOSE 25) and their executions under the statement's digest, exactly as the server's
  Com_stmt_* counters grew;
- a phase marker starts its phase over TCP and over the unix socket;
- TLS and compressed clients, whose packets the wire reader cannot read, get their statements
  counted through the dispatch_command fallback (`--statements auto`), clear clients are then
  not counted twice;
- a statement larger than 16 MB (several protocol packets) is one statement, no garbage.

Ground truth: the statements each test sent (once each, known) and SHOW GLOBAL STATUS.
"""
from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import need_tool
from tests.helpers import Background, wait_phase

VECTORS = json.loads((Path(__file__).resolve().parent / "vectors" / "sql_digest.json").read_text())["statements"]

# around the digest's 16-byte bpf_loop steps, comments, quotes with escapes, hex and exponent
# literals, identifiers with digits, longer than the 256 digested bytes and the 512-byte sample
EXTRA = [
    "SELECT 1",
    "select 12",
    "SELECT 123456789",
    "SELECT 'abcdefghijklmn'",
    "SELECT 'abcdefghijklmnopq'",
    "SELECT  1 ,  2 ,\t3\n",
    "SELECT /* a comment */ 1",
    "SELECT 1 -- trailing comment\n",
    "SELECT 1 # hash comment\n",
    "SELECT 'it''s', \"dq\\\"x\"",
    "SELECT 'a\\'b', 'c'",
    "SELECT 0x1F, 0xABCDEF, x'41'",
    "SELECT 1e10, 2.5E-3, .5",
    "SELECT t1.c2 FROM (SELECT 1 AS c2) AS t1",
    "SELECT @@version_comment IS NOT NULL",
    "SELECT CONCAT('x', 12, 'y') AS v3",
    "DO 1",
    "SELECT 1 /* ioattr-internal-ish is not the prefix */",
    "SELECT " + ", ".join(str(i) for i in range(120)),
    "SELECT '" + "z" * 600 + "'",
    "SELECT " + " + ".join(f"c{i}" for i in range(10)) + " FROM (SELECT "
    + ", ".join(f"{i} AS c{i}" for i in range(10)) + ") AS d",
    "SELECT 1 FROM DUAL WHERE 1 IN (1, 2, 3, 4, 5, 6, 7, 8, 9)",
    "SHOW VARIABLES LIKE 'version'",
    "SELECT 1; ",
    "SELECT\n1\n",
    "SELECT 'multi\nline'",
    "SELECT 3 /* unterminated? no */ + 4",
    "SELECT 99999999999999999999",
]
# what MariaDB runs without an error (_run_unix stops at the first)
STATEMENTS = [v["sql"] for v in VECTORS if not v.get("refused_by_mariadb")] + EXTRA


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A private server with TLS (a self-signed certificate made for it), TCP, a password user
    for TCP clients, and max_allowed_packet above 16 MB."""
    from tests.fixtures_mariadb import private_server

    need_tool("openssl")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
                   check=True, capture_output=True)
    with private_server("CREATE USER wire@'%' IDENTIFIED BY 'wirepw'", "GRANT ALL ON *.* TO wire@'%'",
                        extra_options={"ssl_cert": str(d / "cert.pem"), "ssl_key": str(d / "key.pem"),
                                       "max_allowed_packet": "64M"}) as db:
        yield db


def _record(db, rec: Path, *extra: str) -> Background:  # type: ignore[no-untyped-def]
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3", *extra)
    bg.wait_recording()
    return bg


def _stop(bg: Background) -> None:
    code, err = bg.stop()
    assert code == 0, err


def _counted(rec: Path) -> dict[str, int]:
    """The recording's statements table: digest (hex, or the command number for non-COM_QUERY
    commands) -> count."""
    import duckdb

    rows = duckdb.connect().execute(
        "SELECT digest, sum(count) FROM read_parquet(?, union_by_name = true) GROUP BY digest",
        [str(rec / "statements" / "*.parquet")]).fetchall()
    return {f"{int(d) & 0xFFFFFFFFFFFFFFFF:016x}": int(n) for d, n in rows}


def _run_unix(db, statements: list[str]) -> None:  # type: ignore[no-untyped-def]
    """In clear on the unix socket (pymysql would use TLS, which this server offers)."""
    conn = db.connect(max_allowed_packet=64 << 20, ssl_disabled=True)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
                cur.fetchall()
    finally:
        conn.close()


def _cli(db, sql: str, *flags: str) -> None:  # type: ignore[no-untyped-def]
    """The mariadb client over TCP (password user), with `flags` (--ssl, --compress)."""
    res = subprocess.run(["mariadb", "--no-defaults", "-h127.0.0.1", f"-P{db.port}", "-uwire", "-pwirepw",
                          "--protocol=tcp", *flags, "-e", sql], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def _digests_of(rec: Path, statements: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    meta = json.loads((rec / "meta.json").read_text())
    return _counted(rec), meta["queries"]


def test_wire_digests_equal_the_uprobes(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wire reader on both its hooks (the socket layer's raw tracepoint, the default, and
    recvfrom's syscall tracepoint, kernels without the former) against the uprobe."""
    got = {}
    hooks = {"wire": "tp_btf:sock_recv_length", "wire@syscall": "syscalls:sys_exit_recvfrom", "uprobe": ""}
    for run, hook in hooks.items():
        source = run.partition("@")[0]
        rec = tmp_path / run.replace("@", "_")
        monkeypatch.setenv("IOATTR_WIRE_HOOK", run.partition("@")[2] or "auto")
        bg = _record(server, rec, "--statements", source)
        _run_unix(server, STATEMENTS)
        _stop(bg)
        meta = json.loads((rec / "meta.json").read_text())
        assert meta["statement_sources"] == {str(server.pid): {"source": source,
                                                                "why": f"--statements {source}"}}, meta
        assert meta["wire_hook"] == hook, meta
        got[run] = (_counted(rec), meta["queries"])
    wire_counts, wire_texts = got["wire"]
    up_counts, up_texts = got["uprobe"]
    assert got["wire@syscall"] == got["wire"]
    # the vectors' digests are the known ones
    assert {v["digest"] for v in VECTORS} <= set(wire_counts), wire_counts
    # every digest the uprobe counted, the wire counted as often; same sampled texts
    assert wire_counts == up_counts
    assert wire_texts == up_texts
    # and that is the statements sent: distinct digests, each counted as often as sent
    assert wire_texts.get(f"{0x6248af96f4798e7f:016x}") == "SET NAMES utf8mb4"  # pymysql's, at connect
    assert sum(n for d, n in wire_counts.items() if int(d, 16) >= 256) == len(STATEMENTS) + 1


def test_prepared_statements_counted_by_command(server, tmp_path: Path) -> None:
    need_tool("sysbench")
    server.sysbench("oltp_point_select", "prepare", table_size=200)
    try:
        before = {k: server.status(k) for k in ("Com_stmt_prepare", "Com_stmt_execute", "Com_stmt_close")}
        rec = tmp_path / "rec"
        bg = _record(server, rec)
        server.sysbench("oltp_point_select", "run", table_size=200, events=300)
        _stop(bg)
        # the recorder's own statements are COM_QUERY: the deltas are the workload's
        grew = {k: server.status(k) - v for k, v in before.items()}
    finally:
        server.sysbench("oltp_point_select", "cleanup")
    counted = _counted(rec)
    meta = json.loads((rec / "meta.json").read_text())
    # sysbench is in clear (and so are ioattr's own statements): auto kept the wire alone
    assert meta["statement_sources"][str(server.pid)]["source"] == "wire", meta["statement_sources"]
    assert grew["Com_stmt_execute"] >= 300, grew
    assert counted.get(f"{22:016x}") == grew["Com_stmt_prepare"], (counted, grew)
    # executions count under their statement's digest (tests/test_prepared_statements.py), not
    # under the command
    assert f"{23:016x}" not in counted, counted
    digest = next(d for d, q in meta["queries"].items() if q == "SELECT c FROM sbtest1 WHERE id=?")
    assert counted.get(digest) == grew["Com_stmt_execute"], (counted, grew)
    assert counted.get(f"{25:016x}", 0) == grew["Com_stmt_close"], (counted, grew)


def test_statements_whose_slots_collide_are_each_counted(server, tmp_path: Path) -> None:
    """A statement is counted in a slot of stmt_slots chosen by a mix of the server, the phase
    and the digest (bpf/stage.bpf.c count_stmt); one whose slot another digest holds goes to the
    stmt_stats hash, and the recorder adds both. Two texts chosen to share a slot in the
    recording's first phase, interleaved: each counted exactly, the texts kept."""
    from ioattr.collectors import abi
    from ioattr.collectors.drain import stmt_slot_of
    from ioattr.collectors.sqltext import digest

    first: dict[int, str] = {}
    for i in range(10_000):  # ~100 texts find a pair among 4096 slots
        text = f"SELECT {i} AS slot_{i}"
        slot = stmt_slot_of(server.pid, abi.PHASE_FIRST, digest(text))
        if slot in first:
            a, b = first[slot], text
            break
        first[slot] = text
    else:
        pytest.fail("no two texts share a slot")
    rec = tmp_path / "rec"
    bg = _record(server, rec)
    _run_unix(server, [a] * 3 + [b] * 4 + [a] * 2 + [b])
    # the kernel's slots, while the recorder holds them: a's in the slot the mix names, b in none
    dump = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "name", "stmt_slots"], check=True,
                                     capture_output=True, text=True).stdout)
    # other ioattr sessions' maps may be loaded too (bpftool then lists each map's elements
    # under it): this server's slots
    entries = [x for e in dump for x in e.get("elements", [e])]
    slots = {e["formatted"]["key"]: e["formatted"]["value"] for e in entries
             if e["formatted"]["value"]["tag"] >> 32 == server.pid}
    _stop(bg)
    held = {v["digest"]: (k, v["tag"], v["count"]) for k, v in slots.items() if v["tag"]}
    tag = server.pid << 32 | abi.PHASE_FIRST << 1 | 1
    assert held.get(digest(a)) == (stmt_slot_of(server.pid, abi.PHASE_FIRST, digest(a)), tag, 5), held
    assert digest(b) not in held, held
    counted, queries = _digests_of(rec, [a, b])
    da, db = f"{digest(a):016x}", f"{digest(b):016x}"
    assert (counted.get(da), counted.get(db)) == (5, 5), counted
    assert queries[da].startswith("SELECT ? AS slot_") and queries[db].startswith("SELECT ? AS slot_"), queries


@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_phase_marker_from_the_wire(server, tmp_path: Path, transport: str) -> None:
    rec = tmp_path / "rec"
    bg = _record(server, rec, "--statements", "wire")
    try:
        name = f"over_{transport}"
        sql = f"SELECT 1 /* ioattr:phase={name} */"
        if transport == "tcp":
            # in clear (the client would take the TLS this server offers), comments kept (it drops them)
            _cli(server, sql, "--skip-ssl", "--comments")
        else:
            _run_unix(server, [sql])
        wait_phase(rec, name)
    finally:
        _stop(bg)
    meta = json.loads((rec / "meta.json").read_text())
    assert [p["name"] for p in meta["phases"]][-1] == name, meta["phases"]
    assert meta["statement_sources"][str(server.pid)]["source"] == "wire"


@pytest.mark.parametrize("flag", ["--ssl", "--compress"])
def test_tls_and_compressed_clients_fall_back_to_the_uprobe(server, tmp_path: Path, flag: str) -> None:
    rec = tmp_path / "rec"
    bg = _record(server, rec)  # --statements auto
    try:
        # enough Questions, none of them readable on the wire, for the session's check
        first = "; ".join(f"SELECT {i}" for i in range(400))
        extra = ("--ssl", "--ssl-verify-server-cert=0") if flag == "--ssl" else (flag, "--skip-ssl")
        _cli(server, first, *extra)
        bg.wait_for("dispatch_command uprobe attached as the fallback", timeout=60)
        # from now on: these statements over TLS/compression, and clear ones on the unix socket
        _cli(server, "; ".join(["SELECT 'through the fallback', 1"] * 30), *extra)
        _run_unix(server, ["SELECT 'in clear', 2"] * 20)
    finally:
        _stop(bg)
    meta = json.loads((rec / "meta.json").read_text())
    src = meta["statement_sources"][str(server.pid)]
    assert src["source"] == "wire+uprobe", src
    assert "Questions" in src["why"], src
    assert "dispatch_command uprobe" in meta["servers"][0]["stage_probes"], meta["servers"]
    assert "not digested" in meta["degraded"]["statements"], meta["degraded"]
    counted, texts = _counted(rec), meta["queries"]
    by_text = Counter()
    for d, n in counted.items():
        by_text[texts.get(d)] += n
    assert by_text["SELECT ?, ?"] == 30 + 20, by_text  # each once: the fallback, and no double count


def test_statement_over_16_mb_is_one_statement(server, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    bg = _record(server, rec, "--statements", "wire")
    big = "SELECT LENGTH('" + "y" * (17 << 20) + "') AS big"
    _run_unix(server, ["SELECT 'before', 1", big, "SELECT 'after', 1"])
    _stop(bg)
    counted, texts = _counted(rec), json.loads((rec / "meta.json").read_text())["queries"]
    mine = Counter()
    for d, n in counted.items():
        mine[texts.get(d) or d] += n
    assert mine["SELECT ?, ?"] == 2, mine  # the statement after it is read in step
    big_digests = {d: n for d, n in counted.items() if (texts.get(d) or "").startswith("SELECT LENGTH(")}
    assert list(big_digests.values()) == [1], (big_digests, mine)
    # nothing else (pymysql's SET NAMES and COM_QUIT): no command numbers or digests made of the
    # payload's bytes or its continuation packets' headers
    big_text = texts[next(iter(big_digests))]
    assert mine == {"SELECT ?, ?": 2, big_text: 1, "SET NAMES utf8mb4": 1, f"{1:016x}": 1}, mine


def _long_packets() -> list[tuple[str, int, dict[str, int]]]:
    """Multi-statement texts longer than the 256 digested bytes and the 512-byte sample, one past
    4 KiB, LinkBench-like (`INSERT ... VALUES (...), ...; COMMIT`): (text, statements (Questions),
    the Com_* counters they grow). Past the digested bytes: ';' inside quotes (with escaped quotes
    and backslashes), inside comments of all three kinds, a comment after the last ';' (one more
    statement to the server, with no Com_* counter)."""
    def rows(n: int, start: int) -> str:
        return ", ".join(f"({start + i}, 'v;{i} it\\'s \\\\; /* -- ;', \"d;q\")" for i in range(n))

    linkbench = f"INSERT INTO wirems.t (id, a, b) VALUES {rows(30, 0)}; COMMIT"
    big = (f"BEGIN; INSERT INTO wirems.t (id, a, b) VALUES {rows(120, 1000)} /* x; y */ -- z;\n"
           "; UPDATE wirems.t SET a = 'u;' WHERE id = 1000 # w;\n; COMMIT; /* trailing */")
    assert 512 < len(linkbench) < 4096 < len(big) < 64 << 10, (len(linkbench), len(big))
    return [(linkbench, 2, {"Com_insert": 1, "Com_commit": 1}),
            (big, 5, {"Com_begin": 1, "Com_insert": 1, "Com_update": 1, "Com_commit": 1})]


# short multi-statement packets and their statements, as the server counts them (Questions)
SHORT_PACKETS = [("SELECT 1; SELECT 'a;b' /* ; */, 2; DO 3", 3), ("SELECT 1;", 1), ("SELECT 1; ", 1),
                 ("DO 3; /* end */", 2), ("SELECT 1; -- x\n", 2), ("SELECT 1;;", 1)]


def test_multi_statement_packets_count_each_statement(server, tmp_path: Path) -> None:
    """One COM_QUERY packet holding several statements (LinkBench's `...; commit;`) is as many
    Questions: the wire reader counts each (what --statements auto compares with Questions),
    so the packets in clear are never taken for TLS or compression. Counted as the server
    counts: a comment after the last ';' is one more, a ';' inside quotes or comments none;
    short packets, and packets past 512 bytes and past 4 KiB (the digest reads 256) from PyMySQL
    (CLIENT_MULTI_STATEMENTS) and from the mariadb client (a DELIMITER makes it send the text as
    one COM_QUERY), whose statements are the server's Com_* counts."""
    from pymysql.constants import CLIENT

    def wire_count() -> int:
        dump = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "name", "wire_slots"], check=True,
                                         capture_output=True, text=True).stdout)
        return sum(x["formatted"]["value"]["count"] for e in dump for x in e.get("elements", [e])
                   if x["formatted"]["value"]["tgid"] == server.pid)

    def status(cur, scope: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
        cur.execute(f"SHOW {scope} STATUS WHERE Variable_name IN ('Questions', %s)"
                    % ", ".join(f"'{k}'" for k in kinds))
        return {str(k): int(v) for k, v in cur.fetchall()}

    kinds = ("Com_insert", "Com_commit", "Com_begin", "Com_update", "Com_delete")
    packets = _long_packets()
    want = Counter({"Com_delete": 1})  # a round: DELETE, then each packet
    for _, _, holds in packets:
        want.update(holds)
    statements = 1 + sum(n for _, n, _ in packets) + sum(n for _, n in SHORT_PACKETS)
    server.query("CREATE DATABASE IF NOT EXISTS wirems")
    server.query("CREATE TABLE IF NOT EXISTS wirems.t (id INT PRIMARY KEY, a VARCHAR(64), b VARCHAR(8))")
    rec = tmp_path / "rec"
    # a long interval: none of the recorder's own statements between the readings below
    bg = Background("record", "-o", str(rec), "--pid", str(server.pid), "--interval", "60", "--chunk-seconds", "60")
    bg.wait_recording()
    rounds = 10
    try:
        conn = server.connect(ssl_disabled=True, client_flag=CLIENT.MULTI_STATEMENTS)
        try:
            with conn.cursor() as cur:
                wire, before = wire_count(), status(cur, "SESSION")
                for _ in range(rounds):
                    cur.execute("DELETE FROM wirems.t")
                    for sql, _, _ in packets + [(q, n, {}) for q, n in SHORT_PACKETS]:
                        cur.execute(sql)
                        while cur.nextset():
                            pass
                after = status(cur, "SESSION")
                wire = wire_count() - wire
                # the mariadb client, twice: the global counters, read on this connection around it
                once = "".join(f"{sql} //\n" for sql, _, _ in packets)
                script = 2 * ("DELETE FROM wirems.t;\nDELIMITER //\n" + once + "DELIMITER ;\n")
                cli_before = status(cur, "GLOBAL")
                cli_wire = wire_count()
                res = subprocess.run(["mariadb", "--no-defaults", f"--socket={server.socket}", "-uroot",
                                      "--skip-ssl", "--comments"],  # comments kept: sent as written
                                     input=script, capture_output=True, text=True, timeout=60)
                cli_wire = wire_count() - cli_wire
                cli_grew = {k: v - cli_before[k] for k, v in status(cur, "GLOBAL").items()}
                assert res.returncode == 0, res.stderr
        finally:
            conn.close()
    finally:
        _stop(bg)
    grew = {k: after[k] - before[k] for k in after}
    # the server counted each statement: its Com_* counters, and Questions one per statement
    assert {k: grew[k] for k in kinds} == {k: rounds * want[k] for k in kinds}, (grew, want)
    assert grew["Questions"] == rounds * statements + 1, grew  # and the last status read
    # the wire as many (its count ends after the last status read and starts after the first); it
    # also sees the recorder's own statements in clear (a few, in its first seconds), while a packet
    # miscounted would be `rounds` off
    assert grew["Questions"] <= wire <= grew["Questions"] + 5, (wire, grew)
    # the mariadb client: each statement of its packets counted by the server, and by the wire: the
    # global Questions also counted the second status read (after the wire's), and whatever the
    # recorder sent between the first read and the wire's (none expected: 2 packets miscounted
    # would be 10 off)
    assert {k: cli_grew[k] for k in kinds} == {k: 2 * want[k] for k in kinds}, (cli_grew, want)
    assert cli_grew["Questions"] - 4 <= cli_wire <= cli_grew["Questions"] - 1, (cli_wire, cli_grew, res.stdout)

"""SQL normalisation vectors (tests/vectors/sql_digest.json), the kernel side: the BPF
tokenizer in bpf/stage.bpf.c gives each statement the digest the vectors say (FNV-1a 64 of
its normalised bytes, which tests/unit/test_sqltext.py checks in Python), and the recording
keeps the statement's text normalised as the vectors say, under that digest.

Ground truth: the statements this test sent, once each, on one connection of a private
MariaDB (the statements table counts them per digest)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import recording

VECTORS = json.loads((Path(__file__).resolve().parent / "vectors" / "sql_digest.json").read_text())["statements"]


@pytest.fixture(scope="module")
def server():
    from tests.fixtures_mariadb import private_server

    with private_server() as db:
        yield db


def _send_recorded(server, rec: Path, texts: list[str]) -> dict[int, int]:
    """Send each text once on one connection under `ioattr record` to `rec`; the statements
    the recording counted, per digest. A statement the server refuses (a syntax error) was
    read and digested all the same."""
    import duckdb
    import pymysql

    with recording(server.pid, rec):
        conn = server.connect()
        try:
            with conn.cursor() as cur:
                for t in texts:
                    try:
                        cur.execute(t)
                        cur.fetchall()
                    except pymysql.err.MySQLError:
                        pass
        finally:
            conn.close()
    rows = duckdb.connect().execute(
        "SELECT digest, sum(count) FROM read_parquet(?, union_by_name = true) GROUP BY digest",
        [str(rec / "statements" / "*.parquet")]).fetchall()
    return {int(d) & 0xFFFFFFFFFFFFFFFF: int(n) for d, n in rows}


def test_kernel_digests_match_the_vectors(server, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    counts = _send_recorded(server, rec, [v["sql"] for v in VECTORS])
    meta = json.loads((rec / "meta.json").read_text())
    queries = meta["queries"]
    first_text: dict[str, str] = {}
    for v in VECTORS:
        first_text.setdefault(v["digest"], v["normalized"])
    missing = {v["why"]: v["digest"] for v in VECTORS if v["digest"] not in queries}
    assert not missing, (missing, queries)
    # the text sampled at a digest's first statement, normalised
    assert {d: queries[d] for d in first_text} == first_text
    counted = {f"{d:016x}": n for d, n in counts.items()}
    sent = Counter(v["digest"] for v in VECTORS)
    assert {d: counted.get(d) for d in sent} == dict(sent)


def _random_statement(rng) -> str:
    """A statement-like text from the pieces the tokenizer treats differently: keywords and
    identifiers in any case (with the letters i/l/L that start its "ioattr:phase=" and
    "local" searches, and digits after letters), numbers (hex, exponent, decimal), quoted
    strings with escapes and doubled quotes, the three comment kinds, runs of whitespace,
    operators; most of it need not parse (the digest is taken before the server parses)."""
    pieces = [
        lambda: rng.choice(["SELECT", "select", "SeLeCt", "FROM", "where", "LIMIT", "limit", "Local", "LOCAL",
                            "ioattr", "IOATTR:", "ioattr:pha", "ORDER BY", "IN", "in", "like", "ilike"]),
        lambda: "".join(rng.choice("abcilLIxyz_$9") for _ in range(rng.randint(1, 9))),
        lambda: rng.choice(["1", "42", "0x1F", "1.5e3", ".5", "-7", "123abc", "9e"]),
        lambda: rng.choice(["'it''s'", "'a\\'b'", '"d e f"', "'é'", "''", "'--not a comment'", "'/*x*/'"]),
        lambda: rng.choice(["/* c */", "/*x*/", "/* multi\nline */", "-- tail\n", "# hash\n", "/**/"]),
        lambda: rng.choice([" ", "  ", "\t", "\n", " \r\n ", ""]),
        lambda: rng.choice([",", "(", ")", "=", ">=", "<", "+", "*", "/", "-", ".", ";", "`q`", "@v", ":", "?"]),
    ]
    return "".join(rng.choice(pieces)() for _ in range(rng.randint(1, 40)))


def test_kernel_digests_match_the_python_mirror_on_random_statements(server, tmp_path: Path) -> None:
    """bpf/stage.bpf.c's digest walk (its fast path for plain bytes and its state machine)
    gives every statement the digest collectors/sqltext.py computes byte by byte: 300 random
    statements, counted per digest."""
    import random

    from ioattr.collectors import sqltext

    rng = random.Random(20261124)
    texts = [_random_statement(rng) for _ in range(300)]
    texts = [t for t in texts if t.strip() and "ioattr:phase=" not in t]
    counted = _send_recorded(server, tmp_path / "rec", texts)
    sent = Counter(sqltext.digest(t) for t in texts)
    assert {d: counted.get(d) for d in sent} == dict(sent)

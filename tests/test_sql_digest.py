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


def test_kernel_digests_match_the_vectors(server, tmp_path: Path) -> None:
    import duckdb

    rec = tmp_path / "rec"
    with recording(server.pid, rec):
        conn = server.connect()
        try:
            with conn.cursor() as cur:
                for v in VECTORS:
                    cur.execute(v["sql"])
                    cur.fetchall()
        finally:
            conn.close()
    meta = json.loads((rec / "meta.json").read_text())
    queries = meta["queries"]
    first_text: dict[str, str] = {}
    for v in VECTORS:
        first_text.setdefault(v["digest"], v["normalized"])
    missing = {v["why"]: v["digest"] for v in VECTORS if v["digest"] not in queries}
    assert not missing, (missing, queries)
    # the text sampled at a digest's first statement, normalised
    assert {d: queries[d] for d in first_text} == first_text
    rows = duckdb.connect().execute(
        "SELECT digest, sum(count) FROM read_parquet(?, union_by_name = true) GROUP BY digest",
        [str(rec / "statements" / "*.parquet")]).fetchall()
    counted = {f"{int(d) & 0xFFFFFFFFFFFFFFFF:016x}": int(n) for d, n in rows}
    sent = Counter(v["digest"] for v in VECTORS)
    assert {d: counted.get(d) for d in sent} == dict(sent)

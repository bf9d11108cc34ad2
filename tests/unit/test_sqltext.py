"""SQL normalisation vectors (tests/vectors/sql_digest.json), the Python side: the text a
recording stores (collectors/sqltext.normalize) and the digest the BPF tokenizer in
bpf/stage.bpf.c computes (FNV-1a 64 over its normalised bytes, mirrored by
sqltext.digest_text). tests/test_sql_digest.py checks the same vectors against the kernel."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ioattr.collectors import sqltext

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "sql_digest.json").read_text())["statements"]


def test_fnv1a64_reference_values() -> None:
    # the published FNV-1a 64 test values (offset basis; "a"; "foobar")
    assert sqltext.fnv1a64(b"") == 0xCBF29CE484222325
    assert sqltext.fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert sqltext.fnv1a64(b"foobar") == 0x85944171F73967E8


@pytest.mark.parametrize("v", VECTORS, ids=[v["why"] for v in VECTORS])
def test_vectors(v: dict) -> None:
    assert sqltext.normalize(v["sql"]) == v["normalized"]
    text = sqltext.digest_text(v["sql"])
    assert text.decode() == v["digest_text"]
    # the digest is FNV-1a of exactly those bytes (kept above the protocol command numbers)
    assert sqltext.digest(v["sql"]) == int(v["digest"], 16) == sqltext.fnv1a64(text)
    # a digest never holds a literal: the normalised forms of the vectors have no digits
    # outside identifiers, and no quotes
    assert "'" not in v["digest_text"] and "'" not in v["normalized"]


def test_literals_alone_do_not_change_the_digest() -> None:
    a = sqltext.digest("SELECT c FROM t WHERE id = 1 AND name = 'x'")
    assert a == sqltext.digest("select c  from t\nwhere id = 5 and name = 'yy' -- why")
    assert a != sqltext.digest("SELECT c FROM t WHERE id = 1 OR name = 'x'")


def test_only_the_first_256_bytes_count() -> None:
    head = "SELECT " + "a" * 249            # 256 bytes
    assert sqltext.digest(head + " , b") == sqltext.digest(head + " , c") == sqltext.digest(head)
    assert sqltext.digest(head[:-1] + "b") != sqltext.digest(head)


def test_ioattrs_own_statements_are_not_digested() -> None:
    assert sqltext.digest("/* ioattr-internal */ SELECT 1") == sqltext.DIGEST_INTERNAL


def test_phase_marker() -> None:
    assert sqltext.phase_marker("SELECT 'ioattr:phase=l.i1' -- x") == "l.i1"
    assert sqltext.phase_marker("SELECT 1") is None

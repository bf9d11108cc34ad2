"""The exporter's `file` label of a PostgreSQL relation's file (metrics_state.ExporterState):
a counter keeps its labels, so bytes of a relation's file must never be counted under another
value (its path) before the relation is known -- they would stay there for good."""
from __future__ import annotations

import numpy as np

from ioattr.format.schema import HIST_COLUMNS
from ioattr.prometheus.metrics_state import HOLD_SECONDS, IO_LABELS, ExporterState

PATH = "/srv/pg/data/base/5/16384"
SEGMENT = PATH + ".1"
WAL = "/srv/pg/data/pg_wal/000000010000000000000002"
NAME = "postgres.public.names_t"
FILE_AT = IO_LABELS.index("file")


def io_rows(rows: list[tuple[str, int]]) -> dict:
    """io columns as the session's IoRows gives them: syscall reads of (file, bytes), 8 KiB each."""
    n = len(rows)
    io: dict = {"layer": ["syscall"] * n, "op": ["read"] * n, "file": [f for f, _ in rows],
                "file_class": ["relation"] * n, "device": ["vda"] * n, "role": ["io"] * n, "cgroup": [None] * n,
                "count": np.array([b // 8192 for _, b in rows], dtype=np.int64),
                "bytes": np.array([b for _, b in rows], dtype=np.int64),
                "lat_sum_ns": np.full(n, 1000, dtype=np.int64)}
    hist = np.zeros((n, len(HIST_COLUMNS)), dtype=np.int64)
    hist[:, 20] = io["count"]
    io.update({c: hist[:, i].copy() for i, c in enumerate(HIST_COLUMNS)})
    return io


def read_bytes(st: ExporterState) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, v in st.io.series.items():
        out[key[FILE_AT]] = out.get(key[FILE_AT], 0) + int(v[1])
    return out


def hist_count(st: ExporterState) -> int:
    return int(sum(v[len(HIST_COLUMNS)] for v in st.hist.series.values()))


def relations(named: bool) -> dict[str, dict]:
    """relation_files(): the relation's two segments, before and after the names are re-read."""
    rel = NAME if named else None
    return {p: {"relation": rel, "kind": "table" if named else None, "fork": "main", "segment": s,
                "relfilenode": 16384, "database_oid": 5} for s, p in ((0, PATH), (1, SEGMENT))}


def test_relation_rows_before_the_name_are_counted_under_it_only() -> None:
    """Interval 1: reads of a relation's file the map knows as a relation's but not which (a table
    created since the catalogs were read; an io worker's first preads right after its open).
    Interval 2: more reads, the names re-read. Every byte ends under the relation's name, none
    ever under the path; the rest of interval 1 (WAL) is counted at once."""
    st = ExporterState(top_n=10)
    st.ingest(io_rows([(PATH, 131072), (SEGMENT, 8192), (WAL, 8192)]), None, 0.0, relations(named=False))
    assert read_bytes(st) == {WAL: 8192}
    assert hist_count(st) == 1  # the held rows' latencies wait with them
    st.ingest(io_rows([(PATH, 65536)]), None, 0.3, relations(named=True))
    assert read_bytes(st) == {WAL: 8192, NAME: 131072 + 8192 + 65536}
    assert hist_count(st) == 1 + 16 + 1 + 8
    # later intervals add to the same series
    st.ingest(io_rows([(SEGMENT, 8192)]), None, 0.6, relations(named=True))
    assert read_bytes(st) == {WAL: 8192, NAME: 131072 + 8192 + 65536 + 8192}
    assert not [k for k in st.io.series if k[FILE_AT] in (PATH, SEGMENT)]


def test_held_rows_survive_an_idle_interval_and_a_lost_map() -> None:
    """An interval with no IO, or one where the map could not be read ({}: the exporter passes its
    last one, but the state does not rely on it), does not lose the held rows."""
    st = ExporterState(top_n=10)
    st.ingest(io_rows([(PATH, 16384)]), None, 0.0, relations(named=False))
    st.ingest(None, None, 0.3, relations(named=False))
    assert read_bytes(st) == {}
    st.ingest(io_rows([(PATH, 8192)]), None, 0.6, relations(named=True))
    assert read_bytes(st) == {NAME: 16384 + 8192}
    assert int(sum(v[0] for v in st.io.series.values())) == 3


def test_a_relation_never_named_is_counted_under_its_path_after_the_hold() -> None:
    """A file the names never cover (created in a transaction that rolled back) waits at most
    HOLD_SECONDS, then is counted under its path: late, never lost, never twice."""
    st = ExporterState(top_n=10)
    t = 0.0
    sent = 0
    while t < HOLD_SECONDS:
        st.ingest(io_rows([(PATH, 8192)]), None, t, relations(named=False))
        sent += 8192
        t += 1.0
    assert read_bytes(st) == {}
    st.ingest(None, None, t, relations(named=False))
    got = read_bytes(st)
    assert set(got) == {PATH} and 0 < got[PATH] < sent  # the oldest released, the newest still wait
    for _ in range(int(HOLD_SECONDS) + 1):
        t += 1.0
        st.ingest(None, None, t, relations(named=False))
    assert read_bytes(st) == {PATH: sent}


def test_without_relations_nothing_is_held() -> None:
    """A server that is no PostgreSQL cluster (no relation map): every row counted at once."""
    st = ExporterState(top_n=10)
    st.ingest(io_rows([(PATH, 8192), (WAL, 8192)]), None, 0.0, {})
    st.ingest(io_rows([(PATH, 8192)]), None, 0.3)
    assert read_bytes(st) == {PATH: 16384, WAL: 8192}

"""The report's vocabulary on a synthetic recording (benchmarks/synthetic_recording.py, a
few seconds of a MariaDB's keys): every `--by` dimension decodes to labels from its
vocabulary (ioattr/model/labels.py, dimensions.py), adding a dimension only splits rows
(count and bytes preserved exactly, page dimensions included), bad `--by` values are usage
errors, and the exporter's bounded labels (metrics_state.SeriesTable/TopN) keep every sum
exact while holding at most N values of their own."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from ioattr.collectors.abi import Api, Kind, Layer
from ioattr.errors import UsageError
from ioattr.model import labels
from ioattr.model.dimensions import DIMENSIONS, PAGE_ONLY, parse_dimensions, sql_for
from tests.helpers import synthetic_generator

FIXED = ("layer", "op")  # every report row is split by these too


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory):
    from ioattr.format.reader import Recording

    out = Path(tmp_path_factory.mktemp("syn")) / "rec"
    synthetic_generator().generate(out, hours=20 / 3600, counters=False, tables=6, connections=4)
    return Recording(out)


def report(rec, *by: str) -> list[dict]:
    from ioattr.analysis.report import ReportRequest, build_report

    return build_report(rec, ReportRequest(by=list(by)))["rows"]


def totals(rows: list[dict], *keys: str) -> dict[tuple, tuple[int, int]]:
    out: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        t = out[tuple(r[k] for k in keys)]
        t[0] += r["count"]
        t[1] += r["bytes"]
    return {k: (c, b) for k, (c, b) in out.items()}


def test_label_tables_cover_every_enum_value() -> None:
    assert labels.LAYERS == ("syscall", "block", "pagecache")
    assert set(labels.LAYER_NAMES) == {int(v) for v in Layer}
    assert labels.OP_NAMES == {0: "read", 1: "write", 2: "fsync"}
    assert set(labels.API_NAMES) == {int(v) for v in Api}
    assert labels.API_NAMES[int(Api.SYNCCALL)] == labels.API_NAMES[int(Api.SYNC)] == "sync"
    assert set(labels.KIND_NAMES) == {int(v) for v in Kind}
    # every kind but a file's own data has a bracketed file label; writeback of pages no
    # target dirtied keeps its file's name and says so in the process column instead
    assert set(labels.KIND_FILE_LABELS) == {int(v) for v in Kind} - {int(Kind.FILE), int(Kind.OTHERS_DIRTY)}
    assert labels.NOT_A_TARGET.startswith("[not a target") and labels.NOT_A_TARGET.endswith("]")
    assert all(v.startswith("[") and v.endswith("]") for v in labels.KIND_FILE_LABELS.values())
    assert set(labels.DROP_MAPS) == set(labels.DROP_WHAT)


def test_drops_are_described_biggest_first() -> None:
    assert labels.drop_details({"stats_full": 0}) == [] and labels.drops_line(None) is None
    d = labels.drop_details({"pages_cut": 5, "stats_full": 7, "events_full": 7}, {"io_stats": 65536})
    assert [(x["reason"], x["count"], x["map"]) for x in d] == [
        ("events_full", 7, "events"), ("stats_full", 7, "io_stats"), ("pages_cut", 5, None)]
    assert d[1]["max_entries"] == 65536 and "max_entries" not in d[0]
    assert labels.drops_line({"stats_full": 1234}, {"io_stats": 16}) == (
        "WARNING: 1,234 IO/events dropped, the totals are low (io_stats 1,234, capacity 16; "
        "record with a larger --max-entries)")


def test_parse_dimensions() -> None:
    assert parse_dimensions(None) == ["file"]
    assert parse_dimensions("role, file,role") == ["role", "file"]
    assert parse_dimensions(["phase", "query,stage"]) == ["phase", "query", "stage"]
    for bad in ("", " , ", "files"):
        with pytest.raises(UsageError):
            parse_dimensions(bad)
    assert PAGE_ONLY == {"index", "level", "page_type"}
    assert sql_for("query", "pages").count("pages.digest") == 3 and "{t}" not in sql_for("index", "pages")


LABELS = {
    "layer": set(labels.LAYERS),
    "op": set(labels.OP_NAMES.values()),
    "api": set(labels.API_NAMES.values()),
    "level": {"leaf", "non_leaf"},
    "stage": {"estimate", "parse", "optimize", "execute", "commit", "background"},
    "file_class": {"tablespace", "system_tablespace", "undo", "redo_log", "binlog", "relay_log",
                   "doublewrite", "tmp", "sst", "wal", "manifest", "options", "info_log", "trash",
                   "relation", "fsm", "vm", "init_fork", "slru", "archive", "other"},
}


@pytest.mark.parametrize("dim", list(DIMENSIONS))
def test_every_dimension_decodes_and_only_splits(rec, dim: str) -> None:
    """Grouped by dim, the rows carry a label per row (null where unknown, never a code) and
    sum, per layer and op, to exactly the report without it."""
    base = totals(report(rec, "layer"), *FIXED)
    rows = report(rec, dim)
    assert rows and all(dim in r for r in rows)
    values = {r[dim] for r in rows} - {None}
    assert values, dim
    if dim in LABELS:
        assert values <= LABELS[dim], (dim, values - LABELS[dim])
    elif dim == "inode":
        assert all(isinstance(v, int) for v in values)
    else:
        assert all(isinstance(v, str) and v for v in values), (dim, values)
    assert totals(rows, *FIXED) == base
    if dim in ("process", "thread"):
        assert all(v.endswith("]") and "[" in v for v in values)


@pytest.mark.parametrize("first, second", [("file", "role"), ("role", "stage"), ("phase", "query"),
                                           ("file_class", "index"), ("index", "level"), ("query", "page_type"),
                                           ("device", "api")])
def test_adding_a_dimension_splits_rows_and_keeps_sums(rec, first: str, second: str) -> None:
    one = totals(report(rec, first), first, *FIXED)
    two = report(rec, first, second)
    assert len(two) >= len(one)
    assert totals(two, first, *FIXED) == one


def test_exporter_labels_are_bounded_and_sums_exact() -> None:
    from ioattr.prometheus.metrics_state import OTHER, SeriesTable, TopN

    t = SeriesTable(("file", "op"), 2, bound="file", topn=TopN(2, min_dwell=0.0))
    sent = np.zeros(2, dtype=np.int64)
    for step in range(6):
        deltas = {(f"/f{i}", "read"): np.array([10 * (i + 1) * (step + 1), i + 1]) for i in range(5)}
        t.add(deltas, 0, float(step))
        sent += sum(deltas.values())
        assert sum(t.series.values()).tolist() == sent.tolist()
        own = {k[0] for k in t.series} - {OTHER}
        assert len(t.topn.members) <= 2 and own <= set(t.topn.members) | set(t.topn.frozen)
    assert set(t.topn.members) == {"/f3", "/f4"}  # the most active two
    assert (OTHER, "read") in t.series

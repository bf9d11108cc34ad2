"""The cgroup dimension without root: /proc/PID/cgroup parsing (v2, hybrid, v1 only), the
per-process cache, the exporter's cap on cgroup label values (first N own, the rest
"[other]", sums exact), top's cgroups view, and recordings written before the io table
had a cgroup column (read with it null, reported as null)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ioattr.collectors.cgroups import CgroupNames, parse_cgroup, process_cgroup

HYBRID = """9:name=systemd:/system.slice/docker-ab12.scope
4:memory:/docker/ab12
1:cpu:/docker/ab12
0::/system.slice/docker-ab12.scope
"""
V1_ONLY = """12:pids:/docker/ab12
4:memory:/docker/ab12
1:name=systemd:/docker/ab12
"""


def test_parse_cgroup_takes_the_v2_path() -> None:
    assert parse_cgroup("0::/kubepods.slice/pod1/cri-containerd-9f.scope\n") == \
        "/kubepods.slice/pod1/cri-containerd-9f.scope"
    assert parse_cgroup("0::/\n") == "/"
    assert parse_cgroup(HYBRID) == "/system.slice/docker-ab12.scope"
    # a path with ':' in it stays whole
    assert parse_cgroup("0::/machine.slice/a:b\n") == "/machine.slice/a:b"


def test_parse_cgroup_falls_back_to_systemd_hierarchy_on_v1_only() -> None:
    assert parse_cgroup(V1_ONLY) == "/docker/ab12"
    assert parse_cgroup("4:memory:/docker/ab12\n") is None  # no hierarchy names the process
    assert parse_cgroup("") is None and parse_cgroup(None) is None
    assert parse_cgroup("garbage\n0:x\n") is None


def test_own_process_cgroup_is_read() -> None:
    with open("/proc/self/cgroup") as f:
        assert process_cgroup(os.getpid()) == parse_cgroup(f.read())
    assert process_cgroup(2 ** 22 + 1) is None  # above pid_max: no such process


def test_cgroup_names_cache_per_interval_and_keep_exited(monkeypatch) -> None:
    import ioattr.collectors.cgroups as cg

    now = {10: "/a", 11: "/b"}
    reads: list[int] = []

    def fake(pid: int) -> str | None:
        reads.append(pid)
        return now.get(pid)

    monkeypatch.setattr(cg, "process_cgroup", fake)
    names = CgroupNames(max_names=2)
    assert names.lookup(0) is None and reads == []  # no process (block IO of nobody)
    assert [names.lookup(10), names.lookup(10), names.lookup(11)] == ["/a", "/a", "/b"]
    assert reads == [10, 11]  # once per interval
    names.new_interval()
    now[10] = "/moved"
    del now[11]  # exited
    assert names.lookup(10) == "/moved" and names.lookup(11) == "/b"
    now[12] = "/c"
    names.new_interval()
    assert names.lookup(12) == "/c"
    assert len(names.paths) == 2 and 11 not in names.paths  # bounded: the oldest went first


def test_exporter_cgroup_labels_capped_and_sums_exact() -> None:
    from ioattr.prometheus.metrics_state import IO_LABELS, OTHER_CGROUP, CgroupLabels, ExporterState
    from ioattr.format.schema import HIST_COLUMNS

    cap = CgroupLabels(n=2)
    assert [cap.label(x) for x in (None, "/a", "/b", "/c", "/a", "/d", "/c")] == \
        ["", "/a", "/b", OTHER_CGROUP, "/a", OTHER_CGROUP, OTHER_CGROUP]
    assert cap.folded == 2  # /c and /d, each counted once

    st = ExporterState(top_n=10)
    st.cgroups = CgroupLabels(n=2)
    at = IO_LABELS.index("cgroup")
    sent = 0
    for step in range(3):
        groups = [f"/ct{i}" for i in range(4)] + [None]
        n = len(groups)
        io = {"layer": ["syscall"] * n, "op": ["read"] * n, "file": ["/f"] * n, "file_class": ["tablespace"] * n,
              "device": ["vda"] * n, "role": ["connection"] * n, "cgroup": groups,
              "count": [1, 2, 3, 4, 5], "bytes": [4096] * n, "lat_sum_ns": [100] * n}
        io.update({c: [0] * n for c in HIST_COLUMNS})
        st.ingest(io, None, float(step))
        sent += 15
        assert int(sum(v[0] for v in st.io.series.values())) == sent
    by_cgroup: dict[str, int] = {}
    for key, v in st.io.series.items():
        by_cgroup[key[at]] = by_cgroup.get(key[at], 0) + int(v[0])
    assert by_cgroup == {"/ct0": 3, "/ct1": 6, OTHER_CGROUP: 21, "": 15}


def test_top_cgroups_view_without_the_column() -> None:
    from ioattr.format.schema import HIST_COLUMNS
    from ioattr.topview.top import VIEWS, Snapshot

    io = {"layer": ["syscall"], "op": ["read"], "file": ["/f"], "pid": [5], "count": [3], "bytes": [3 * 4096]}
    io.update({c: [0] for c in HIST_COLUMNS})
    rows = Snapshot(0.0, 1.0, io, None).rows(VIEWS["cgroups"])
    assert [(r.name, r.extra, r.values["r"]) for r in rows] == [("[unknown cgroup]", "1", 3.0)]
    io = {"layer": ["syscall"] * 3, "op": ["read", "write", "read"], "file": ["/f"] * 3, "pid": [5, 6, 9],
          "cgroup": ["/ct", "/ct", None], "count": [3, 1, 2], "bytes": [4096] * 3}
    io.update({c: [0] * 3 for c in HIST_COLUMNS})
    rows = Snapshot(0.0, 1.0, io, None).rows(VIEWS["cgroups"])
    assert sorted((r.name, r.extra, r.values["r"], r.values["w"]) for r in rows) == \
        [("/ct", "2", 3.0, 1.0), ("[unknown cgroup]", "1", 2.0, 0.0)]


@pytest.fixture()
def old_recording(tmp_path: Path) -> Path:
    """A recording whose io chunk has no cgroup column (written before it existed)."""
    from ioattr.format.recording import RecordingWriter
    from ioattr.format.schema import IO_SCHEMA

    rec = tmp_path / "rec"
    w = RecordingWriter.create(rec, targets=["pid 7"], interval=1.0, phase="main", probe_sets=[], degraded={})
    w.auto_compact = False
    w.close()
    old = pa.schema([f for f in IO_SCHEMA if f.name != "cgroup"])
    row = {f.name: [None] for f in old}
    row.update(ts_start=[1.0], ts_end=[2.0], phase=["main"], layer=["syscall"], op=["read"], api=["sync"],
               kind=["file"], pid=[7], tid=[7], process=["mariadbd"], file=["/d/t.ibd"], count=[2],
               bytes=[8192], lat_sum_ns=[10])
    row.update({f.name: [0] for f in old if f.name.startswith("h") and f.name[1:].isdigit()})
    (rec / "io").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_arrays([pa.array(row[f.name], type=f.type) for f in old], schema=old),
                   rec / "io" / "chunk-000001.parquet")
    return rec


def test_recording_without_cgroup_column_reports_null(old_recording: Path) -> None:
    from ioattr.analysis.report import ReportRequest, build_report
    from ioattr.format.reader import Recording

    rec = Recording(old_recording)
    assert rec.query("SELECT count(*), count(cgroup) FROM io") == [(1, 0)]
    rows = build_report(rec, ReportRequest(by=["cgroup", "file"]))["rows"]
    assert [(r["cgroup"], r["file"], r["bytes"]) for r in rows] == [(None, "/d/t.ibd", 8192)]
    assert np.isclose(sum(r["count"] for r in rows), 2)

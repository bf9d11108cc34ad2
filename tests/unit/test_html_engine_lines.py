"""The HTML report's per-phase engine lines (ioattr/output/html_report.py engine_phase_lines):
the same MyRocks LSM lines the text report prints under its per-phase table, escaped."""
from __future__ import annotations

import html

from ioattr.engines.myrocks import lsm
from ioattr.output import html_report, render


def _terms() -> dict:
    rows = [{"file_class": "sst", "role": "compaction", "op": "read", "count": 3, "bytes": 3 << 20},
            {"file_class": "sst", "role": "compaction", "op": "write", "count": 2, "bytes": 2 << 20},
            {"file_class": "sst", "role": "flush", "op": "write", "count": 1, "bytes": 1 << 20},
            {"file_class": "wal", "role": "connection", "op": "write", "count": 10, "bytes": 5000}]
    c = {"status:Rocksdb_bytes_written": 4000.0, "status:Rocksdb_write_self": 10.0, "status:Rocksdb_write_other": 0.0,
         "status:Rocksdb_block_cache_data_miss": 7.0, "status:Rocksdb_stall_micros": 2_500_000.0}
    t = lsm.phase_terms(c, lambda: rows)
    assert t is not None
    return t


def test_lines_are_the_text_reports() -> None:
    summaries = [{"phase": "load<1>", "rocksdb": _terms()}, {"phase": "idle"}, {"phase": "bad", "rocksdb": None}]
    lines = html_report.engine_phase_lines(summaries)
    assert lines == [html.escape(x, quote=True) for x in render.engine_phase_lines(summaries)]
    [line] = lines
    assert line.startswith("load&lt;1&gt;: rocksdb: flush 1 MiB") and "<" not in line, line
    assert "compaction read 3 MiB" in line and "write 2 MiB" in line and "1 writes and 500 B per transaction" in line
    assert "block cache misses data 7" in line and "write stalls 2.5 s" in line, line
    assert "write amplification 788 (of " in line, line  # (1 MiB + 2 MiB + 5000 B) / 4000 B


def test_no_engine_terms_no_lines() -> None:
    assert html_report.engine_phase_lines([{"phase": "read", "qps": 1.0}]) == []

"""ioattr/live/memtrace.py (IOATTR_MEMTRACE): one JSON line per sample, naming the Python line
whose allocations grew since the first sample, so a recorder's growth is found in a run."""
from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from ioattr.live.memtrace import MemTrace


def test_a_sample_names_the_line_that_grew(tmp_path: Path) -> None:
    out = tmp_path / "mem.jsonl"
    off = MemTrace(None)
    assert not off.due() and not tracemalloc.is_tracing()
    m = MemTrace(str(out))
    try:
        assert m.due()
        m.sample(keys=1)
        assert not m.due()  # the next one a minute later
        kept = [bytearray(1000) for _ in range(2000)]  # ~2 MB held by this line
        m.sample(keys=len(kept))
    finally:
        tracemalloc.stop()
    first, second = (json.loads(line) for line in out.read_text().splitlines())
    assert first["sizes"] == {"keys": 1} and second["sizes"] == {"keys": 2000}
    assert second["rss_kib"] > 0 and second["python_traced"] > first["python_traced"]
    top = second["grown"][0]
    assert top["where"].startswith(__file__) and top["diff"] >= 2_000_000, top

"""explain --against between engines (no root): a PostgreSQL run against a MariaDB run, both as
a default recording records them (PostgreSQL: stages per statement, no estimate stage; MariaDB:
full stages and the optimizer's index dives), on hand-written recordings (tests/unit/test_compare)."""
from __future__ import annotations

import json
from pathlib import Path

from ioattr.analysis.explain import explain
from ioattr.analysis.explain_text import render_text
from ioattr.format.reader import Recording
from tests.unit.test_compare import PAGE, SERVER, _io_row, _write


def _runs(tmp_path: Path) -> tuple[Recording, Recording]:
    rows = lambda n: [_io_row("read", 0, "syscall", "read", "tablespace", n, n * PAGE)]  # noqa: E731
    pg = _write(tmp_path / "pg", [("read", 10.0, rows(100), {"status:Com_select": 1000.0})],
                stages="statement", estimate_stage=False)
    my = _write(tmp_path / "my", [("read", 10.0, rows(400), {"status:Com_select": 1000.0,
                                                           "status:Innodb_buffer_pool_reads": 400.0})],
                settings={"innodb_buffer_pool_size": 16 << 20}, stages="full", estimate_stage=True)
    meta = json.loads((pg / "meta.json").read_text())
    meta["servers"] = [{"pid": SERVER, "connected": True, "engine": "postgres", "flavor": "postgresql"}]
    (pg / "meta.json").write_text(json.dumps(meta))
    return Recording(pg), Recording(my)


def test_two_default_recordings_of_different_engines(tmp_path: Path) -> None:
    pg, my = _runs(tmp_path)
    for base, target, pg_side in ((pg, my, "baseline"), (my, pg, "target")):
        res = explain(base, baseline="read", target="read", against=target)
        assert res["warnings"] == [], res["warnings"]  # no "different probe settings" for two defaults
        assert any("PostgreSQL" in n and "no stages inside statements" in n for n in res["notes"]), res["notes"]
        assert not any("--stages full" in m for m in res["missing"]), res["missing"]
        dives = next(f for f in res["findings"] if f["id"] == "optimizer_reads")
        s = dives["evidence"]["summary"]
        assert "recorded before" not in s and "no estimate stage" not in s, dives
        assert f"the {pg_side} is PostgreSQL, which has no index-dive stage" in s, dives
        ws = next(f for f in res["findings"] if f["id"] == "working_set")
        assert f"on the {pg_side} side: it is PostgreSQL, which has none" in ws["evidence"]["summary"], ws
        assert "different probe settings" not in render_text(res, 80)

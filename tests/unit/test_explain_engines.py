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


def test_the_command_wraps_to_columns(tmp_path: Path) -> None:
    """`ioattr explain` (text) at COLUMNS=80 and 200: no line past the width, no word broken."""
    import os

    from tests.helpers import ioattr

    pg, my = _runs(tmp_path)
    out = {}
    for cols in (80, 200):
        r = ioattr("explain", str(pg.path), "--against", str(my.path), "--baseline", "read", "--target", "read",
                   env={**os.environ, "COLUMNS": str(cols)})
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert all(len(ln) <= cols or " " not in ln.strip() for ln in lines), [ln for ln in lines if len(ln) > cols]
        out[cols] = r.stdout
    assert out[80].split() == out[200].split()  # the same words, none broken
    assert max(map(len, out[200].splitlines())) > 80 and len(out[80].splitlines()) > len(out[200].splitlines())

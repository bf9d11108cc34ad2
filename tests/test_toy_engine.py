"""An engine is one folder: a toy engine adapter (tests/toy_engine/, plugged in with
IOATTR_ENGINES, no file of ioattr edited) gets its files, a file class of its own (declared in
its folder's file_classes.toml, numbered at load), roles, counters and a finding of its own
through record, report, explain and top, against a toy store whose every read and write is known
(tests/toy_engine/store.py: 4 KiB records, 512-byte log entries)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import need_root
from tests.helpers import ROOT, Background, Prompted, ioattr, report_json, wait_phase
from tests.toy_engine.store import LOG_ENTRY, RECORD

STORE = ROOT / "tests" / "toy_engine" / "store.py"
N = 64  # records written, then read, then read again with the log


@pytest.fixture
def toy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    need_root()
    monkeypatch.setenv("IOATTR_ENGINES", "tests.toy_engine:ToyAdapter")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def _bytes(rows: list[dict], **match: str) -> int:
    return sum(r["bytes"] for r in rows if all(r[k] == v for k, v in match.items()))


def test_toy_engine_through_every_command(toy_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec, data = tmp_path / "rec", tmp_path / "data"
    with Prompted(str(STORE), str(data)) as store:
        bg = Background("record", "-o", str(rec), "--pid", str(store.pid), "--interval", "0.3")
        try:
            bg.wait_for(f"server {store.pid} (toy)")
            bg.wait_recording()
            for phase, step in (("load", f"write {N}"), ("read", f"read {N}"), ("recover", f"recover {N}")):
                ioattr("mark", phase, "--recording", str(rec), check=True)
                wait_phase(rec, phase)
                store.step(step)
        finally:
            code, err = bg.stop()
        assert code == 0, err

        # report: every byte the store moved, on its file, in its class, by the thread's role
        rows = report_json(rec, "--by", "phase,file,file_class,role", "--layer", "syscall")["rows"]
        mine = [r for r in rows if r["file"] and r["file"].endswith((".tdat", ".tlog"))]
        tdat, tlog = "data.tdat", "redo.tlog"

        def on(name: str, **kw: str) -> int:
            return _bytes([r for r in mine if r["file"].endswith(name)], **kw)

        # toy_data: the toy folder's own class (tests/toy_engine/file_classes.toml)
        assert on(tdat, phase="load", op="write", file_class="toy_data", role="writer") == N * RECORD, mine
        assert on(tlog, phase="load", op="write", file_class="wal", role="writer") == N * LOG_ENTRY, mine
        assert on(tdat, phase="read", op="read", file_class="toy_data", role="reader") == N * RECORD, mine
        assert on(tdat, phase="recover", op="read", role="reader") == N * RECORD, mine
        assert on(tlog, phase="recover", op="read", file_class="wal", role="reader") == N * LOG_ENTRY, mine
        assert sum(r["bytes"] for r in mine) == 3 * N * RECORD + 2 * N * LOG_ENTRY, mine  # nothing else
        # by class: the toy's class holds exactly the data file's bytes (nothing of the store's is
        # another engine's class); a recording carries class names, so a report without the toy
        # plugged in (no number given to toy_data) still names it
        classes = report_json(rec, "--by", "file_class", "--layer", "syscall")["rows"]
        assert _bytes(classes, file_class="toy_data") == 3 * N * RECORD, classes
        assert not [r for r in classes if r["file_class"] == "tablespace"], classes
        with monkeypatch.context() as m:
            m.delenv("IOATTR_ENGINES")
            plain = report_json(rec, "--by", "file_class", "--layer", "syscall")["rows"]
        assert _bytes(plain, file_class="toy_data") == 3 * N * RECORD, plain
        meta = json.loads((rec / "meta.json").read_text())
        assert [s["engine"] for s in meta["servers"]] == ["toy"]

        # explain: reads per query 1 -> 2 (the store's own query counter), the toy's finding supported,
        # no other engine's findings on a toy recording
        r = ioattr("explain", str(rec), "--baseline", "read", "--target", "recover", "--format", "json",
                   check=True)
        ex = json.loads(r.stdout)
        assert (ex["baseline"]["value"], ex["target"]["value"]) == (1.0, 2.0), ex
        verdicts = {f["id"]: f["verdict"] for f in ex["findings"]}
        assert verdicts == {"toy_log_reads": "supported"}, ex["findings"]
        assert ex["findings"][0]["title"] == "The toy store re-reads its log"

        # top (batch): the busy file by its class, the reader's role
        store.step("spin")
        try:
            r = ioattr("top", "--pid", str(store.pid), "--batch", "-n", "2", "--interval", "0.5", "--width", "120",
                       "--by", "file,role", timeout=60)
        finally:
            store.step("stop")
    assert r.returncode == 0, r.stderr
    snap = r.stdout.split("ioattr top - ")[-1]
    assert re.search(r"^\S*data\.tdat\s+tdata\s", snap, re.M), r.stdout  # toy_data's short name
    assert re.search(r"^reader\s", snap, re.M), r.stdout

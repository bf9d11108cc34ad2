"""When the server can't tell us everything: clear messages, and attribution goes on."""
from __future__ import annotations

import json
import time
from pathlib import Path

from tests.helpers import Background, report_json


def _make_table(db, rows: int = 20000) -> None:
    db.query("CREATE DATABASE IF NOT EXISTS bench")
    db.query("CREATE TABLE bench.t (id INT PRIMARY KEY, k INT, c CHAR(100), KEY k (k)) ENGINE=InnoDB")
    db.query(f"INSERT INTO bench.t SELECT seq, seq % 1000, 'x' FROM bench.seq_1_to_{rows}")


def _record(db, rec: Path, work, *extra: str) -> str:
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3", *extra)
    bg.wait_recording()
    work()
    time.sleep(0.8)
    code, err = bg.stop()
    assert code == 0, err
    assert "Traceback" not in err
    return err


def test_without_performance_schema(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="8M", performance_schema=False)
    _make_table(db)
    db.restart()
    err = _record(db, tmp_path / "rec", lambda: db.query("SELECT COUNT(*), SUM(LENGTH(c)) FROM bench.t"))
    assert "performance_schema" in err  # said once, clearly
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert "performance_schema" in meta["servers"][0]["roles_error"]
    pages = report_json(tmp_path / "rec", "--by", "index,role")
    got = {(r["index"], r["role"]) for r in pages["rows"] if r["op"] == "read"}
    # index names still come from INFORMATION_SCHEMA; the connection is known from the stage probes
    assert ("bench.t.PRIMARY", "connection") in got, got
    files = report_json(tmp_path / "rec", "--by", "file", "--layer", "syscall")
    assert any((r["file"] or "").endswith("/bench/t.ibd") and r["bytes"] > 0 for r in files["rows"])


def test_user_without_process_privilege(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="8M")
    _make_table(db)
    secret = "s3cret-pw-xyz"
    db.query(f"CREATE USER 'limited'@'localhost' IDENTIFIED BY '{secret}'")
    db.query("GRANT SELECT ON bench.* TO 'limited'@'localhost'")
    opt = tmp_path / "client.cnf"
    opt.write_text(f"[client]\nuser=limited\npassword={secret}\nsocket={db.socket}\n")
    opt.chmod(0o600)
    db.restart()
    rec = tmp_path / "rec"
    err = _record(db, rec, lambda: db.query("SELECT COUNT(*) FROM bench.t FORCE INDEX (k)"),
                  "--mysql-defaults-file", str(opt))
    assert "index names unavailable" in err
    meta_text = (rec / "meta.json").read_text()
    assert secret not in meta_text and secret not in err
    for chunk in rec.rglob("*.parquet"):
        assert secret.encode() not in chunk.read_bytes()
    rows = report_json(rec, "--by", "index,page_type")["rows"]
    index_pages = [r for r in rows if r["page_type"] == "index" and r["op"] == "read"]
    assert index_pages and all(r["index"] is None for r in index_pages)  # unknown, never guessed
    files = report_json(rec, "--by", "file", "--layer", "syscall")
    assert any((r["file"] or "").endswith("/bench/t.ibd") for r in files["rows"])


def test_wrong_credentials(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="8M")
    _make_table(db, 2000)
    err = _record(db, tmp_path / "rec", lambda: db.query("SELECT COUNT(*) FROM bench.t"),
                  "--mysql-user", "nobody-here")
    assert "cannot connect" in err and "file-level attribution continues" in err
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert meta["servers"][0]["connected"] is False


def test_table_dropped_mid_recording(mariadb_factory, tmp_path: Path) -> None:
    db = mariadb_factory(buffer_pool="8M")
    _make_table(db)
    db.restart()

    def work() -> None:
        db.query("SELECT COUNT(*), SUM(LENGTH(c)) FROM bench.t")
        time.sleep(0.7)
        db.query("DROP TABLE bench.t")
        db.query("CREATE TABLE bench.t2 (id INT PRIMARY KEY) ENGINE=InnoDB")
        db.query("INSERT INTO bench.t2 SELECT seq FROM bench.seq_1_to_1000")

    rec = tmp_path / "rec"
    _record(db, rec, work)
    rows = report_json(rec, "--by", "index")["rows"]
    names = {r["index"] for r in rows}
    assert "bench.t.PRIMARY" in names  # named while it existed, and the name survives the drop
    files = {r["file"] for r in report_json(rec, "--by", "file", "--layer", "syscall")["rows"]}
    assert any(f and "bench/t.ibd" in f for f in files), files

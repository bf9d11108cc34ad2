"""One meaning per number: the shared definitions in ioattr/model/storage.py and their consumers."""
from __future__ import annotations

import json
from pathlib import Path

from ioattr.analysis.phase_stats import PhaseStats
from ioattr.model import storage

ROOT = Path(__file__).resolve().parents[2]


def test_storage_classes_are_one_list() -> None:
    import ioattr.topview.top as top

    assert storage.is_storage("syscall", "redo_log") and storage.is_storage("syscall", "tablespace")
    assert not storage.is_storage("block", "tablespace") and not storage.is_storage("syscall", "other")
    assert not storage.is_storage("syscall", None)
    assert top.STORAGE_FILE_CLASSES is storage.STORAGE_FILE_CLASSES
    # the files with InnoDB pages are all storage files
    from ioattr.engines.innodb.files import PAGE_FILE_CLASSES
    from ioattr.model.labels import FILE_CLASS_NAMES as FC_NAMES

    assert {FC_NAMES[c] for c in PAGE_FILE_CLASSES} <= set(storage.STORAGE_FILE_CLASSES)
    assert set(storage.STORAGE_FILE_CLASSES) == set(FC_NAMES.values()) - {"other"} - set(storage.NOT_STORAGE_FILE_CLASSES)
    assert not set(storage.STORAGE_FILE_CLASSES) & set(storage.NOT_STORAGE_FILE_CLASSES)
    # every storage-reads panel of the dashboards selects exactly these classes
    exprs = []

    def walk(panels: list) -> None:
        for p in panels:
            if "Storage reads" in p.get("title", ""):
                exprs.extend(t["expr"] for t in p.get("targets", []) if "ioattr_ops_total" in t["expr"])
            walk(p.get("panels", []))

    for f in (ROOT / "dashboards").glob("*.json"):
        walk(json.loads(f.read_text()).get("panels", []))
    assert exprs
    for e in exprs:
        assert f'file_class=~"{storage.STORAGE_FILE_CLASS_REGEX}"' in e, e


def test_rows_inserted_are_rows_not_statements() -> None:
    c = {"status:Handler_write": 30000.0, "status:Com_insert": 0.0, "status:Com_insert_select": 30.0}
    assert storage.rows_inserted(c) == (30000.0, "Handler_write")
    assert storage.insert_statements(c) == 30.0
    # InnoDB's own row counter wins where the server has it
    assert storage.rows_inserted({**c, "status:Innodb_rows_inserted": 29990.0}) == (29990.0, "Innodb_rows_inserted")
    assert storage.rows_inserted({}) == (None, None)
    # statements from the stage probes when the server's counters are missing
    assert storage.insert_statements({}, {"insert": 5.0, "replace": 2.0}) == 7.0


def test_phase_summary_terms() -> None:
    st = PhaseStats("q", 100.0, 110.0, {"status:Com_select": 1000.0, "status:ioattr:Com_select": 10.0,
                                        "status:Handler_write": 541170.0, "status:Com_insert": 349.0,
                                        "status:Innodb_data_reads": 281.16})
    st.reads = 356.4
    s = st.summary()
    assert s["qps"] == 99.0                     # (1000 - ioattr's own 10) / 10 s
    assert s["ips"] == 54117.0 and s["ips_source"] == "Handler_write"
    assert s["insert_stmts_ps"] == 34.9
    assert s["reads_per_query"] == 0.36         # 356.4 / 990, 4 significant digits
    assert s["engine_reads_per_query"] == 0.284


def test_significant_digits() -> None:
    assert storage.sig(0.3601) == 0.36 and storage.sig(0.0004123) == 0.000412 and storage.sig(54117.3) == 54100.0
    assert storage.fmt_sig(0.3601) == "0.360" and storage.fmt_sig(0.284) == "0.284"
    assert storage.fmt_sig(1.2) == "1.20" and storage.fmt_sig(54117.3) == "54,117" and storage.fmt_sig(None) == "-"
    assert storage.fmt_sig(0) == "0"


def test_ioattrs_own_statements_are_never_storage_io() -> None:
    """The IO of ioattr's own statements (digest IOA_DIGEST_INTERNAL) is left out of storage IO,
    in the row test and in the SQL predicate alike."""
    from ioattr.collectors.abi import DIGEST_INTERNAL

    assert storage.INTERNAL_DIGEST == DIGEST_INTERNAL
    assert storage.is_storage("syscall", "tmp") and storage.is_storage("syscall", "tmp", 12345)
    assert not storage.is_storage("syscall", "tmp", DIGEST_INTERNAL)
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE io (layer VARCHAR, file_class VARCHAR, digest UBIGINT, count BIGINT)")
    con.execute("INSERT INTO io VALUES ('syscall', 'tmp', NULL, 1), ('syscall', 'tmp', 7, 10), "
                f"('syscall', 'tmp', {DIGEST_INTERNAL}, 100), ('block', 'tmp', 7, 1000)")
    assert con.execute(f"SELECT sum(count) FROM io WHERE {storage.storage_sql('io')}").fetchone()[0] == 11

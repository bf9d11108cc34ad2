"""One meaning per number: the shared definitions in ioattr/model/storage.py and their consumers."""
from __future__ import annotations

import json
from pathlib import Path

from ioattr.analysis.phase_stats import PhaseStats
from ioattr.engines import registry
from ioattr.model import per, storage

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
    # every storage-reads panel of the dashboards selects storage IO by the exporter's storage label
    # (from this list), never by listing classes: a new engine's storage class needs no dashboard edit
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
        assert 'storage="yes"' in e and "file_class" not in e, e


def test_rows_inserted_are_rows_not_statements() -> None:
    keys = registry.rows_inserted_keys()  # the engines' counters and the server's
    c = {"status:Handler_write": 30000.0, "status:Com_insert": 0.0, "status:Com_insert_select": 30.0}
    assert storage.rows_inserted(c, keys) == (30000.0, "Handler_write")
    assert storage.insert_statements(c) == 30.0
    # InnoDB's own row counter wins where the server has it
    assert storage.rows_inserted({**c, "status:Innodb_rows_inserted": 29990.0}, keys) == (29990.0, "Innodb_rows_inserted")
    assert storage.rows_inserted({}, keys) == (None, None)
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
    # without the server's Questions and the benchmark's ops, their terms are unknown, never 0
    assert s["statements"] is None and s["statements_per_s"] is None and s["kb_read_per_op"] is None


def test_denominators_are_named_once() -> None:
    """ioattr/model/per.py: statements are Questions less ioattr's own (sysbench's queries: BEGIN,
    COMMIT and prepared executions count), a query is a SELECT, an op is the benchmark's."""
    from ioattr.model import per
    from ioattr.output.render import render_table

    c = {"status:Questions": 20074.0, "status:ioattr:Questions": 74.0, "status:Com_select": 14039.0,
         "status:ioattr:Com_select": 39.0, "status:Com_commit": 999.0, "status:Com_rollback": 1.0}
    assert per.statements(c) == 20000.0 and per.selects(c) == 14000.0 and per.transactions(c) == 1000.0
    assert per.statements({}) is None and per.transactions({}) is None
    st = PhaseStats("run", 0.0, 10.0, c)
    st.reads, st.read_bytes, st.write_bytes, st.ops = 500.0, 500 * 16384.0, 1000 * 1024.0, 1000.0
    s = st.summary()
    assert (s["statements"], s["statements_per_s"], s["selects"], s["qps"]) == (20000, 2000.0, 14000, 1400.0)
    assert (s["transactions"], s["tps"], s["ops"], s["ops_per_s"]) == (1000, 100.0, 1000, 100.0)
    assert s["kb_read_per_op"] == 8.0 and s["kb_written_per_op"] == 1.0 and s["reads_per_op"] == 0.5
    # the table names its denominators: a legend under it, the ops columns when a phase has ops
    text = render_table({"recording": "r", "rows": [], "summary": [s]}, ["phase"], width=300)
    assert "stmt/s" in text and "KB r/op" in text and "legend: qps: SELECTs per second" in text, text
    assert "/q: per query = per SELECT" in text and "/op: the benchmark's own operations" in text, text
    s.update(ops=None)
    assert "KB r/op" not in render_table({"recording": "r", "rows": [], "summary": [s]}, ["phase"], width=300)
    # a PostgreSQL phase (no Questions): the statements its engine counted (the wire reader's)
    pg = PhaseStats("tpcb", 0.0, 10.0, {"pg_stat_database:xact_commit": 100.0})
    pg.engines["postgres"] = {"transactions": 100.0, "statements": 702.0}
    s = pg.summary()
    assert (s["statements"], s["statements_per_s"], s["tps"]) == (702, 70.2, 10.0), s


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


def test_own_statements_are_the_sessions_over_reconnects() -> None:
    """collectors/counters.py: ioattr's own SELECTs and statements are its connection's session
    Com_select and Questions, summed over reconnects (a new session starts from 0)."""
    from ioattr.collectors.counters import OWN_SELECTS, OWN_STATEMENTS, CounterCollector, _Server

    class Conn:
        def __init__(self, answers: list[tuple[int, int]]) -> None:
            self.answers = answers

        def query(self, sql: str) -> list[tuple]:
            assert sql.startswith("SHOW SESSION STATUS")
            sel, q = self.answers.pop(0)
            return [("Com_select", str(sel)), ("Questions", str(q))]

    st = _Server(pid=1)
    conn = Conn([(3, 10), (7, 25), (2, 4)])  # the third read is on a new connection
    got = [dict((n, v) for n, v, _ in CounterCollector._own_selects(st, conn)) for _ in range(3)]
    assert [g[OWN_SELECTS] for g in got] == [3, 7, 9] and [g[OWN_STATEMENTS] for g in got] == [10, 25, 29]


def test_bulk_line_only_for_a_phase_that_loads() -> None:
    """A phase's "bulk:" terms are for loads, not for the few rows every OLTP mix inserts:
    sysbench oltp_read_write (1 row in 18 statements) and pgbench TPC-B (1 in 7) get none;
    a LOAD DATA, autocommit INSERTs and BEGIN; INSERT; COMMIT do."""
    def bulk(counters: dict[str, float], engine_statements: float | None = None) -> dict | None:  # type: ignore[type-arg]
        st = PhaseStats("p", 0.0, 10.0, counters)
        if engine_statements is not None:
            st.engines["postgres"] = {"statements": engine_statements}
        return st.bulk()

    rw = {"status:Questions": 18_000.0, "status:Com_insert": 1_000.0, "innodb_metrics:dml_inserts": 1_000.0}
    assert bulk(rw) is None
    assert bulk({"pg_stat_database:tup_inserted": 100.0}, engine_statements=702.0) is None
    load = bulk({"status:Questions": 4.0, "status:Com_load": 1.0, "innodb_metrics:dml_inserts": 40_000.0})
    assert load is not None and load["rows"] == 40_000 and load["statements"] == {"LOAD DATA": 1}
    one_by_one = {"status:Questions": 3_000.0, "status:Com_insert": 1_000.0, "innodb_metrics:dml_inserts": 1_000.0}
    assert bulk(one_by_one) is not None                      # BEGIN; INSERT; COMMIT
    assert bulk({"innodb_metrics:dml_inserts": 10.0}) is not None  # statements unknown: as before


def test_phase_legend_names_the_counts_each_engine_gave() -> None:
    """The per-phase legend says where qps and `rpq engine` came from in this recording: a
    PostgreSQL phase's SELECTs are the wire reader's and its engine reads blks_read, an InnoDB
    phase's Com_select and Innodb_data_reads; an engine without its own count says so."""
    from ioattr.output.render import summary_legend

    pg = PhaseStats("select", 0.0, 10.0, {"pg_stat_database:blks_read": 1500.0})
    pg.statement_counts = {"select": 2000.0}
    s = pg.summary()
    assert s["qps_source"] == per.SELECTS_FROM_WIRE and s["engine_reads_source"] == "pg_stat_database blks_read"
    assert s["engine_reads_per_query"] == 0.75
    text = summary_legend([s])
    assert "qps: SELECTs per second (SELECT statements the clients sent, counted by the wire reader" in text, text
    assert "/q: per query = per SELECT: SELECT statements the clients sent" in text, text
    assert "rpq engine: the engine's own reads (pg_stat_database blks_read)" in text, text
    assert "Innodb_data_reads" not in text and "(Com_select less" not in text, text

    inno = PhaseStats("run", 0.0, 10.0, {"status:Com_select": 100.0, "status:Innodb_data_reads": 50.0}).summary()
    text = summary_legend([inno])
    assert "(Com_select less ioattr's own, prepared executions included)" in text, text
    assert "(Innodb_data_reads)" in text, text
    assert "wire reader" not in text, text
    bare = PhaseStats("run", 0.0, 10.0, {"status:Com_select": 100.0}).summary()
    assert "rpq engine: the engine's own reads (none recorded)" in summary_legend([bare])

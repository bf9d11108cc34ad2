"""The engine adapters' pure parts (no root, no kernel, no server) and the layering rule.

InnoDB's adapter: files classified by path, object names decoded (@NNNN, partitions, indexes
being built), SHOW ENGINE INNODB STATUS parsed from saved text, the page-kind table checked
against the BPF header it mirrors. The registry: how a server's engines are chosen. The
layering: every module imports in a fresh interpreter (no cycles), the core reaches engines
only through ioattr.engines.registry / base, and engines never import the core.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ioattr.collectors import abi
from ioattr.collectors.thread_roles import ThreadRoles, role_of_instrument
from ioattr.engines import registry
from ioattr.engines.base import EngineAdapter
from ioattr.model import storage
from ioattr.engines.innodb import InnodbAdapter, files, names, pages
from ioattr.engines.myrocks import MyrocksAdapter
from ioattr.engines.innodb.roles import INSTRUMENT_ROLES
from ioattr.engines.innodb.status import as_dict, parse_innodb_status
from ioattr.model.labels import FILE_CLASS_NAMES

ROOT = Path(__file__).resolve().parents[2]
FC = abi.FileClass


# -- files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("path, expected", [
    ("/var/lib/mysql/db/t.ibd", FC.TABLESPACE),
    ("/var/lib/mysql/db/t#P#p0.ibd", FC.TABLESPACE),
    ("/var/lib/mysql/db/t.ibd (deleted)", FC.TABLESPACE),
    ("/var/lib/mysql/ibdata1", FC.SYSTEM_TABLESPACE),
    ("/var/lib/mysql/undo001", FC.UNDO),
    ("/var/lib/mysql/ib_logfile0", FC.REDO_LOG),
    ("/var/lib/mysql/#innodb_redo/#ib_redo12", FC.REDO_LOG),
    ("/var/lib/mysql/ibtmp1", FC.TMP),
    ("/var/lib/mysql/db/#sql-alter-1a2b-3.ibd", FC.TMP),
    ("/tmp/#sql_1a2b_0.MAD", FC.TMP),
    ("[anonymous tmpfile]", FC.TMP),
    ("/var/lib/mysql/mysql-bin.000001", FC.BINLOG),
    ("/var/lib/mysql/binlog.000042", FC.BINLOG),
    ("/var/lib/mysql/host-relay-bin.000003", FC.RELAY_LOG),
    ("/var/lib/mysql/mysql/user.MAI", FC.OTHER),
    ("/var/lib/mysql/db/t.frm", FC.OTHER),
    ("", FC.OTHER),
])
def test_innodb_files_by_path(path: str, expected: FC) -> None:
    assert files.classify_path(path) == expected
    # the adapter owns every class but "other"; the registry asks it and falls back to other
    assert InnodbAdapter().classify_path(path) == (None if expected == FC.OTHER else expected)
    assert registry.classify_path(path) == expected
    assert registry.file_class_name(path) == FILE_CLASS_NAMES[expected]


def test_page_files_are_the_paged_classes() -> None:
    a = InnodbAdapter()
    assert a.is_page_file("/d/db/t.ibd") and a.is_page_file("/d/ibdata1") and a.is_page_file("/d/undo002")
    assert not a.is_page_file("/d/ib_logfile0") and not a.is_page_file("/d/mysql-bin.000001")
    assert registry.is_page_file("/d/ibtmp1") and not registry.is_page_file("/d/x.MYD")


def test_file_class_vocabulary_is_the_abi_enum() -> None:
    assert set(FILE_CLASS_NAMES) == set(FC)
    assert FILE_CLASS_NAMES[FC.SYSTEM_TABLESPACE] == "system_tablespace"


@pytest.mark.parametrize("flags, size", [
    (0x15, 1 << 14),          # full_crc32, ssize 5: 16 KiB
    (0x13, 1 << 12),          # full_crc32, ssize 3: 4 KiB
    (0, 16384),               # classic, no ssize: the default page
    (4 << 6, 8192),           # classic, ssize 4
    (3 << 1 | 5 << 6, 4096),  # ROW_FORMAT=COMPRESSED: the zip size wins
])
def test_page_size_from_fsp_flags(flags: int, size: int) -> None:
    assert files.page_size_from_flags(flags) == size


def test_page_geometry_from_page_zero(tmp_path: Path) -> None:
    page = bytearray(16384)
    page[24:26] = pages.FIL_PAGE_TYPE_FSP_HDR.to_bytes(2, "big")
    page[38:42] = (7).to_bytes(4, "big")
    page[54:58] = (0x15).to_bytes(4, "big")
    f = tmp_path / "t.ibd"
    f.write_bytes(bytes(page))
    assert files.read_page_geometry(str(f)) == (7, 16384)
    f.write_bytes(bytes(16384))  # page 0 not written yet: no guess of space 0
    assert files.read_page_geometry(str(f)) is None


# -- names -----------------------------------------------------------------------------------
@pytest.mark.parametrize("table, index, shown", [
    ("db/t", "PRIMARY", "db.t.PRIMARY"),
    ("db/t#P#p0", "k_1", "db.t#p0.k_1"),
    ("db/t#p#p1#sp#s0", "k_1", "db.t#p1/s0.k_1"),
    ("d@0024b/t@00e9", "i@002dx", "d$b.té.i-x"),
    ("db/t", "\xffk_new", "db.t.k_new (building)"),
])
def test_index_names(table: str, index: str, shown: str) -> None:
    assert names.index_display_name(table, index) == shown


def test_index_name_cache() -> None:
    n = InnodbAdapter().object_names()
    assert n.lookup(names.IBUF_INDEX_ID) == names.CHANGE_BUFFER
    n.load_rows([(41, "PRIMARY", "db/t", 5), (42, "k", "db/t#P#p0", 6)])
    assert n.lookup(41) == "db.t.PRIMARY" and n.lookup(42) == "db.t#p0.k" and n.lookup(43) is None
    assert n.table_of_space == {5: "db/t", 6: "db/t#P#p0"}
    assert names.table_display_name("db/t#P#p0") == "db.t#p0"


# -- status ----------------------------------------------------------------------------------
def test_status_parsing_on_saved_text() -> None:
    text = (ROOT / "tests" / "fixtures" / "innodb_status_mariadb_10.11_load.txt").read_text()
    d = as_dict(parse_innodb_status(text))
    assert d["history_list_length"] == 1902 and d["ibuf_merges"] == 12
    assert d["checkpoint_age"] == 10252126 - 10152342
    assert parse_innodb_status("") == []


# -- pages: one table, checked against the BPF header ------------------------------------------
def _header_defines() -> dict[str, int]:
    text = (ROOT / "bpf" / "innodb_page.h").read_text()
    return {m[1]: int(m[2]) for m in re.finditer(r"^#define\s+(\w+)\s+(\d+)\b", text, re.M)}


def test_page_table_matches_bpf_header() -> None:
    d = _header_defines()
    for name in ("FIL_PAGE_OFFSET", "FIL_PAGE_TYPE", "FIL_PAGE_SPACE_ID", "PAGE_LEVEL", "PAGE_INDEX_ID",
                 "FIL_PAGE_INDEX", "FIL_PAGE_RTREE", "FIL_PAGE_TYPE_INSTANT", "FIL_PAGE_PAGE_COMPRESSED",
                 "FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED"):
        assert getattr(pages, name) == d[name], name
    assert pages.FCRC32_COMPRESSED_MARKER == d["FIL_PAGE_COMPRESS_FCRC32_MARKER"]
    # the header's ioa_is_index_page() tests exactly INDEX_PAGE_TYPES
    text = (ROOT / "bpf" / "innodb_page.h").read_text()
    body = text[text.index("ioa_is_index_page(__u16 page_type)"):]
    body = body[:body.index("}")]
    tested = {d[n] for n in re.findall(r"page_type == (\w+)", body)}
    assert tested == set(pages.INDEX_PAGE_TYPES)
    assert pages.PAGE_INDEX_ID + 8 == d["PAGE_HDR_BYTES"]


def test_page_type_names() -> None:
    a = InnodbAdapter()
    assert a.page_type_name(17855) == "index" and a.page_type_name(2) == "undo_log"
    assert a.page_type_name(18) == "instant" and a.page_type_name(18, "mysql") == "sdi_blob"
    assert a.page_type_name(999) == "type_999"
    assert a.is_index_page(18) and not a.is_index_page(18, "mysql") and a.is_index_page(17854, "mysql")
    assert not a.is_index_page(10)
    # MariaDB PAGE_COMPRESSED pages: classic type, and full_crc32's marker | length / 256
    assert a.page_type_name(34354) == a.page_type_name(0x8000 | 17) == "page_compressed"
    assert a.page_type_name(0x8000 | 17, "mysql") == f"type_{0x8000 | 17}"


# -- roles -----------------------------------------------------------------------------------
def test_roles_from_sql_layer_and_engine() -> None:
    assert role_of_instrument("thread/sql/one_connection") == "connection"
    assert role_of_instrument("thread/innodb/page_cleaner_thread", INSTRUMENT_ROLES) == "page_cleaner"
    assert role_of_instrument("thread/innodb/page_cleaner_thread") == "page_cleaner"  # by its name's tail
    assert role_of_instrument("thread/innodb/srv_worker_thread", INSTRUMENT_ROLES) == "purge"
    assert role_of_instrument("thread/innodb/srv_worker_thread") == "srv_worker"  # the engine's entry matters
    roles = ThreadRoles(INSTRUMENT_ROLES, [lambda c: "flush" if c == "rocksdb:high" else None])
    assert roles.lookup(1, "iou-wrk-7") == "io_uring_worker"
    assert roles.lookup(1, "rocksdb:high") == "flush" and roles.lookup(1, "mariadbd") is None


# -- the registry --------------------------------------------------------------------------------
def test_registry() -> None:
    assert [e.name for e in registry.ENGINES] == ["innodb", "rocksdb", "postgres"]
    assert all(isinstance(e, EngineAdapter) for e in registry.ENGINES)
    assert registry.by_name("innodb") is registry.page_engine()
    assert registry.page_engine().file_map_name == "page_files"
    # a MySQL/MariaDB server's engines: PostgreSQL is a server of its own, never one of them
    assert registry.engines_for(None) == registry.ENGINES[:2]
    with pytest.raises(KeyError):
        registry.by_name("tokudb")
    sources = [s.source for s in registry.page_engine().counter_sources()]
    assert sources == ["innodb_metrics", "innodb_status", "table_files"]  # the counters table's source names
    probes = registry.statement_probes()
    assert [p.program for p in probes] == ["ioattr_thd_attach", "ioattr_estimate_enter",
                                           "ioattr_estimate_return", "ioattr_thd_detach"]
    assert [p.program for p in probes if p.estimate] == ["ioattr_estimate_enter", "ioattr_estimate_return"]
    assert all(p.symbols and not p.fine and not p.required for p in probes)


def test_findings_are_the_engines_then_the_servers() -> None:
    from ioattr.analysis.findings import FINDINGS
    from ioattr.engines.innodb import findings as innodb_findings

    names = [f.__name__ for f in FINDINGS]
    assert names[:len(innodb_findings.FINDINGS)] == [f.__name__ for f in innodb_findings.FINDINGS]
    assert names == ["clustered_lookups", "change_buffer_merges", "change_buffer_memory", "working_set",
                     "log_rereads", "readahead_waste", "purge_reads", "background_tasks", "write_amplification",
                     "flush_storms", "random_access", "write_statement_reads",
                     "index_filter_misses", "compaction_debt", "block_cache",  # MyRocks'
                     "working_set", "checkpoint_writes", "full_page_writes", "heap_fetches",  # PostgreSQL's
                     "autovacuum", "planning_reads",
                     "optimizer_reads"]  # the MySQL/MariaDB server's; the order ties keep


def test_a_recording_gets_the_findings_of_the_engines_it_traced() -> None:
    """A PostgreSQL recording gets PostgreSQL's findings only, a MariaDB one InnoDB's, MyRocks' and
    the server's, one that lists no servers (older) every engine's."""
    from ioattr.analysis.findings import FINDINGS, findings_for

    pg = {"servers": [{"pid": 1, "engine": "postgres", "connected": True}]}
    maria = {"servers": [{"pid": 2, "connected": True}]}
    assert [e.name for e in registry.recorded_in(pg)] == ["postgres"]
    assert [e.name for e in registry.recorded_in(maria)] == ["innodb", "rocksdb"]
    assert registry.recorded_in({}) == registry.recorded_in({"servers": []}, {}) == registry.ENGINES
    assert [e.name for e in registry.recorded_in(pg, maria)] == ["innodb", "rocksdb", "postgres"]
    only_pg = findings_for(registry.recorded_in(pg))
    assert {e for e, _ in only_pg} == {"postgres"}
    assert [f.__name__ for _, f in only_pg] == ["working_set", "checkpoint_writes", "full_page_writes",
                                                "heap_fetches", "autovacuum", "planning_reads"]
    assert [f for _, f in findings_for(registry.ENGINES)] == list(FINDINGS)
    assert findings_for(registry.recorded_in(maria))[-1] == (None, FINDINGS[-1])


# -- what the core asks engines for: server counters, report rows, advice fields -----------------
def test_status_counters_answer_the_neutral_names() -> None:
    from ioattr.engines.base import SERVER_COUNTERS
    from ioattr.live import server_counters

    for e in registry.ENGINES:
        assert set(e.status_counters) <= set(SERVER_COUNTERS), e
        assert all(c.variable and c.meaning for c in e.status_counters.values())
    a = InnodbAdapter()
    assert a.status_counters["cache_misses"].variable == "Innodb_buffer_pool_reads"
    assert a.status_counters["cache_requests"].variable == "Innodb_buffer_pool_read_requests"
    assert [c.variable for c in registry.status_counters("cache_misses")] == ["Innodb_buffer_pool_reads",
                                                                              "Rocksdb_block_cache_miss",
                                                                              "blks_read"]
    # MyRocks has no requests counter: its block-cache hits + misses (StatusCounter.also); nor has
    # PostgreSQL (pg_stat_database blks_hit + blks_read, read by PostgresServer.status_rows)
    assert server_counters.STATUS_VARS == {
        "Questions": ("questions",), "Com_select": ("selects",),
        "Innodb_buffer_pool_reads": ("cache_misses",), "Rocksdb_block_cache_miss": ("cache_misses", "cache_requests"),
        "Innodb_buffer_pool_read_requests": ("cache_requests",), "Rocksdb_block_cache_hit": ("cache_requests",),
        "blks_read": ("cache_misses", "cache_requests"), "blks_hit": ("cache_requests",)}

    class Conn:  # SHOW GLOBAL STATUS as a server answers it (names in either case, values as text)
        def query(self, sql: str) -> list[tuple]:
            assert "'Innodb_buffer_pool_reads'" in sql and "'Questions'" in sql
            return [("Questions", "12"), ("COM_SELECT", "7"), ("Innodb_buffer_pool_reads", "5"),
                    ("Innodb_buffer_pool_read_requests", "x"), ("Uptime", "3")]

    assert server_counters.read_status(Conn()) == {"questions": 12, "selects": 7, "cache_misses": 5}


def test_rows_inserted_and_storage_reads_are_the_engines() -> None:
    """The benchmark's units come from the adapters: rows inserted, the engine's own counter before
    the MySQL/MariaDB server's Handler_write, PostgreSQL's after; the engine's own storage reads."""
    assert registry.rows_inserted_keys()[:4] == ("innodb_metrics:dml_inserts", "status:Innodb_rows_inserted",
                                                 "status:Handler_write", "pg_stat_database:tup_inserted")
    assert registry.storage_reads_keys()[:1] == ("status:Innodb_data_reads",)
    keys = registry.rows_inserted_keys()
    assert storage.rows_inserted({"status:Handler_write": 5.0, "status:Innodb_rows_inserted": 7.0}, keys) == (
        7.0, "Innodb_rows_inserted")
    assert storage.rows_inserted({"status:Handler_write": 5.0}, keys) == (5.0, "Handler_write")
    assert storage.rows_inserted({"pg_stat_database:tup_inserted": 3.0}, keys) == (3.0, "tup_inserted")
    assert storage.rows_inserted({}, keys) == (None, None)


def test_report_rows_are_the_engines_between_the_servers() -> None:
    from ioattr.output.html_report import COUNTER_ROWS

    a = InnodbAdapter()
    sources = {s.source for s in a.counter_sources()} | {"status"}
    for label, keys in a.report_counters:
        assert label and keys and all(k.split(":", 1)[0] in sources and k.split(":", 1)[1] for k in keys), label
    labels = [label for label, _ in COUNTER_ROWS]
    # the order the HTML report has always shown: statements, InnoDB's eight, then process and host
    assert labels == ["queries (Com_select)", "statements (Questions)", "rows inserted", "INSERT statements",
                      "INSERT ... SELECT statements",
                      "InnoDB data reads", "InnoDB data writes", "buffer pool reads (misses)",
                      "buffer pool read requests", "pages read ahead", "read-ahead evicted unused", "pages written",
                      "change-buffer merges", "RocksDB block cache misses", "RocksDB block cache hits",
                      "RocksDB index/filter block misses", "RocksDB bytes flushed", "RocksDB compaction bytes read",
                      "RocksDB compaction bytes written", "RocksDB WAL bytes", "shared buffers reads (misses)",
                      "shared buffers hits", "buffers written by the checkpointer",
                      "buffers written by the background writer", "buffers written by backends",
                      "CPU seconds, user (traced processes)", "CPU seconds, system (traced processes)",
                      "context switches (traced processes)"]
    assert COUNTER_ROWS[5:13] == tuple(a.report_counters)
    assert COUNTER_ROWS[13:20] == tuple(MyrocksAdapter().report_counters)
    assert COUNTER_ROWS[20:25] == tuple(registry.by_name("postgres").report_counters)


def test_advice_fields_fill_every_text() -> None:
    from ioattr.analysis.explain_text import NEXT_STEPS, _fields, advice

    fields = _fields({"evidence": {}}, {})
    used = {m for texts in NEXT_STEPS.values() for t in texts for m in re.findall(r"\{(\w+)\}", t)}
    assert used <= set(fields), used - set(fields)  # no text names a field no one fills
    assert set(InnodbAdapter().advice_fields) <= set(registry.advice_fields())
    assert fields["pool"] == fields["buffering"] == fields["log_size"] == ""  # unknown: left out
    settings = {"innodb_buffer_pool_size": 128 << 20, "innodb_change_buffering": "none",
                "innodb_change_buffer_max_size": 25, "innodb_redo_log_capacity": 0, "innodb_log_file_size": 96 << 20}
    f = _fields({"evidence": {"innodb_change_buffering": "all", "innodb_read_ahead_threshold": 0}}, settings)
    assert (f["pool"], f["buffering"], f["buffering_was"], f["max_size"], f["threshold"], f["log_size"]) == (
        " (now 128 MiB)", " (now all)", " (it is all)", " (now 25%)", "", " (now 96 MiB)")
    assert advice({"id": "working_set", "evidence": {"data_bytes": 300 << 20, "tables_read": "db.t"}},
                  settings)["next_step"].startswith(
        "raise innodb_buffer_pool_size (now 128 MiB) above the 300 MiB the tables read take on disk (db.t), or")
    # the server's texts name no engine's setting: the engine's cache setting is a field
    assert not any(ENGINE_NAME.search(t) for texts in NEXT_STEPS.values() for t in texts)
    dives = {"id": "optimizer_reads", "evidence": {}}
    assert advice(dives, settings)["next_step"].endswith("cached (innodb_buffer_pool_size)")
    assert advice(dives, {})["next_step"].endswith("cached (innodb_buffer_pool_size)")  # the first engine's
    assert advice(dives, {"rocksdb_block_cache_size": 1 << 30})["next_step"].endswith(
        "cached (rocksdb_block_cache_size)")  # a MyRocks server's


# -- layering -----------------------------------------------------------------------------------
def _modules() -> list[str]:
    out = []
    for base, pkg in ((ROOT / "ioattr", "ioattr"), (ROOT / "collectors", "ioattr.collectors"),
                      (ROOT / "cli", "ioattr.cli")):
        for f in sorted(base.rglob("*.py")):
            rel = f.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out.append(".".join([pkg, *parts]))
    return out


def test_every_module_imports_alone() -> None:
    """Each module imported first, with no ioattr module loaded before it (in a fresh interpreter,
    forgetting ioattr's modules between imports; third-party ones stay loaded, for speed): an
    import cycle fails whichever module enters it first."""
    code = ("import importlib, sys, traceback\nbad = []\nfor m in sys.argv[1:]:\n"
            "    for k in [k for k in sys.modules if k == 'ioattr' or k.startswith('ioattr.')]:\n"
            "        del sys.modules[k]\n"
            "    try:\n"
            "        importlib.import_module(m)\n"
            "    except Exception as e:\n"
            "        bad.append(f'{m}: {type(e).__name__}: {e}')\n"
            "print('\\n'.join(bad))\n")
    r = subprocess.run([sys.executable, "-c", code, *_modules()], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "", r.stdout + r.stderr


def _imports(f: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(f.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_imports_flow_one_way() -> None:
    """The core reaches engines through the registry and base only; collectors (kernel and
    connection plumbing, which engines build on) and ioattr.model never import engines; engines
    never import the core."""
    core = [ROOT / "ioattr" / d for d in ("live", "analysis", "topview", "prometheus", "output", "format",
                                          "host")] + [ROOT / "cli"]
    for d in core:
        for f in d.rglob("*.py"):
            bad = {m for m in _imports(f) if m.startswith("ioattr.engines.") and
                   m.split(".")[2] not in ("registry", "base")}
            assert not bad, f"{f.relative_to(ROOT)} imports an engine by name: {sorted(bad)}"
    for d in (ROOT / "collectors", ROOT / "ioattr" / "model"):
        for f in d.rglob("*.py"):
            bad = {m for m in _imports(f) if m.startswith("ioattr.engines")}
            assert not bad, f"{f.relative_to(ROOT)} imports engines: {sorted(bad)}"
    # engines build on collectors and the model only (the findings' toolkit, Evidence and the
    # verdicts, is ioattr.model.evidence)
    for f in (ROOT / "ioattr" / "engines").rglob("*.py"):
        bad = {m for m in _imports(f) if m.startswith("ioattr.") and
               m.split(".")[1] not in ("engines", "collectors", "model", "errors", "environment")}
        assert not bad, f"{f.relative_to(ROOT)} imports the core: {sorted(bad)}"


#: every engine's names as the core could hold them as values: InnoDB's and MyRocks' variables,
#: status counters and counter sources ("source:name" too), PostgreSQL's catalog views and
#: counters (pg_*) and its binaries' names
ENGINE_NAME = re.compile(r"(?:\w+:)?(?:[Ii]nnodb_|[Rr]ocksdb_|pg_)\w+(?::\w+)?|postgres|postmaster")

#: engine names the engine-neutral core (collectors/ included) still holds as values (a string
#: that is a whole name: a lookup, not a mention in a sentence), each with why; the list only shrinks
CORE_ENGINE_NAMES = {
    # the model names a recording's engine without the registry (meta.json servers[].engine)
    ("ioattr/model/dimensions.py", "postgres"),
    # the BPF side's own names (bpf/ioattr.h, mirrored by collectors/abi.py and checked by abi_check):
    # the config's page-classification and PostgreSQL-wire switches, the page-file map's value, the
    # wire reader's TLS counter map
    ("collectors/abi.py", "innodb_pages"),
    ("collectors/abi.py", "pg_wire"),
    ("collectors/abi_check.py", "innodb_file"),
    ("collectors/stage_probes.py", "pg_tls"),
    # the demo's and the tests' private servers: MariaDB started with InnoDB and MyRocks options,
    # PostgreSQL clusters run as the postgres user with its binaries
    ("ioattr/host/demo.py", "innodb_lru_scan_depth"),
    *(("ioattr/host/sandbox.py", n) for n in (
        "innodb_buffer_pool_size", "innodb_flush_method", "innodb_log_file_size", "innodb_use_native_aio",
        "innodb_buffer_pool_dump_at_shutdown", "innodb_buffer_pool_load_at_startup", "innodb_lru_scan_depth",
        "rocksdb_block_cache_size", "rocksdb_use_direct_reads")),
    ("ioattr/host/pg_sandbox.py", "postgres"),
}


def test_core_asks_engines_for_their_names() -> None:
    """Server counters (top, exporter), the HTML report's engine rows, explain's {name} fields, a
    server's process names and wire flags come from the adapters: the core (collectors/ included)
    names no other engine variable, status counter, counter source:name or process name than
    CORE_ENGINE_NAMES."""
    found = set()
    for d in [ROOT / "ioattr" / d for d in ("live", "analysis", "topview", "prometheus", "output", "format",
                                             "host", "model")] + [ROOT / "cli", ROOT / "collectors"]:
        for f in d.rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and ENGINE_NAME.fullmatch(node.value):
                    found.add((str(f.relative_to(ROOT)), node.value))
    assert found <= CORE_ENGINE_NAMES, sorted(found - CORE_ENGINE_NAMES)
    assert CORE_ENGINE_NAMES <= found, f"gone from the core: take off the list {sorted(CORE_ENGINE_NAMES - found)}"


def test_inode_reused_by_temporary_files_stays_tmp() -> None:
    """An index build's O_TMPFILE merge runs take the inodes the server's temporary tables just
    freed: such an inode is labelled "TMPDIR/[N temporary files reusing one inode]", class tmp;
    one a real table's file shared is not called temporary."""
    from ioattr.collectors.names import FileNames
    from ioattr.engines import registry

    names = FileNames(temporary=lambda p: registry.file_class_name(p) == "tmp")
    key = (7, 11)
    for name in ("/srv/tmp/#sql-temptable-1a-2-3.MAI", "[anonymous tmpfile in /srv/tmp]",
                 "/srv/tmp/#sql-temptable-1a-2-4.MAD"):
        names._assign(key, name, opened=True)
    label = names.lookup(*key)
    assert label == "/srv/tmp/[3 temporary files reusing one inode]", label
    assert registry.file_class_name(label) == "tmp"
    names.end_interval()
    names._assign(key, "/srv/data/db/t.ibd", opened=True)
    label = names.lookup(*key)
    assert label == "/srv/[2 files reusing one inode]" and registry.file_class_name(label) == "other", label


def test_index_names_missed_ids_are_read_soon_once() -> None:
    """An id looked up in vain is 'missed' (the server context re-reads names soon, for objects
    created during a recording); one still unknown after a read is given up on (no sooner re-read)."""
    from ioattr.engines.innodb.names import IndexNames

    class Conn:
        flavor = "mariadb"
        rows: list = []

        def query(self, sql: str) -> list:
            return list(self.rows)

    names, conn = IndexNames(), Conn()
    assert names.lookup(42) is None and names.missed == {42}
    conn.rows = [(42, "k", "db/t#P#p0", 7)]
    assert names.refresh(conn) and names.lookup(42) == "db.t#p0.k" and not names.missed
    assert names.space_table(7) == "db.t#p0" and names.space_table(8) is None
    assert names.lookup(99) is None and names.missed == {99, ("space", 8)}
    names.refresh(conn)  # still unknown: given up on
    assert not names.missed and names.lookup(99) is None and names.space_table(8) is None and not names.missed


def test_postgres_transactions_are_xact_commit_less_ioattrs_own() -> None:
    pg = registry.by_name("postgres")
    terms = pg.phase_terms({"pg_stat_database:xact_commit": 190.0, "pg_stat_database:xact_rollback": 2.0,
                            "pg_stat_database:xact_commit_ioattr": 38.0}, lambda: [])
    assert terms is not None and terms["transactions"] == 154.0 and terms["own_transactions"] == 38.0
    assert terms["transactions_source"] == "pg_stat_database xact_commit + xact_rollback, less ioattr's own"
    assert pg.phase_line(terms) == ("PostgreSQL: 154 transactions (pg_stat_database xact_commit + xact_rollback, "
                                    "less ioattr's own)")
    assert pg.phase_terms({"status:Com_commit": 3.0}, lambda: []) is None  # a MySQL server's phase
    # statements: every kind the wire reader counted (no statements table: not known)
    assert "statements" not in terms
    terms = pg.phase_terms({"pg_stat_database:xact_commit": 10.0}, lambda: [], {"begin": 3.0, "update": 9.0,
                                                                                 "end": 3.0, "select": 4.0})
    assert terms is not None and terms["statements"] == 19.0, terms
    assert pg.phase_line(terms) == ("PostgreSQL: 10 transactions (pg_stat_database xact_commit + xact_rollback, "
                                    "less ioattr's own), 19 statements (Simple Query and Execute messages the "
                                    "clients sent, less ioattr's own)")
    assert registry.server_of(os.getpid()) is None  # no PostgreSQL child: no postmaster to point to


def test_ioattrs_own_postgres_statements_are_tagged_and_counted() -> None:
    from ioattr.collectors import sqltext
    from ioattr.engines.postgres import server

    class Conn:
        ran: list = []

        def execute(self, q: object, *a: object) -> str:
            self.ran.append(q)
            return "cursor"

    srv = server.PostgresServer.__new__(server.PostgresServer)
    srv.own_transactions = 0
    c = server._Counted(Conn(), srv)
    assert c.execute("SELECT 1") == "cursor" and c.execute("SELECT %s", (2,)) == "cursor"
    assert srv.own_transactions == 2
    assert all(sqltext.digest(q) == sqltext.DIGEST_INTERNAL for q in Conn.ran), Conn.ran  # as the kernel digests them
    assert c.ran is Conn.ran  # everything else is the connection's own


def test_report_by_file_names_a_postgres_files_relation() -> None:
    from ioattr.analysis.grouping import name_relation_files

    relations = {"/d/base/5/16396": {"relation": "postgres.public.pgbench_accounts", "kind": "table", "fork": "main"},
                 "/d/base/5/16396_fsm": {"relation": "postgres.public.pgbench_accounts", "fork": "fsm"}}
    rows = [{"file": "/d/base/5/16396"}, {"file": "/d/base/5/16396_fsm (deleted)"}, {"file": "/d/pg_wal/0001"}]
    name_relation_files(rows, relations)
    assert [r["relation"] for r in rows] == ["postgres.public.pgbench_accounts", "postgres.public.pgbench_accounts (fsm)",
                                             None]
    mysql = [{"file": "/d/t.ibd"}]
    name_relation_files(mysql, None)
    assert mysql == [{"file": "/d/t.ibd"}]  # no relations recorded: no column added


def test_tops_files_view_names_a_postgres_files_relation_as_report_does() -> None:
    """top's files view names a relation's file by the relation (the same label as report --by
    file), its path kept as the row's full name; other files keep their datadir-relative path."""
    from ioattr.format.schema import HIST_COLUMNS
    from ioattr.topview.top import VIEWS, Snapshot

    relations = {"/d/base/5/16396": {"relation": "postgres.public.pgbench_accounts", "fork": "main"},
                 "/d/base/5/16396_vm": {"relation": "postgres.public.pgbench_accounts", "fork": "vm"}}
    files = ["/d/base/5/16396", "/d/base/5/16396_vm", "/d/pg_wal/0001"]
    io = {"layer": ["syscall"] * 3, "op": ["read"] * 3, "file": files, "file_class": ["relation", "relation", "wal"],
          "count": [30, 2, 1], "bytes": [30 * 8192, 2 * 8192, 8192]}
    io.update({c: [0] * 3 for c in HIST_COLUMNS})
    rows = Snapshot(0.0, 1.0, io, None, datadirs=["/d/"], relations=relations).rows(VIEWS["files"])
    assert [(r.name, r.full, r.relation) for r in rows] == [
        ("postgres.public.pgbench_accounts", "/d/base/5/16396", "postgres.public.pgbench_accounts"),
        ("postgres.public.pgbench_accounts (vm)", "/d/base/5/16396_vm", "postgres.public.pgbench_accounts (vm)"),
        ("pg_wal/0001", "/d/pg_wal/0001", None)]
    rows = Snapshot(0.0, 1.0, io, None, datadirs=["/d/"]).rows(VIEWS["files"])   # a MySQL server's: paths
    assert [r.name for r in rows] == ["base/5/16396", "base/5/16396_vm", "pg_wal/0001"]

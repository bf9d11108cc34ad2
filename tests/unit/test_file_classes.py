"""One table of file classes (collectors/file_classes.py): what is derived from it agrees with it,
the BPF side (bpf/file_classes.h, enum ioattr_file_class) included."""
from __future__ import annotations

import pytest

from ioattr.collectors import abi, file_classes
from ioattr.collectors.file_classes import FILE_CLASSES
from ioattr.model import storage
from ioattr.model.dimensions import DIMENSIONS
from ioattr.model.labels import FILE_CLASS_NAMES
from ioattr.topview.top import CLASS_ABBREV


def test_numbers_and_names_are_unique_and_dense() -> None:
    assert sorted(c.number for c in FILE_CLASSES) == list(range(len(FILE_CLASSES)))
    assert len({c.name for c in FILE_CLASSES}) == len({c.short for c in FILE_CLASSES}) == len(FILE_CLASSES)
    assert all(len(c.short) <= 6 for c in FILE_CLASSES)


def test_everything_derives_from_the_table() -> None:
    assert {(m.name.lower(), int(m)) for m in abi.FileClass} == {(c.name, c.number) for c in FILE_CLASSES}
    assert FILE_CLASS_NAMES == {abi.FileClass(c.number): c.name for c in FILE_CLASSES}
    assert set(storage.STORAGE_FILE_CLASSES) == {c.name for c in FILE_CLASSES if c.storage}
    assert CLASS_ABBREV == {c.name: c.short for c in FILE_CLASSES}
    help_text = DIMENSIONS["file_class"].help
    assert all(c.name in help_text and (c.engine in help_text) for c in FILE_CLASSES)


def test_one_index_per_file_and_lsm_levels_are_the_engines_declarations() -> None:
    """MyRocks declares (its file_classes.toml) that an SST's page rows name the file, not an index,
    and carry its LSM level; the reports' SQL, top and the exporter take that from the table and
    name no class themselves."""
    from pathlib import Path

    assert file_classes.ONE_INDEX_PER_FILE == file_classes.LSM_LEVELS == {"sst"}
    assert "file_class IN ('sst')" in DIMENSIONS["index"].pages_sql
    assert "file_class IN ('sst') THEN 'L' || level" in DIMENSIONS["level"].pages_sql
    assert file_classes.sql_in("x", frozenset()) == "FALSE"
    root = Path(__file__).resolve().parents[2]
    for rel in ("ioattr/model/dimensions.py", "ioattr/format/reader.py", "ioattr/topview/top.py",
                "ioattr/prometheus/metrics_state.py"):
        text = (root / rel).read_text()
        assert "'sst'" not in text and '"sst"' not in text, rel
    # the exporter's page series: an SST read named by its file number and its LSM level
    from ioattr.prometheus.metrics_state import ExporterState

    pages = {"op": ["read", "read"], "index": [None, None], "level": [1, 0], "page_type": ["sst_data", "index"],
             "file_class": ["sst", "tablespace"], "role": ["connection"] * 2, "index_id": [12, 7],
             "pages": [3, 2], "bytes": [3 * 4096, 2 * 16384]}
    state = ExporterState()
    state.ingest(None, pages, 1.0)
    assert set(state.pages.series) == {("read", "[sst 12]", "L1", "sst_data", "sst", "connection"),
                                       ("read", "[index id 7]", "leaf", "index", "tablespace", "connection")}


def test_each_engine_declares_its_classes_in_its_folder(tmp_path) -> None:
    """An engine's classes come from its folder's file_classes.toml only: the shared rows name no
    engine that has a folder, and a new folder's classes join the table (checked for clashes)."""
    from ioattr.collectors import file_classes

    folders = {f.parent.name for f in file_classes.ENGINES_DIR.glob("*/file_classes.toml")}
    assert folders == {"innodb", "myrocks", "postgres"}
    owners = {c.engine for c in file_classes.engine_classes()}
    assert owners == {"InnoDB", "MyRocks", "PostgreSQL"}
    assert not owners & {c.engine for c in file_classes.SHARED_CLASSES}
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "file_classes.toml").write_text(
        'engine = "Toy"\n[[class]]\nname = "toy_log"\nnumber = 21\nstorage = true\nshort = "toylog"\n'
        'help = "the toy store\'s log"\n')
    toy = file_classes.engine_classes(tmp_path)
    assert toy == (file_classes.FileClassInfo("toy_log", 21, True, "toylog", "Toy", "the toy store's log"),)
    assert file_classes.checked(FILE_CLASSES + toy)[-1].name == "toy_log"
    clash = file_classes.FileClassInfo("toy_log", 9, True, "toylog", "Toy", "")
    with pytest.raises(ValueError, match="'sst' and 'toy_log' have the same number 9"):
        file_classes.checked(FILE_CLASSES + (clash,))
    with pytest.raises(ValueError, match="over 6 characters"):
        file_classes.checked((file_classes.FileClassInfo("x", 30, True, "sevench", "Toy", ""),))


def test_the_bpf_header_is_generated_from_the_table() -> None:
    """bpf/file_classes.h is what the table generates (bpf/Makefile redoes it; a stale copy
    fails here naming the command), and the BPF code names classes only through it."""
    import subprocess
    import sys

    from ioattr.collectors import file_classes
    from tests.helpers import ROOT

    header = ROOT / "bpf" / "file_classes.h"
    assert header.read_text() == file_classes.c_header(), \
        "bpf/file_classes.h is stale: python3 collectors/file_classes.py > bpf/file_classes.h"
    # the script the Makefile runs prints the same text, importing nothing of ioattr
    out = subprocess.run([sys.executable, "-I", str(ROOT / "collectors" / "file_classes.py")],
                         capture_output=True, text=True, check=True).stdout
    assert out == header.read_text()
    for h in (ROOT / "bpf").glob("*.h"):
        if h.name != "file_classes.h":
            assert "enum ioattr_file_class {" not in h.read_text(), h


def test_dashboards_select_classes_from_the_table() -> None:
    """Every file-class selector in the dashboards' queries (file_class="x", =~, !=, !~) names one
    class of the table, never a list: storage IO is selected by the exporter's storage="yes" label
    (derived from the table), so a class added to FILE_CLASSES needs no dashboard edit, and a
    class renamed fails here until the dashboards follow."""
    import json
    import re
    from pathlib import Path

    names = {c.name for c in FILE_CLASSES}
    selectors = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str):
            selectors.extend(re.findall(r'file_class\s*(?:=~|!~|!=|=)\s*"([^"]*)"', node))

    for f in sorted((Path(__file__).resolve().parents[2] / "dashboards").glob("*.json")):
        walk(json.loads(f.read_text()))
    for value in selectors:
        assert value in names, f"select storage IO with storage=\"yes\", not a list of classes: {value}"


def test_a_plugged_in_engine_numbers_its_classes_at_load(tmp_path) -> None:
    """An engine plugged in with IOATTR_ENGINES declares its classes in its own folder without
    numbers; they get PLUGIN_NUMBERS in order, join every derived table, and stay out of the BPF
    header (BPF tests no plugged-in class: it only carries back numbers userspace registered)."""
    import json
    import os
    import subprocess
    import sys

    from tests.helpers import ROOT

    for name, rows in (("a", [("a_data", "true"), ("a_log", "false")]), ("b", [("b_data", "true")])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "file_classes.toml").write_text(f'engine = "{name}"\n' + "".join(
            f'[[class]]\nname = "{n}"\nstorage = {st}\nshort = "{n[:6]}"\nhelp = "x"\n' for n, st in rows))
    got = file_classes.plugin_classes((tmp_path / "a", tmp_path / "nothing", tmp_path / "b"))
    assert [(c.name, c.number, c.storage, c.engine) for c in got] == \
        [("a_data", 128, True, "a"), ("a_log", 129, False, "a"), ("b_data", 130, True, "b")]
    assert file_classes.checked(FILE_CLASSES + got)  # no clash with the built-in ones
    (tmp_path / "b" / "file_classes.toml").write_text(
        'engine = "b"\n[[class]]\nname = "b_data"\nnumber = 21\nstorage = true\nshort = "b"\nhelp = "x"\n')
    with pytest.raises(ValueError, match="get their numbers at load"):
        file_classes.plugin_classes((tmp_path / "b",))
    # a folder of ioattr's own numbers its classes below the plugged-in range
    (tmp_path / "own" / "c").mkdir(parents=True)
    (tmp_path / "own" / "c" / "file_classes.toml").write_text(
        'engine = "c"\n[[class]]\nname = "c_data"\nnumber = 200\nstorage = true\nshort = "c"\nhelp = "x"\n')
    with pytest.raises(ValueError, match=r"its number \(200\) must be in 1..127"):
        file_classes.engine_classes(tmp_path / "own")
    assert max(c.number for c in file_classes.BUILTIN_CLASSES) < file_classes.PLUGIN_NUMBERS.start

    # the toy engine (tests/toy_engine/, its class in its folder), plugged in for real
    probe = ("import json; from ioattr.collectors import abi, file_classes; from ioattr.engines import registry; "
             "from ioattr.model import storage; from ioattr.topview.top import CLASS_ABBREV; "
             "print(json.dumps([int(abi.FileClass.TOY_DATA), registry.file_class_name('/d/data.tdat'), "
             "'toy_data' in storage.STORAGE_FILE_CLASSES, CLASS_ABBREV['toy_data'], "
             "'TOY_DATA' in file_classes.c_header()]))")
    env = {**os.environ, "IOATTR_ENGINES": "tests.toy_engine:ToyAdapter", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == [128, "toy_data", True, "tdata", False]

"""One table of file classes (collectors/file_classes.py): what is derived from it agrees with it.
The BPF side (bpf/ioattr.h enum ioattr_file_class) is held against abi.FileClass by test_abi.py."""
from __future__ import annotations

from ioattr.collectors import abi
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


def test_dashboards_select_classes_from_the_table() -> None:
    """Every file-class selector in the dashboards' queries (file_class="x", =~, !=, !~) names
    classes of the table only, and a list of several is exactly the storage classes, in the
    table's order (model/storage.STORAGE_FILE_CLASS_REGEX): a class added or renamed in
    FILE_CLASSES fails here until the dashboards follow."""
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
    assert selectors, "the dashboards select no file class: this test reads them wrongly"
    for value in selectors:
        listed = value.split("|")
        assert set(listed) <= names, set(listed) - names
        if len(listed) > 1:
            assert value == storage.STORAGE_FILE_CLASS_REGEX, value

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

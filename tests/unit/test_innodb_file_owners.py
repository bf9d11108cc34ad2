"""ioattr/engines/innodb/files.py InnodbFileMap: two servers on one host have the same space
ids (both system tablespaces are space 0, their first tables the same ids); a page row's file
is looked up among its own server's files, or it is charged to the other server's file."""
from __future__ import annotations

import pytest

from ioattr.engines.innodb import files
from ioattr.engines.innodb.files import FC, InnodbFileMap

SERVERS = {
    101: [("/a/data/ibdata1", 8, 11), ("/a/data/s/t.ibd", 8, 12)],
    202: [("/b/data/ibdata1", 8, 21), ("/b/data/s/t.ibd", 8, 22)],
}
GEOMETRY = {"/a/data/ibdata1": (0, 16384), "/b/data/ibdata1": (0, 16384),
            "/a/data/s/t.ibd": (5, 16384), "/b/data/s/t.ibd": (5, 16384)}


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> InnodbFileMap:
    monkeypatch.setattr(files, "open_files", lambda pid: SERVERS[pid])
    monkeypatch.setattr(files, "datadir_files", lambda dirs: [])
    monkeypatch.setattr(files, "read_page_geometry", lambda path: GEOMETRY.get(path))
    monkeypatch.setattr(files, "read_doublewrite_range", lambda path, size: (0, 0))
    reg = InnodbFileMap(None)
    for pid in SERVERS:
        reg.sync(pid)
    return reg


def test_each_server_finds_its_own_file_of_a_shared_space_id(registry: InnodbFileMap) -> None:
    assert registry.space_files(101)[5].path == "/a/data/s/t.ibd"
    assert registry.space_files(202)[5].path == "/b/data/s/t.ibd"
    assert registry.system_file(101).path == "/a/data/ibdata1"
    assert registry.system_file(202).path == "/b/data/ibdata1"
    assert registry.system_file(101).file_class == FC.SYSTEM_TABLESPACE


def test_a_server_without_files_finds_none(registry: InnodbFileMap) -> None:
    assert registry.space_files(303) == {} and registry.system_file(303) is None
    assert {pf.path for pf in registry.space_files().values()} <= {p for fs in SERVERS.values() for p, _, _ in fs}

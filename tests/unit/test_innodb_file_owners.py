"""ioattr/engines/innodb/files.py InnodbFileMap: two servers on one host have the same space
ids (both system tablespaces are space 0, their first tables the same ids); a page row's file
is looked up among its own server's files, or it is charged to the other server's file; and a space
one server reports encrypted is not marked encrypted in the other's file of the same id."""
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
    monkeypatch.setattr(files, "datadir_files", lambda dirs, root="": [])
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


def test_a_space_encrypted_in_one_server_only(registry: InnodbFileMap) -> None:
    """Server 101 reports space 5 encrypted (INNODB_TABLESPACES_ENCRYPTION); 202's space 5 is not."""
    registry.mark_encrypted({5}, 101)
    assert registry.space_files(101)[5].encrypted
    assert not registry.space_files(202)[5].encrypted
    assert not registry.system_file(101).encrypted
    # a file the server opens later is registered encrypted by its own server's report only
    SERVERS[101].append(("/a/data/s/u.ibd", 8, 13))
    SERVERS[202].append(("/b/data/s/u.ibd", 8, 23))
    GEOMETRY.update({"/a/data/s/u.ibd": (6, 16384), "/b/data/s/u.ibd": (6, 16384)})
    try:
        registry.mark_encrypted({6}, 202)
        for pid in SERVERS:
            registry.sync(pid)
        assert registry.space_files(202)[6].encrypted
        assert not registry.space_files(101)[6].encrypted
        assert registry.space_files(101)[5].encrypted and not registry.space_files(202)[5].encrypted
    finally:
        SERVERS[101].pop()
        SERVERS[202].pop()


def test_a_connection_naming_no_server_marks_every_file(registry: InnodbFileMap) -> None:
    registry.mark_encrypted({5})
    assert registry.space_files(101)[5].encrypted and registry.space_files(202)[5].encrypted


def test_a_dropped_file_names_the_rows_of_its_interval(registry: InnodbFileMap) -> None:
    """ALTER TABLE ... FORCE reads the old tablespace into its copy and deletes it; a sync before
    the drain names that interval's page rows drops the old file from the map. Its rows still
    get it (their io rows carry its inode) until the interval ends, then it is gone; nothing
    puts it back in the BPF map meanwhile."""
    old = registry.space_files(101)[5]
    GEOMETRY["/a/data/s/t.ibd"] = None  # deleted: page 0 unreadable
    try:
        registry.sync(101)
        assert (old.dev, old.ino) not in registry.files
        assert registry.space_files(101)[5] is old
        assert 5 not in {pf.space_id for pf in registry._of(101, retired=False)}
        assert registry.space_files(202)[5].path == "/b/data/s/t.ibd"  # the other server's own
        registry.mark_encrypted({5}, 101)  # must not re-install the dropped file
        assert (old.dev, old.ino) not in registry.files and not old.encrypted
        registry.end_interval()
        assert 5 not in registry.space_files(101)
        assert registry.system_file(101).path == "/a/data/ibdata1"
    finally:
        GEOMETRY["/a/data/s/t.ibd"] = (5, 16384)

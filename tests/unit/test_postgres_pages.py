"""PostgreSQL page classification's pure parts: bpf/pg_page.h compiled as plain C and run on
pages built here (heap, new, btree meta/root/internal/leaf/deleted, garbage, a failed read),
its page-type numbers against ioattr/engines/postgres/pages.py, the kinds files are registered
with, and the registry over a data directory made here (no server, no BPF map)."""
from __future__ import annotations

import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

from ioattr.collectors import abi
from ioattr.engines import registry
from ioattr.engines.postgres import PostgresAdapter, pages
from ioattr.engines.postgres.files import RelationFile
from tests.helpers import build_bpf_harness

BPF = Path(__file__).resolve().parents[2] / "bpf"
HEADER = BPF / "pg_page.h"
PAGE = pages.BLCKSZ

HARNESS = r"""
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include "pg_page.h"

/* argv: engine, hdr_len cut (-1: as asked), relfilenode, segment, database; the page on stdin.
 * Does what pages.bpf.h's classify_step does for a PostgreSQL file. */
int main(int argc, char **argv)
{
	static __u8 page[8192];
	struct innodb_file f = {0};
	struct page_key k = {0};
	__u32 len, off;
	int cut;

	if (argc != 6 || fread(page, 1, sizeof(page), stdin) != sizeof(page))
		return 2;
	f.engine = atoi(argv[1]);
	cut = atoi(argv[2]);
	f.object_id = strtoul(argv[3], 0, 10);
	f.segment = strtoul(argv[4], 0, 10);
	f.space_id = strtoul(argv[5], 0, 10);
	f.file_class = IOA_FC_RELATION;
	f.page_shift = 13;
	len = ioa_pg_read_len(&f);
	off = ioa_pg_read_offset(&f, sizeof(page));
	if (cut >= 0 && (__u32)cut < len)
		len = cut;
	ioa_pg_classify_page(&k, &f, sizeof(page), page + off, len);
	printf("%u %u %u %u %llu %u\n", k.page_type, k.level, k.flags, k.file_class,
	       (unsigned long long)k.index_id, k.space_id);
	return 0;
}
"""


@pytest.fixture(scope="module")
def classify(tmp_path_factory: pytest.TempPathFactory):
    harness = build_bpf_harness(tmp_path_factory.mktemp("pgpage"), HARNESS)

    def run(page: bytes, engine: int, cut: int = -1, node: int = 16384, seg: int = 0, db: int = 5) -> tuple:
        out = subprocess.run([str(harness), str(engine), str(cut), str(node), str(seg), str(db)], input=page,
                             capture_output=True, check=True).stdout.split()
        pt, level, flags, fc, index_id, space = map(int, out)
        return pt, level, flags, fc, index_id, space
    return run


def heap_page(lower: int = 40, upper: int = 8000, special: int = PAGE) -> bytes:
    head = struct.pack("<QHHHHHHI", 0x1234, 0, 0, lower, upper, special, PAGE | 4, 0)
    return head + b"\x07" * (PAGE - len(head))


def btree_page(flags: int, level: int, prev: int = 3, nxt: int = 9, cycle: int = 0) -> bytes:
    body = heap_page(special=PAGE - 16)[:PAGE - 16]
    return body + struct.pack("<IIIHH", prev, nxt, level, flags, cycle)


H, B, O = int(abi.PageEngine.PG_HEAP), int(abi.PageEngine.PG_BTREE), int(abi.PageEngine.PG_OTHER)
NONE = abi.LEVEL_NONE


@pytest.mark.parametrize("page, engine, want", [
    (heap_page(), H, (pages.PG_PAGE_HEAP, NONE, 0)),
    (bytes(PAGE), H, (pages.PG_PAGE_NEW, NONE, 0)),                       # smgrextend's zeros
    (heap_page(special=PAGE - 16), H, (pages.PG_PAGE_UNRECOGNISED, NONE, abi.PAGE_F_MISMATCH)),
    (heap_page(lower=9000), H, (pages.PG_PAGE_UNRECOGNISED, NONE, abi.PAGE_F_MISMATCH)),
    (btree_page(8, 0, 0, 0), B, (pages.PG_PAGE_BTREE_META, NONE, 0)),      # BTP_META
    (btree_page(2 | 1, 0, 0, 0), B, (pages.PG_PAGE_BTREE_ROOT, 0, 0)),     # a one-level tree's root
    (btree_page(2, 3, 0, 0), B, (pages.PG_PAGE_BTREE_ROOT, 3, 0)),
    (btree_page(0, 1), B, (pages.PG_PAGE_BTREE_INTERNAL, 1, 0)),
    (btree_page(1 | 64, 0, cycle=77), B, (pages.PG_PAGE_BTREE_LEAF, 0, 0)),  # + BTP_HAS_GARBAGE
    (btree_page(1 | 4, 123456), B, (pages.PG_PAGE_BTREE_DELETED, NONE, 0)),  # level holds an xid
    (btree_page(1 | 16, 0), B, (pages.PG_PAGE_BTREE_DELETED, NONE, 0)),      # half-dead
    (btree_page(0, 999), B, (pages.PG_PAGE_BTREE_INTERNAL, 254, 0)),         # clamped
    (bytes(PAGE), B, (pages.PG_PAGE_NEW, NONE, 0)),
    (btree_page(0x400, 1), B, (pages.PG_PAGE_UNRECOGNISED, NONE, abi.PAGE_F_MISMATCH)),
    (btree_page(1, 0, cycle=0xFFF0), B, (pages.PG_PAGE_UNRECOGNISED, NONE, abi.PAGE_F_MISMATCH)),
    (heap_page(), O, (pages.PG_PAGE_INDEX_OTHER, NONE, 0)),                # other AMs: not read
])
def test_classify(classify, page: bytes, engine: int, want: tuple) -> None:
    pt, level, flags, fc, index_id, space = classify(page, engine, node=16390, seg=3, db=16401)
    assert (pt, level, flags) == want
    assert fc == abi.FileClass.RELATION and space == 16401
    assert pages.split_index_id(index_id) == (16390, 3)


@pytest.mark.parametrize("engine", [H, B])
def test_a_failed_read_is_unreadable(classify, engine: int) -> None:
    assert classify(heap_page(), engine, cut=0)[:3] == (0, NONE, abi.PAGE_F_UNREADABLE)
    assert classify(heap_page(), engine, cut=10)[:3] == (0, NONE, abi.PAGE_F_UNREADABLE)


def test_page_types_match_the_header() -> None:
    text = HEADER.read_text()
    c = {k.removeprefix("IOA_PG_PAGE_"): int(v, 0)
         for k, v in re.findall(r"#define\s+(IOA_PG_PAGE_\w+)\s+(0x[0-9a-fA-F]+|\d+)", text)}
    py = {k.removeprefix("PG_PAGE_"): v for k, v in vars(pages).items() if k.startswith("PG_PAGE_")}
    assert c == py and len(c) == len(pages.PAGE_TYPES) == len(set(pages.PAGE_TYPES.values()))
    # above every InnoDB page type: the numbers never collide
    from ioattr.engines.innodb import pages as innodb_pages
    innodb = (set(innodb_pages.COMMON_PAGE_TYPES) | set(innodb_pages.MARIADB_PAGE_TYPES)
              | set(innodb_pages.MYSQL8_PAGE_TYPES))
    assert min(c.values()) > max(innodb)


def test_the_adapter_names_pages() -> None:
    a = registry.page_engine_for(int(abi.FileClass.RELATION))
    assert isinstance(a, PostgresAdapter)
    assert registry.page_engine_for(int(abi.FileClass.TABLESPACE)).name == "innodb"
    assert a.page_type_name(pages.PG_PAGE_BTREE_LEAF) == "btree_leaf"
    assert a.is_index_page(pages.PG_PAGE_BTREE_ROOT) and not a.is_index_page(pages.PG_PAGE_HEAP)
    assert a.page_object_id((7 << 32) | 16384) == 16384


@pytest.mark.parametrize("kind, am, engine", [
    ("table", "heap", abi.PageEngine.PG_HEAP), ("toast", "heap", abi.PageEngine.PG_HEAP),
    ("materialized_view", "heap", abi.PageEngine.PG_HEAP), ("index", "btree", abi.PageEngine.PG_BTREE),
    ("index", "hash", abi.PageEngine.PG_OTHER), ("index", "gin", abi.PageEngine.PG_OTHER),
    ("sequence", "heap", abi.PageEngine.PG_OTHER), ("table", "columnar", abi.PageEngine.PG_OTHER),
    (None, None, None),
])
def test_kinds(kind, am, engine) -> None:
    assert pages.engine_of(kind, am) == engine


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


def test_registry_over_a_data_directory(tmp_path: Path) -> None:
    """Main forks with a known kind are registered (segments too); fsm/vm, temp relations and
    unknown relations are not; a deleted file's registration goes, its key still names it."""
    d = tmp_path / "data"
    for rel in ("base/5/16384", "base/5/16384.1", "base/5/16384_fsm", "base/5/16384_vm", "base/5/16390",
                "base/5/t3_16400", "base/5/99999", "base/5/pg_internal.init", "global/1262"):
        _touch(d / rel)
    kinds = {16384: ("table", "heap"), 16390: ("index", "btree"), 1262: ("table", "heap")}

    def kind_of(rel: RelationFile):
        return kinds.get(rel.relfilenode, (None, None))

    reg = pages.RelationPageFiles(None, str(d))
    assert reg.sync(kind_of, force=True) == 4
    assert reg.unknown == 1  # 99999: no relation in the catalogs (yet)
    got = {(pf.rel.database, pf.rel.relfilenode, pf.rel.segment, pf.engine) for pf in reg.installed.values()}
    assert got == {(5, 16384, 0, abi.PageEngine.PG_HEAP), (5, 16384, 1, abi.PageEngine.PG_HEAP),
                   (5, 16390, 0, abi.PageEngine.PG_BTREE), (0, 1262, 0, abi.PageEngine.PG_HEAP)}
    seg1 = reg.file_of(5, (1 << 32) | 16384)
    assert seg1 is not None and seg1.path == str(d / "base/5/16384.1")
    assert reg.file_of(5, 16385) is None
    assert reg.sync(kind_of) == 0  # throttled
    os.unlink(d / "base/5/16390")
    assert reg.sync(kind_of, force=True) == 0
    assert len(reg.installed) == 3
    gone = reg.file_of(5, 16390)
    assert gone is not None and gone.deleted


def test_unchanged_directories_are_not_listed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rescan lists a database directory again only when its mtime moved (or moved within the
    last second: the coarse clock); the cached entries are the same files."""
    d = tmp_path / "data"
    _touch(d / "base/5/16384")
    old = 1_000_000_000_000_000_000
    os.utime(d / "base/5", ns=(old, old))
    cache: dict = {}
    first = list(pages.relation_main_files(str(d), cache))
    listed = []
    real = os.scandir
    monkeypatch.setattr(pages.os, "scandir", lambda p: listed.append(str(p)) or real(p))
    assert list(pages.relation_main_files(str(d), cache)) == first
    assert str(d / "base/5") not in listed
    _touch(d / "base/5/16390")  # the directory changed
    again = list(pages.relation_main_files(str(d), cache))
    assert str(d / "base/5") in listed and {r.relfilenode for _, r, _, _ in again} == {16384, 16390}

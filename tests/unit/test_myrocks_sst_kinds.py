"""MyRocks SST read classification's pure part: bpf/rocksdb_sst.h compiled as plain C and run on
reads over a layout made here, against its Python twin (sst_blocks.read_kind); the block-kind
numbers of the header against sst_blocks' vocabulary; the registration a catalog makes in the
page-file map (fields of the value, added, replaced and removed as SSTs come and go), with the
map calls captured (no BPF)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ioattr.collectors import abi
from ioattr.engines import registry
from ioattr.engines.myrocks import MyrocksAdapter, sst, sst_blocks
from tests.helpers import build_bpf_harness

BPF = Path(__file__).resolve().parents[2] / "bpf"
HEADER = BPF / "rocksdb_sst.h"

HARNESS = r"""
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include "rocksdb_sst.h"

/* argv: data_end index_off index_len filter_off filter_len level number; then pos len pairs */
int main(int argc, char **argv)
{
	struct innodb_file f = {0};
	struct page_key k = {0};
	unsigned long long number;
	int i;

	if (argc < 8)
		return 2;
	f.engine = IOA_ENGINE_ROCKSDB_SST;
	f.file_class = IOA_FC_SST;
	f.sst_data_end = strtoull(argv[1], 0, 10);
	f.sst_index_off = strtoull(argv[2], 0, 10);
	f.sst_index_len = strtoul(argv[3], 0, 10);
	f.sst_filter_off = strtoull(argv[4], 0, 10);
	f.sst_filter_len = strtoul(argv[5], 0, 10);
	f.sst_level = atoi(argv[6]);
	number = strtoull(argv[7], 0, 10);
	f.object_id = (__u32)number;
	f.segment = (__u32)(number >> 32);
	for (i = 8; i + 1 < argc; i += 2) {
		ioa_sst_classify(&k, &f, strtoull(argv[i], 0, 10), strtoull(argv[i + 1], 0, 10));
		printf("%u %u %llu %u\n", k.page_type, k.level, (unsigned long long)k.index_id, k.file_class);
	}
	return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bpf_harness(tmp_path_factory.mktemp("sstkind"), HARNESS)


def test_kind_numbers_match_the_header() -> None:
    defines = {k: int(v, 0) for k, v in re.findall(r"#define\s+IOA_SST_(\w+)\s+(0x[0-9a-fA-F]+)", HEADER.read_text())}
    assert defines == {"DATA": sst_blocks.SST_DATA, "INDEX": sst_blocks.SST_INDEX, "FILTER": sst_blocks.SST_FILTER,
                       "META": sst_blocks.SST_META, "MIXED": sst_blocks.SST_MIXED}
    assert {sst_blocks.page_type_name(v) for v in defines.values()} == {
        "sst_data", "sst_index", "sst_filter", "sst_meta", "sst_mixed"}
    # a range of their own: above PostgreSQL's 0xE0xx and every InnoDB page type
    assert all(0xE100 <= v < 0xE200 for v in defines.values())


# an SST of 10,000 bytes: data [0, 6000), filter [6000, 6500), index [6500, 7800), meta after
LAYOUT = sst_blocks.SstLayout(10000, 5, 6000, (6500, 1300), (6000, 500), "full")
NOFILTER = sst_blocks.SstLayout(10000, 5, 6000, (6000, 1800))
READS = [(0, 4096), (5990, 10), (5990, 11), (6000, 500), (6000, 501), (6499, 1), (6500, 1300), (6500, 1301),
         (7800, 53), (9947, 53), (0, 10000), (4096, 1904), (6400, 200), (4096, 4096), (5000, 4096),
         (5500, 1000), (7000, 3000)]


@pytest.mark.parametrize("layout", [LAYOUT, NOFILTER], ids=["filter", "nofilter"])
def test_c_and_python_agree_read_by_read(harness: Path, layout: sst_blocks.SstLayout) -> None:
    filt = layout.filter or (0, 0)
    args = [layout.data_end, layout.index[0], layout.index[1], filt[0], filt[1], 3, (7 << 32) + 123]
    args += [x for r in READS for x in r]
    out = subprocess.run([str(harness)] + [str(a) for a in args], capture_output=True, text=True, check=True).stdout
    got = [tuple(map(int, line.split())) for line in out.splitlines()]
    assert got == [(sst_blocks.read_kind(layout, pos, n), 3, (7 << 32) + 123, int(abi.FileClass.SST))
                   for pos, n in READS]


def test_read_kinds_as_documented() -> None:
    kinds = [sst_blocks.page_type_name(sst_blocks.read_kind(LAYOUT, p, n)) for p, n in READS]
    # a read over kinds: the kind holding most of its bytes (data 10 + filter 1: data; a 4 KiB
    # window at 5000 holds 1300 bytes of index, 1296 of meta, 1000 of data, 500 of filter: index),
    # sst_mixed when two hold the same, the most (filter 100 + index 100; data 500 + filter 500)
    assert kinds == ["sst_data", "sst_data", "sst_data", "sst_filter", "sst_filter", "sst_filter", "sst_index",
                     "sst_index", "sst_meta", "sst_meta", "sst_data", "sst_data", "sst_mixed", "sst_data",
                     "sst_index", "sst_mixed", "sst_meta"]


def test_sst_rows_are_named_by_the_myrocks_adapter() -> None:
    eng = registry.page_engine_for(int(abi.FileClass.SST))
    assert isinstance(eng, MyrocksAdapter)
    assert eng.page_type_name(sst_blocks.SST_INDEX) == "sst_index" and eng.is_index_page(sst_blocks.SST_DATA)


def test_catalog_registers_adds_replaces_and_removes(monkeypatch) -> None:
    calls: list[tuple] = []
    monkeypatch.setattr(sst.libbpf, "map_update", lambda fd, k, v, flags=0: calls.append(
        ("update", k.dev, k.ino, v.engine, v.file_class, v.object_id, v.sst_data_end, v.sst_index_off,
         v.sst_index_len, v.sst_filter_off, v.sst_filter_len, v.sst_level)))
    monkeypatch.setattr(sst.libbpf, "map_delete", lambda fd, k: calls.append(("delete", k.dev, k.ino)))
    cat = sst.SstCatalog()
    blocks = LAYOUT.as_dict()
    cat.files = {"/d/000012.sst": {"ino": 50, "level": 1, "blocks": blocks, "deleted": False,
                                   "indexes": [{"index": "t.a.PRIMARY"}]},
                 "/d/000013.sst": {"ino": 51, "level": None, "blocks": None, "deleted": False, "indexes": []}}
    cat._kdev = {"/d/000012.sst": 8, "/d/000013.sst": 8}
    cat.attach_map(99)
    SST, ENG = int(abi.FileClass.SST), int(abi.PageEngine.ROCKSDB_SST)
    assert calls == [("update", 8, 50, ENG, SST, 12, 6000, 6500, 1300, 6000, 500, 1)]  # no layout: not registered
    calls.clear()
    cat._sync_map()
    assert calls == []  # nothing changed: no map call
    # 12 compacted away, its inode reused by 14 (level unknown); 13 complete now
    cat.files["/d/000012.sst"]["deleted"] = True
    cat.files["/d/000013.sst"]["blocks"] = NOFILTER.as_dict()
    cat.files["/d/000014.sst"] = {"ino": 50, "level": None, "blocks": blocks, "deleted": False, "indexes": []}
    cat._kdev["/d/000014.sst"] = 8
    cat._sync_map()
    assert sorted(calls) == sorted([("update", 8, 51, ENG, SST, 13, 6000, 6000, 1800, 0, 0, abi.LEVEL_NONE),
                                    ("update", 8, 50, ENG, SST, 14, 6000, 6500, 1300, 6000, 500, abi.LEVEL_NONE)])
    pf, index = cat.page_file(12)  # compacted away: still named
    assert (pf.path, pf.ino, index) == ("/d/000012.sst", 50, "t.a.PRIMARY")
    calls.clear()
    cat.close()
    assert sorted(calls) == [("delete", 8, 50), ("delete", 8, 51)]

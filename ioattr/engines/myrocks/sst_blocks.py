"""Where an SST's blocks lie, by kind: the userspace half of telling a read of an SST's data
blocks from one of its index or filter block (RocksDB's block-based table format, as written by
MariaDB 10.11's RocksDB: format_version 2..5, footer of 53 bytes).

An SST (BlockBasedTableBuilder::Finish) is laid out as: data blocks from offset 0, then the
filter block(s), the index block, the compression dictionary, range deletions, the properties
block, the metaindex block, and the footer. Every block is followed by a 5-byte trailer
(compression type, checksum). The footer (the file's last 53 bytes) holds:

    checksum type (1 byte) | metaindex handle | index handle | zero padding to byte 41 |
    format_version (fixed32) | magic number 0x88e241b785f4cff7 (fixed64)

where a handle is (offset, size) as two varint64s, size without the trailer. The metaindex block
(never compressed) maps meta block names to handles: "filter.<policy>", "fullfilter.<policy>",
"partitionedfilter.<policy>", "rocksdb.properties", "rocksdb.compression_dict",
"rocksdb.range_del". A block's entries are prefix-compressed: shared (varint32), non_shared
(varint32), value length (varint32), the key's unshared bytes, the value; the block ends with its
restart offsets (fixed32 each) and their count (fixed32).

So from the footer and the metaindex alone (two small reads) each offset of the file has a kind:
data below the first meta block, index and filter inside their handles, meta otherwise. The
catalog (sst.py) keeps these extents per SST and registers them in BPF (page_files, engine
ROCKSDB_SST), where every read of a registered SST is counted by the kind at its offset
(bpf/rocksdb_sst.h: page_stats rows with page_type sst_data, sst_index, sst_filter, sst_meta, or
sst_mixed for a read over two kinds).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

# block kinds of a read as BPF counts them (bpf/rocksdb_sst.h IOA_SST_*: page_key.page_type of
# a MyRocks SST read), a range of their own above InnoDB's page types and PostgreSQL's 0xE0xx;
# tests/unit/test_myrocks_sst_kinds.py checks the header against these and runs its classifier
SST_DATA = 0xE100
SST_INDEX = 0xE101
SST_FILTER = 0xE102
SST_META = 0xE103      # properties, metaindex, footer, compression dictionary, range deletions
SST_MIXED = 0xE104     # a read over several kinds of which two hold equal shares, the most

PAGE_TYPES: dict[int, str] = {
    SST_DATA: "sst_data",
    SST_INDEX: "sst_index",
    SST_FILTER: "sst_filter",
    SST_META: "sst_meta",
    SST_MIXED: "sst_mixed",
}
KIND_TYPES = {"data": SST_DATA, "index": SST_INDEX, "filter": SST_FILTER, "meta": SST_META}


def page_type_name(page_type: int) -> str:
    """An SST read's block kind as the page_type dimension shows it."""
    return PAGE_TYPES.get(page_type, f"type_{page_type}")


def read_kind(layout: "SstLayout", offset: int, length: int) -> int:
    """The page_type BPF gives a read of `length` (> 0) bytes at `offset` (the Python twin of
    ioa_sst_classify): the kind of its first byte when its last byte's is the same (a buffered
    read of one block), else the kind holding most of its bytes (a direct-IO read padded to 4 KiB
    around its block), SST_MIXED when two kinds hold equal shares, the most."""
    first, last = layout.kind(offset), layout.kind(offset + length - 1)
    if first == last:
        return KIND_TYPES[first]
    end = offset + length

    def overlap(lo: int, n: int) -> int:
        return max(0, min(end, lo + n) - max(offset, lo))

    shares = {"data": overlap(0, layout.data_end), "index": overlap(*layout.index),
              "filter": overlap(*layout.filter) if layout.filter else 0}
    shares["meta"] = max(0, length - sum(shares.values()))
    best = max(shares.values())
    kinds = [k for k, v in shares.items() if v == best]
    return KIND_TYPES[kinds[0]] if len(kinds) == 1 else SST_MIXED


MAGIC = 0x88E241B785F4CFF7
LEGACY_MAGIC = 0xDB4775248B80FB57   # format_version 0 footers (48 bytes)
FOOTER = 53
LEGACY_FOOTER = 48
TRAILER = 5


class BadSst(ValueError):
    """The file's tail is not a block-based table footer this parser knows."""


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A varint64 at pos (7 bits a byte, low first): (value, the position after it)."""
    result, shift = 0, 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise BadSst("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


@dataclass
class SstLayout:
    """The extents of one SST's blocks by kind: (offset, size) with the trailer included."""

    file_size: int
    format_version: int
    data_end: int                        # data blocks occupy [0, data_end)
    index: tuple[int, int]
    filter: tuple[int, int] | None = None
    filter_kind: str | None = None       # "full", "block" (old per-block filters), "partitioned"
    meta: dict[str, tuple[int, int]] = field(default_factory=dict)   # every metaindex entry

    def kind(self, offset: int) -> str:
        """The kind of block at a file offset: data, index, filter or meta (properties,
        metaindex, footer, compression dictionary, range deletions)."""
        if offset < self.data_end:
            return "data"
        if self.index[0] <= offset < self.index[0] + self.index[1]:
            return "index"
        if self.filter and self.filter[0] <= offset < self.filter[0] + self.filter[1]:
            return "filter"
        return "meta"

    def as_dict(self) -> dict[str, Any]:
        """meta.json form: offsets and sizes in bytes, trailers included."""
        return {"format_version": self.format_version, "data_end": self.data_end,
                "index": list(self.index), "filter": list(self.filter) if self.filter else None,
                "filter_kind": self.filter_kind}


def parse_footer(tail: bytes) -> tuple[int, tuple[int, int], tuple[int, int]]:
    """(format_version, metaindex handle, index handle) from a file's last 53 (or 48) bytes."""
    if len(tail) >= FOOTER and struct.unpack_from("<Q", tail, len(tail) - 8)[0] == MAGIC:
        foot = tail[-FOOTER:]
        version = struct.unpack_from("<I", foot, FOOTER - 12)[0]
        pos = 1  # checksum type
    elif len(tail) >= LEGACY_FOOTER and struct.unpack_from("<Q", tail, len(tail) - 8)[0] == LEGACY_MAGIC:
        foot = tail[-LEGACY_FOOTER:]
        version, pos = 0, 0
    else:
        raise BadSst("no block-based table magic number at the end")
    if version > 5:
        raise BadSst(f"format_version {version} not understood")
    mo, pos = varint(foot, pos)
    ms, pos = varint(foot, pos)
    io, pos = varint(foot, pos)
    isz, pos = varint(foot, pos)
    return version, (mo, ms), (io, isz)


def parse_block_entries(block: bytes) -> list[tuple[bytes, bytes]]:
    """The (key, value) entries of an uncompressed block's contents (trailer excluded)."""
    if len(block) < 4:
        raise BadSst("block too short")
    restarts = struct.unpack_from("<I", block, len(block) - 4)[0] & 0x7FFFFFFF  # top bit: hash index
    end = len(block) - 4 - 4 * restarts
    if end < 0:
        raise BadSst("restart array larger than the block")
    out: list[tuple[bytes, bytes]] = []
    pos, key = 0, b""
    while pos < end:
        shared, pos = varint(block, pos)
        unshared, pos = varint(block, pos)
        vlen, pos = varint(block, pos)
        if shared > len(key) or pos + unshared + vlen > end:
            raise BadSst("block entry out of bounds")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        out.append((key, block[pos:pos + vlen]))
        pos += vlen
    return out


def layout_of(tail: bytes, read_at: Callable[[int, int], bytes], file_size: int) -> SstLayout:
    """An SST's block layout from its tail and a reader of (offset, size) -> bytes."""
    version, metaindex, index = parse_footer(tail)
    meta: dict[str, tuple[int, int]] = {}
    for key, value in parse_block_entries(read_at(metaindex[0], metaindex[1])):
        off, p = varint(value, 0)
        size, _ = varint(value, p)
        meta[key.decode(errors="replace")] = (off, size + TRAILER)
    meta["rocksdb.metaindex"] = (metaindex[0], metaindex[1] + TRAILER)
    filt, fkind = None, None
    for name, ext in meta.items():
        for prefix, kind in (("fullfilter.", "full"), ("partitionedfilter.", "partitioned"), ("filter.", "block")):
            if name.startswith(prefix):
                filt, fkind = ext, kind
    index_ext = (index[0], index[1] + TRAILER)
    # data blocks end where the first non-data block starts (RocksDB writes them all after)
    # (partitioned filters and indexes write their partitions just before their top-level block,
    # so the data end is still the first meta extent; the partitions count as meta here)
    firsts = [index_ext[0], metaindex[0]] + [off for off, _ in meta.values()]
    data_end = min(firsts)
    return SstLayout(file_size, version, data_end, index_ext, filt, fkind, meta)


def read_layout(path: str) -> SstLayout:
    """The block layout of an SST file on disk. Raises OSError, BadSst."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, FOOTER, max(size - FOOTER, 0))

        def read_at(offset: int, n: int) -> bytes:
            data = os.pread(fd, n, offset)
            if len(data) != n:
                raise BadSst("block beyond the end of the file")
            return data

        return layout_of(tail, read_at, size)
    finally:
        os.close(fd)


def block_kind(layout: dict[str, Any] | None, offset: int) -> str | None:
    """The kind of the block at `offset` of an SST from its catalog entry's "blocks" (meta.json);
    None when the layout is unknown. (Reads are classified in BPF by the same rule: the catalog
    registers each SST's extents in page_files, bpf/rocksdb_sst.h counts each read in
    page_stats by the kind of its first and last byte.)"""
    if not isinstance(layout, dict):
        return None
    try:
        lay = SstLayout(0, int(layout["format_version"]), int(layout["data_end"]), tuple(layout["index"]),
                        tuple(layout["filter"]) if layout.get("filter") else None)
    except (KeyError, TypeError, ValueError):
        return None
    return lay.kind(offset)

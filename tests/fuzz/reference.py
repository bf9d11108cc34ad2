"""An independent decoder of InnoDB page headers, written from docs/DESIGN's
"InnoDB page facts" (not from bpf/innodb_page.h), to check the classifier the
probes run against: tests/test_fuzz.py compares it with samples the C
harness (tests/fuzz/classify_fuzz.c) writes.

Facts (big-endian): FIL header page number @4, FIL_PAGE_TYPE @24 (2 B),
space id @34 (4 B); index pages: PAGE_LEVEL @64 (0 = leaf), PAGE_INDEX_ID
@66 (8 B). Index pages are INDEX 17855, RTREE 17854 and MariaDB's INSTANT
root 18. ioattr's contract (bpf/ioattr.h): a page it cannot read or that is
encrypted is counted as such with no type, level or index id; a level is at
most 254 (255 means "not an index page"); a page whose header names another
page or space is flagged, except a doublewrite copy (system tablespace pages
in the doublewrite range), which carries another page's header by design.
"""
from __future__ import annotations

import struct

INDEX_TYPES = {17855: "index", 17854: "rtree", 18: "instant"}
TYPE_NAMES = {0: "allocated", 2: "undo_log", 3: "inode", 4: "ibuf_free_list", 5: "ibuf_bitmap",
              6: "system", 7: "trx_system", 8: "fsp_hdr", 9: "xdes", 10: "blob", 11: "zblob",
              12: "zblob2", 34354: "page_compressed", 37401: "page_compressed_encrypted", **INDEX_TYPES}
HEADER = 74                      # the classifier reads bytes [0, 74): up to the index id's end
LEVEL_NONE, LEVEL_MAX = 0xFF, 254
F_MISMATCH, F_UNREADABLE, F_ENCRYPTED = 1, 2, 4
FC_SYSTEM, FC_DOUBLEWRITE = 2, 7
MAX_PAGES_PER_IO = 256


def type_name(page_type: int) -> str:
    """The page type as MariaDB names it, 'other' for a type it does not have."""
    return TYPE_NAMES.get(page_type, "other")


def decode(hdr: bytes, page_no: int, space_id: int, file_class: int, encrypted: bool,
           dblwr: tuple[int, int]) -> dict:
    """What the classifier must count for page `page_no` of a file whose first len(hdr)
    bytes were read (fewer than HEADER: the read failed)."""
    fc = FC_DOUBLEWRITE if file_class == FC_SYSTEM and dblwr[0] <= page_no < dblwr[1] else file_class
    out = {"page_type": 0, "space_id": space_id, "level": LEVEL_NONE, "index_id": 0, "flags": 0,
           "file_class": fc}
    if encrypted:
        return dict(out, flags=F_ENCRYPTED)
    if len(hdr) < HEADER:
        return dict(out, flags=F_UNREADABLE)
    (hdr_page,) = struct.unpack_from(">I", hdr, 4)
    (page_type,) = struct.unpack_from(">H", hdr, 24)
    (hdr_space,) = struct.unpack_from(">I", hdr, 34)
    if page_type & 0x8000 and page_type not in (34354, 37401):
        # MariaDB full_crc32 PAGE_COMPRESSED: the space id is compressed; its file's is taken
        page_type, hdr_space = 34354, space_id
    out.update(page_type=page_type, space_id=hdr_space)
    if fc != FC_DOUBLEWRITE and (hdr_page != page_no % 2**32 or hdr_space != space_id):
        out["flags"] = F_MISMATCH
    if page_type in INDEX_TYPES:
        (level,) = struct.unpack_from(">H", hdr, 64)
        (index_id,) = struct.unpack_from(">Q", hdr, 66)
        out.update(level=min(level, LEVEL_MAX), index_id=index_id)
    return out


def pages_in_io(nbytes: int, shift: int) -> tuple[int, bool]:
    """(pages classified, cut short) for an IO of nbytes on a file of 1 << shift byte pages:
    whole pages only; page sizes 512 B .. 64 KiB; at most MAX_PAGES_PER_IO per IO."""
    if not 9 <= shift <= 16:
        return 0, False
    n = nbytes >> shift
    return min(n, MAX_PAGES_PER_IO), n > MAX_PAGES_PER_IO

"""InnoDB page kinds: the userspace half of bpf/innodb_page.h, defined once.

The BPF classifier (bpf/innodb_page.h, compiled into the IO probes) reads each page's
FIL header and counts pages by (space, index id, level, page type); this module names
those numbers. The header offsets and the index page types below are the same numbers
as the header's #defines: tests/unit/test_engines.py parses the header and checks that
they agree, so the two halves cannot drift apart.
"""
from __future__ import annotations

# FIL header and index page header offsets (public format, big-endian)
FIL_PAGE_OFFSET = 4
FIL_PAGE_TYPE = 24
FIL_PAGE_SPACE_ID = 34
PAGE_LEVEL = 64
PAGE_INDEX_ID = 66

FIL_PAGE_INDEX = 17855
FIL_PAGE_RTREE = 17854
FIL_PAGE_TYPE_INSTANT = 18   # MariaDB: root of an instantly altered index (MySQL 8: SDI blob)
FIL_PAGE_TYPE_FSP_HDR = 8    # page 0 of every tablespace: space id @38, FSP flags @54

COMMON_PAGE_TYPES = {
    0: "allocated", 2: "undo_log", 3: "inode", 4: "ibuf_free_list", 5: "ibuf_bitmap", 6: "system",
    7: "trx_system", FIL_PAGE_TYPE_FSP_HDR: "fsp_hdr", 9: "xdes", 10: "blob", 11: "zblob", 12: "zblob2",
    FIL_PAGE_INDEX: "index", FIL_PAGE_RTREE: "rtree",
}
MARIADB_PAGE_TYPES = {FIL_PAGE_TYPE_INSTANT: "instant", 34354: "page_compressed",
                      37401: "page_compressed_encrypted"}
MYSQL8_PAGE_TYPES = {
    14: "compressed", 15: "encrypted", 16: "compressed_encrypted", 17: "encrypted_rtree",
    18: "sdi_blob", 19: "sdi_zblob", 20: "legacy_doublewrite", 21: "rseg_array", 22: "lob_index",
    23: "lob_data", 24: "lob_first", 25: "zlob_first", 26: "zlob_data", 27: "zlob_index",
    28: "zlob_frag", 29: "zlob_frag_entry", 17853: "sdi",
}
# the page types BPF treats as index pages (ioa_is_index_page): they carry a level and an
# index id. 18 is MariaDB's instant-ALTER root, an index page too
INDEX_PAGE_TYPES = frozenset({FIL_PAGE_INDEX, FIL_PAGE_RTREE, FIL_PAGE_TYPE_INSTANT})


# MariaDB PAGE_COMPRESSED=1 pages as written: FIL_PAGE_PAGE_COMPRESSED (34354, +encrypted 37401)
# in the classic checksum format; in the full_crc32 format (10.5+ default) FIL_PAGE_TYPE is
# 0x8000 | (compressed length / 256) (fil0fil.h FIL_PAGE_COMPRESS_FCRC32_MARKER). Only the FIL
# header (page number, space id) is left uncompressed: the index page header -- the index id
# and level -- is inside the compressed payload, so such a page is charged to its space's table.
FIL_PAGE_PAGE_COMPRESSED = 34354
FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED = 37401
FCRC32_COMPRESSED_MARKER = 0x8000


def is_page_compressed(page_type: int, flavor: str = "mariadb") -> bool:
    """Whether a page as read from or written to disk is a MariaDB PAGE_COMPRESSED page."""
    if flavor == "mysql":
        return False
    return page_type in (FIL_PAGE_PAGE_COMPRESSED, FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED) or (
        page_type & FCRC32_COMPRESSED_MARKER and page_type not in COMMON_PAGE_TYPES
        and page_type not in MARIADB_PAGE_TYPES)


def page_type_name(page_type: int, flavor: str = "mariadb") -> str:
    """A FIL_PAGE_TYPE as the page_type dimension shows it (type_N for unknown numbers)."""
    if page_type in COMMON_PAGE_TYPES:
        return COMMON_PAGE_TYPES[page_type]
    if flavor != "mysql" and page_type not in MARIADB_PAGE_TYPES and is_page_compressed(page_type, flavor):
        return "page_compressed"  # full_crc32: the type field carries the compressed length
    extra = MYSQL8_PAGE_TYPES if flavor == "mysql" else MARIADB_PAGE_TYPES
    return extra.get(page_type, f"type_{page_type}")


def is_index_page(page_type: int, flavor: str = "mariadb") -> bool:
    """Whether pages of this type are index pages (have an index id and a level). BPF counts
    type 18 as one on either flavor; on MySQL 8 it is an SDI blob, not an index page."""
    return page_type in INDEX_PAGE_TYPES and not (flavor == "mysql" and page_type == FIL_PAGE_TYPE_INSTANT)

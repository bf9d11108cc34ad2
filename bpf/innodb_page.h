/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decoding one InnoDB page header: pure functions, no BPF helpers, no maps.
 *
 * Compiled twice: into the IO probes (through pages.bpf.h, against
 * vmlinux.h) and as plain C into the userspace fuzz harness
 * (tests/fuzz/classify_fuzz.c, against <linux/types.h>), so the harness
 * exercises exactly the code the kernel runs.
 *
 * Format (public, big-endian): FIL header page number @4, FIL_PAGE_TYPE @24,
 * space id @34; index page header PAGE_LEVEL @64 (0 = leaf), PAGE_INDEX_ID
 * @66 (8 bytes). Only index pages (INDEX, RTREE, MariaDB's INSTANT root)
 * have a level and an index id; every other page type is counted by type.
 */
#ifndef IOATTR_INNODB_PAGE_H
#define IOATTR_INNODB_PAGE_H

#include "ioattr.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define FIL_PAGE_OFFSET 4
#define FIL_PAGE_TYPE 24
#define FIL_PAGE_SPACE_ID 34
#define PAGE_LEVEL 64
#define PAGE_INDEX_ID 66

#define FIL_PAGE_INDEX 17855
#define FIL_PAGE_RTREE 17854
#define FIL_PAGE_TYPE_INSTANT 18 /* MariaDB: root of an instantly altered index (MySQL 8: SDI blob) */
#define FIL_PAGE_PAGE_COMPRESSED 34354           /* MariaDB PAGE_COMPRESSED=1 page, classic format */
#define FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED 37401
#define FIL_PAGE_COMPRESS_FCRC32_MARKER 32768    /* MariaDB full_crc32 format: 1 << 15 in the type */
#define FIL_PAGE_COMP_ALGO 26    /* full_crc32 PAGE_COMPRESSED: compressed from here on */
#define MAX_PAGES_PER_IO 256
#define PAGE_HDR_BYTES 74        /* what the classifier reads of each page: up to PAGE_INDEX_ID + 8 */
#define IOA_PAGE_SHIFT_MIN 9     /* 512-byte pages (ROW_FORMAT=COMPRESSED) */
#define IOA_PAGE_SHIFT_MAX 16    /* 64 KiB pages */
#define IOA_LEVEL_MAX 254        /* deeper (garbage) levels are clamped; 255 is IOA_LEVEL_NONE */

static __always_inline __u16 ioa_be16(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

static __always_inline __u32 ioa_be32(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

static __always_inline __u64 ioa_be64(const __u8 *p)
{
	return ((__u64)ioa_be32(p) << 32) | ioa_be32(p + 4);
}

static __always_inline int ioa_is_index_page(__u16 page_type)
{
	return page_type == FIL_PAGE_INDEX || page_type == FIL_PAGE_RTREE ||
	       page_type == FIL_PAGE_TYPE_INSTANT;
}

/*
 * A MariaDB PAGE_COMPRESSED page in the full_crc32 format (the 10.5+ default): its type is
 * FIL_PAGE_COMPRESS_FCRC32_MARKER | (compressed length / 256), and everything from byte
 * FIL_PAGE_COMP_ALGO on is compressed -- the space id and the index page header too. Its
 * page number is still there. (34354 and 37401, the classic format's, also have bit 15.)
 */
static __always_inline int ioa_is_fcrc32_compressed(__u16 page_type)
{
	return (page_type & FIL_PAGE_COMPRESS_FCRC32_MARKER) && page_type != FIL_PAGE_PAGE_COMPRESSED &&
	       page_type != FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED;
}

/*
 * How many pages of 1 << shift bytes an IO of nbytes holds (a partial page
 * at the end is not classified: its header may not be there). 0 when the
 * shift is not a page size InnoDB uses. More than MAX_PAGES_PER_IO are cut
 * to that many, and *cut is set.
 */
static __always_inline __u32 ioa_io_pages(__u64 nbytes, __u32 shift, int *cut)
{
	__u64 n;

	*cut = 0;
	if (shift < IOA_PAGE_SHIFT_MIN || shift > IOA_PAGE_SHIFT_MAX)
		return 0;
	n = nbytes >> shift;
	if (n > MAX_PAGES_PER_IO) {
		*cut = 1;
		n = MAX_PAGES_PER_IO;
	}
	return (__u32)n;
}

/*
 * Whether an IO too short for one page is one page all the same: MariaDB writes a
 * PAGE_COMPRESSED=1 page as its compressed length rounded up to the file system block
 * (e.g. 4 KiB of a 16 KiB page), from the page's start. Such an IO starts on a page
 * boundary and holds at least a whole header; it is counted as one page of nbytes.
 */
static __always_inline int ioa_short_page(__u64 nbytes, __u32 shift, __u64 pos)
{
	if (shift < IOA_PAGE_SHIFT_MIN || shift > IOA_PAGE_SHIFT_MAX)
		return 0;
	return nbytes >= PAGE_HDR_BYTES && nbytes < (1ULL << shift) && !(pos & ((1ULL << shift) - 1));
}

/*
 * Fill the page fields of k (file_class, space_id, page_type, level,
 * index_id, flags; the caller's template fields are left alone) for page
 * page_no of file f, from the first hdr_len bytes of the page at hdr.
 * hdr_len < PAGE_HDR_BYTES means the header could not be read: the page is
 * counted as unreadable. An encrypted file's pages are counted as such and
 * hdr is not looked at. Reads hdr[0 .. PAGE_HDR_BYTES) at most.
 */
static __always_inline void ioa_classify_page(struct page_key *k, const struct innodb_file *f,
					      __u64 page_no, const __u8 *hdr, __u32 hdr_len)
{
	__u16 level;

	k->file_class = f->file_class;
	k->space_id = f->space_id;
	k->page_type = 0;
	k->level = IOA_LEVEL_NONE;
	k->index_id = 0;
	k->flags = 0;
	if (f->file_class == IOA_FC_SYSTEM_TABLESPACE && page_no >= f->dblwr_lo && page_no < f->dblwr_hi)
		k->file_class = IOA_FC_DOUBLEWRITE;
	if (f->encrypted) {
		k->flags = IOA_PAGE_F_ENCRYPTED;
		return;
	}
	if (hdr_len < PAGE_HDR_BYTES) {
		k->flags = IOA_PAGE_F_UNREADABLE;
		return;
	}
	k->page_type = ioa_be16(hdr + FIL_PAGE_TYPE);
	k->space_id = ioa_be32(hdr + FIL_PAGE_SPACE_ID);
	if (ioa_is_fcrc32_compressed(k->page_type)) {
		/* counted as FIL_PAGE_PAGE_COMPRESSED of its file; no space id or index header to
		 * read (a doublewrite copy's space is not known: its file's is kept) */
		k->page_type = FIL_PAGE_PAGE_COMPRESSED;
		k->space_id = f->space_id;
	}
	/* a doublewrite copy carries another page's header: that is expected */
	if (k->file_class != IOA_FC_DOUBLEWRITE &&
	    (ioa_be32(hdr + FIL_PAGE_OFFSET) != (__u32)page_no || k->space_id != f->space_id))
		k->flags |= IOA_PAGE_F_MISMATCH;
	if (ioa_is_index_page(k->page_type)) {
		level = ioa_be16(hdr + PAGE_LEVEL);
		k->level = level > IOA_LEVEL_MAX ? IOA_LEVEL_MAX : level;
		k->index_id = ioa_be64(hdr + PAGE_INDEX_ID);
	}
}

#endif /* IOATTR_INNODB_PAGE_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decoding one PostgreSQL relation page: pure functions, no BPF helpers, no
 * maps (like innodb_page.h: compiled into the IO probes through
 * pages.bpf.h and as plain C by tests/unit/test_postgres_pages.py).
 *
 * PostgreSQL pages are BLCKSZ (8 KiB here) in the server's byte order
 * (little-endian on x86_64). Facts from src/include/storage/bufpage.h and
 * src/include/access/nbtree.h (PostgreSQL 15):
 *   PageHeaderData (24 bytes at the page's start): pd_lsn @0 (8), pd_checksum
 *   @8, pd_flags @10, pd_lower @12, pd_upper @14, pd_special @16 (2 each),
 *   pd_pagesize_version @18, pd_prune_xid @20. PageIsNew: pd_upper == 0 (a
 *   page of zeros, e.g. the one smgrextend writes when a relation grows).
 *   A heap page has no special space (pd_special == BLCKSZ).
 *   BTPageOpaqueData (the btree special space, the page's last 16 bytes:
 *   MAXALIGN(16)): btpo_prev @0, btpo_next @4, btpo_level @8 (uint32, 0 =
 *   leaf), btpo_flags @12 (uint16), btpo_cycleid @14 (uint16, at most
 *   MAX_BT_CYCLE_ID 0xFF7F). Flags: BTP_LEAF 1, BTP_ROOT 2, BTP_DELETED 4,
 *   BTP_META 8 (block 0, the metapage), BTP_HALF_DEAD 16, BTP_SPLIT_END 32,
 *   BTP_HAS_GARBAGE 64, BTP_INCOMPLETE_SPLIT 128, BTP_HAS_FULLXID 256.
 *
 * Which of the two a page is comes from its file (userspace knows the
 * relation's kind and access method from pg_class/pg_am and registers the
 * file with it), so one small read per page suffices: the 24-byte header of
 * a heap page, the 16-byte special space of a btree page, nothing for other
 * index access methods (counted as such, by relation only).
 */
#ifndef IOATTR_PG_PAGE_H
#define IOATTR_PG_PAGE_H

#include "ioattr.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define PG_PAGE_HDR_BYTES 24     /* SizeOfPageHeaderData */
#define PG_BT_OPAQUE_BYTES 16    /* MAXALIGN(sizeof(BTPageOpaqueData)) */
#define PG_PD_LOWER 12
#define PG_PD_UPPER 14
#define PG_PD_SPECIAL 16
#define PG_BTPO_LEVEL 8
#define PG_BTPO_FLAGS 12
#define PG_BTPO_CYCLEID 14

#define PG_BTP_LEAF 1
#define PG_BTP_ROOT 2
#define PG_BTP_DELETED 4
#define PG_BTP_META 8
#define PG_BTP_HALF_DEAD 16
#define PG_BTP_ALL_FLAGS 0x1ff   /* through BTP_HAS_FULLXID */
#define PG_MAX_BT_CYCLE_ID 0xff7f
#ifndef IOA_LEVEL_MAX
#define IOA_LEVEL_MAX 254        /* as innodb_page.h: 255 is IOA_LEVEL_NONE */
#endif

/* PostgreSQL page types (page_key.page_type; ioattr/engines/postgres/pages.py
 * names them). Above every InnoDB FIL_PAGE_TYPE, so the numbers never collide. */
#define IOA_PG_PAGE_NEW 0xe000        /* a page of zeros (PageIsNew): a relation extension */
#define IOA_PG_PAGE_HEAP 0xe001
#define IOA_PG_PAGE_BTREE_META 0xe002
#define IOA_PG_PAGE_BTREE_ROOT 0xe003 /* the root (a leaf too while the tree has one level) */
#define IOA_PG_PAGE_BTREE_INTERNAL 0xe004
#define IOA_PG_PAGE_BTREE_LEAF 0xe005
#define IOA_PG_PAGE_BTREE_DELETED 0xe006 /* deleted or half-dead */
#define IOA_PG_PAGE_INDEX_OTHER 0xe007   /* another index access method's page (not read) */
#define IOA_PG_PAGE_UNRECOGNISED 0xe008  /* the bytes are not what the file's kind has there */

static __always_inline __u16 ioa_le16(const __u8 *p)
{
	return (__u16)p[0] | ((__u16)p[1] << 8);
}

static __always_inline __u32 ioa_le32(const __u8 *p)
{
	return (__u32)ioa_le16(p) | ((__u32)ioa_le16(p + 2) << 16);
}

/* How many bytes of a page of file f the classifier reads, and where (from
 * the page's start): the header of a heap page, the special space of a btree
 * page, nothing else. */
static __always_inline __u32 ioa_pg_read_len(const struct innodb_file *f)
{
	if (f->engine == IOA_ENGINE_PG_HEAP)
		return PG_PAGE_HDR_BYTES;
	if (f->engine == IOA_ENGINE_PG_BTREE)
		return PG_BT_OPAQUE_BYTES;
	return 0;
}

static __always_inline __u32 ioa_pg_read_offset(const struct innodb_file *f, __u32 page_bytes)
{
	return f->engine == IOA_ENGINE_PG_BTREE ? page_bytes - PG_BT_OPAQUE_BYTES : 0;
}

/*
 * Fill the page fields of k (file_class, space_id = database oid, index_id =
 * segment << 32 | relfilenode, page_type, level, flags) for one page of the
 * PostgreSQL relation file f, from the hdr_len bytes ioa_pg_read_len asked
 * for (fewer: the read failed, the page is counted as unreadable).
 */
static __always_inline void ioa_pg_classify_page(struct page_key *k, const struct innodb_file *f,
						 __u32 page_bytes, const __u8 *hdr, __u32 hdr_len)
{
	__u32 want = ioa_pg_read_len(f);
	__u16 lower, upper, special, flags;
	__u32 level;

	k->file_class = f->file_class;
	k->space_id = f->space_id;
	k->index_id = ((__u64)f->segment << 32) | f->object_id;
	k->page_type = IOA_PG_PAGE_INDEX_OTHER;
	k->level = IOA_LEVEL_NONE;
	k->flags = 0;
	if (!want)
		return;
	if (hdr_len < want) {
		k->page_type = 0;
		k->flags = IOA_PAGE_F_UNREADABLE;
		return;
	}
	if (f->engine == IOA_ENGINE_PG_HEAP) {
		lower = ioa_le16(hdr + PG_PD_LOWER);
		upper = ioa_le16(hdr + PG_PD_UPPER);
		special = ioa_le16(hdr + PG_PD_SPECIAL);
		k->page_type = IOA_PG_PAGE_HEAP;
		if (upper == 0) {
			k->page_type = IOA_PG_PAGE_NEW;
		} else if (lower < PG_PAGE_HDR_BYTES || lower > upper || upper > special ||
			   special != page_bytes) {
			k->page_type = IOA_PG_PAGE_UNRECOGNISED;
			k->flags = IOA_PAGE_F_MISMATCH;
		}
		return;
	}
	/* btree: the special space */
	level = ioa_le32(hdr + PG_BTPO_LEVEL);
	flags = ioa_le16(hdr + PG_BTPO_FLAGS);
	if (ioa_le32(hdr) == 0 && ioa_le32(hdr + 4) == 0 && level == 0 && flags == 0 &&
	    ioa_le16(hdr + PG_BTPO_CYCLEID) == 0) {
		k->page_type = IOA_PG_PAGE_NEW; /* zeros: extended, not initialised yet */
		return;
	}
	if ((flags & ~PG_BTP_ALL_FLAGS) || ioa_le16(hdr + PG_BTPO_CYCLEID) > PG_MAX_BT_CYCLE_ID) {
		k->page_type = IOA_PG_PAGE_UNRECOGNISED;
		k->flags = IOA_PAGE_F_MISMATCH;
		return;
	}
	if (flags & PG_BTP_META) {
		k->page_type = IOA_PG_PAGE_BTREE_META;
		return;
	}
	if (flags & (PG_BTP_DELETED | PG_BTP_HALF_DEAD)) {
		k->page_type = IOA_PG_PAGE_BTREE_DELETED; /* level holds an xid there: not a level */
		return;
	}
	if (flags & PG_BTP_ROOT)
		k->page_type = IOA_PG_PAGE_BTREE_ROOT;
	else if (flags & PG_BTP_LEAF)
		k->page_type = IOA_PG_PAGE_BTREE_LEAF;
	else
		k->page_type = IOA_PG_PAGE_BTREE_INTERNAL;
	k->level = level > IOA_LEVEL_MAX ? IOA_LEVEL_MAX : (__u8)level;
}

#endif /* IOATTR_PG_PAGE_H */

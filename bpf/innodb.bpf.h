/* SPDX-License-Identifier: GPL-2.0 */
/*
 * InnoDB page classification, shared by the IO probes that see page
 * buffers (sync pread/pwrite, libaio, io_uring).
 *
 * For a file userspace registered in innodb_files, every page of an IO is
 * classified from its FIL header and index page header (big-endian):
 *   page number @4, FIL_PAGE_TYPE @24, key version @26, space id @34,
 *   PAGE_LEVEL @64, PAGE_INDEX_ID @66.
 * Reads are classified once the data is in the buffer (at completion),
 * writes at submission. A page whose header can't be read, or that is
 * encrypted, is counted as such, never guessed. Everything is gated by
 * cfg.innodb_pages, a load-time constant, so the verifier removes this code
 * entirely when page classification is off.
 */
#ifndef IOATTR_INNODB_BPF_H
#define IOATTR_INNODB_BPF_H

#include "ioattr.h"

#define FIL_PAGE_INDEX 17855
#define FIL_PAGE_RTREE 17854
#define FIL_PAGE_TYPE_INSTANT 18 /* MariaDB: root of an instantly altered index (MySQL 8: SDI blob) */
#define MAX_PAGES_PER_IO 256
#define PAGE_HDR_BYTES 74

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct inode_key);
	__type(value, struct innodb_file);
} innodb_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct page_key);
	__type(value, struct page_val);
} page_stats SEC(".maps");

/* Per-CPU scratch for one page header (keeps 74 bytes off the 512-byte stack). */
struct page_hdr {
	__u8 b[80];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct page_hdr);
} hdr_scratch SEC(".maps");

static __always_inline __u16 be16(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

static __always_inline __u32 be32(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

static __always_inline __u64 be64(const __u8 *p)
{
	return ((__u64)be32(p) << 32) | be32(p + 4);
}

struct classify_ctx {
	struct page_key key;  /* template: who, op, api, stage, digest */
	__u64 buf;            /* user address of the first page */
	__u64 first_page;     /* page number the IO starts at (file offset >> shift) */
	__u32 space_id;       /* the file's own space */
	__u32 dblwr_lo;
	__u32 dblwr_hi;
	__u32 page_bytes;
	__u8 shift;
	__u8 file_class;
	__u8 encrypted;
};

static __always_inline void account_pages(struct page_key *k, __u64 pages, __u64 bytes)
{
	struct page_val *v = bpf_map_lookup_elem(&page_stats, k);

	if (!v) {
		struct page_val zero = {};
		long err = bpf_map_update_elem(&page_stats, k, &zero, BPF_NOEXIST);

		if (err && err != -EEXIST) {
			count_drop(IOA_DROP_PAGES_FULL);
			return;
		}
		v = bpf_map_lookup_elem(&page_stats, k);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->pages, pages);
	__sync_fetch_and_add(&v->bytes, bytes);
}

static long classify_one(__u32 i, struct classify_ctx *c)
{
	__u32 zero = 0;
	struct page_hdr *h = bpf_map_lookup_elem(&hdr_scratch, &zero);
	struct page_key k = c->key;
	__u64 page_no = c->first_page + i;
	__u64 addr = c->buf + ((__u64)i << (c->shift & 31));

	if (!h)
		return 1;
	k.file_class = c->file_class;
	k.space_id = c->space_id;
	k.level = IOA_LEVEL_NONE;
	if (c->file_class == IOA_FC_SYSTEM && page_no >= c->dblwr_lo && page_no < c->dblwr_hi)
		k.file_class = IOA_FC_DOUBLEWRITE;
	if (c->encrypted) {
		k.flags = IOA_PAGE_F_ENCRYPTED;
		account_pages(&k, 1, c->page_bytes);
		return 0;
	}
	if (bpf_probe_read_user(h->b, PAGE_HDR_BYTES, (void *)addr)) {
		k.flags = IOA_PAGE_F_UNREADABLE;
		account_pages(&k, 1, c->page_bytes);
		return 0;
	}
	k.page_type = be16(h->b + 24);
	k.space_id = be32(h->b + 34);
	/* a doublewrite copy carries another page's header: that is expected */
	if (k.file_class != IOA_FC_DOUBLEWRITE &&
	    (be32(h->b + 4) != (__u32)page_no || k.space_id != c->space_id))
		k.flags |= IOA_PAGE_F_MISMATCH;
	if (k.page_type == FIL_PAGE_INDEX || k.page_type == FIL_PAGE_RTREE ||
	    k.page_type == FIL_PAGE_TYPE_INSTANT) {
		__u16 level = be16(h->b + 64);

		k.level = level > 254 ? 254 : level;
		k.index_id = be64(h->b + 66);
	}
	account_pages(&k, 1, c->page_bytes);
	return 0;
}

/* Classify the pages of one completed read or submitted write. */
static __always_inline void classify_pages(struct page_key *tmpl, struct innodb_file *f,
					   __u64 buf, __u64 nbytes, __u64 pos)
{
	struct classify_ctx c = {};
	__u32 shift = f->page_shift;
	__u64 n;

	if (!cfg.innodb_pages || shift < 9 || shift > 16 || !buf)
		return;
	n = nbytes >> shift;
	if (!n)
		return;
	if (n > MAX_PAGES_PER_IO) {
		count_drop(IOA_DROP_PAGES_CUT);
		n = MAX_PAGES_PER_IO;
	}
	c.key = *tmpl;
	c.buf = buf;
	c.first_page = pos >> shift;
	c.space_id = f->space_id;
	c.dblwr_lo = f->dblwr_lo;
	c.dblwr_hi = f->dblwr_hi;
	c.page_bytes = 1U << shift;
	c.shift = shift;
	c.file_class = f->file_class;
	c.encrypted = f->encrypted;
	bpf_loop(n, classify_one, &c, 0);
}

static __always_inline struct innodb_file *innodb_file_of(__u32 dev, __u64 ino)
{
	struct inode_key ik = { .dev = dev, .ino = ino };

	if (!cfg.innodb_pages)
		return NULL;
	return bpf_map_lookup_elem(&innodb_files, &ik);
}

#endif /* IOATTR_INNODB_BPF_H */

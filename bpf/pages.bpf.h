/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page classification of the engines' page files, shared by the IO probes
 * that see page buffers (sync pread/pwrite, libaio, io_uring): InnoDB pages
 * (innodb_page.h), PostgreSQL relation pages (pg_page.h) and MyRocks SST
 * blocks by offset (rocksdb_sst.h).
 *
 * For an InnoDB file userspace registered in page_files, every page of an IO is
 * classified from its FIL header and index page header (big-endian):
 *   page number @4, FIL_PAGE_TYPE @24, space id @34, PAGE_LEVEL @64,
 *   PAGE_INDEX_ID @66.
 * The decoding itself is innodb_page.h (pure C, also built into the fuzz
 * harness tests/fuzz/classify_fuzz.c); this file reads the bytes and counts.
 * Reads are classified once the data is in the buffer (at completion),
 * writes at submission. A page whose header can't be read, or that is
 * encrypted, is counted as such, never guessed. Everything is gated by
 * cfg.innodb_pages, a load-time constant, so the verifier removes this code
 * entirely when page classification is off.
 */
#ifndef IOATTR_PAGES_BPF_H
#define IOATTR_PAGES_BPF_H

#include "ioattr.h"
#include "map_defs.bpf.h"
#include "innodb_page.h"
#include "pg_page.h"
#include "rocksdb_sst.h"

BPF_HASH(page_files, struct inode_key, struct innodb_file, 65536);

BPF_HASH(page_stats, struct page_key, struct page_val, 65536);

/* Per-CPU scratch for one page header (keeps 74 bytes off the 512-byte stack). */
struct page_hdr {
	__u8 b[80];
};

BPF_PERCPU_ARRAY(hdr_scratch, struct page_hdr, 1);

struct classify_ctx {
	struct page_key key;     /* template: who, op, api, stage, digest */
	struct innodb_file file; /* the file's space, page size, class, doublewrite range */
	__u64 buf;               /* user address of the first page */
	__u64 first_page;        /* page number the IO starts at (file offset >> shift) */
	__u32 page_bytes;
	__u8 shift;
};

static __always_inline void account_pages(struct page_key *k, __u64 pages, __u64 bytes)
{
	struct page_val *v;

	if (k->phase == IOA_PHASE_NOW)
		k->phase = current_phase();
	v = bpf_map_lookup_elem(&page_stats, k);

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

/* One page: read its header, classify it, count it. Inlined into the
 * one-page path (every subprogram call returns through the SRSO return
 * thunk on this kind of host) and wrapped by classify_one for bpf_loop. */
static __always_inline long classify_step(__u32 i, struct classify_ctx *c)
{
	__u32 zero = 0;
	struct page_hdr *h = bpf_map_lookup_elem(&hdr_scratch, &zero);
	struct page_key k = c->key;
	__u64 addr = c->buf + ((__u64)i << (c->shift & 31));
	__u32 len = PAGE_HDR_BYTES;

	if (!h)
		return 1;
	if (c->file.engine != IOA_ENGINE_INNODB) {
		/* a PostgreSQL relation page (pg_page.h): one small read, where its kind needs it */
		__u32 want = ioa_pg_read_len(&c->file);
		__u64 at = addr + ioa_pg_read_offset(&c->file, c->page_bytes);

		len = want;
		if (want == PG_PAGE_HDR_BYTES && bpf_probe_read_user(h->b, PG_PAGE_HDR_BYTES, (void *)at))
			len = 0;
		else if (want == PG_BT_OPAQUE_BYTES && bpf_probe_read_user(h->b, PG_BT_OPAQUE_BYTES, (void *)at))
			len = 0;
		ioa_pg_classify_page(&k, &c->file, c->page_bytes, h->b, len);
		account_pages(&k, 1, c->page_bytes);
		return 0;
	}
	/* an encrypted file's headers are not looked at: don't read them either */
	if (!c->file.encrypted && bpf_probe_read_user(h->b, PAGE_HDR_BYTES, (void *)addr))
		len = 0;
	ioa_classify_page(&k, &c->file, c->first_page + i, h->b, len);
	account_pages(&k, 1, c->page_bytes);
	return 0;
}

static long classify_one(__u32 i, struct classify_ctx *c)
{
	return classify_step(i, c);
}

/* Classify the pages of one completed read or submitted write. */
static __always_inline void classify_pages(struct page_key *tmpl, struct innodb_file *f,
					   __u64 buf, __u64 nbytes, __u64 pos)
{
	struct classify_ctx c = {};
	__u32 shift = f->page_shift;
	__u32 page_bytes;
	int cut;
	__u32 n;

	if (!cfg.innodb_pages || !buf)
		return;
	if (f->engine == IOA_ENGINE_ROCKSDB_SST) {
		/* a MyRocks SST: one read, one block kind by its offset (rocksdb_sst.h); its writes
		 * (flush, compaction) happen before userspace registers it and are not classified */
		if (tmpl->op == IOA_OP_READ && nbytes) {
			struct page_key k = *tmpl;

			ioa_sst_classify(&k, f, pos, nbytes);
			account_pages(&k, 1, nbytes);
		}
		return;
	}
	n = ioa_io_pages(nbytes, shift, &cut);
	page_bytes = 1U << (shift & 31);
	/* a PAGE_COMPRESSED page is written shorter than a page (innodb_page.h) */
	if (!n && tmpl->op == IOA_OP_WRITE && ioa_short_page(nbytes, shift, pos)) {
		n = 1;
		page_bytes = (__u32)nbytes;
	}
	if (!n)
		return;
	if (cut)
		count_drop(IOA_DROP_PAGES_CUT);
	c.key = *tmpl;
	c.file = *f;
	c.buf = buf;
	c.first_page = pos >> shift;
	c.page_bytes = page_bytes;
	c.shift = shift;
	if (n == 1) /* one page (InnoDB's page reads): no bpf_loop helper and indirect call */
		classify_step(0, &c);
	else
		bpf_loop(n, classify_one, &c, 0);
}

/* classify_pages() as a global function, for the paths off the sync read's (libaio's
 * submissions and completions, each iovec of a vectored IO): the kernel verifies a global
 * function once per program, where an inlined classify_pages() is verified at every call
 * site and in every bpf_loop callback holding one. With libaio's two sites inlined, the
 * syscall enter programs took 0.75 s of verification each (the recorder's default, pages
 * classified); the price is one BPF-to-BPF call per IO on these paths, and per iovec of a
 * vectored pread (PostgreSQL 18's). The plain sync read and write (tp_exit) keep it inline:
 * the point select's page read pays no call. */
__noinline int classify_pages_far(struct page_key *tmpl, struct innodb_file *f, __u64 buf,
				  __u64 nbytes, __u64 pos)
{
	if (!tmpl || !f) /* a global function's pointer arguments may be NULL to the verifier */
		return 0;
	classify_pages(tmpl, f, buf, nbytes, pos);
	return 0;
}

/* The iovecs of one vectored IO (preadv/pwritev and their kin: PostgreSQL 18 reads and writes
 * several buffers in one call when they are not adjacent in shared memory), read four at a time
 * (classify_iov_batch) and classified one by one at the IO's file offsets. At most IOA_MAX_IOV of
 * them (PostgreSQL's PG_IOV_MAX is 32). */
#define IOA_MAX_IOV 32

/* iovecs read from the caller's array in one bpf_probe_read_user: a user read costs about the
 * same whatever its size, so a batch of four costs about one iovec's (docs/cost.md) */
#define IOA_IOV_BATCH 4

struct ioa_iovec {
	__u64 base;
	__u64 len;
};

struct classify_iov_ctx {
	struct page_key key;
	struct innodb_file file;
	__u64 iov;  /* user address of the iovec array */
	__u64 left; /* bytes the call moved not classified yet */
	__u64 pos;  /* file offset of the next iovec */
	__u32 vlen; /* iovecs to look at: the call's, at most IOA_MAX_IOV */
};

/* Batch i: iovecs [i * IOA_IOV_BATCH, +IOA_IOV_BATCH), only those the call has (the array may
 * end at a page's end, where reading past it fails). */
static long classify_iov_batch(__u32 i, struct classify_iov_ctx *c)
{
	struct ioa_iovec iov[IOA_IOV_BATCH];
	__u64 first = (__u64)i * IOA_IOV_BATCH, n, size;
	__u32 k;

	if (!c->left || first >= c->vlen)
		return 1;
	n = c->vlen - first;
	if (n > IOA_IOV_BATCH)
		n = IOA_IOV_BATCH;
	size = n * sizeof(iov[0]);
	asm volatile("" : "+r"(size)); /* the bound checked is the register passed */
	if (!size || size > sizeof(iov) ||
	    bpf_probe_read_user(iov, size, (void *)(c->iov + first * sizeof(iov[0]))))
		return 1;
	for (k = 0; k < IOA_IOV_BATCH; k++) {
		__u64 len;

		if (k >= n || !c->left)
			break;
		len = iov[k].len < c->left ? iov[k].len : c->left;
		classify_pages_far(&c->key, &c->file, iov[k].base, len, c->pos);
		c->pos += len;
		c->left -= len;
	}
	return 0;
}

static __always_inline void classify_iov(struct page_key *tmpl, struct innodb_file *f, __u64 iov,
					 __u32 vlen, __u64 nbytes, __u64 pos)
{
	struct classify_iov_ctx c = { .key = *tmpl, .file = *f, .iov = iov, .left = nbytes, .pos = pos,
				      .vlen = vlen < IOA_MAX_IOV ? vlen : IOA_MAX_IOV };

	if (!cfg.innodb_pages || !iov || f->engine == IOA_ENGINE_ROCKSDB_SST)
		return;
	bpf_loop((c.vlen + IOA_IOV_BATCH - 1) / IOA_IOV_BATCH, classify_iov_batch, &c, 0);
}

static __always_inline struct innodb_file *innodb_file_of(__u32 dev, __u64 ino)
{
	struct inode_key ik = { .dev = dev, .ino = ino };

	if (!cfg.innodb_pages)
		return NULL;
	return bpf_map_lookup_elem(&page_files, &ik);
}

#endif /* IOATTR_INNODB_BPF_H */

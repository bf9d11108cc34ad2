/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which kind of block one read of a RocksDB SST (MyRocks) is: a pure function
 * of the read's file offset and length and the SST's extents, which userspace
 * read from the file's footer and metaindex (ioattr/engines/myrocks/sst_blocks.py)
 * and registered in page_files (struct innodb_file's sst_* fields, engine
 * IOA_ENGINE_ROCKSDB_SST). No user memory is read: the block kind is where the
 * read lies in the file. Compiled into the IO probes through pages.bpf.h and as
 * plain C by tests/unit/test_myrocks_sst_kinds.py.
 *
 * An SST is laid out as data blocks [0, data_end), then filter, index and the
 * meta blocks (properties, compression dictionary, range deletions, metaindex)
 * and the footer. A buffered read of a block is exactly that block and its
 * trailer (one kind). A read whose first and last byte lie in blocks of different
 * kinds (a direct-IO read, rocksdb_use_direct_reads, aligned to 4 KiB around its
 * block; a readahead or compaction read running from the data blocks on) is
 * counted once, with all its bytes, as the kind that holds most of its bytes --
 * for a direct-IO read of one block larger than 8 KiB (index and filter blocks
 * of any size that matters) that is the block's kind, as the padding is less
 * than 8 KiB -- and as IOA_SST_MIXED when two kinds hold equal shares.
 */
#ifndef IOATTR_ROCKSDB_SST_H
#define IOATTR_ROCKSDB_SST_H

#include "ioattr.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* MyRocks SST block kinds (page_key.page_type; ioattr/engines/myrocks/sst_blocks.py
 * names them). A range of their own, above InnoDB's FIL_PAGE_TYPEs and PostgreSQL's 0xe0xx. */
#define IOA_SST_DATA 0xe100
#define IOA_SST_INDEX 0xe101
#define IOA_SST_FILTER 0xe102
#define IOA_SST_META 0xe103   /* properties, metaindex, footer, dictionary, range deletions */
#define IOA_SST_MIXED 0xe104  /* a read over kinds of which two hold equal shares, the most */

static __always_inline __u16 ioa_sst_kind_at(const struct innodb_file *f, __u64 off)
{
	if (off < f->sst_data_end)
		return IOA_SST_DATA;
	if (off >= f->sst_index_off && off - f->sst_index_off < f->sst_index_len)
		return IOA_SST_INDEX;
	if (f->sst_filter_len && off >= f->sst_filter_off && off - f->sst_filter_off < f->sst_filter_len)
		return IOA_SST_FILTER;
	return IOA_SST_META;
}

/* How many bytes of [a, b) lie in [lo, lo + n). */
static __always_inline __u64 ioa_sst_overlap(__u64 a, __u64 b, __u64 lo, __u64 n)
{
	__u64 s = a > lo ? a : lo;
	__u64 e = b < lo + n ? b : lo + n;

	return e > s ? e - s : 0;
}

/* The kind holding most bytes of a read over several kinds; IOA_SST_MIXED on a tie. */
static __always_inline __u16 ioa_sst_majority(const struct innodb_file *f, __u64 pos, __u64 len)
{
	__u64 end = pos + len;
	__u64 d = ioa_sst_overlap(pos, end, 0, f->sst_data_end);
	__u64 i = ioa_sst_overlap(pos, end, f->sst_index_off, f->sst_index_len);
	__u64 fl = f->sst_filter_len ? ioa_sst_overlap(pos, end, f->sst_filter_off, f->sst_filter_len) : 0;
	__u64 m = d + i + fl < len ? len - d - i - fl : 0;
	__u64 best = d;
	__u16 kind = IOA_SST_DATA;
	int tie = 0;

	if (i > best) { best = i; kind = IOA_SST_INDEX; tie = 0; } else if (i == best) tie = 1;
	if (fl > best) { best = fl; kind = IOA_SST_FILTER; tie = 0; } else if (fl == best) tie = 1;
	if (m > best) { best = m; kind = IOA_SST_META; tie = 0; } else if (m == best) tie = 1;
	return tie ? IOA_SST_MIXED : kind;
}

/* One read of `len` (> 0) bytes at file offset `pos`: the key's SST fields. */
static __always_inline void ioa_sst_classify(struct page_key *k, const struct innodb_file *f,
					     __u64 pos, __u64 len)
{
	__u16 first = ioa_sst_kind_at(f, pos);
	__u16 last = ioa_sst_kind_at(f, pos + len - 1);

	k->file_class = f->file_class;
	k->space_id = f->space_id;
	k->index_id = ((__u64)f->segment << 32) | f->object_id; /* the SST's file number */
	k->level = f->sst_level;
	k->flags = 0;
	k->page_type = first == last ? first : ioa_sst_majority(f, pos, len);
}

#endif /* IOATTR_ROCKSDB_SST_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * Block layer: what reached the device, charged to the file it serves.
 *
 * At issue each bio of the request tells whose data it is (the block layer
 * merges neighbouring bios whoever submitted them, so a request can hold a
 * target's bio behind another process's, or the reverse; each owner is
 * charged its own bios' bytes):
 *  - a direct-IO bio (its end_io is iomap_dio_bio_end_io) points at the
 *    iomap_dio, whose kiocb names the file, whoever submitted it (a
 *    connection thread, an io_uring worker, libaio);
 *  - a page-cache bio carries the file's pages, whose mapping names the
 *    inode, so writeback by a kworker is charged to the file, not the kworker;
 *    its bytes are charged page by page to whoever dirtied each page (see
 *    dirtied_pages): a target, or when no target dirtied it while traced,
 *    nobody (tgid 0, kind IOA_KIND_OTHERS_DIRTY) -- a datadir's copy being
 *    written back under the server that now uses it is not the server's IO;
 *  - anything else is classified (journal, metadata, swap, flush, discard,
 *    unknown) instead of dropped.
 * A bio the block layer splits to fit the device's limits (a 1 MiB direct
 * write of 256 scattered user pages on a 254-segment queue; anything over
 * max_sectors_kb) reaches the request as a new bio, chained to the original
 * (end_io bio_chain_endio, bi_private the original) and never seen by
 * block_bio_queue: block_split hands it the original's submitter and
 * remembers the original, whose end_io and iomap_dio name the file.
 *
 * Only the targets' IO is counted: a bio is counted when a target
 * submitted it, or when it is page-cache IO (writeback,
 * readahead) of a file a target touched at the syscall layer
 * (tracked_inodes), which is charged to that target whoever runs it --
 * writeback to the target that dirtied the pages, and pages of such a file
 * no target dirtied to the one row of nobody's (IOA_KIND_OTHERS_DIRTY), so
 * the device's writes to the targets' files add up without being theirs.
 * Everything else -- other processes' IO, direct IO by others even on a
 * target's file, the filesystem journal written by jbd2, ioattr's own reads
 * -- is not counted at all: it is host-wide, not the targets', and leaving
 * it out here keeps it out of every total (report, top, exporter).
 * Latency is issue to final completion.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "compat.bpf.h"
#include "maps.bpf.h"

/* One owner's share of a request: the block layer merges neighbouring bios
 * into one request whoever submitted them (two files' blocks side by side on
 * the disk, a metadata block next to a file's data), so a request is charged
 * bio by bio, not all to its first bio's owner. */
#define RQ_PARTS 4

struct rq_part {
	struct io_key key;
	__u64 bytes;
};

struct rq_pending {
	__u64 ts;       /* issue time; 0: accounted (completed, or taken by whoever zeroed it) */
	__u64 requeued; /* block_rq_requeue saw it: its next issue is the same IO again */
	__u64 first_bio; /* the IO it was issued with (its first bio, sector and length), so */
	__u64 sector;    /* an issue after a requeue is taken for the same IO only when it */
	__u32 len;       /* is: anything else at that address is a new request */
	__u32 nparts;
	struct rq_part part[RQ_PARTS];
};

/* Take an open request's parts for accounting: exactly one of its completion, a
 * later issue of the same struct, or the stop-time sweep gets them (they can run at
 * once on different CPUs: the sweep races the completion). */
static __always_inline bool claim(struct rq_pending *p)
{
	__u64 ts = p->ts;

	return ts && __sync_val_compare_and_swap(&p->ts, ts, 0) == ts;
}

/* now - then, for "was it long ago": a timestamp taken on another CPU may read as
 * a hair later than this CPU's now; that is not long ago (unsigned, it would be) */
static __always_inline bool older_than(__u64 now, __u64 then, __u64 ns)
{
	return (__s64)(now - then) > (__s64)ns;
}

/* request -> what it is and whose. Requests are preallocated per tag, so the
 * same few addresses come back: an entry is reused in place at the next issue
 * and completion marks it done (ts = 0), instead of an insert and a delete
 * per request. */
BPF_LRU_HASH(rq_inflight, __u64, struct rq_pending, 16384); /* key: struct request * */

/* Requests counted without a latency: their completion was never seen by
 * block_rq_complete (see ioattr_rq_sweep), so the issue of the next request
 * in the same struct or the recorder's sweep counted them. Read by the
 * recorder into meta.json (block_untimed). */
BPF_PERCPU_ARRAY(rq_untimed, __u64, 1);

static __always_inline void count_untimed(void)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&rq_untimed, &zero);

	if (v)
		*v += 1;
}

#define SUBMITTER_SELF 0xffffffff

struct submitter {
	__u32 tgid;
	__u32 tid;
	__u64 sector; /* the bio's range when queued: a recycled bio pointer won't fall in it */
	__u64 sectors;
	__u64 ts;
	__u64 parent; /* a split bio: the bio it was split from (struct bio *), else 0 */
};

/* bio -> the target thread that submitted it. A request is often dispatched
 * from another task's context (plug flush, queue run), so the submitter must
 * be caught when the bio is queued, not when the request is issued.
 * Bios come from slab caches, so addresses recur: an entry is overwritten in
 * place when its address is queued again, and issue marks it used (ts = 0,
 * which reads as stale) rather than deleting it. Entries of bios merged into
 * other requests are never used; the LRU drops them. */
BPF_LRU_HASH(bio_submitter, __u64, struct submitter, 16384); /* key: struct bio * */

/* The last target that asked for a device cache flush (an empty
 * REQ_PREFLUSH bio: blkdev_issue_flush() from its fsync). blk-mq then issues
 * a flush request of its own, without a bio, from kblockd; that request is
 * charged to the target waiting for it. Flushes of the journal (jbd2) and of
 * other processes are nobody's. */
struct flush_wait {
	__u32 tgid;
	__u32 tid;
	__u64 ts;
};

BPF_ARRAY(flush_waiter, struct flush_wait, 1);

/* A page-cache folio -> the target that dirtied it: one entry per folio a
 * target made dirty (the writeback tracepoint fires once per clean -> dirty
 * transition, in the dirtier's context: a write, a page fault on a shared
 * mapping, io_uring's workers of the target). Writeback charges each page to
 * its entry's target; a page without one (dirtied by another process, or
 * before the recording started) is nobody's. Entries are not removed at
 * writeback: the folio's next dirtying overwrites (a target) or removes
 * (anyone else) it, so an entry always names the last dirtier seen. Keyed by
 * the mapping, not the inode number, so the dirty path reads nothing. */
#define DIRTIED_MAX 262144 /* 1 GiB of 4 KiB pages dirty at once; beyond, the LRU forgets */

struct dirty_key {
	__u64 mapping; /* struct address_space * */
	__u64 index;   /* the folio's first page's index in the file */
};

BPF_LRU_HASH(dirtied_pages, struct dirty_key, __u32, DIRTIED_MAX);


#define PF_KTHREAD_FLAG 0x00200000 /* include/linux/sched.h PF_KTHREAD */

static __always_inline void note_dirtier(__u64 mapping, __u64 index)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dirty_key dk = { .mapping = mapping, .index = index };
	__u32 tgid = task->tgid, *v;

	v = bpf_map_lookup_elem(&dirtied_pages, &dk);
	if (is_target(tgid) && tgid != cfg.self_tgid) {
		if (!v)
			bpf_map_update_elem(&dirtied_pages, &dk, &tgid, BPF_ANY);
		else if (*v != tgid)
			*v = tgid;
		return;
	}
	/* Someone else's page now -- unless this is writeback itself putting the
	 * folio back dirty (folio_redirty_for_writepage, in a flusher kworker):
	 * it keeps its dirtier. */
	if (v && !(task->flags & PF_KTHREAD_FLAG))
		bpf_map_delete_elem(&dirtied_pages, &dk);
}

/* Folios (6.x); the collector loads exactly one of these (probes.DIRTY_CHOICE). */
SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(ioattr_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	note_dirtier((__u64)mapping, folio->index);
	return 0;
}

/* struct page before folios: the index under its old name */
struct page___pre_folio {
	unsigned long index;
} __attribute__((preserve_access_index));

/* Kernels before folios (< 5.17): the same with a page. */
SEC("tp_btf/writeback_dirty_page")
int BPF_PROG(ioattr_dirty_page, struct page *page, struct address_space *mapping)
{
	note_dirtier((__u64)mapping, BPF_CORE_READ((struct page___pre_folio *)page, index));
	return 0;
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(ioattr_bio_queue, struct bio *bio)
{
	struct task_struct *task;
	struct submitter s, *slot;
	__u64 key = (__u64)bio;
	__u32 tgid;

	/* Direct IO names its submitter itself (dio_bio(), below): nothing to remember,
	 * whoever submits it -- but for a cache flush it asks for, which a flush
	 * request without a bio is charged by. */
	if (cfg.dio_end_io_addr && bpf_rdonly_cast && (__u64)bio->bi_end_io == cfg.dio_end_io_addr &&
	    !(bio->bi_opf & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH))))
		return 0;
	task = bpf_get_current_task_btf();
	tgid = task->tgid;
	if (tgid == cfg.self_tgid && cfg.self_tgid) {
		/* ioattr's own reads (tablespace headers): never charge them to the server */
		s.tgid = SUBMITTER_SELF;
		s.tid = 0;
	} else if (is_target(tgid)) {
		s.tgid = tgid;
		s.tid = owner_tid(task, task->pid);
		pg_aio_owner(task, &s.tgid, &s.tid);
	} else {
		/* Most bios: nothing to remember. But an entry a target's bio left at
		 * this address (it was merged into another request, so never marked
		 * used) must not be taken for this one, or for its splits. */
		if (bpf_map_lookup_elem(&bio_submitter, &key))
			bpf_map_delete_elem(&bio_submitter, &key);
		return 0;
	}
	s.sector = bio->bi_iter.bi_sector;
	s.sectors = bio->bi_iter.bi_size >> 9;
	s.ts = bpf_ktime_get_ns();
	s.parent = 0;
	if (s.tgid != SUBMITTER_SELF && (bio->bi_opf & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)))) {
		__u32 zero = 0;
		struct flush_wait *w = bpf_map_lookup_elem(&flush_waiter, &zero);

		if (w) {
			w->tgid = s.tgid;
			w->tid = s.tid;
			w->ts = s.ts;
		}
	}
	slot = bpf_map_lookup_elem(&bio_submitter, &key);
	if (slot)
		*slot = s;
	else
		bpf_map_update_elem(&bio_submitter, &key, &s, BPF_ANY);
	return 0;
}

/* A bio was split (see the top): the front part is a new bio that goes on to
 * become (part of) a request without passing block_bio_queue. It inherits the
 * submitter of the bio it came from, and remembers that bio, which outlives
 * it (the chain completes the original last) and names a direct IO's file.
 * The remainder keeps the original pointer and its entry. Splits of bios no
 * target submitted are not remembered. */
SEC("tp_btf/block_split")
int BPF_PROG(ioattr_bio_split, struct bio *split, unsigned int new_sector)
{
	__u64 parent = (__u64)split->bi_private; /* bio_chain() ran before the tracepoint */
	__u64 key = (__u64)split;
	struct submitter *ps, s, *slot;

	ps = bpf_map_lookup_elem(&bio_submitter, &parent);
	/* the original's entry, if it is the original's: the split starts within
	 * the range it was queued with, and not long ago */
	if (!ps || !ps->ts || split->bi_iter.bi_sector < ps->sector ||
	    split->bi_iter.bi_sector >= ps->sector + (ps->sectors ?: 1) ||
	    older_than(bpf_ktime_get_ns(), ps->ts, 10000000000ULL))
		return 0;
	s = *ps;
	s.sector = split->bi_iter.bi_sector;
	s.sectors = split->bi_iter.bi_size >> 9;
	s.ts = bpf_ktime_get_ns();
	s.parent = ps->parent ?: parent;
	slot = bpf_map_lookup_elem(&bio_submitter, &key);
	if (slot)
		*slot = s;
	else
		bpf_map_update_elem(&bio_submitter, &key, &s, BPF_ANY);
	return 0;
}

static __always_inline bool current_is_jbd2(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return task->comm[0] == 'j' && task->comm[1] == 'b' && task->comm[2] == 'd' &&
	       task->comm[3] == '2';
}

/* Find the inode a data request serves; returns the kind it is. parent: the
 * bio a split bio came from (0: not a split), whose end_io tells direct IO. */
static __always_inline __u8 classify_bio(struct bio *bio, __u64 parent, __u32 opf, struct inode_id *id,
					 __u8 *api)
{
	*api = IOA_API_OTHER;
	if (!bio)
		return IOA_KIND_UNKNOWN;
	if (cfg.dio_end_io_addr && (__u64)bio->bi_end_io == cfg.dio_end_io_addr) {
		*api = IOA_API_DIRECT;
		if (dio_bio_inode_id(bio, id))
			return IOA_KIND_FILE;
		return IOA_KIND_UNKNOWN;
	}
	if (cfg.dio_end_io_addr && parent) {
		int r = split_dio_inode_id(parent, cfg.dio_end_io_addr, id);

		if (r >= 0) {
			*api = IOA_API_DIRECT;
			return r ? IOA_KIND_FILE : IOA_KIND_UNKNOWN;
		}
	}
	if (opf & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_SWAP)))
		return IOA_KIND_SWAP;
	if (current_is_jbd2())
		return IOA_KIND_JOURNAL;
	if (bio_first_inode_id(bio, id)) {
		*api = IOA_API_BUFFERED;
		if ((id->mode & S_IFMT) == S_IFREG)
			return IOA_KIND_FILE;
		return IOA_KIND_METADATA; /* block-device buffers, directories */
	}
	if (opf & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
		return IOA_KIND_METADATA;
	return IOA_KIND_UNKNOWN;
}

/* The direct-IO bio a request's bio is, or carries a share of: itself, or for a
 * split (end_io bio_chain_endio, bi_private the bio it was split from) the
 * original, at most two splits up; NULL when it is not direct IO. */
static __always_inline struct bio *dio_bio(struct bio *bio)
{
	for (int i = 0; i < 3; i++) {
		__u64 end = (__u64)bio->bi_end_io;

		if (end == cfg.dio_end_io_addr)
			return bio;
		if (end != cfg.chain_end_io_addr || !cfg.chain_end_io_addr || !bio->bi_private)
			return NULL;
		bio = bpf_rdonly_cast(bio->bi_private, bpf_core_type_id_kernel(struct bio));
	}
	return NULL;
}

/* A direct IO's owner, from its iomap_dio (a void *: a bio's bi_private, a
 * btrfs_bio's private): submit.waiter, the task that submitted the IO, set for
 * sync and async IO alike (iomap's __iomap_dio_rw: "dio->submit.waiter =
 * current") and read by the dio until its last bio completes, so it is there
 * at every issue of its bios. No per-bio bookkeeping: the bio_submitter map
 * and block_split are for the rest. Returns whether it is a target's. */
static __always_inline bool dio_task(void *diop, struct io_key *k)
{
	struct iomap_dio *dio = bpf_rdonly_cast(diop, bpf_core_type_id_kernel(struct iomap_dio));
	struct task_struct *task = bpf_rdonly_cast(dio->submit.waiter, bpf_core_type_id_kernel(struct task_struct));
	__u32 tgid = task->tgid; /* 0 if any link is NULL: the loads are fault-safe */

	if (!tgid || tgid == cfg.self_tgid || !is_target(tgid))
		return false;
	k->tgid = tgid;
	k->tid = owner_tid(task, task->pid);
	k->api = IOA_API_DIRECT;
	return true;
}

static __always_inline void key_file(struct io_key *k, bool found, struct inode_id *id)
{
	if (found) {
		k->kind = IOA_KIND_FILE;
		k->ino = id->ino;
		k->dev = id->dev;
	} else {
		k->kind = IOA_KIND_UNKNOWN;
	}
}

/* An iomap direct-IO bio's owner (dio_task) and file (the dio's kiocb). */
static __always_inline bool dio_owner(struct bio *dbio, struct io_key *k)
{
	struct inode_id id = {};

	if (!dio_task(dbio->bi_private, k))
		return false;
	key_file(k, dio_bio_inode_id(dbio, &id), &id);
	return true;
}

/* The btrfs_bio a request's bio is or carries a share of: itself, or for a
 * block-layer split (bio_chain_endio) the bio it was split from, at most two
 * splits up (see dio_bio); NULL when it is not btrfs's. */
static __always_inline struct btrfs_bio *btrfs_bio_up(struct bio *bio)
{
	for (int i = 0; i < 2; i++) {
		if (!cfg.chain_end_io_addr || (__u64)BPF_CORE_READ(bio, bi_end_io) != cfg.chain_end_io_addr)
			break;
		bio = BPF_CORE_READ(bio, bi_private);
	}
	return btrfs_bio_of(bio, cfg.btrfs_simple_end_io_addr, cfg.btrfs_orig_write_end_io_addr,
			    cfg.btrfs_clone_write_end_io_addr);
}

/* btrfs_bio_class()'s answers; BTRFS_OTHER's carries the kind and api above it */
enum { BTRFS_NOT = 0, BTRFS_DIO_TARGET = 1, BTRFS_DIO_OTHER = 2, BTRFS_OTHER = 3 };
#define BTRFS_OTHER_OF(kind, api) (BTRFS_OTHER | ((kind) << 8) | ((api) << 16))

/* A request's bio that is btrfs's own (compat.bpf.h): BTRFS_NOT when it isn't.
 * Direct IO: the owner from its iomap_dio, the file from the btrfs_bio, in k
 * (BTRFS_DIO_TARGET), or not a target's (BTRFS_DIO_OTHER). Anything else
 * (BTRFS_OTHER, with the kind and api): its file's data (its ino and dev in k)
 * or btrfs metadata; its owner is its submitter or, written back, its file's
 * owner, as on any other filesystem. btrfs names the inode itself, page-cache
 * pages or not (compressed extents, direct IO). A subprogram: its reads take no
 * stack of the issue program's frame, which has little left. */
static __noinline int btrfs_bio_class(struct bio *bio, struct io_key *k)
{
	struct inode_id id = {};
	struct btrfs_bio *bt;
	void *dio;

	if (!k || !cfg.btrfs_simple_end_io_addr)
		return BTRFS_NOT;
	bt = btrfs_bio_up(bio);
	if (!bt)
		return BTRFS_NOT;
	dio = btrfs_bio_dio(bt, cfg.btrfs_dio_end_io_addr);
	if (dio && bpf_rdonly_cast) {
		if (!dio_task(dio, k))
			return BTRFS_DIO_OTHER;
		key_file(k, btrfs_bio_inode_id(bt, &id), &id);
		return BTRFS_DIO_TARGET;
	}
	/* none of a file's (scrub, ...); the btree inode (metadata) and btrfs's own
	 * trees' inodes are numbered below 256 */
	if (!btrfs_bio_inode_id(bt, &id) || id.ino < 256 || (id.mode & S_IFMT) != S_IFREG)
		return BTRFS_OTHER_OF(IOA_KIND_METADATA, IOA_API_OTHER);
	k->ino = id.ino;
	k->dev = id.dev;
	return BTRFS_OTHER_OF(IOA_KIND_FILE, dio ? IOA_API_DIRECT : IOA_API_BUFFERED);
}

/* Whose one bio of a request is: fills k's owner and file from the bio
 * (k arrives with the request's layer, op, dev and phase, and kind FILE for
 * data, DISCARD/FLUSH otherwise); returns whether it is the targets' IO. */
static __always_inline bool bio_owner(struct bio *bio, __u32 opf, __u64 now, struct io_key *k)
{
	__u64 bio_key = (__u64)bio;
	__u64 bs = bio->bi_iter.bi_sector;
	struct submitter *sub;
	struct inode_id id = {};
	__u8 api = IOA_API_OTHER;
	__u64 parent = 0;
	bool counted = false;

	int bt = BTRFS_NOT;

	if (k->kind == IOA_KIND_FILE && cfg.dio_end_io_addr && bpf_rdonly_cast) {
		struct bio *dbio = dio_bio(bio);

		if (dbio)
			return dio_owner(dbio, k);
	}
	/* btrfs's bios, or a split of one (one load here: the subprogram only for them) */
	if (k->kind == IOA_KIND_FILE && cfg.btrfs_simple_end_io_addr &&
	    ((__u64)bio->bi_end_io == cfg.btrfs_simple_end_io_addr ||
	     (__u64)bio->bi_end_io == cfg.btrfs_orig_write_end_io_addr ||
	     (__u64)bio->bi_end_io == cfg.btrfs_clone_write_end_io_addr ||
	     (cfg.chain_end_io_addr && (__u64)bio->bi_end_io == cfg.chain_end_io_addr))) {
		bt = btrfs_bio_class(bio, k);
		if (bt == BTRFS_DIO_TARGET || bt == BTRFS_DIO_OTHER)
			return bt == BTRFS_DIO_TARGET;
	}
	sub = bpf_map_lookup_elem(&bio_submitter, &bio_key);

	/* An entry left by a bio that was merged into another request must not be
	 * taken for a later bio at the same address; a split bio keeps its pointer
	 * and moves forward within its range. */
	if (sub && (!sub->ts || bs < sub->sector || bs >= sub->sector + (sub->sectors ?: 1) ||
		    older_than(now, sub->ts, 10000000000ULL))) {
		bpf_map_delete_elem(&bio_submitter, &bio_key);
		sub = NULL;
	}
	if (sub) {
		sub->ts = 0; /* used (see bio_submitter) */
		if (sub->tgid == SUBMITTER_SELF)
			return false; /* ioattr's own reads (tablespace headers): nobody's */
		k->tgid = sub->tgid;
		k->tid = sub->tid;
		parent = sub->parent;
		counted = true;
	} else if (k->kind != IOA_KIND_FILE || k->op != IOA_OP_WRITE) {
		return false; /* only writeback of a target's file is a target's without submitting it */
	}
	if (k->kind != IOA_KIND_FILE)
		return counted;
	if ((bt & 0xff) == BTRFS_OTHER) {
		k->kind = (bt >> 8) & 0xff;
		api = (bt >> 16) & 0xff;
		id.ino = k->ino;
		id.dev = k->dev;
	} else {
		k->kind = classify_bio(bio, parent, opf, &id, &api);
	}
	k->api = api;
	if (k->kind == IOA_KIND_FILE && k->op == IOA_OP_WRITE && api == IOA_API_BUFFERED) {
		/* Writeback: dirty pages belong to their file, whoever writes them
		 * back (a kworker, a target's fsync, another process under memory
		 * pressure). A target's file is charged to the target that touched
		 * it; a file no target touched is someone else's. Direct IO and reads
		 * are their submitter's own, even before the syscall layer has seen
		 * the file complete an IO. */
		struct inode_key ik = { .dev = id.dev, .ino = id.ino };
		__u32 *owner = bpf_map_lookup_elem(&tracked_inodes, &ik);

		counted = owner != NULL;
		if (owner && *owner != k->tgid) {
			k->tgid = *owner;
			k->tid = 0;
		}
	}
	if (k->kind == IOA_KIND_FILE) {
		k->ino = id.ino;
		k->dev = id.dev;
	}
	return counted;
}

/* Add bytes of owner k to a request's parts. A global function: verified
 * once, not at every call. */
__noinline int add_part(struct rq_pending *p, struct io_key *k, __u64 bytes)
{
	__u32 n;

	if (!p || !k)
		return 0;
	n = p->nparts;
	for (int i = 0; i < RQ_PARTS; i++) {
		struct rq_part *q = &p->part[i];

		if (i >= n)
			break;
		if (q->key.tgid == k->tgid && q->key.tid == k->tid && q->key.ino == k->ino &&
		    q->key.dev == k->dev && q->key.kind == k->kind && q->key.api == k->api) {
			q->bytes += bytes;
			return 0;
		}
	}
	if (n < RQ_PARTS) {
		p->part[n & (RQ_PARTS - 1)].key = *k;
		p->part[n & (RQ_PARTS - 1)].bytes = bytes;
		p->nparts = n + 1;
		return 0;
	}
	/* More owners than parts in one request: writeback merges the blocks of
	 * neighbouring small files (a copied datadir's .frm files: 28 files in one
	 * request, seen). Each further owner is counted now, without a latency,
	 * rather than charged to another's part. */
	account(k, bytes, 0, false);
	return 0;
}

/* Count one part. Global: the verifier walks account()'s branches once here,
 * instead of once per unrolled part of account_parts (4x the states: most of
 * this object's load time, ~1 s at every attach). */
__noinline int account_part(struct rq_part *q, __u64 lat, int has_lat)
{
	if (!q)
		return 0;
	account(&q->key, q->bytes, lat, has_lat);
	return 0;
}

/* Count every part of a request (has_lat: with the request's latency). Global,
 * like add_part. */
__noinline int account_parts(struct rq_pending *p, __u64 lat, int has_lat)
{
	if (!p)
		return 0;
	for (int i = 0; i < RQ_PARTS; i++) {
		if (i >= p->nparts)
			break;
		account_part(&p->part[i], lat, has_lat);
	}
	return 0;
}

#define WB_OWNERS 4    /* [0]: nobody (no target dirtied the page), then targets */
#define WB_MAX_STEPS 4096 /* pages, plus one step per bio_vec: a 4 MiB bio of 4 KiB folios is 2048 */
#define WB_PAGE_SHIFT 12

struct wb_walk {
	__u64 vec;    /* the struct bio_vec being walked */
	__u64 folio;  /* the last folio looked up, and its dirtier (0: nobody) */
	__u32 tgid;
	__u32 off;    /* bytes of that bio_vec already walked */
	__u32 left;   /* bytes of the bio not walked yet */
	__u32 who[WB_OWNERS];
	__u64 bytes[WB_OWNERS];
};

/* bpf_loop step: the next page (or what of it the bio holds) of a writeback
 * bio; the folio it belongs to names its dirtier. */
static long wb_step(__u64 index, void *ctx)
{
	struct wb_walk *w = ctx;
	struct bio_vec *bv;
	struct dirty_key dk;
	__u64 pos, page, head, folio, chunk;
	__u32 *v, len;

	if (!w->left)
		return 1;
	bv = bpf_rdonly_cast((void *)w->vec, bpf_core_type_id_kernel(struct bio_vec));
	len = bv->bv_len;
	if (w->off >= len) { /* the next bio_vec */
		w->vec += sizeof(struct bio_vec);
		w->off = 0;
		return len ? 0 : 1; /* an empty one: the vector is not what we think; stop */
	}
	pos = (__u64)bv->bv_offset + w->off;
	chunk = (1U << WB_PAGE_SHIFT) - (pos & ((1U << WB_PAGE_SHIFT) - 1));
	if (chunk > len - w->off)
		chunk = len - w->off;
	if (chunk > w->left)
		chunk = w->left;
	/* a multi-page bio_vec: its pages' structs are consecutive (vmemmap) */
	page = (__u64)bv->bv_page + (pos >> WB_PAGE_SHIFT) * bpf_core_type_size(struct page);
	/* a probe read: compound_head shares its word with list heads */
	head = BPF_CORE_READ((struct page *)page, compound_head);
	folio = head & 1 ? head - 1 : page;
	if (folio != w->folio) {
		struct folio *f = (struct folio *)folio;

		dk.mapping = (__u64)BPF_CORE_READ(f, mapping);
		dk.index = BPF_CORE_READ(f, index);
		v = bpf_map_lookup_elem(&dirtied_pages, &dk);
		w->folio = folio;
		w->tgid = v ? *v : 0;
	}
	/* a new owner takes a free slot; a fifth shares the last (not seen) */
	if (!w->tgid)
		w->bytes[0] += chunk;
	else if (w->who[1] == w->tgid || !w->who[1])
		w->who[1] = w->tgid, w->bytes[1] += chunk;
	else if (w->who[2] == w->tgid || !w->who[2])
		w->who[2] = w->tgid, w->bytes[2] += chunk;
	else
		w->who[3] = w->tgid, w->bytes[3] += chunk;
	w->off += chunk;
	w->left -= chunk;
	return 0;
}

/* The writeback bio a step of the bio walk found, for wb_split after the step
 * (the call inside the step, inlined into ioattr_rq_issue, overflows its
 * stack): the bio's key, the bio, and whether there is one. */
struct wb_todo {
	struct io_key key;
	__u64 bio;
	__u32 wb;
	__u32 pad;
};

BPF_PERCPU_ARRAY(wb_todo, struct wb_todo, 1);

/* One dirtier's bytes of a writeback bio (who 0: nobody's) as a part of the
 * request. Global: verified once, not on every path of wb_split's loop. */
__noinline int wb_part(struct rq_pending *p, struct io_key *k, __u32 who, __u64 bytes)
{
	struct io_key o;

	if (!p || !k || !bytes)
		return 0;
	o = *k;
	if (!who) {
		o.tgid = o.tid = 0;
		o.kind = IOA_KIND_OTHERS_DIRTY;
	} else if (who != k->tgid) {
		o.tgid = who;
		o.tid = 0;
	}
	add_part(p, &o, bytes);
	return 0;
}

/* A writeback bio's bytes, page by page to whoever dirtied them: each target
 * its own, the rest nobody's (kind IOA_KIND_OTHERS_DIRTY, tgid 0). Only
 * writeback bio_owner counts comes here: of a file a target touched
 * (tracked_inodes). The bio and its key (wb_todo, taken): the bio's file, its
 * owner, and its submitter when a target submitted it (an
 * fsync), whose thread keeps its own pages. Global: verified once. */
__noinline int wb_split(struct rq_pending *p)
{
	struct wb_walk w = {};
	struct wb_todo *t;
	struct io_key *k;
	struct bio *bio;
	__u32 zero = 0;

	t = bpf_map_lookup_elem(&wb_todo, &zero);
	if (!p || !t || !t->wb)
		return 0;
	t->wb = 0;
	k = &t->key;
	bio = bpf_rdonly_cast((void *)t->bio, bpf_core_type_id_kernel(struct bio));
	/* a probe read: a scalar, not a pointer the verifier would track through the loop */
	w.vec = (__u64)BPF_CORE_READ(bio, bi_io_vec) + (__u64)bio->bi_iter.bi_idx * sizeof(struct bio_vec);
	w.off = bio->bi_iter.bi_bvec_done;
	w.left = bio->bi_iter.bi_size;
	bpf_loop(WB_MAX_STEPS, wb_step, &w, 0);
	w.bytes[0] += w.left; /* past the steps (not seen): nobody's */
	for (int i = 0; i < WB_OWNERS; i++)
		wb_part(p, k, w.who[i], w.bytes[i]);
	return 0;
}

struct bio_walk {
	struct rq_pending p;
	struct io_key base; /* the request's layer, op, dev, phase */
	__u64 next;         /* the next bio (struct bio *), 0 at the end */
	__u64 now;
	__u64 walked;       /* bytes of the bios seen */
	struct io_key first; /* the first bio's owner, when first_counted */
	__u32 opf;
	__u32 first_counted;
};

/* One step of the bio walk: the request's next bio. Inlined into the
 * one-bio path (a subprogram call returns through the SRSO return thunk on
 * this kind of host) and wrapped by walk_bio for bpf_loop. */
static __always_inline long walk_bio_step(__u64 index, void *ctx)
{
	struct bio_walk *w = ctx;
	struct bio *bio;
	struct io_key k;
	__u64 bytes;

	if (!w->next)
		return 1;
	bio = bpf_rdonly_cast((void *)w->next, bpf_core_type_id_kernel(struct bio));
	w->next = (__u64)bio->bi_next;
	bytes = bio->bi_iter.bi_size;
	w->walked += bytes;
	k = w->base;
	if (bio_owner(bio, w->opf, w->now, &k)) {
		/* writeback: split by dirtier (wb_split, after the step) */
		if (cfg.dirtiers && k.kind == IOA_KIND_FILE && k.op == IOA_OP_WRITE && k.api == IOA_API_BUFFERED) {
			__u32 zero = 0;
			struct wb_todo *t = bpf_map_lookup_elem(&wb_todo, &zero);

			if (t) {
				t->key = k;
				t->bio = (__u64)bio;
				t->wb = 1;
			}
			return 0;
		}
		if (!w->p.nparts) { /* the first owner (a one-bio request's only one): no call */
			w->p.part[0].key = k;
			w->p.part[0].bytes = bytes;
			w->p.nparts = 1;
		} else {
			add_part(&w->p, &k, bytes);
		}
		if (!index) {
			w->first = k;
			w->first_counted = 1;
		}
	}
	return 0;
}

/* bpf_loop step: the request's next bio. */
static long walk_bio(__u64 index, void *ctx)
{
	long r = walk_bio_step(index, ctx);

	wb_split(&((struct bio_walk *)ctx)->p);
	return r;
}

#define RQ_MAX_BIOS 512 /* a request of max_sectors_kb 4096 in 4 KiB bios has 1024; beyond: see below */

SEC("tp_btf/block_rq_issue")
int BPF_PROG(ioattr_rq_issue, struct request *rq)
{
	__u32 opf = rq->cmd_flags;
	__u32 reqop = opf & 0xff;
	struct bio_walk w = {};
	struct rq_pending *slot;
	struct bio *bio = rq->bio;
	struct io_key *base = &w.base;
	__u64 key = (__u64)rq;
	__u64 now = bpf_ktime_get_ns();
	__u64 data_len = rq->__data_len;

	base->layer = IOA_LAYER_BLOCK;
	base->phase = current_phase(); /* the phase in force when the request was issued */
	base->api = IOA_API_OTHER;
	base->dev = request_dev(rq);
	if (reqop == bpf_core_enum_value(enum req_op, REQ_OP_READ)) {
		base->op = IOA_OP_READ;
	} else if (reqop == bpf_core_enum_value(enum req_op, REQ_OP_WRITE)) {
		base->op = IOA_OP_WRITE;
	} else if (reqop == bpf_core_enum_value(enum req_op, REQ_OP_FLUSH)) {
		base->op = IOA_OP_FSYNC;
		base->kind = IOA_KIND_FLUSH;
		data_len = 0;
	} else if (reqop == bpf_core_enum_value(enum req_op, REQ_OP_DISCARD) ||
		   reqop == bpf_core_enum_value(enum req_op, REQ_OP_SECURE_ERASE) ||
		   reqop == bpf_core_enum_value(enum req_op, REQ_OP_WRITE_ZEROES)) {
		base->op = IOA_OP_WRITE;
		base->kind = IOA_KIND_DISCARD;
		data_len = 0; /* no data moved */
	} else {
		return 0; /* zone management and driver-private requests */
	}
	/* in place when this request was seen before (its completion can't run
	 * before this program returns) */
	slot = bpf_map_lookup_elem(&rq_inflight, &key);
	if (slot && slot->ts && slot->requeued && slot->first_bio == (__u64)bio &&
	    slot->sector == rq->__sector && slot->len == (__u32)data_len) {
		slot->requeued = 0;
		return 0; /* a requeued request issued again: the same IO, timed from its first issue */
	}
	if (bio) {
		if (bpf_rdonly_cast) {
			/* every bio of a data request, each charged to its own
			 * owner; only the first of any other (its bytes are 0) */
			w.next = (__u64)bio;
			w.now = now;
			w.opf = opf;
			/* one bio (a page read, most sync IO) or no data: one step, called
			 * directly -- bpf_loop's helper call and indirect callbacks cost more
			 * than the step itself on a retpoline+SRSO host */
			if (!data_len || !bio->bi_next) {
				walk_bio_step(0, &w);
				wb_split(&w.p);
			} else
				bpf_loop(RQ_MAX_BIOS, walk_bio, &w, 0);
			if (!data_len && w.p.nparts)
				w.p.part[0].bytes = 0;
			/* more than RQ_MAX_BIOS bios: the rest is the first bio's owner's */
			if (data_len > w.walked && w.first_counted)
				add_part(&w.p, &w.first, data_len - w.walked);
		} else {
			/* no cast for the bio chain: the request is its first bio's owner's
			 * (w.first as the scratch key: the stack is full) */
			w.first = *base;
			if (bio_owner(bio, opf, now, &w.first))
				add_part(&w.p, &w.first, data_len);
		}
	} else if (base->op == IOA_OP_FSYNC) {
		/* the flush machinery's own request, which carries no bio */
		__u32 zero = 0;
		struct flush_wait *fw = bpf_map_lookup_elem(&flush_waiter, &zero);

		if (fw && fw->ts && now - fw->ts < 1000000000ULL) {
			struct io_key k = *base;

			k.tgid = fw->tgid;
			k.tid = fw->tid;
			fw->ts = 0;
			add_part(&w.p, &k, 0);
		}
	}
	/* A request struct still open from an earlier counted request finished
	 * without us seeing its completion (seen for ~1% of requests under load,
	 * by bpftrace on the plain tracepoints too). Its bytes happened: count
	 * them, without a latency. (Sync direct IO reuses the same request and
	 * bio again and again, so the first bio can't tell a reuse from a
	 * requeue: block_rq_requeue does.) */
	if (slot && claim(slot)) {
		account_parts(slot, 0, 0);
		count_untimed();
	}
	if (!w.p.nparts)
		return 0; /* not the targets' IO: left out (see the top) */
	w.p.ts = now;
	w.p.first_bio = (__u64)bio;
	w.p.sector = rq->__sector;
	w.p.len = (__u32)data_len;
	if (slot)
		*slot = w.p;
	else if (bpf_map_update_elem(&rq_inflight, &key, &w.p, BPF_ANY))
		count_drop(IOA_DROP_INFLIGHT_FULL);
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(ioattr_rq_requeue, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct rq_pending *p = bpf_map_lookup_elem(&rq_inflight, &key);

	if (p && p->ts)
		p->requeued = 1;
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(ioattr_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct rq_pending *p = bpf_map_lookup_elem(&rq_inflight, &key);
	__u64 lat;

	__u64 ts;

	if (!p || !p->ts)
		return 0; /* issued before we attached, or already completed */
	/* a partial completion: wait for the one that finishes the request */
	if (rq->__data_len && nr_bytes < rq->__data_len)
		return 0;
	ts = p->ts;
	if (!claim(p))
		return 0; /* the stop-time sweep took it */
	lat = bpf_ktime_get_ns() - ts;
	if (p->nparts == 1) /* one owner (a page read): no subprogram call */
		account(&p->part[0].key, p->part[0].bytes, lat, true);
	else
		account_parts(p, lat, 1);
	return 0;
}

struct sweep_ctx {
	__u64 now;
	__u64 min_age_ns;
	__u32 finished_only;
	__u32 pad;
	__u64 swept;
};

/* mq_rq_state's in-flight value; enum values are read through CO-RE so a kernel
 * that renumbers them still compares right */
static __always_inline bool rq_in_flight(__u64 rq)
{
	int state = 0;

	if (bpf_probe_read_kernel(&state, sizeof(state),
				  (void *)rq + bpf_core_field_offset(struct request, state)))
		return true; /* unreadable: leave it for its completion or the stop */
	return state == bpf_core_enum_value(enum mq_rq_state, MQ_RQ_IN_FLIGHT);
}

static long sweep_one(struct bpf_map *map, __u64 *key, struct rq_pending *p, struct sweep_ctx *c)
{
	__u64 ts = p->ts;

	if (!ts)
		return 0;
	if (c->min_age_ns && !older_than(c->now, ts, c->min_age_ns))
		return 0;
	if (c->finished_only && rq_in_flight(*key))
		return 0;
	if (claim(p)) {
		account_parts(p, 0, 0);
		c->swept++;
	}
	return 0;
}

/* Count open requests whose completion block_rq_complete did not deliver, run by
 * the recorder with BPF_PROG_TEST_RUN (args: struct rq_sweep_args).
 *
 * Before every drain (finished_only, min_age_ns ~1 s): requests the block layer has
 * finished (the struct's state is no longer in flight) long after their issue. The
 * device finishes them, but no BPF program ran for their block_rq_complete, and
 * the programs' recursion_misses stay 0 (0.03-0.3% of completions with the disk
 * saturated: benchmarks/block_completion_coverage.sh, docs/block.md). Counting
 * them at the next drain keeps every interval's bytes in that interval instead of
 * waiting for the same struct's next issue, which may never come.
 *
 * At the stop (no age, not only finished): every request still open, so no issued
 * request's bytes stay in rq_inflight where no drain reads them. Either way the
 * completion, if it comes later, finds the request taken (claim()). */
SEC("syscall")
int ioattr_rq_sweep(struct rq_sweep_args *args)
{
	struct sweep_ctx c = {
		.now = bpf_ktime_get_ns(),
		.min_age_ns = args->min_age_ns,
		.finished_only = args->finished_only,
	};
	__u32 zero = 0;
	__u64 *v;

	bpf_for_each_map_elem(&rq_inflight, sweep_one, &c, 0);
	args->swept = c.swept;
	v = bpf_map_lookup_elem(&rq_untimed, &zero);
	if (v)
		*v += c.swept;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring: submissions by target threads, matched to their completions.
 *
 * The submission tracepoint fires in the submitting thread (also when the
 * work is later punted to an iou-wrk worker or done by SQPOLL, which are
 * threads of the same process), so the IO is charged to the thread that
 * asked for it. The file is read from the request at completion, when the
 * kernel has resolved it (fixed files included). Latency is submission to
 * completion.
 *
 * Both programs run on every io_uring request of every process, so they are
 * kept cheap (each helper call costs ~25-40 ns on a VM with retpolines):
 * tp_btf, so the request is read with plain fault-safe loads rather than one
 * probe read per field (the argument layouts are in compat.bpf.h); and the
 * request in flight sits in a fixed table instead of being inserted into and
 * deleted from a hash per op (below). A completion of a request nobody
 * recorded costs one table probe.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "compat.bpf.h"
#include "maps.bpf.h"
#include "pages.bpf.h"
#include "thd_stage.bpf.h"

/*
 * Requests in flight: sets of URING_WAYS slots, the set chosen by a hash of
 * the request's address. Submission claims a free slot with a
 * compare-and-swap of its tag (the address), completion reads it and frees
 * it (tag 0): an array lookup, which the verifier inlines, instead of a hash
 * insert and delete. io_kiocbs come from a slab cache, so addresses recur;
 * a slot still tagged with the address being submitted belonged to an
 * earlier request there whose completion was not seen (a CQE-less request),
 * and is reused. Only the submitter writes a claimed slot, and a request's
 * completion cannot start before its submission program has returned. A set
 * with every slot taken spills into the LRU hash uring_spill, which a
 * completion looks at only while it holds something.
 */
#ifndef URING_SET_BITS
#define URING_SET_BITS 12
#endif
#define URING_SETS (1U << URING_SET_BITS)
#ifndef URING_WAYS
#define URING_WAYS 4
#endif

struct uring_slot {
	__u64 req;    /* the request's address while in flight; 0: free */
	__u64 ring;   /* its struct io_ring_ctx *: an address reused by another ring's request doesn't match */
	__u64 ts;
	__u64 buf;    /* reads: where the pages will land, classified at completion */
	__u64 pos;
	__u64 digest;
	__u32 tgid;
	__u32 tid;
	__u8 op;
	__u8 stage;
	__u16 phase;  /* the phase in force at submission */
	__u32 len;    /* reads: the bytes at buf (a READV's first iovec), classified at most */
};

struct uring_set {
	struct uring_slot w[URING_WAYS];
};

BPF_ARRAY(uring_sets, struct uring_set, URING_SETS);

BPF_LRU_HASH(uring_spill, __u64, struct uring_slot, 4096); /* key: struct io_kiocb * */

__u64 uring_spilled = 0; /* entries put into uring_spill and not yet taken out */

/* The set of a request. At submission the request is a BTF pointer, on
 * which the verifier allows no multiplication: a 32-bit move turns its low
 * half into a plain number (allowed for root), and the same code is used at
 * completion, where the request is already a number. */
static __always_inline struct uring_set *uring_set_of(__u64 req)
{
	__u64 lo;
	__u32 idx;

	asm volatile("r1 = %[p]; w1 = w1; %[o] = r1" : [o] "=r"(lo) : [p] "r"(req) : "r1");
	idx = (__u32)(lo * 0x9E3779B1ULL) >> (32 - URING_SET_BITS);
	return bpf_map_lookup_elem(&uring_sets, &idx);
}

static __always_inline struct uring_slot *uring_slot_find(struct uring_set *s, __u64 req)
{
	int i;

#pragma unroll
	for (i = 0; i < URING_WAYS; i++)
		if (s->w[i].req == req)
			return &s->w[i];
	return NULL;
}

static __always_inline struct uring_slot *uring_slot_claim(struct uring_set *s, __u64 req)
{
	struct uring_slot *slot = uring_slot_find(s, req);
	int i;

	if (slot)
		return slot; /* the last request at this address completed unseen */
#pragma unroll
	for (i = 0; i < URING_WAYS; i++)
		if (!s->w[i].req && __sync_val_compare_and_swap(&s->w[i].req, 0, req) == 0)
			return &s->w[i];
	return NULL;
}

/* Keep p in flight: in the table, else in the spill hash. */
static __always_inline void uring_keep(__u64 req, struct uring_slot *p)
{
	struct uring_set *s = uring_set_of(req);
	struct uring_slot *slot = s ? uring_slot_claim(s, req) : NULL;

	if (slot) {
		*slot = *p; /* p->req == req: the tag stays */
		return;
	}
	slot = bpf_map_lookup_elem(&uring_spill, &req);
	if (slot)
		*slot = *p;
	else if (bpf_map_update_elem(&uring_spill, &req, p, BPF_NOEXIST))
		count_drop(IOA_DROP_INFLIGHT_FULL);
	else
		__sync_fetch_and_add(&uring_spilled, 1);
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(ioattr_uring_submit, struct io_kiocb *req)
{
	struct task_struct *task;
	struct task_io_state *st;
	struct uring_slot p = {};
	__u8 op, api;

	if (!uring_op(req->opcode, &op, &api))
		return 0;
	task = bpf_get_current_task_btf();
	p.tgid = task->tgid;
	if (!is_target(p.tgid))
		return 0;
	p.tid = task->pid;
	p.req = (__u64)req;
	p.ring = (__u64)req->ctx;
	p.op = op;
	p.phase = current_phase();
	st = bpf_task_storage_get(&task_state, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (st) {
		p.stage = io_stage(task, st, p.tgid);
		p.digest = st->digest;
		if (!st->named) {
			/* the completion may run elsewhere: name the submitter, once */
			st->named = 1;
			remember_comm(((__u64)p.tgid << 32) | p.tid);
		}
	}
	if (op == IOA_OP_WRITE && !cfg.innodb_pages) {
		/* written back before it completes, maybe: see syscalls.bpf.c, sys_enter_body */
		struct inode_id id;
		int fd;

		if (uring_req_fd(req, &fd) && fd_inode_id(task, fd, &id) && is_data_inode(id.mode))
			track_inode(id.dev, id.ino, p.tgid);
	}
	if (cfg.innodb_pages && op != IOA_OP_FSYNC) {
		__u64 buf, len, pos;
		struct inode_id id;
		int fd;

		if (uring_req_fd(req, &fd) && uring_rw_buffer(req, req->opcode, &buf, &len, &pos) &&
		    fd_inode_id(task, fd, &id)) {
			struct innodb_file *f = innodb_file_of(id.dev, id.ino);

			if (op == IOA_OP_WRITE && is_data_inode(id.mode))
				track_inode(id.dev, id.ino, p.tgid);

			if (f && op == IOA_OP_WRITE) {
				struct page_key t = { .tgid = p.tgid, .tid = p.tid, .op = IOA_OP_WRITE,
						      .api = IOA_API_IO_URING, .stage = p.stage,
						      .digest = p.digest, .phase = p.phase };

				classify_pages(&t, f, buf, len, pos);
			} else if (f) {
				p.buf = buf;
				p.pos = pos;
				p.len = len;
			}
		}
	}
	p.ts = bpf_ktime_get_ns();
	uring_keep(p.req, &p);
	return 0;
}

/* Charge a completed request to its submitter. */
static __always_inline void uring_done(void *req, struct uring_slot *p)
{
	struct inode_id id;
	__s32 res;

	if (!uring_req_result(req, &res, &id) || res < 0 || !is_data_inode(id.mode))
		return;
	{
		struct io_key key = {
			.tgid = p->tgid, .tid = p->tid, .ino = id.ino, .dev = id.dev,
			.layer = IOA_LAYER_SYSCALL, .op = p->op, .api = IOA_API_IO_URING,
			.kind = IOA_KIND_FILE, .stage = p->stage, .digest = p->digest, .phase = p->phase,
		};
		account(&key, p->op == IOA_OP_FSYNC ? 0 : res, bpf_ktime_get_ns() - p->ts, true);
	}
	if (cfg.innodb_pages && p->buf && p->op == IOA_OP_READ && res > 0) {
		struct innodb_file *f = innodb_file_of(id.dev, id.ino);

		if (!f)
			return;
		/* the pages are in the submitter's memory: read them only from its process */
		if ((bpf_get_current_pid_tgid() >> 32) == p->tgid) {
			struct page_key t = { .tgid = p->tgid, .tid = p->tid, .op = IOA_OP_READ,
					      .api = IOA_API_IO_URING, .stage = p->stage,
					      .digest = p->digest, .phase = p->phase };

			/* a READV of several iovecs: only its first buffer is known here, so the
			 * pages read into the others are not classified (their bytes are counted) */
			classify_pages(&t, f, p->buf, (__u32)res < p->len ? (__u32)res : p->len, p->pos);
		} else {
			struct page_key t = { .tgid = p->tgid, .tid = p->tid, .op = IOA_OP_READ,
					      .api = IOA_API_IO_URING, .stage = p->stage,
					      .digest = p->digest, .phase = p->phase, .space_id = f->space_id,
					      .file_class = f->file_class, .level = IOA_LEVEL_NONE,
					      .flags = IOA_PAGE_F_UNREADABLE };

			/* completed in another process's context: count, don't guess */
			account_pages(&t, (__u64)res >> (f->page_shift & 31), res);
		}
	}
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(ioattr_uring_complete, void *ring, void *req)
{
	__u64 key = (__u64)req;
	struct uring_set *s;
	struct uring_slot *p;
	bool spilled = false;

	if (!req)
		return 0; /* a CQE of no request */
	s = uring_set_of(key);
	p = s ? uring_slot_find(s, key) : NULL;
	if (!p) {
		if (!uring_spilled)
			return 0;
		p = bpf_map_lookup_elem(&uring_spill, &key);
		if (!p)
			return 0;
		spilled = true;
	}
	/* another ring's request at the address of one whose completion was
	 * not seen: that one is over, and this one is not ours */
	if (p->ring == uring_req_ring(req))
		uring_done(req, p);
	if (!spilled)
		__sync_lock_test_and_set(&p->req, 0); /* free the slot, after the reads above */
	else if (!bpf_map_delete_elem(&uring_spill, &key))
		__sync_fetch_and_sub(&uring_spilled, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

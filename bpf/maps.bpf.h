/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps shared by every probe set, and the helpers that update them.
 * Each *.bpf.c object declares these; the loader creates them once and
 * hands the same fds to every object it loads (bpf_map__reuse_fd), so
 * all probe sets aggregate into one io_stats table.
 */
#ifndef IOATTR_MAPS_BPF_H
#define IOATTR_MAPS_BPF_H

#include "ioattr.h"
#include "map_defs.bpf.h"

#define MAX_TARGETS 4096
#define MAX_STATS 65536
#define MAX_TRACKED 65536

const volatile struct ioattr_config cfg = {};

/* tgid -> 1: the processes being traced. Maintained by userspace, and by
 * targets.bpf.c when following forks. */
BPF_HASH(targets, __u32, __u32, MAX_TARGETS);

/* A direct-mapped front cache of `targets`, so the per-event check is an
 * array lookup (inlined by the verifier) rather than a ~35 ns hash helper call.
 * Slot tgid & TARGET_SLOT_MASK holds: that tgid when it is the only target
 * mapping there; TARGET_SLOT_SHARED when two or more do (or one might: then
 * is_target asks the hash); 0 when none does. Kept by collectors/targets.py
 * (recomputed from the hash on every add/remove) and by targets.bpf.c
 * (fork following: compare-and-swap 0 -> tgid, else SHARED). */
#define TARGET_SLOTS 4096
#define TARGET_SLOT_MASK (TARGET_SLOTS - 1)
#define TARGET_SLOT_SHARED 0xffffffffULL

/* 64-bit values: the BPF backend (without -mcpu=v3) has only 64-bit cmpxchg */
BPF_ARRAY(target_slots, __u64, TARGET_SLOTS);

/* The aggregate: cumulative per key; userspace computes per-interval deltas. */
BPF_HASH(io_stats, struct io_key, struct io_val, MAX_STATS);

/* [0]: the current phase's sequence number (ioattr.h, "Phases"). 64-bit for
 * the atomic add (see target_slots). Written by userspace (starts at 1) and by
 * stage.bpf.c when a statement carries a phase marker. */
BPF_ARRAY(phase_seq, __u64, 1);

/* The phase in force now, as keys carry it (an inlined array lookup). */
static __always_inline __u16 current_phase(void)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&phase_seq, &zero);

	return v ? (__u16)*v : IOA_PHASE_NOW;
}

/* Files the targets did IO on -> owning tgid, so the block layer can charge
 * writeback and readahead of those files to them. */
BPF_LRU_HASH(tracked_inodes, struct inode_key, __u32, MAX_TRACKED);

BPF_PERCPU_ARRAY(drops, __u64, IOA_DROP_SLOTS);

/* An all-zero value to insert new io_stats keys without a 536-byte stack copy.
 * Never written. */
BPF_PERCPU_ARRAY(zero_val, struct io_val, 1);

/* Per-thread state of the IO syscall in flight (task storage beats a tid hash). */
struct task_io_state {
	__u64 ts;
	__u64 ino;
	__u64 arg;    /* saved user pointer: io_getevents events, open filename, IO buffer */
	__u64 pos;    /* file offset of a pread/pwrite */
	__u64 digest; /* statement digest, set by the stage uprobes */
	__u32 dev;
	__s32 fd;     /* open: dirfd */
	__s32 nr;     /* syscall number in flight */
	__u8 active;
	__u8 op;
	__u8 api;
	__u8 stage;   /* enum ioattr_stage, set by the stage uprobes */
	__u8 named;   /* this thread's name was sent (remember_comm), for probes that
	               * would otherwise try on every IO (bpf/uring.bpf.c) */
	__u8 est_depth; /* estimate probes entered and not yet returned (bpf/stage.bpf.c) */
	__u16 phase;  /* the phase when the IO syscall in flight was issued */
	__u8 est_saved; /* the stage the outermost estimate probe interrupted, restored on return */
	__u8 wire_state; /* bpf/stage.bpf.c's MySQL protocol reader: what the next recvfrom on wire_fd is */
	__u8 wire_stmt;  /* the wire program started this thread's statement (the fallback uprobe skips it) */
	__u8 wire_proto; /* bpf/stage.bpf.c: 0 not known yet, WIRE_PROTO_MYSQL, WIRE_PROTO_PG or
	                  * WIRE_PROTO_PG_STAGED (the targets value's IOA_TARGET_PG_WIRE and
	                  * IOA_TARGET_PG_STAGES, looked up once per thread) */
	__s32 wire_fd;   /* the connection socket whose packet is being read */
	__u32 wire_need; /* bytes of that packet's payload not read yet */
	__u64 wire_conn; /* wire_fd's socket inode number while its connection is known to be between
	                  * commands (bpf/stage.bpf.c: its next header need not be read); 0: unknown */
	__u64 pg_unnamed; /* PostgreSQL: digest of the connection's unnamed prepared statement (last Parse) */
	__u64 pg_bound;   /* PostgreSQL: digest of the statement the last Bind bound (the next Execute's) */
	__u64 thd_name;   /* bpf/thd_stage.bpf.h: the last server stage name this thread's IO met, */
	__u8 thd_stage;   /* and its stage (saves the name lookup while the thread stays in it) */
	__u64 regs;       /* bpf/stage.bpf.c: the address of this thread's saved user registers
	                   * (bpf_task_pt_regs(), which does not change while the thread lives) */
	__u64 prep_digest; /* bpf/mysql_wire.bpf.h: the digest of the COM_STMT_PREPARE read last, */
	__u64 prep_conn;   /* and its socket's inode while the server's answer is awaited (0: none) */
	/* bpf/pg_aio.bpf.h: while a PostgreSQL io worker runs a backend's IO handle, that backend
	 * (aio_tgid, 0: none), its thread, statement, stage and phase: its IO is charged to them */
	__u64 aio_digest;
	__u32 aio_tgid;
	__u32 aio_tid;
	__u16 aio_phase;
	__u8 aio_stage;
	/* bpf/stage.bpf.c scan_text(): a long COM_QUERY whose payload comes in several recvfroms is
	 * scanned for its statements read by read; the scanner's state in between (scan_state 0:
	 * no scan under way, else 1 + its S_* state), and the text bytes scanned so far */
	__u8 scan_state;
	__u8 scan_quote;
	__u8 scan_bits; /* 1: escaped, 2: after a ';' */
	__u8 scan_lead;
	__u32 scan_done;
	__u32 vlen; /* the iovec count of a vectored read/write in flight (its pages: pages.bpf.h) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_io_state);
} task_state SEC(".maps");

/* A PostgreSQL io worker running a backend's IO handle (bpf/pg_aio.bpf.h) issues that IO's
 * block requests and page-cache misses in its own context: like its syscalls, they are the
 * backend's. Rewrites the owner (tgid, tid) to that backend while the worker runs it. The task
 * storage lookup only for tasks that have storage at all (one load where the kernel says). */
static __always_inline void pg_aio_owner(struct task_struct *task, __u32 *tgid, __u32 *tid)
{
	struct task_io_state *st;

	if (bpf_core_field_exists(task->bpf_storage) && !task->bpf_storage)
		return;
	st = bpf_task_storage_get(&task_state, task, 0, 0);
	if (st && st->aio_tgid) {
		*tgid = st->aio_tgid;
		*tid = st->aio_tid;
	}
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/* Threads whose name was already sent to userspace. */
BPF_LRU_HASH(named_tids, __u32, __u32, 16384);

static __always_inline void count_drop(__u32 reason)
{
	__u64 *v = bpf_map_lookup_elem(&drops, &reason);
	if (v)
		*v += 1; /* per-CPU: no atomics needed */
}

static __always_inline bool is_target(__u32 tgid)
{
	if (cfg.trace_all)
		return tgid != cfg.self_tgid && tgid != 0;
	__u32 slot = tgid & TARGET_SLOT_MASK;
	__u64 *v = bpf_map_lookup_elem(&target_slots, &slot);

	if (!v)
		return false;
	if (*v == (__u64)tgid)
		return tgid != 0; /* an empty slot 0 holds 0 */
	if (*v == TARGET_SLOT_SHARED)
		return bpf_map_lookup_elem(&targets, &tgid) != NULL;
	return false;
}

/* Index of the highest set bit; the BPF backend has no count-leading-zeros. */
static __always_inline __u32 msb64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* Log-linear slot: two slots per power of two of nanoseconds. */
static __always_inline __u32 hist_slot(__u64 ns)
{
	__u32 msb;
	__u32 slot;

	if (ns < (1ULL << IOATTR_HIST_MIN_SHIFT))
		return 0;
	msb = msb64(ns);
	slot = (msb - IOATTR_HIST_MIN_SHIFT) * 2 + ((ns >> (msb - 1)) & 1) + 1;
	if (slot >= IOATTR_HIST_SLOTS)
		slot = IOATTR_HIST_SLOTS - 1;
	return slot;
}

/* The current thread's name, to userspace (type IOA_EV_TASK or IOA_EV_EXEC). */
static __always_inline void emit_task_event(__u32 type, __u64 pid_tgid)
{
	struct task_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count_drop(IOA_DROP_EVENTS_FULL);
		return;
	}
	e->type = type;
	e->tgid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* Send the current thread's name once, so a short-lived thread (an io_uring
 * worker, a one-shot helper) still has a name after it exits. */
static __always_inline void remember_comm(__u64 pid_tgid)
{
	__u32 tid = (__u32)pid_tgid, one = 1;

	if (bpf_map_update_elem(&named_tids, &tid, &one, BPF_NOEXIST))
		return; /* already sent (or no room: userspace falls back to /proc) */
	emit_task_event(IOA_EV_TASK, pid_tgid);
}

static __always_inline void track_inode(__u32 dev, __u64 ino, __u32 tgid)
{
	struct inode_key ik = { .dev = dev, .ino = ino };

	if (bpf_map_lookup_elem(&tracked_inodes, &ik))
		return;
	if (bpf_map_update_elem(&tracked_inodes, &ik, &tgid, BPF_NOEXIST) == -E2BIG)
		count_drop(IOA_DROP_TRACKED_FULL);
}

/* Add one operation to the aggregate. has_lat = 0 skips the histogram. */
static __always_inline void account(struct io_key *k, __u64 bytes, __u64 lat_ns, bool has_lat)
{
	struct io_val *v;

	if (k->phase == IOA_PHASE_NOW) /* the caller did not take it at issue: now is the best we know */
		k->phase = current_phase();
	v = bpf_map_lookup_elem(&io_stats, k);

	if (!v) {
		__u32 zero = 0;
		struct io_val *z = bpf_map_lookup_elem(&zero_val, &zero);
		long err;

		if (!z)
			return;
		err = bpf_map_update_elem(&io_stats, k, z, BPF_NOEXIST);
		if (err && err != -EEXIST) {
			count_drop(IOA_DROP_STATS_FULL);
			return;
		}
		if (k->layer == IOA_LAYER_SYSCALL && k->tgid)
			track_inode(k->dev, k->ino, k->tgid);
		if (k->tid) {
			__u64 pid_tgid = bpf_get_current_pid_tgid();

			if ((__u32)pid_tgid == k->tid)
				remember_comm(pid_tgid);
		}
		v = bpf_map_lookup_elem(&io_stats, k);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->count, 1);
	if (bytes)
		__sync_fetch_and_add(&v->bytes, bytes);
	if (has_lat) {
		/* the mask keeps the verifier sure of the bound (64 is a power of two) */
		__u32 slot = hist_slot(lat_ns) & (IOATTR_HIST_SLOTS - 1);

		__sync_fetch_and_add(&v->lat_sum_ns, lat_ns);
		__sync_fetch_and_add(&v->hist[slot], 1);
	}
}

#endif /* IOATTR_MAPS_BPF_H */

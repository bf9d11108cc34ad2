/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PostgreSQL 18's asynchronous IO done by io workers, charged to the backend that asked.
 *
 * With io_method=worker (18's default) a backend does not read its relation pages itself: it
 * fills an IO handle (PgAioHandle, in shared memory at one address in every process forked
 * from the postmaster), stages it (pgaio_io_stage(ioh, op): pgaio_io_start_readv/_writev
 * tail-call it) and queues it; a `postgres: io worker N` process takes the handle and runs
 * the IO with plain preadv/pwritev in pgaio_io_perform_synchronously(ioh). A per-process
 * view charges every such read to the io worker. So:
 *
 *   ioattr_pg_aio_stage     uprobe on pgaio_io_stage in the backend: remember who staged the
 *                           handle (pg_aio_owners[(handle, postmaster)] = the backend's pid,
 *                           thread, statement digest, stage and phase at that moment)
 *   ioattr_pg_aio_perform   uprobe on pgaio_io_perform_synchronously: in another process of the
 *                           same postmaster (an io worker), copy that owner into the worker's
 *                           task storage (aio_tgid ...), which the syscall exit
 *                           (syscalls.bpf.c) charges its IO to, with api IOA_API_IO_WORKER
 *   ioattr_pg_aio_done      its uretprobe: the worker is back to its own account
 *
 * A backend performing its own handle (io_method=sync, or the queue full) keeps its IO as it
 * is: the owner is the current process. The handle's address alone could be another
 * cluster's (each postmaster maps its shared memory, often at the same address), so the key
 * also carries the postmaster (the parent of both the backend and the worker).
 * The session attaches these only to an 18 server whose io workers run (io_method=worker):
 * other servers pay nothing per IO.
 */
#ifndef IOATTR_PG_AIO_BPF_H
#define IOATTR_PG_AIO_BPF_H

#define PG_AIO_OWNERS 16384 /* > max_connections * io_max_concurrency of a busy server */

struct pg_aio_key {
	__u64 handle; /* the PgAioHandle's address (shared memory) */
	__u32 postmaster;
	__u32 pad;
};

struct pg_aio_owner {
	__u64 digest;
	__u32 tgid;
	__u32 tid;
	__u16 phase;
	__u8 stage;
	__u8 pad[5];
};

BPF_LRU_HASH(pg_aio_owners, struct pg_aio_key, struct pg_aio_owner, PG_AIO_OWNERS);

static __always_inline __u32 pg_postmaster(struct task_struct *task)
{
	return task->real_parent->tgid;
}

SEC("uprobe")
int BPF_KPROBE(ioattr_pg_aio_stage, void *ioh)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pg_aio_key k = { .handle = (__u64)ioh };
	struct pg_aio_owner o = {};
	struct task_io_state *st;
	__u32 tgid = task->tgid;

	if (!is_target(tgid))
		return 0;
	k.postmaster = pg_postmaster(task);
	o.tgid = tgid;
	o.tid = task->pid;
	o.phase = current_phase();
	st = bpf_task_storage_get(&task_state, task, 0, 0);
	if (st) {
		o.digest = st->digest;
		o.stage = st->stage;
	}
	if (bpf_map_update_elem(&pg_aio_owners, &k, &o, BPF_ANY))
		count_drop(IOA_DROP_INFLIGHT_FULL);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(ioattr_pg_aio_perform, void *ioh)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pg_aio_key k = { .handle = (__u64)ioh };
	struct pg_aio_owner *o;
	struct task_io_state *st;
	__u32 tgid = task->tgid;

	if (!is_target(tgid))
		return 0;
	k.postmaster = pg_postmaster(task);
	o = bpf_map_lookup_elem(&pg_aio_owners, &k);
	if (!o || o->tgid == tgid) /* not staged while traced, or the backend runs its own IO */
		return 0;
	st = bpf_task_storage_get(&task_state, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		return 0;
	st->aio_tgid = o->tgid;
	st->aio_tid = o->tid;
	st->aio_digest = o->digest;
	st->aio_stage = o->stage;
	st->aio_phase = o->phase;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ioattr_pg_aio_done)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_io_state *st;

	if (bpf_core_field_exists(task->bpf_storage) && !task->bpf_storage)
		return 0;
	st = bpf_task_storage_get(&task_state, task, 0, 0);
	if (st)
		st->aio_tgid = 0;
	return 0;
}

#endif /* IOATTR_PG_AIO_BPF_H */

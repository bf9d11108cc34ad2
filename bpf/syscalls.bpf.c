// SPDX-License-Identifier: GPL-2.0
/*
 * Syscall layer: what target processes asked of files.
 *
 * One enter and one exit body cover the read/write families, fsync and
 * friends, libaio (io_submit .. io_getevents) and opens, under two attach
 * methods (see the programs at the end): per-syscall tracepoints (the
 * default) or the raw sys_enter/sys_exit tracepoints. A switch on the
 * syscall number runs first; the target check comes next, so IO syscalls
 * of untraced processes cost one hash lookup.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "compat.bpf.h"
#include "maps.bpf.h"
#include "pages.bpf.h"
#include "thd_stage.bpf.h"

#define MAX_AIO_BATCH 64
#define MAX_AIO_EVENTS 128

/* libaio's struct iocb as userspace lays it out on little-endian x86_64. */
struct user_iocb {
	__u64 aio_data;
	__u32 aio_key;
	__u32 aio_rw_flags;
	__u16 aio_lio_opcode;
	__s16 aio_reqprio;
	__u32 aio_fildes;
	__u64 aio_buf;
	__u64 aio_nbytes;
	__s64 aio_offset;
	__u64 aio_reserved2;
	__u32 aio_flags;
	__u32 aio_resfd;
};

struct user_io_event {
	__u64 data;
	__u64 obj;
	__s64 res;
	__s64 res2;
};

enum { IOCB_PREAD = 0, IOCB_PWRITE = 1, IOCB_FSYNC = 2, IOCB_FDSYNC = 3, IOCB_PREADV = 7, IOCB_PWRITEV = 8 };

struct aio_key {
	__u32 tgid;
	__u32 pad;
	__u64 iocb; /* the iocb's userspace address, as io_getevents returns it in obj */
};

struct aio_pending {
	__u64 ts;
	__u64 ino;
	__u64 buf;
	__u64 pos;
	__u64 digest;
	__u32 dev;
	__u32 tid;
	__u8 op;
	__u8 stage;
	__u16 phase;  /* when submitted */
	__u16 vlen;   /* IOCB_CMD_PREADV/PWRITEV: buf is an iovec array of vlen entries; 0: a buffer */
};

BPF_LRU_HASH(aio_inflight, struct aio_key, struct aio_pending, 16384);

/* Classify a syscall number; returns false for syscalls we ignore. */
static __always_inline bool classify(long nr, __u8 *op, __u8 *api)
{
	switch (nr) {
	case NR_read:
	case NR_pread64:
		*op = IOA_OP_READ; *api = IOA_API_SYNC; return true;
	case NR_readv:
	case NR_preadv:
	case NR_preadv2:
		*op = IOA_OP_READ; *api = IOA_API_VECTOR; return true;
	case NR_write:
	case NR_pwrite64:
		*op = IOA_OP_WRITE; *api = IOA_API_SYNC; return true;
	case NR_writev:
	case NR_pwritev:
	case NR_pwritev2:
		*op = IOA_OP_WRITE; *api = IOA_API_VECTOR; return true;
	case NR_fsync:
	case NR_fdatasync:
	case NR_sync_file_range:
		*op = IOA_OP_FSYNC; *api = IOA_API_SYNCCALL; return true;
	case NR_io_submit:
	case NR_io_getevents:
	case NR_io_pgetevents:
		*op = IOA_OP_READ; *api = IOA_API_LIBAIO; return true;
	case NR_open:
	case NR_creat:
	case NR_openat:
	case NR_openat2:
		*op = IOA_OP_READ; *api = IOA_API_OTHER; return true;
	}
	return false;
}

struct aio_submit_ctx {
	struct task_struct *task;
	__u64 iocbpp;
	__u64 ts;
	__u64 digest;
	__u32 tgid;
	__u32 tid;
	__u8 stage;
	__u16 phase;
};

/* The page-classification template for an IO of this thread. */
static __always_inline void page_tmpl(struct page_key *k, __u32 tgid, __u32 tid, __u8 op, __u8 api,
				      __u8 stage, __u64 digest, __u16 phase)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->phase = phase;
	k->tgid = tgid;
	k->tid = tid;
	k->op = op;
	k->api = api;
	k->stage = stage;
	k->digest = digest;
}

/* One iocb of an io_submit batch: remember it until io_getevents reaps it. */
static long aio_submit_one(__u32 i, struct aio_submit_ctx *c)
{
	struct user_iocb cb;
	struct aio_key k = { .tgid = c->tgid };
	struct aio_pending p = { .tid = c->tid, .ts = c->ts, .stage = c->stage, .digest = c->digest,
				 .phase = c->phase };
	struct inode_id id;
	__u64 ptr;

	if (bpf_probe_read_user(&ptr, sizeof(ptr), (void *)(c->iocbpp + i * 8)))
		return 1;
	if (bpf_probe_read_user(&cb, sizeof(cb), (void *)ptr))
		return 0;
	switch (cb.aio_lio_opcode) {
	case IOCB_PREAD:
	case IOCB_PREADV:
		p.op = IOA_OP_READ; break;
	case IOCB_PWRITE:
	case IOCB_PWRITEV:
		p.op = IOA_OP_WRITE; break;
	case IOCB_FSYNC:
	case IOCB_FDSYNC:
		p.op = IOA_OP_FSYNC; break;
	default:
		return 0;
	}
	/* plain loads (the submitter is the current task), not fd_to_file()'s probe reads */
	if (!fd_inode_id(bpf_get_current_task_btf(), (int)cb.aio_fildes, &id) || !is_data_inode(id.mode))
		return 0;
	p.ino = id.ino;
	p.dev = id.dev;
	if (p.op == IOA_OP_WRITE) /* written back before it completes, maybe: see sys_enter_body */
		track_inode(id.dev, id.ino, c->tgid);
	p.buf = cb.aio_buf;
	p.pos = cb.aio_offset;
	/* the vectored opcodes' aio_buf is an iovec array and aio_nbytes its count */
	if (cb.aio_lio_opcode == IOCB_PREADV || cb.aio_lio_opcode == IOCB_PWRITEV)
		p.vlen = cb.aio_nbytes < IOA_MAX_IOV ? (__u16)cb.aio_nbytes : IOA_MAX_IOV;
	k.iocb = ptr;
	if (p.op == IOA_OP_WRITE) {
		/* writes are classified at submission: the buffer holds the pages now */
		struct innodb_file *f = innodb_file_of(id.dev, id.ino);

		if (f) {
			struct page_key t;

			page_tmpl(&t, c->tgid, c->tid, IOA_OP_WRITE, IOA_API_LIBAIO, c->stage, c->digest, c->phase);
			if (!p.vlen)
				classify_pages_far(&t, f, cb.aio_buf, cb.aio_nbytes, cb.aio_offset);
			else /* every iovec whole: what completes is not known yet */
				classify_iov(&t, f, cb.aio_buf, p.vlen, ~0ULL, cb.aio_offset);
		}
	}
	if (bpf_map_update_elem(&aio_inflight, &k, &p, BPF_ANY))
		count_drop(IOA_DROP_INFLIGHT_FULL);
	return 0;
}

static __always_inline void aio_submit(struct task_struct *task, __u32 tgid, __u32 tid,
				       long nr, __u64 iocbpp)
{
	struct task_io_state *st = bpf_task_storage_get(&task_state, task, 0, 0);
	struct aio_submit_ctx c = {
		.task = task, .iocbpp = iocbpp, .ts = bpf_ktime_get_ns(), .tgid = tgid, .tid = tid,
		.phase = current_phase(),
	};

	if (st) {
		c.stage = io_stage(task, st, tgid);
		c.digest = st->digest;
	}

	if (nr <= 0)
		return;
	bpf_loop(nr < MAX_AIO_BATCH ? nr : MAX_AIO_BATCH, aio_submit_one, &c, 0);
}

struct aio_reap_ctx {
	__u64 events;
	__u64 now;
	__u32 tgid;
};

/* One completed io_event: match it to its submission and account it. */
static long aio_reap_one(__u32 i, struct aio_reap_ctx *c)
{
	struct user_io_event ev;
	struct aio_key k = { .tgid = c->tgid };
	struct aio_pending *p;

	if (bpf_probe_read_user(&ev, sizeof(ev), (void *)(c->events + i * sizeof(ev))))
		return 1;
	k.iocb = ev.obj;
	p = bpf_map_lookup_elem(&aio_inflight, &k);
	if (!p)
		return 0;
	struct io_key key = {
		.tgid = c->tgid, .tid = p->tid, .ino = p->ino, .dev = p->dev,
		.layer = IOA_LAYER_SYSCALL, .op = p->op, .api = IOA_API_LIBAIO, .kind = IOA_KIND_FILE,
		.stage = p->stage, .digest = p->digest, .phase = p->phase,
	};
	account(&key, ev.res > 0 && p->op != IOA_OP_FSYNC ? ev.res : 0, c->now - p->ts, true);
	if (p->op == IOA_OP_READ && ev.res > 0) {
		struct innodb_file *f = innodb_file_of(p->dev, p->ino);

		if (f) {
			struct page_key t;

			page_tmpl(&t, c->tgid, p->tid, IOA_OP_READ, IOA_API_LIBAIO, p->stage, p->digest, p->phase);
			if (!p->vlen)
				classify_pages_far(&t, f, p->buf, ev.res, p->pos);
			else
				classify_iov(&t, f, p->buf, p->vlen, ev.res, p->pos);
		}
	}
	bpf_map_delete_elem(&aio_inflight, &k);
	return 0;
}

static __always_inline void aio_reap(__u32 tgid, __u64 events, long n)
{
	struct aio_reap_ctx c = { .events = events, .now = bpf_ktime_get_ns(), .tgid = tgid };

	bpf_loop(n < MAX_AIO_EVENTS ? n : MAX_AIO_EVENTS, aio_reap_one, &c, 0);
}

static __always_inline void emit_open(struct task_struct *task, struct task_io_state *st,
				      __u32 tgid, __u32 tid, long fd)
{
	struct open_event *e;
	struct inode_id id;

	if (!file_inode_id(fd_to_file(task, (int)fd), &id) || (id.mode & S_IFMT) != S_IFREG)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(IOA_DROP_EVENTS_FULL);
		return;
	}
	e->type = IOA_EV_OPEN;
	e->tgid = tgid;
	e->tid = tid;
	e->ino = id.ino;
	e->dev = id.dev;
	e->fd = (int)fd;
	e->dfd = st->fd;
	if (bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)st->arg) < 0)
		e->path[0] = 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/*
 * The two bodies, shared by both attach methods. Each takes what its
 * tracepoint says (the syscall number, the arguments or the return value),
 * so the logic exists once.
 *
 * tgid and tid come from the task (plain BTF loads), not from
 * bpf_get_current_pid_tgid(): the task pointer is needed for the task
 * storage anyway, and every helper call costs ~25 ns on a retpoline+SRSO
 * host.
 */
static __always_inline int sys_enter_body(long nr, __u64 a1, __u64 a2, __u64 a3, __u64 a4)
{
	struct task_struct *task;
	struct task_io_state *st;
	struct inode_id ino;
	struct file *file;
	__u32 tgid;
	__u8 op, api;

	if (!classify(nr, &op, &api))
		return 0;
	task = bpf_get_current_task_btf();
	tgid = task->tgid;
	if (!is_target(tgid))
		return 0;

	if (nr == NR_io_submit) {
		aio_submit(task, tgid, task->pid, (long)a2, a3);
		return 0;
	}
	st = bpf_task_storage_get(&task_state, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		return 0;
	st->nr = nr;
	st->op = op;
	st->api = api;
	st->phase = current_phase(); /* IO is charged to the phase in force when it was issued */
	if (nr == NR_io_getevents || nr == NR_io_pgetevents) {
		st->arg = a4; /* struct io_event __user *events */
		st->active = 1;
		return 0;
	}
	if (nr == NR_open || nr == NR_creat) {
		st->arg = a1;
		st->fd = -100; /* AT_FDCWD */
		st->active = 1;
		return 0;
	}
	if (nr == NR_openat || nr == NR_openat2) {
		st->fd = (int)a1;
		st->arg = a2;
		st->active = 1;
		return 0;
	}
	if (!fd_file_inode_id(task, (int)a1, &ino, &file) || !is_data_inode(ino.mode)) {
		st->active = 0;
		return 0;
	}
	st->ino = ino.ino;
	st->dev = ino.dev;
	/* The file's dirty pages are the target's from now on, not from its first IO's
	 * completion: a write can be written back before it returns (O_SYNC, btrfs's
	 * direct writes, which fall back to buffered writes written back at once). */
	if (op == IOA_OP_WRITE)
		track_inode(ino.dev, ino.ino, tgid);
	st->arg = a2; /* the buffer (or iovec array) */
	if (cfg.innodb_pages) {
		if (nr == NR_pread64 || nr == NR_pwrite64)
			st->pos = a4;
		else if (nr == NR_read || nr == NR_write) /* the file just found, not a second fd walk */
			st->pos = file ? file->f_pos : BPF_CORE_READ(fd_to_file(task, (int)a1), f_pos);
		if (api == IOA_API_VECTOR) {
			/* preadv/pwritev(2): pos_l is the whole offset on 64-bit; -1 (preadv2) and
			 * readv/writev: the file's position */
			st->vlen = (__u32)a3;
			if ((nr == NR_preadv || nr == NR_preadv2 || nr == NR_pwritev || nr == NR_pwritev2) &&
			    a4 != (__u64)-1)
				st->pos = a4;
			else
				st->pos = file ? file->f_pos : BPF_CORE_READ(fd_to_file(task, (int)a1), f_pos);
		}
	}
	st->ts = bpf_ktime_get_ns();
	st->active = 1;
	return 0;
}

/* Exit: only a thread whose enter armed its task storage gets past the
 * storage lookup, so the target check is not repeated (a process dropped
 * from the targets between enter and exit is disarmed here all the same).
 * Most exits that run this are other processes' (the host's IO syscalls),
 * whose tasks hold no BPF task storage at all: a plain load of
 * task->bpf_storage says so without the helper call (~30 ns here), and
 * leaves exactly what the lookup would have found (nothing). The caller has
 * already dropped syscalls we do not handle, and io_submit (done at enter). */
static __always_inline int sys_exit_body(long nr, long ret)
{
	struct task_struct *task;
	struct task_io_state *st;
	__u32 tgid, tid;

	task = bpf_get_current_task_btf();
	if (bpf_core_field_exists(task->bpf_storage) && !task->bpf_storage)
		return 0;
	st = bpf_task_storage_get(&task_state, task, 0, 0);
	if (!st || !st->active)
		return 0;
	st->active = 0;
	if (st->nr != nr)
		return 0;
	tgid = task->tgid;
	tid = task->pid;

	if (st->api == IOA_API_LIBAIO) {
		if (ret > 0)
			aio_reap(tgid, st->arg, ret);
		return 0;
	}
	if (st->api == IOA_API_OTHER) {
		if (ret >= 0)
			emit_open(task, st, tgid, tid, ret);
		return 0;
	}
	if (ret < 0) /* failed calls moved nothing; EAGAIN retries would inflate counts */
		return 0;
	__u8 stage = io_stage(task, st, tgid);
	struct io_key key = {
		.tgid = tgid, .tid = tid, .ino = st->ino, .dev = st->dev,
		.layer = IOA_LAYER_SYSCALL, .op = st->op, .api = st->api, .kind = IOA_KIND_FILE,
		.stage = stage, .digest = st->digest, .phase = st->phase,
	};
	if (st->aio_tgid) { /* a PostgreSQL io worker running a backend's IO: the backend's (pg_aio.bpf.h) */
		key.tgid = st->aio_tgid, key.tid = st->aio_tid, key.digest = st->aio_digest;
		key.stage = st->aio_stage, key.phase = st->aio_phase, key.api = IOA_API_IO_WORKER;
	}
	account(&key, ret > 0 && st->op != IOA_OP_FSYNC ? ret : 0, bpf_ktime_get_ns() - st->ts, true);
	if (ret > 0 && (st->api == IOA_API_SYNC || st->api == IOA_API_VECTOR)) {
		struct innodb_file *f = innodb_file_of(st->dev, st->ino);

		if (f) {
			struct page_key t;

			page_tmpl(&t, key.tgid, key.tid, st->op, key.api, key.stage, key.digest, key.phase);
			if (st->api == IOA_API_SYNC)
				classify_pages(&t, f, st->arg, ret, st->pos);
			else
				classify_iov(&t, f, st->arg, st->vlen, ret, st->pos);
		}
	}
	return 0;
}

/*
 * Attach method 1 (the default where the kernel has CONFIG_FTRACE_SYSCALLS):
 * per-syscall tracepoints. The loader attaches these programs to
 * syscalls:sys_enter_<name> / sys_exit_<name> of every syscall classify()
 * handles (collectors/probes.py IO_SYSCALLS; no exit for io_submit), so
 * other syscalls cost only the syscall slow path (~50 ns here) and no
 * program runs for them. Every sys_enter_<name> record is laid out alike:
 * the common fields, int __syscall_nr at 8, then each argument as 8 bytes
 * from 16; sys_exit_<name>: __syscall_nr at 8, long ret at 16.
 *
 * The kernel refuses to attach a program that reads past the end of a
 * tracepoint's record (EACCES), and a record holds only its syscall's
 * arguments, so the enter body comes in three programs that read the
 * first 4, 3 or 1 arguments; the loader picks one per syscall by its
 * argument count (probes.py ENTER_PROGRAM).
 */
SEC("tracepoint/syscalls/sys_enter_pread64")
int ioattr_tp_ent4(struct syscall_trace_enter *ctx)
{
	return sys_enter_body(ctx->nr, ctx->args[0], ctx->args[1], ctx->args[2], ctx->args[3]);
}

SEC("tracepoint/syscalls/sys_enter_read")
int ioattr_tp_ent3(struct syscall_trace_enter *ctx)
{
	return sys_enter_body(ctx->nr, ctx->args[0], ctx->args[1], ctx->args[2], 0);
}

SEC("tracepoint/syscalls/sys_enter_fsync")
int ioattr_tp_ent1(struct syscall_trace_enter *ctx)
{
	return sys_enter_body(ctx->nr, ctx->args[0], 0, 0, 0);
}

SEC("tracepoint/syscalls/sys_exit_pread64")
int ioattr_tp_exit(struct syscall_trace_exit *ctx)
{
	return sys_exit_body(ctx->nr, ctx->ret);
}

/*
 * Attach method 2 (fallback): the raw sys_enter/sys_exit tracepoints. One
 * pair covers everything, but any program there costs ~150 ns on every
 * syscall of every process; the classify() switch runs first so ours add
 * nothing more to syscalls we ignore.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(ioattr_sys_enter, struct pt_regs *regs, long id)
{
	return sys_enter_body(id, SYSARG1(regs), SYSARG2(regs), SYSARG3(regs), SYSARG4(regs));
}

SEC("tp_btf/sys_exit")
int BPF_PROG(ioattr_sys_exit, struct pt_regs *regs, long ret)
{
	long nr = SYSCALL_NR(regs);
	__u8 op, api;

	if (!classify(nr, &op, &api) || nr == NR_io_submit)
		return 0;
	return sys_exit_body(nr, ret);
}

char LICENSE[] SEC("license") = "GPL";

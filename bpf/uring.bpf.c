// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring: submissions by target threads, matched to their completions.
 *
 * The submission tracepoint fires in the submitting thread (also when the
 * work is later punted to an iou-wrk worker or done by SQPOLL, which are
 * threads of the same process), so the IO is charged to the thread that
 * asked for it. The file is read from the request at completion, when the
 * kernel has resolved it (fixed files included). Latency is submission to
 * completion. Classic tracepoints are used because their record layout has
 * been stable across kernels while the tp_btf argument lists changed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "compat.bpf.h"
#include "maps.bpf.h"
#include "innodb.bpf.h"

struct uring_pending {
	__u64 ts;
	__u64 buf;    /* reads: where the pages will land, classified at completion */
	__u64 pos;
	__u64 digest;
	__u32 tgid;
	__u32 tid;
	__u8 op;
	__u8 stage;
};

/* The user buffer, length and file offset of a read/write request. The
 * request's command area is a struct io_rw once prepared (before the
 * submission tracepoint fires); vectored opcodes point at an iovec array,
 * of which the first entry is used. */
static __always_inline bool uring_buffer(struct io_kiocb *req, __u8 opcode, __u64 *buf, __u64 *len,
					 __u64 *pos)
{
	struct io_rw *rw = (struct io_rw *)req;

	*buf = BPF_CORE_READ(rw, addr);
	*len = BPF_CORE_READ(rw, len);
	*pos = BPF_CORE_READ(rw, kiocb.ki_pos);
	if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_READV) ||
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_WRITEV)) {
		struct iovec iov;

		if (bpf_probe_read_user(&iov, sizeof(iov), (void *)*buf))
			return false;
		*buf = (__u64)iov.iov_base;
		*len = iov.iov_len;
	}
	return *buf != 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct io_kiocb * */
	__type(value, struct uring_pending);
} uring_inflight SEC(".maps");

SEC("tracepoint/io_uring/io_uring_submit_req")
int ioattr_uring_submit(struct trace_event_raw_io_uring_submit_req *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct uring_pending p = {};
	__u64 req;
	__u8 op, api;

	if (!is_target(pid_tgid >> 32))
		return 0;
	if (!uring_op(BPF_CORE_READ(ctx, opcode), &op, &api))
		return 0;
	req = (__u64)BPF_CORE_READ(ctx, req);
	remember_comm(pid_tgid); /* the completion runs elsewhere: name the submitter now */
	p.ts = bpf_ktime_get_ns();
	p.tgid = pid_tgid >> 32;
	p.tid = (__u32)pid_tgid;
	p.op = op;
	{
		struct task_io_state *st = bpf_task_storage_get(&task_state, bpf_get_current_task_btf(), 0, 0);

		if (st) {
			p.stage = st->stage;
			p.digest = st->digest;
		}
	}
	if (cfg.innodb_pages && op != IOA_OP_FSYNC) {
		struct io_kiocb *r = (struct io_kiocb *)req;
		__u8 opcode = BPF_CORE_READ(ctx, opcode);
		__u64 buf, len, pos;

		if (!(BPF_CORE_READ(r, flags) & REQ_F_FIXED_FILE) && uring_buffer(r, opcode, &buf, &len, &pos)) {
			struct inode_id id;

			if (file_inode_id(fd_to_file((struct task_struct *)bpf_get_current_task(), BPF_CORE_READ(r, cqe.fd)), &id)) {
				struct innodb_file *f = innodb_file_of(id.dev, id.ino);

				if (f && op == IOA_OP_WRITE) {
					struct page_key t = { .tgid = p.tgid, .tid = p.tid, .op = IOA_OP_WRITE,
							      .api = IOA_API_IO_URING, .stage = p.stage,
							      .digest = p.digest };

					classify_pages(&t, f, buf, len, pos);
				} else if (f) {
					p.buf = buf;
					p.pos = pos;
				}
			}
		}
	}
	if (bpf_map_update_elem(&uring_inflight, &req, &p, BPF_ANY))
		count_drop(IOA_DROP_INFLIGHT_FULL);
	return 0;
}

SEC("tracepoint/io_uring/io_uring_complete")
int ioattr_uring_complete(struct trace_event_raw_io_uring_complete *ctx)
{
	__u64 req = (__u64)BPF_CORE_READ(ctx, req);
	struct uring_pending *p;
	struct inode_id id;
	struct file *f;
	int res;

	p = bpf_map_lookup_elem(&uring_inflight, &req);
	if (!p)
		return 0;
	res = BPF_CORE_READ(ctx, res);
	f = BPF_CORE_READ((struct io_kiocb *)req, file);
	if (res >= 0 && file_inode_id(f, &id) && is_data_inode(id.mode)) {
		struct io_key key = {
			.tgid = p->tgid, .tid = p->tid, .ino = id.ino, .dev = id.dev,
			.layer = IOA_LAYER_SYSCALL, .op = p->op, .api = IOA_API_IO_URING,
			.kind = IOA_KIND_FILE, .stage = p->stage, .digest = p->digest,
		};
		account(&key, p->op == IOA_OP_FSYNC ? 0 : res, bpf_ktime_get_ns() - p->ts, true);
		/* the pages are in the submitter's memory: read them only from its process */
		if (p->buf && p->op == IOA_OP_READ && res > 0 &&
		    (bpf_get_current_pid_tgid() >> 32) == p->tgid) {
			struct innodb_file *f = innodb_file_of(id.dev, id.ino);

			if (f) {
				struct page_key t = { .tgid = p->tgid, .tid = p->tid, .op = IOA_OP_READ,
						      .api = IOA_API_IO_URING, .stage = p->stage,
						      .digest = p->digest };

				classify_pages(&t, f, p->buf, res, p->pos);
			}
		} else if (p->buf && p->op == IOA_OP_READ && res > 0) {
			struct innodb_file *f = innodb_file_of(id.dev, id.ino);

			if (f) {
				struct page_key t = { .tgid = p->tgid, .tid = p->tid, .op = IOA_OP_READ,
						      .api = IOA_API_IO_URING, .stage = p->stage,
						      .digest = p->digest, .space_id = f->space_id,
						      .file_class = f->file_class, .level = IOA_LEVEL_NONE,
						      .flags = IOA_PAGE_F_UNREADABLE };

				/* completed in another process's context: count, don't guess */
				account_pages(&t, (__u64)res >> (f->page_shift & 31), res);
			}
		}
	}
	bpf_map_delete_elem(&uring_inflight, &req);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

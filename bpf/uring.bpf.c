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

struct uring_pending {
	__u64 ts;
	__u32 tgid;
	__u32 tid;
	__u8 op;
};

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
			.kind = IOA_KIND_FILE,
		};
		account(&key, p->op == IOA_OP_FSYNC ? 0 : res, bpf_ktime_get_ns() - p->ts, true);
	}
	bpf_map_delete_elem(&uring_inflight, &req);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

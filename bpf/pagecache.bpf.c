// SPDX-License-Identifier: GPL-2.0
/*
 * Page-cache misses per inode: folios a target adds to a file's page cache
 * outside a write syscall (a buffered write that extends a file adds pages
 * without reading anything, so those are not misses).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "compat.bpf.h"
#include "maps.bpf.h"

#define PAGE_SHIFT 12

SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int ioattr_pagecache_add(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	/* one helper call for the task; its ids are plain loads */
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, tid, owner;
	struct inode_key ik = {};
	struct task_io_state *st;

	/* Only the targets' misses: readahead (sync and async) runs in the
	 * reading task, so a miss in another process -- even on a file a target
	 * uses -- is that process's IO, not the target's (issue 11). */
	if (!is_target(tgid))
		return 0;
	ik.dev = BPF_CORE_READ(ctx, s_dev);
	ik.ino = BPF_CORE_READ(ctx, i_ino);
	owner = tgid;
	tid = owner_tid(task, task->pid);
	st = bpf_task_storage_get(&task_state, task, 0, 0);
	if (st && st->active && st->op == IOA_OP_WRITE)
		return 0;
	struct io_key key = {
		.tgid = owner, .tid = tid, .ino = ik.ino, .dev = ik.dev,
		.layer = IOA_LAYER_PAGECACHE, .op = IOA_OP_READ, .api = IOA_API_READAHEAD,
		.kind = IOA_KIND_FILE,
	};
	account(&key, (__u64)1 << (PAGE_SHIFT + BPF_CORE_READ(ctx, order)), 0, false);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

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

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(ioattr_pagecache_add, struct folio *folio)
{
	/* one helper call for the task; its ids are plain loads */
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, tid, owner;
	struct inode_id id = {};
	struct inode_key ik = {};
	struct task_io_state *st;

	/* Only the targets' misses: readahead (sync and async) runs in the
	 * reading task, so a miss in another process -- even on a file a target
	 * uses -- is that process's IO, not the target's (issue 11). */
	if (!is_target(tgid))
		return 0;
	/* The file's (dev, ino) as every other layer keys it (inode_id_btf: a btrfs
	 * file's subvolume device), not the tracepoint's own s_dev field, which is the
	 * superblock's. */
	if (!inode_id_btf(folio->mapping->host, &id))
		return 0;
	ik.dev = id.dev;
	ik.ino = id.ino;
	owner = tgid;
	tid = owner_tid(task, task->pid);
	st = bpf_task_storage_get(&task_state, task, 0, 0);
	if (st && st->active && st->op == IOA_OP_WRITE)
		return 0;
	if (st && st->aio_tgid) { /* a PostgreSQL io worker reading for a backend: the backend's */
		owner = st->aio_tgid;
		tid = st->aio_tid;
	}
	struct io_key key = {
		.tgid = owner, .tid = tid, .ino = ik.ino, .dev = ik.dev,
		.layer = IOA_LAYER_PAGECACHE, .op = IOA_OP_READ, .api = IOA_API_READAHEAD,
		.kind = IOA_KIND_FILE,
	};
	account(&key, (__u64)1 << (PAGE_SHIFT + folio_order_of(folio)), 0, false);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

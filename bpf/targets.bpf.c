// SPDX-License-Identifier: GPL-2.0
/*
 * Target set maintenance in the kernel: when ioattr runs a command
 * (`record -- CMD`), children forked by a target become targets at fork
 * time, before they can do any IO. Userspace removes exited processes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "compat.bpf.h"
#include "maps.bpf.h"

#define TARGET_FOLLOWED 2

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ioattr_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid, ctgid, flag = TARGET_FOLLOWED, slot, *v32;
	__u64 old, *v;
	long err;

	if (!cfg.follow_forks)
		return 0;
	ptgid = parent->tgid;
	ctgid = child->tgid;
	if (ptgid == ctgid) /* a new thread: already covered by its tgid */
		return 0;
	v32 = bpf_map_lookup_elem(&targets, &ptgid);
	if (!v32)
		return 0;
	/* a PostgreSQL backend speaks its postmaster's protocol, and has its stage probes */
	flag |= *v32 & (IOA_TARGET_PG_WIRE | IOA_TARGET_PG_STAGES);
	err = bpf_map_update_elem(&targets, &ctgid, &flag, BPF_NOEXIST);
	if (err && err != -EEXIST)
		return 0; /* the hash is full: not a target */
	/* the hash first, then its front cache (userspace relies on that order
	 * when it recomputes a slot, collectors/targets.py) */
	slot = ctgid & TARGET_SLOT_MASK;
	v = bpf_map_lookup_elem(&target_slots, &slot);
	if (!v)
		return 0;
	old = __sync_val_compare_and_swap(v, 0, (__u64)ctgid);
	if (old != 0 && old != ctgid)
		*v = TARGET_SLOT_SHARED; /* a plain store: SHARED over anything is safe */
	return 0;
}

/* A target's name changes at exec (a wrapped command starts life as a copy of
 * ioattr): say so, or a short-lived command keeps the name it had before. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(ioattr_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, one = 1;

	if (!is_target(pid_tgid >> 32))
		return 0;
	bpf_map_update_elem(&named_tids, &tid, &one, BPF_ANY);
	emit_task_event(IOA_EV_EXEC, pid_tgid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

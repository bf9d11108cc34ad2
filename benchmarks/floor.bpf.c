// SPDX-License-Identifier: GPL-2.0
/*
 * The floor for ioattr's per-pread cost: the cheapest tracing that still
 * sees a target's pread64, i.e. a bare enter/exit tracepoint pair with an
 * early pid filter and nothing else. Anything ioattr adds on top of this
 * (classifying the syscall, a target-map lookup, task storage, the fd ->
 * inode walk, aggregation) is its own cost.
 *
 * The syscall is a build parameter: -DFLOOR_SYSCALL=pwrite64 builds the
 * same floor on syscalls:sys_{enter,exit}_pwrite64 (default pread64).
 *
 * The target tgid is read-only config, set by the loader before load
 * (benchmarks/bench_syscall_cost.py), so the filter is one compare. A
 * match bumps a plain (non-atomic) counter: one store, and it keeps the
 * compiler from deleting the compare, and lets the benchmark check that
 * the floor really saw every call of the target (a single thread, so no
 * lost updates).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#ifndef FLOOR_SYSCALL
#define FLOOR_SYSCALL pread64
#endif
#define FLOOR_STR_(x) #x
#define FLOOR_STR(x) FLOOR_STR_(x)

const volatile __u32 target_tgid = 0;

__u64 enter_hits = 0;
__u64 exit_hits = 0;

SEC("tracepoint/syscalls/sys_enter_" FLOOR_STR(FLOOR_SYSCALL))
int floor_enter(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	enter_hits++;
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_" FLOOR_STR(FLOOR_SYSCALL))
int floor_exit(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	exit_hits++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

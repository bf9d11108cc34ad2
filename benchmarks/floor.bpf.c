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
 * The target tgid is set by the loader (benchmarks/bench_syscall_cost.py);
 * the filter and the counter are floor.bpf.h's (a single thread, so no lost
 * updates).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#ifndef FLOOR_SYSCALL
#define FLOOR_SYSCALL pread64
#endif
#define FLOOR_STR_(x) #x
#define FLOOR_STR(x) FLOOR_STR_(x)

#include "floor.bpf.h"

FLOOR_PROG(floor_enter, "tracepoint/syscalls/sys_enter_" FLOOR_STR(FLOOR_SYSCALL), enter_hits)
FLOOR_PROG(floor_exit, "tracepoint/syscalls/sys_exit_" FLOOR_STR(FLOOR_SYSCALL), exit_hits)

char LICENSE[] SEC("license") = "GPL";

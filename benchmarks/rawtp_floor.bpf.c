// SPDX-License-Identifier: GPL-2.0
/*
 * A second floor, for the attach method ioattr's syscall probes use: a bare
 * tp_btf pair on the raw sys_enter/sys_exit tracepoints with the same early
 * pid filter as floor.bpf.c and nothing else.
 *
 * floor.bpf.c (per-syscall tracepoints, through perf) runs only for pread64
 * but pays for building a trace record on every pread of any process; these
 * programs run on every syscall of every process but are entered directly.
 * Measuring both splits ioattr's cost into "the attach method" and "what
 * ioattr's programs do".
 *
 * The counters count the target's calls of one syscall, pread64 unless
 * built with -DFLOOR_NR=<number> (18, pwrite64, for the pwrite floor), so
 * the benchmark can check the programs saw every one (single-threaded
 * target: plain adds suffice).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#ifndef FLOOR_NR
#define FLOOR_NR 17 /* pread64 on x86_64 */
#endif

const volatile __u32 target_tgid = 0;

__u64 enter_hits = 0;
__u64 exit_hits = 0;

SEC("tp_btf/sys_enter")
int BPF_PROG(rawtp_floor_enter, struct pt_regs *regs, long id)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	if (id == FLOOR_NR)
		enter_hits++;
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(rawtp_floor_exit, struct pt_regs *regs, long ret)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	if (regs->orig_ax == FLOOR_NR)
		exit_hits++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

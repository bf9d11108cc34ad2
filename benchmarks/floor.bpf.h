/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The floors' one program shape (floor.bpf.c, uring_floor.bpf.c): the target
 * tgid as read-only config set by the loader before load, so the filter is
 * one compare, and a plain (non-atomic) counter bump on a match: one store,
 * which keeps the compiler from deleting the compare and lets the benchmark
 * check that the floor saw every call of the target.
 */
#ifndef IOATTR_FLOOR_BPF_H
#define IOATTR_FLOOR_BPF_H

const volatile __u32 target_tgid = 0;

__u64 enter_hits = 0; /* syscall entries, io_uring submissions */
__u64 exit_hits = 0;  /* syscall exits, io_uring completions */

/* A program `name` on tracepoint section `sec` that counts the target's hits in `counter`. */
#define FLOOR_PROG(name, sec, counter)                                  \
	SEC(sec)                                                        \
	int name(void *ctx)                                             \
	{                                                               \
		if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)  \
			return 0;                                       \
		counter++;                                              \
		return 0;                                               \
	}

#endif /* IOATTR_FLOOR_BPF_H */

/*
 * What one uprobe hit costs on this host: a loop calling a function whose
 * first instruction is `push %rbp` -- as mariadbd's dispatch_command starts,
 * so the kernel emulates it instead of single-stepping -- timed with and
 * without an (empty) uprobe on it. The difference per call is the trap, which
 * BPF run-time statistics do not see (they time only the program).
 *
 *   cc -O2 -o /tmp/uprobe_trap benchmarks/uprobe_trap.c
 *   /tmp/uprobe_trap 300000 9                       # ns per call, 9 samples
 *   bpftrace -e 'uprobe:/tmp/uprobe_trap:target_fn { }' &
 *   /tmp/uprobe_trap 300000 9                       # + the trap; kill bpftrace after
 *
 * docs/cost.md has the current figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int target_fn(int cmd, void *thd, const char *pkt, unsigned len);
asm(".text\n.globl target_fn\n.type target_fn,@function\ntarget_fn:\n"
    "push %rbp\nmov %rsp,%rbp\nlea (%rdi,%rcx,1),%eax\npop %rbp\nret\n"
    ".size target_fn, .-target_fn\n");

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300000;
	int samples = argc > 2 ? atoi(argv[2]) : 7;
	char buf[64] = "SELECT 1";
	volatile int sink = 0;

	for (int r = 0; r < samples; r++) {
		double t0 = now_ns();

		for (long i = 0; i < n; i++)
			sink += target_fn(23, buf, buf, 8);
		printf("%.1f\n", (now_ns() - t0) / n);
	}
	return 0;
}

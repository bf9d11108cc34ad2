// SPDX-License-Identifier: GPL-2.0
/*
 * pread_loop: the syscall whose traced cost the benchmarks measure.
 *
 *   pread_loop pread   FILE N [WARMUP [BATCHES]]   N pread64() of 4 KiB from FILE (page cache hot)
 *   pread_loop getppid -    N [WARMUP [BATCHES]]   N getppid(): a non-IO syscall
 *
 * Protocol (so the caller can attach probes and add our pid to a target map
 * before anything is timed): print "ready <pid>\n", block until one byte
 * arrives on stdin, run WARMUP untimed calls (default N/10), then N timed
 * calls in BATCHES equal batches (default 10), print
 *   "ns_per_call <float>\n"            the mean over all N calls
 *   "batch_ns <float> <float> ...\n"   the mean of each batch
 * and exit 0. The caller takes the median batch, which shrugs off a batch
 * that lost the CPU to another process on a busy machine.
 *
 * The pread offsets cycle over the first 1 MiB of FILE (256 pages), which the
 * caller has read once so every call is a page-cache hit. Calls go through
 * syscall(2) so no libc wrapper logic differs between modes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define SPAN_PAGES 256

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int usage(void)
{
	fprintf(stderr, "usage: pread_loop pread FILE N [WARMUP] | pread_loop getppid - N [WARMUP]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static char buf[PAGE] __attribute__((aligned(PAGE)));
	long n, warmup, batches, per, b, i, k = 0;
	double *batch_ns;
	int do_pread, fd = -1;
	double t0, t1;
	char go;

	if (argc < 4)
		return usage();
	if (!strcmp(argv[1], "pread"))
		do_pread = 1;
	else if (!strcmp(argv[1], "getppid"))
		do_pread = 0;
	else
		return usage();
	n = atol(argv[3]);
	warmup = argc > 4 ? atol(argv[4]) : n / 10;
	batches = argc > 5 ? atol(argv[5]) : 10;
	if (n <= 0 || warmup < 0 || batches <= 0 || batches > n)
		return usage();
	per = n / batches;
	n = per * batches;
	batch_ns = calloc(batches, sizeof(*batch_ns));
	if (!batch_ns)
		return 1;
	if (do_pread) {
		fd = open(argv[2], O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "pread_loop: open %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		/* fault the span into the page cache (the caller did too) */
		for (i = 0; i < SPAN_PAGES; i++)
			if (pread(fd, buf, PAGE, (off_t)i * PAGE) != PAGE) {
				fprintf(stderr, "pread_loop: %s is shorter than %d KiB\n", argv[2],
					SPAN_PAGES * PAGE / 1024);
				return 1;
			}
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (read(0, &go, 1) != 1) {
		fprintf(stderr, "pread_loop: no go byte on stdin\n");
		return 1;
	}
	for (i = 0; i < warmup; i++) {
		if (do_pread)
			syscall(SYS_pread64, fd, buf, PAGE, (off_t)(i % SPAN_PAGES) * PAGE);
		else
			syscall(SYS_getppid);
	}
	t0 = now_ns();
	for (b = 0; b < batches; b++) {
		double tb = now_ns();

		if (do_pread) {
			for (i = 0; i < per; i++, k++)
				if (syscall(SYS_pread64, fd, buf, PAGE, (off_t)(k % SPAN_PAGES) * PAGE) != PAGE) {
					fprintf(stderr, "pread_loop: short or failed pread at %ld\n", k);
					return 1;
				}
		} else {
			for (i = 0; i < per; i++)
				syscall(SYS_getppid);
		}
		batch_ns[b] = (now_ns() - tb) / (double)per;
	}
	t1 = now_ns();
	printf("ns_per_call %.2f\nbatch_ns", (t1 - t0) / (double)n);
	for (b = 0; b < batches; b++)
		printf(" %.2f", batch_ns[b]);
	printf("\n");
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * pread_loop: the syscalls whose traced cost the benchmarks measure.
 *
 *   pread_loop pread   FILE N [WARMUP [BATCHES]]   N pread64() of 4 KiB from FILE (page cache hot)
 *   pread_loop pwrite  FILE N [WARMUP [BATCHES]]   N pwrite64() of 4 KiB into FILE (page cache, no fsync)
 *   pread_loop uring   FILE N [WARMUP [BATCHES]]   N io_uring 4 KiB buffered reads from FILE
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
 * The offsets cycle over the first 1 MiB of FILE (256 pages), which is read
 * once before "ready" so every call hits the page cache. pwrite overwrites
 * that same span, so it only ever dirties cached pages (writeback happens
 * later, in the kernel's flusher threads, never in this process). uring
 * makes one IORING_OP_READ per call: one SQE prepared, then one
 * io_uring_enter() that submits it and waits for its CQE (liburing's
 * io_uring_submit_and_wait); a page-cache hit completes inline, in this
 * thread. pread/pwrite/getppid go through syscall(2) so no libc wrapper
 * logic differs between modes. Nothing the loop does before "ready"
 * (open, the page-cache fill, io_uring_queue_init) is an IO the probes
 * should count: the caller attaches only after "ready".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define SPAN_PAGES 256

enum mode { M_PREAD, M_PWRITE, M_URING, M_GETPPID };

static char buf[PAGE] __attribute__((aligned(PAGE)));
static struct io_uring ring;
static int fd = -1;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int usage(void)
{
	fprintf(stderr, "usage: pread_loop pread|pwrite|uring FILE N [WARMUP [BATCHES]]\n"
			"       pread_loop getppid - N [WARMUP [BATCHES]]\n");
	return 2;
}

/* One 4 KiB io_uring read at off: submit one SQE, wait for its CQE. */
static long uring_read(off_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	struct io_uring_cqe *cqe;
	long res;
	int ret;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, fd, buf, PAGE, off);
	ret = io_uring_submit_and_wait(&ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_peek_cqe(&ring, &cqe);
	if (ret < 0)
		return ret;
	res = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	return res;
}

/* One call of the mode at page k of the span; returns bytes (or 0 for getppid). */
static inline long one_call(enum mode m, long k)
{
	off_t off = (off_t)(k % SPAN_PAGES) * PAGE;

	switch (m) {
	case M_PREAD:
		return syscall(SYS_pread64, fd, buf, PAGE, off);
	case M_PWRITE:
		return syscall(SYS_pwrite64, fd, buf, PAGE, off);
	case M_URING:
		return uring_read(off);
	default:
		syscall(SYS_getppid);
		return 0;
	}
}

int main(int argc, char **argv)
{
	long n, warmup, batches, per, b, i, k = 0, want;
	double *batch_ns;
	enum mode m;
	double t0, t1;
	char go;

	if (argc < 4)
		return usage();
	if (!strcmp(argv[1], "pread"))
		m = M_PREAD;
	else if (!strcmp(argv[1], "pwrite"))
		m = M_PWRITE;
	else if (!strcmp(argv[1], "uring"))
		m = M_URING;
	else if (!strcmp(argv[1], "getppid"))
		m = M_GETPPID;
	else
		return usage();
	n = atol(argv[3]);
	warmup = argc > 4 ? atol(argv[4]) : n / 10;
	batches = argc > 5 ? atol(argv[5]) : 10;
	if (n <= 0 || warmup < 0 || batches <= 0 || batches > n)
		return usage();
	per = n / batches;
	n = per * batches;
	want = m == M_GETPPID ? 0 : PAGE;
	batch_ns = calloc(batches, sizeof(*batch_ns));
	if (!batch_ns)
		return 1;
	if (m != M_GETPPID) {
		fd = open(argv[2], m == M_PWRITE ? O_RDWR : O_RDONLY);
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
	if (m == M_URING) {
		int ret = io_uring_queue_init(8, &ring, 0);

		if (ret < 0) {
			fprintf(stderr, "pread_loop: io_uring_queue_init: %s\n", strerror(-ret));
			return 1;
		}
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (read(0, &go, 1) != 1) {
		fprintf(stderr, "pread_loop: no go byte on stdin\n");
		return 1;
	}
	for (i = 0; i < warmup; i++)
		if (one_call(m, i) != want) {
			fprintf(stderr, "pread_loop: %s warm-up call %ld failed or was short\n", argv[1], i);
			return 1;
		}
	t0 = now_ns();
	for (b = 0; b < batches; b++) {
		double tb = now_ns();

		for (i = 0; i < per; i++, k++)
			if (one_call(m, k) != want) {
				fprintf(stderr, "pread_loop: %s call %ld failed or was short\n", argv[1], k);
				return 1;
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

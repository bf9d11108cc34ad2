// SPDX-License-Identifier: MIT
/*
 * ioflood - keep a device busy: DEPTH random 4 KiB O_DIRECT reads always in
 * flight through io_uring, until killed.
 *
 * The block-attribution tests run it (twice, beside another BPF tracer) to
 * give the host what an IO-bound benchmark gives it: a full device queue
 * (requeues, completions batched in the block softirq on whatever CPU and
 * task the interrupt lands on), while ioattr counts a target's requests.
 * Its own IO is never a target's; it only has to be there.
 *
 * Usage: ioflood FILE MIB DEPTH
 *   writes FILE (MIB MiB, fsynced) unless it already has that size, prints
 *   "ready" once DEPTH reads are submitted, then resubmits each completed
 *   read at a new random offset forever.
 *
 * Build: cc -O2 -Wall -o ioflood ioflood.c -luring
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <liburing.h>

#define BLOCK 4096
#define MAX_DEPTH 1024

static void die(const char *what, int err)
{
	fprintf(stderr, "ioflood: %s: %s\n", what, strerror(err));
	exit(1);
}

static uint64_t next_rand(uint64_t *s)
{
	/* xorshift64: cheap, and good enough to spread reads over the file */
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(const char *path, uint64_t bytes)
{
	struct stat st;
	char *chunk;
	int fd;

	if (stat(path, &st) == 0 && (uint64_t)st.st_size == bytes)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("open for writing", errno);
	chunk = malloc(1 << 20);
	if (!chunk)
		die("malloc", ENOMEM);
	memset(chunk, 'f', 1 << 20);
	for (uint64_t off = 0; off < bytes; off += 1 << 20)
		if (pwrite(fd, chunk, 1 << 20, off) != 1 << 20)
			die("pwrite", errno);
	if (fsync(fd))
		die("fsync", errno);
	free(chunk);
	close(fd);
}

static void submit_read(struct io_uring *ring, int fd, void *buf, uint64_t blocks, uint64_t *seed)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		die("io_uring_get_sqe", EBUSY);
	io_uring_prep_read(sqe, fd, buf, BLOCK, (next_rand(seed) % blocks) * BLOCK);
	io_uring_sqe_set_data(sqe, buf);
}

int main(int argc, char **argv)
{
	struct io_uring ring;
	uint64_t bytes, blocks, seed;
	unsigned depth;
	char *bufs;
	int fd, err;

	if (argc != 4) {
		fprintf(stderr, "usage: ioflood FILE MIB DEPTH\n");
		return 2;
	}
	bytes = strtoull(argv[2], NULL, 10) << 20;
	depth = (unsigned)strtoul(argv[3], NULL, 10);
	if (!bytes || !depth || depth > MAX_DEPTH) {
		fprintf(stderr, "ioflood: MIB must be > 0 and DEPTH 1..%d\n", MAX_DEPTH);
		return 2;
	}
	blocks = bytes / BLOCK;
	fill(argv[1], bytes);
	fd = open(argv[1], O_RDONLY | O_DIRECT);
	if (fd < 0)
		die("open O_DIRECT", errno);
	if (posix_memalign((void **)&bufs, BLOCK, (size_t)depth * BLOCK))
		die("posix_memalign", ENOMEM);
	err = io_uring_queue_init(depth, &ring, 0);
	if (err < 0)
		die("io_uring_queue_init", -err);
	seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL | 1;
	for (unsigned i = 0; i < depth; i++)
		submit_read(&ring, fd, bufs + (size_t)i * BLOCK, blocks, &seed);
	err = io_uring_submit(&ring);
	if (err < 0)
		die("io_uring_submit", -err);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct io_uring_cqe *cqe;

		err = io_uring_wait_cqe(&ring, &cqe);
		if (err == -EINTR)
			continue;
		if (err < 0)
			die("io_uring_wait_cqe", -err);
		if (cqe->res < 0)
			die("read", -cqe->res);
		submit_read(&ring, fd, io_uring_cqe_get_data(cqe), blocks, &seed);
		io_uring_cqe_seen(&ring, cqe);
		err = io_uring_submit(&ring);
		if (err < 0)
			die("io_uring_submit", -err);
	}
}

// SPDX-License-Identifier: MIT
/*
 * iogen - controlled IO workload with KNOWN answers.
 *
 * Used by the ioattr tests to check the eBPF tracer's per-file byte and
 * operation counts against ground truth.  Every data IO is done through the
 * syscall named in the scenario description (no stdio, no hidden helpers on
 * the data files), and every byte count reported is the sum of what the
 * kernel actually returned (syscall return values / completion results).
 *
 * Build: cc -O2 -Wall -o iogen iogen.c -luring
 *
 * Usage: iogen --dir DIR [--scenario NAME]... [--size BYTES] [--json OUT]
 *              [--wait-fd N]
 *   (IOGEN_WAIT_FD=N in the environment is equivalent to --wait-fd N)
 *
 * See README.md next to this file for the scenario definitions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/aio_abi.h>
#include <liburing.h>

#define KiB 1024ULL
#define MiB (1024ULL * KiB)

#define DEFAULT_SIZE   (4 * MiB)
#define SIZE_UNIT      (16 * KiB)   /* --size is rounded up to this */
#define DIO_BLOCK      4096         /* odirect block size / alignment */
#define BUF_CHUNK      (64 * KiB)   /* buffered write() chunk */
#define COLD_READ_CHUNK (128 * KiB) /* buffered_read_cold read() chunk */
#define VEC_IOVS       4            /* iovecs per pwritev/readv call */
#define VEC_IOV_LEN    4096         /* bytes per iovec (16 KiB per call) */
#define AIO_BATCH      8            /* iocbs per io_submit batch */
#define AIO_BLOCK      (16 * KiB)
#define URING_QD       16
#define URING_BLOCK    (16 * KiB)
#define MAX_BLOCK      (64 * MiB)   /* --block upper bound */

/* --block: the IO size of the direct-IO scenarios (odirect, libaio, uring);
 * 0 keeps each scenario's own default. */
static uint64_t g_block;
/* --prealloc: what the direct-IO scenarios' file holds before the measured
 * writes. none: nothing (every write appends); fallocate: unwritten extents
 * over the whole size (writes overwrite preallocated space, no data IO);
 * written: a first pass of O_DIRECT pwrite64 of the same block size over the
 * whole file (counted: write_bytes is then 2 S), so the measured writes
 * overwrite written blocks, as a database overwrites its pages. */
enum { PREALLOC_NONE, PREALLOC_FALLOCATE, PREALLOC_WRITTEN };
static int g_prealloc = PREALLOC_NONE;

/* ------------------------------------------------------------------ */

static const char *g_ctx = "setup";

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "iogen: %s: %s\n", g_ctx, msg);
	exit(1);
}

#define die_errno(what) die("%s: %s", (what), strerror(errno))
#define die_err(what, err) die("%s: %s", (what), strerror(err))

/* Per-file ground truth. */
struct fstats {
	const char *scenario;
	char path[PATH_MAX];
	uint64_t read_bytes, write_bytes;
	uint64_t reads, writes, fsyncs;
	int direct;
	const char *api;
	int done;
};

/* ------------------------------------------------------------------ */
/* Data pattern: every 8-byte word is a function of its file offset,  */
/* so anything read back can be verified.                             */

static void fill(void *buf, size_t len, uint64_t off, uint64_t seed)
{
	uint64_t *p = buf;
	uint64_t w = off / 8;

	for (size_t i = 0; i < len / 8; i++)
		p[i] = ((w + i) * 0x9E3779B97F4A7C15ULL) ^ seed;
}

static void check(const void *buf, size_t len, uint64_t off, uint64_t seed)
{
	const uint64_t *p = buf;
	uint64_t w = off / 8;

	for (size_t i = 0; i < len / 8; i++)
		if (p[i] != (((w + i) * 0x9E3779B97F4A7C15ULL) ^ seed))
			die("data mismatch at file offset %" PRIu64, off + i * 8);
}

static void *xalloc_aligned(size_t len)
{
	void *p = NULL;
	int err = posix_memalign(&p, DIO_BLOCK, len);

	if (err)
		die_err("posix_memalign", err);
	memset(p, 0, len);
	return p;
}

static int xopen(const char *path, int extra)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | extra, 0644);

	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	return fd;
}

static void xclose(int fd)
{
	if (close(fd) < 0)
		die_errno("close");
}

/* ------------------------------------------------------------------ */
/* Synchronous helpers. Each successful syscall is one operation; a    */
/* short transfer is continued with another call (also counted).       */

/* One call's transfer in the file's counts. */
static void count_io(struct fstats *s, int writing, uint64_t bytes)
{
	if (writing) {
		s->writes++;
		s->write_bytes += bytes;
	} else {
		s->reads++;
		s->read_bytes += bytes;
	}
}

/* A call that must move all of `want` bytes: its result r counted, or the error. */
static void count_whole(struct fstats *s, int writing, ssize_t r, size_t want, const char *what)
{
	if (r < 0)
		die_errno(what);
	count_io(s, writing, (uint64_t)r);
	if ((size_t)r != want)
		die("%s: short %s %zd of %zu", what, writing ? "write" : "read", r, want);
}

enum io_call { CALL_READ, CALL_WRITE, CALL_PREAD, CALL_PWRITE };
static const char *const call_names[] = { "read", "write", "pread64", "pwrite64" };

/* One call of `call` (the positioned ones at offset off). */
static ssize_t io_call(enum io_call call, int fd, char *buf, size_t len, uint64_t off)
{
	switch (call) {
	case CALL_READ: return read(fd, buf, len);
	case CALL_WRITE: return write(fd, buf, len);
	case CALL_PREAD: return pread(fd, buf, len, (off_t)off);
	default: return pwrite(fd, buf, len, (off_t)off);
	}
}

/* len bytes by `call`s, each counted in s, until done (0 bytes moved is an error). */
static void do_calls(struct fstats *s, enum io_call call, int fd, char *buf, size_t len, uint64_t off)
{
	int writing = call == CALL_WRITE || call == CALL_PWRITE;
	size_t done = 0;

	while (done < len) {
		ssize_t r = io_call(call, fd, buf + done, len - done, off + done);
		if (r < 0)
			die_errno(call_names[call]);
		count_io(s, writing, (uint64_t)r);
		if (r == 0)
			die("%s: %s at offset %" PRIu64, call_names[call], writing ? "wrote 0 bytes" : "unexpected EOF",
			    off + done);
		done += (size_t)r;
	}
}

static void do_pwrite(struct fstats *s, int fd, const char *buf, size_t len, uint64_t off)
{
	do_calls(s, CALL_PWRITE, fd, (char *)buf, len, off);
}

static void do_pread(struct fstats *s, int fd, char *buf, size_t len, uint64_t off)
{
	do_calls(s, CALL_PREAD, fd, buf, len, off);
}

static void do_write(struct fstats *s, int fd, const char *buf, size_t len)
{
	do_calls(s, CALL_WRITE, fd, (char *)buf, len, 0);
}

static void do_read(struct fstats *s, int fd, char *buf, size_t len)
{
	do_calls(s, CALL_READ, fd, buf, len, 0);
}

static void do_fsync(struct fstats *s, int fd)
{
	if (fsync(fd) < 0)
		die_errno("fsync");
	s->fsyncs++;
}

static void do_fdatasync(struct fstats *s, int fd)
{
	if (fdatasync(fd) < 0)
		die_errno("fdatasync");
	s->fsyncs++;
}

static size_t min_sz(uint64_t a, uint64_t b)
{
	return (size_t)(a < b ? a : b);
}

/* ------------------------------------------------------------------ */
/* Scenarios                                                          */

/* Prepare a direct-IO scenario's freshly truncated file per --prealloc. The
 * written pass uses pwrite64 blocks of `block` bytes and is counted. */
static void prealloc_file(struct fstats *s, int fd, uint64_t size, uint64_t block, uint64_t seed)
{
	if (g_prealloc == PREALLOC_FALLOCATE) {
		int err = posix_fallocate(fd, 0, (off_t)size);

		if (err)
			die_err("posix_fallocate", err);
	} else if (g_prealloc == PREALLOC_WRITTEN) {
		char *buf = xalloc_aligned(block);

		for (uint64_t off = 0; off < size; off += block) {
			fill(buf, block, off, seed ^ 0x5A5A5A5AULL);
			do_pwrite(s, fd, buf, block, off);
		}
		do_fdatasync(s, fd);
		free(buf);
	}
}

/* odirect: pwrite64 size/B blocks of B bytes (B = --block, default 4096),
 * fdatasync, pread64 all back. */
static void scn_odirect(struct fstats *s, uint64_t size, uint64_t seed)
{
	uint64_t block = g_block ? g_block : DIO_BLOCK;
	char *buf = xalloc_aligned(block);
	int fd = xopen(s->path, O_DIRECT);

	s->direct = 1;
	s->api = "sync";
	prealloc_file(s, fd, size, block, seed);
	for (uint64_t off = 0; off < size; off += block) {
		fill(buf, block, off, seed);
		do_pwrite(s, fd, buf, block, off);
	}
	do_fdatasync(s, fd);
	for (uint64_t off = 0; off < size; off += block) {
		do_pread(s, fd, buf, block, off);
		check(buf, block, off, seed);
	}
	xclose(fd);
	free(buf);
}

/* The file's `size` bytes of pattern by write() in 64 KiB chunks (buf holds one), then one fsync(). */
static void write_chunks_fsync(struct fstats *s, int fd, char *buf, uint64_t size, uint64_t seed)
{
	for (uint64_t off = 0; off < size; off += BUF_CHUNK) {
		size_t n = min_sz(BUF_CHUNK, size - off);
		fill(buf, n, off, seed);
		do_write(s, fd, buf, n);
	}
	do_fsync(s, fd);
}

/* buffered_fsync: write() in 64 KiB chunks, then one fsync(). */
static void scn_buffered_fsync(struct fstats *s, uint64_t size, uint64_t seed)
{
	char *buf = xalloc_aligned(BUF_CHUNK);
	int fd = xopen(s->path, 0);

	s->direct = 0;
	s->api = "sync";
	write_chunks_fsync(s, fd, buf, size, seed);
	xclose(fd);
	free(buf);
}

static long g_resident_after_drop = -1;  /* -1: scenario not run -> null */

/* Count resident page-cache pages of fd's first `size` bytes via mincore(). */
static long resident_pages(int fd, uint64_t size)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t npages = (size_t)((size + (uint64_t)pg - 1) / (uint64_t)pg);
	unsigned char *vec;
	void *map;
	long n = 0;

	if (pg <= 0)
		die("sysconf(_SC_PAGESIZE) failed");
	vec = calloc(npages ? npages : 1, 1);
	if (!vec)
		die("calloc: out of memory");
	/* Mapping and mincore() never fault pages in: no IO happens here. */
	map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die_errno("mmap");
	if (mincore(map, (size_t)size, vec) < 0)
		die_errno("mincore");
	if (munmap(map, (size_t)size) < 0)
		die_errno("munmap");
	for (size_t i = 0; i < npages; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

/*
 * buffered_read_cold: write() the file in 64 KiB chunks + fsync; drop it from
 * the page cache (fsync + POSIX_FADV_DONTNEED, verified with mincore); then
 * read() it in 128 KiB chunks from offset 0.
 */
static void scn_buffered_read_cold(struct fstats *s, uint64_t size, uint64_t seed)
{
	size_t bufsz = BUF_CHUNK > COLD_READ_CHUNK ? BUF_CHUNK : COLD_READ_CHUNK;
	char *buf = xalloc_aligned(bufsz);
	int fd = xopen(s->path, 0);
	long resident;
	int err;

	s->direct = 0;
	s->api = "sync";
	/* setup: create */
	write_chunks_fsync(s, fd, buf, size, seed);

	/* drop from the page cache */
	do_fsync(s, fd);
	err = posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_DONTNEED);
	if (err)
		die_err("posix_fadvise(DONTNEED)", err);
	resident = resident_pages(fd, size);
	/* Pages still under writeback/locked may survive one pass; retry a few
	 * times (no extra IO: the file is already clean). */
	for (int tries = 0; resident > 0 && tries < 5; tries++) {
		usleep(20000);
		err = posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_DONTNEED);
		if (err)
			die_err("posix_fadvise(DONTNEED)", err);
		resident = resident_pages(fd, size);
	}
	g_resident_after_drop = resident;

	/* cold read */
	if (lseek(fd, 0, SEEK_SET) != 0)
		die_errno("lseek");
	for (uint64_t off = 0; off < size; off += COLD_READ_CHUNK) {
		size_t n = min_sz(COLD_READ_CHUNK, size - off);
		do_read(s, fd, buf, n);
		check(buf, n, off, seed);
	}
	xclose(fd);
	free(buf);
}

/* vector: pwritev with 4 x 4 KiB iovecs per call, fsync, lseek 0, readv back. */
static void scn_vector(struct fstats *s, uint64_t size, uint64_t seed)
{
	const size_t per_call = VEC_IOVS * VEC_IOV_LEN;
	char *bufs[VEC_IOVS];
	struct iovec iov[VEC_IOVS];
	int fd = xopen(s->path, 0);

	s->direct = 0;
	s->api = "vector";
	/* separate (non-contiguous) buffers so it is a real scatter/gather */
	for (int i = 0; i < VEC_IOVS; i++) {
		bufs[i] = xalloc_aligned(VEC_IOV_LEN);
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = VEC_IOV_LEN;
	}
	/* size is a multiple of 16 KiB == per_call, so every call has 4 iovecs */
	for (uint64_t off = 0; off < size; off += per_call) {
		ssize_t r;

		for (int i = 0; i < VEC_IOVS; i++)
			fill(bufs[i], VEC_IOV_LEN, off + (uint64_t)i * VEC_IOV_LEN, seed);
		r = pwritev(fd, iov, VEC_IOVS, (off_t)off);
		count_whole(s, 1, r, per_call, "pwritev");
	}
	do_fsync(s, fd);
	if (lseek(fd, 0, SEEK_SET) != 0)
		die_errno("lseek");
	for (uint64_t off = 0; off < size; off += per_call) {
		count_whole(s, 0, readv(fd, iov, VEC_IOVS), per_call, "readv");
		for (int i = 0; i < VEC_IOVS; i++)
			check(bufs[i], VEC_IOV_LEN, off + (uint64_t)i * VEC_IOV_LEN, seed);
	}
	xclose(fd);
	for (int i = 0; i < VEC_IOVS; i++)
		free(bufs[i]);
}

/* libaio: raw io_setup/io_submit/io_getevents/io_destroy on an O_DIRECT file. */
static void aio_phase(struct fstats *s, aio_context_t ctx, int fd, char **bufs,
		      uint64_t size, uint64_t seed, int is_write)
{
	struct iocb cbs[AIO_BATCH];
	struct iocb *ptrs[AIO_BATCH];
	struct io_event ev[AIO_BATCH];
	const uint64_t blk = g_block ? g_block : AIO_BLOCK;
	const uint64_t batch_bytes = (uint64_t)AIO_BATCH * blk;

	for (uint64_t off = 0; off < size; off += batch_bytes) {
		long n = (long)min_sz(AIO_BATCH, (size - off) / blk);
		long submitted = 0, reaped = 0;

		for (long i = 0; i < n; i++) {
			uint64_t o = off + (uint64_t)i * blk;

			memset(&cbs[i], 0, sizeof(cbs[i]));
			cbs[i].aio_data = (uint64_t)i;
			cbs[i].aio_lio_opcode = is_write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
			cbs[i].aio_fildes = (uint32_t)fd;
			cbs[i].aio_buf = (uint64_t)(uintptr_t)bufs[i];
			cbs[i].aio_nbytes = blk;
			cbs[i].aio_offset = (int64_t)o;
			ptrs[i] = &cbs[i];
			if (is_write)
				fill(bufs[i], blk, o, seed);
			else
				memset(bufs[i], 0, blk);
		}
		while (submitted < n) {
			long r = syscall(SYS_io_submit, ctx, n - submitted, ptrs + submitted);
			if (r < 0)
				die_errno("io_submit");
			if (r == 0)
				die("io_submit: submitted 0 iocbs");
			submitted += r;
		}
		while (reaped < n) {
			long r = syscall(SYS_io_getevents, ctx, n - reaped, n - reaped, ev, NULL);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				die_errno("io_getevents");
			}
			for (long j = 0; j < r; j++) {
				int64_t res = ev[j].res;
				uint64_t idx = ev[j].data;

				if (res < 0)
					die("%s completion: %s", is_write ? "IOCB_CMD_PWRITE" : "IOCB_CMD_PREAD",
					    strerror((int)-res));
				if (idx >= (uint64_t)n)
					die("io_getevents: bogus aio_data %" PRIu64, idx);
				count_io(s, is_write, (uint64_t)res);
				if (res != (int64_t)blk)
					die("short aio completion: %" PRId64 " of %" PRIu64, res, blk);
				if (!is_write)
					check(bufs[idx], blk, off + idx * blk, seed);
			}
			reaped += r;
		}
	}
}

static void scn_libaio(struct fstats *s, uint64_t size, uint64_t seed)
{
	aio_context_t ctx = 0;
	char *bufs[AIO_BATCH];
	int fd = xopen(s->path, O_DIRECT);

	s->direct = 1;
	s->api = "libaio";
	for (int i = 0; i < AIO_BATCH; i++)
		bufs[i] = xalloc_aligned(g_block ? g_block : AIO_BLOCK);
	prealloc_file(s, fd, size, g_block ? g_block : AIO_BLOCK, seed);
	if (syscall(SYS_io_setup, AIO_BATCH, &ctx) < 0)
		die_errno("io_setup");
	aio_phase(s, ctx, fd, bufs, size, seed, 1);
	aio_phase(s, ctx, fd, bufs, size, seed, 0);
	if (syscall(SYS_io_destroy, ctx) < 0)
		die_errno("io_destroy");
	xclose(fd);
	for (int i = 0; i < AIO_BATCH; i++)
		free(bufs[i]);
}

/* uring: liburing, QD 16, IORING_OP_WRITE 16 KiB blocks, one IORING_OP_FSYNC,
 * then IORING_OP_READ everything back. O_DIRECT. */
static void uring_reap(struct fstats *s, struct io_uring *ring, unsigned n,
		       char **bufs, uint64_t off, uint64_t seed, int op)
{
	const uint64_t blk = g_block ? g_block : URING_BLOCK;

	for (unsigned k = 0; k < n; k++) {
		struct io_uring_cqe *cqe;
		int r = io_uring_wait_cqe(ring, &cqe);
		int res;
		uint64_t idx;

		if (r < 0)
			die_err("io_uring_wait_cqe", -r);
		res = cqe->res;
		idx = (uint64_t)io_uring_cqe_get_data64(cqe);
		io_uring_cqe_seen(ring, cqe);
		if (res < 0)
			die("%s completion: %s",
			    op == IORING_OP_WRITE ? "IORING_OP_WRITE" :
			    op == IORING_OP_READ ? "IORING_OP_READ" : "IORING_OP_FSYNC",
			    strerror(-res));
		if (op == IORING_OP_FSYNC) {
			s->fsyncs++;
			continue;
		}
		if (idx >= n)
			die("io_uring: bogus user_data %" PRIu64, idx);
		count_io(s, op == IORING_OP_WRITE, (uint64_t)res);
		if ((uint64_t)res != blk)
			die("short io_uring completion: %d of %" PRIu64, res, blk);
		if (op == IORING_OP_READ)
			check(bufs[idx], blk, off + idx * blk, seed);
	}
}

static void uring_submit_wait(struct io_uring *ring, unsigned n)
{
	int r = io_uring_submit_and_wait(ring, n);

	if (r < 0)
		die_err("io_uring_submit_and_wait", -r);
	if ((unsigned)r != n)
		die("io_uring_submit_and_wait: submitted %d of %u", r, n);
}

static void uring_phase(struct fstats *s, struct io_uring *ring, int fd, char **bufs,
			uint64_t size, uint64_t seed, int op)
{
	const uint64_t blk = g_block ? g_block : URING_BLOCK;
	const uint64_t batch_bytes = (uint64_t)URING_QD * blk;

	for (uint64_t off = 0; off < size; off += batch_bytes) {
		unsigned n = (unsigned)min_sz(URING_QD, (size - off) / blk);

		for (unsigned i = 0; i < n; i++) {
			uint64_t o = off + (uint64_t)i * blk;
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

			if (!sqe)
				die("io_uring_get_sqe: submission queue full");
			if (op == IORING_OP_WRITE) {
				fill(bufs[i], blk, o, seed);
				io_uring_prep_write(sqe, fd, bufs[i], (unsigned)blk, o);
			} else {
				memset(bufs[i], 0, blk);
				io_uring_prep_read(sqe, fd, bufs[i], (unsigned)blk, o);
			}
			io_uring_sqe_set_data64(sqe, i);
		}
		uring_submit_wait(ring, n);
		uring_reap(s, ring, n, bufs, off, seed, op);
	}
}

static void scn_uring(struct fstats *s, uint64_t size, uint64_t seed)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	char *bufs[URING_QD];
	int fd = xopen(s->path, O_DIRECT);
	int r;

	s->direct = 1;
	s->api = "io_uring";
	for (int i = 0; i < URING_QD; i++)
		bufs[i] = xalloc_aligned(g_block ? g_block : URING_BLOCK);
	prealloc_file(s, fd, size, g_block ? g_block : URING_BLOCK, seed);
	r = io_uring_queue_init(URING_QD, &ring, 0);
	if (r < 0)
		die_err("io_uring_queue_init", -r);

	uring_phase(s, &ring, fd, bufs, size, seed, IORING_OP_WRITE);

	sqe = io_uring_get_sqe(&ring);
	if (!sqe)
		die("io_uring_get_sqe: submission queue full");
	io_uring_prep_fsync(sqe, fd, 0);
	io_uring_sqe_set_data64(sqe, 0);
	uring_submit_wait(&ring, 1);
	uring_reap(s, &ring, 1, bufs, 0, seed, IORING_OP_FSYNC);

	uring_phase(s, &ring, fd, bufs, size, seed, IORING_OP_READ);

	io_uring_queue_exit(&ring);
	xclose(fd);
	for (int i = 0; i < URING_QD; i++)
		free(bufs[i]);
}

/* ------------------------------------------------------------------ */

struct scenario {
	const char *name;
	void (*fn)(struct fstats *, uint64_t, uint64_t);
};

static const struct scenario SCENARIOS[] = {
	{ "odirect", scn_odirect },
	{ "buffered_fsync", scn_buffered_fsync },
	{ "buffered_read_cold", scn_buffered_read_cold },
	{ "vector", scn_vector },
	{ "libaio", scn_libaio },
	{ "uring", scn_uring },
};
#define NSCN ((int)(sizeof(SCENARIOS) / sizeof(SCENARIOS[0])))

/* ------------------------------------------------------------------ */
/* JSON output (built in memory, written with write(2) at the end).   */

struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_put(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			die("vsnprintf failed");
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		b->cap = b->cap * 2 + (size_t)n;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			die("realloc: out of memory");
	}
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_put(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			sb_put(b, "\\%c", c);
		else if (c < 0x20)
			sb_put(b, "\\u%04x", c);
		else
			sb_put(b, "%c", c);
	}
	sb_put(b, "\"");
}

static void emit_json(const char *out, struct fstats *st, int nst)
{
	struct sbuf b = { .p = malloc(4096), .len = 0, .cap = 4096 };
	int fd, first = 1;

	if (!b.p)
		die("malloc: out of memory");
	sb_put(&b, "{\"pid\": %ld, \"files\": {", (long)getpid());
	for (int i = 0; i < nst; i++) {
		struct fstats *s = &st[i];

		if (!s->done)
			continue;
		sb_put(&b, "%s\n  ", first ? "" : ",");
		first = 0;
		sb_str(&b, s->path);
		sb_put(&b, ": {\"scenario\": \"%s\", \"read_bytes\": %" PRIu64
		       ", \"write_bytes\": %" PRIu64 ", \"reads\": %" PRIu64
		       ", \"writes\": %" PRIu64 ", \"fsyncs\": %" PRIu64
		       ", \"direct\": %s, \"api\": \"%s\"}",
		       s->scenario, s->read_bytes, s->write_bytes, s->reads,
		       s->writes, s->fsyncs, s->direct ? "true" : "false", s->api);
	}
	sb_put(&b, "%s}, \"resident_pages_after_drop\": ", first ? "" : "\n");
	if (g_resident_after_drop < 0)
		sb_put(&b, "null");
	else
		sb_put(&b, "%ld", g_resident_after_drop);
	/* the kernel's own storage-IO accounting for this process, read before
	 * the JSON itself is written: ground truth for block-layer totals */
	{
		char buf[1024];
		int pfd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
		ssize_t n = pfd >= 0 ? read(pfd, buf, sizeof(buf) - 1) : -1;
		unsigned long long rb = 0, wb = 0, cwb = 0;

		if (pfd >= 0)
			close(pfd);
		if (n > 0) {
			buf[n] = 0;
			char *p = strstr(buf, "\nread_bytes:");
			if (p) rb = strtoull(p + 12, NULL, 10);
			p = strstr(buf, "\nwrite_bytes:");
			if (p) wb = strtoull(p + 13, NULL, 10);
			p = strstr(buf, "\ncancelled_write_bytes:");
			if (p) cwb = strtoull(p + 23, NULL, 10);
		}
		sb_put(&b, ", \"proc_io\": {\"read_bytes\": %llu, \"write_bytes\": %llu, "
		       "\"cancelled_write_bytes\": %llu}}\n", rb, wb, cwb);
	}

	if (out) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			die("open %s: %s", out, strerror(errno));
	} else {
		fd = STDOUT_FILENO;
	}
	for (size_t done = 0; done < b.len;) {
		ssize_t r = write(fd, b.p + done, b.len - done);
		if (r < 0)
			die_errno("write json");
		done += (size_t)r;
	}
	if (out && close(fd) < 0)
		die_errno("close json");
	free(b.p);
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: iogen --dir DIR [--scenario NAME]... [--size BYTES] [--block BYTES]\n"
		"             [--prealloc none|fallocate|written] [--json OUT] [--wait-fd N]\n"
		"  scenarios (default all, run in this order): odirect buffered_fsync\n"
		"    buffered_read_cold vector libaio uring   (also: all; comma lists ok)\n"
		"  --size     per-file data size, K/M/G suffixes ok (default 4M; rounded up to 16 KiB)\n"
		"  --block    IO size of odirect/libaio/uring (multiple of 4K; size is rounded up to it)\n"
		"  --prealloc file state before the direct-IO writes: none (append), fallocate, written\n"
		"  --json     write the ground-truth JSON here (default stdout)\n"
		"  --wait-fd  read one byte from fd N before any IO (env IOGEN_WAIT_FD=N is equivalent)\n");
}

/* BYTES with an optional K/M/G (binary) suffix; `what` names the option. */
static uint64_t parse_bytes(const char *arg, const char *what)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || arg[0] == '-')
		die("invalid %s '%s'", what, arg);
	switch (*end) {
	case 'k': case 'K': mult = KiB; end++; break;
	case 'm': case 'M': mult = MiB; end++; break;
	case 'g': case 'G': mult = 1024 * MiB; end++; break;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (mult > 1 && v > UINT64_MAX / mult))
		die("invalid %s '%s'", what, arg);
	return v * mult;
}

static uint64_t parse_size(const char *arg)
{
	uint64_t v = parse_bytes(arg, "--size");

	if (v == 0)
		v = SIZE_UNIT;
	if (v > UINT64_MAX - SIZE_UNIT)
		die("invalid --size '%s'", arg);
	return (v + SIZE_UNIT - 1) / SIZE_UNIT * SIZE_UNIT;
}

static int parse_fd(const char *arg, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > INT_MAX)
		die("invalid %s '%s'", what, arg);
	return (int)v;
}

static void select_scenarios(const char *arg, int *sel)
{
	char *dup = strdup(arg), *save = NULL, *tok;

	if (!dup)
		die("strdup: out of memory");
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int found = 0;

		if (!strcmp(tok, "all")) {
			for (int i = 0; i < NSCN; i++)
				sel[i] = 1;
			continue;
		}
		for (int i = 0; i < NSCN; i++) {
			if (!strcmp(tok, SCENARIOS[i].name)) {
				sel[i] = 1;
				found = 1;
			}
		}
		if (!found)
			die("unknown scenario '%s'", tok);
	}
	free(dup);
}

static void wait_go(int fd)
{
	char c;

	for (;;) {
		ssize_t r = read(fd, &c, 1);
		if (r >= 0)  /* one byte, or EOF (writer closed): go */
			break;
		if (errno == EINTR)
			continue;
		die("read go-signal from fd %d: %s", fd, strerror(errno));
	}
	if (close(fd) < 0)
		die_errno("close wait-fd");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "scenario", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'S' },
		{ "json", required_argument, NULL, 'j' },
		{ "wait-fd", required_argument, NULL, 'w' },
		{ "block", required_argument, NULL, 'b' },
		{ "prealloc", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *json = NULL, *env;
	uint64_t size = DEFAULT_SIZE;
	int sel[NSCN] = { 0 }, any = 0, wait_fd = -1, opt;
	char absdir[PATH_MAX];
	struct fstats st[NSCN];

	while ((opt = getopt_long(argc, argv, "d:s:S:j:w:b:p:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 's': select_scenarios(optarg, sel); any = 1; break;
		case 'S': size = parse_size(optarg); break;
		case 'j': json = optarg; break;
		case 'w': wait_fd = parse_fd(optarg, "--wait-fd"); break;
		case 'b':
			g_block = parse_bytes(optarg, "--block");
			if (!g_block || g_block % DIO_BLOCK || g_block > MAX_BLOCK)
				die("invalid --block '%s' (a multiple of 4096 up to 64M)", optarg);
			break;
		case 'p':
			if (!strcmp(optarg, "none"))
				g_prealloc = PREALLOC_NONE;
			else if (!strcmp(optarg, "fallocate"))
				g_prealloc = PREALLOC_FALLOCATE;
			else if (!strcmp(optarg, "written"))
				g_prealloc = PREALLOC_WRITTEN;
			else
				die("invalid --prealloc '%s' (none, fallocate or written)", optarg);
			break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "iogen: setup: invalid arguments (see --help)\n");
			return 1;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (g_block)  /* every direct-IO scenario moves whole blocks */
		size = (size + g_block - 1) / g_block * g_block;
	if (!dir)
		die("--dir is required");
	if (!any)
		for (int i = 0; i < NSCN; i++)
			sel[i] = 1;
	if (wait_fd < 0 && (env = getenv("IOGEN_WAIT_FD")) && *env)
		wait_fd = parse_fd(env, "IOGEN_WAIT_FD");

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", dir, strerror(errno));
	if (!realpath(dir, absdir))
		die("realpath %s: %s", dir, strerror(errno));

	memset(st, 0, sizeof(st));
	for (int i = 0; i < NSCN; i++) {
		st[i].scenario = SCENARIOS[i].name;
		if (snprintf(st[i].path, sizeof(st[i].path), "%s/%s", absdir,
			     SCENARIOS[i].name) >= (int)sizeof(st[i].path))
			die("path too long: %s/%s", absdir, SCENARIOS[i].name);
	}

	if (wait_fd >= 0)
		wait_go(wait_fd);

	for (int i = 0; i < NSCN; i++) {
		if (!sel[i])
			continue;
		g_ctx = SCENARIOS[i].name;
		SCENARIOS[i].fn(&st[i], size, 0xA5A5000000000000ULL | (uint64_t)(i + 1));
		st[i].done = 1;
	}
	g_ctx = "output";
	emit_json(json, st, NSCN);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * innodb_page_loop FILE N PAGES DIRECT [pread|read|aio|preadv|aiov|aiovw|uringv]: N reads of one 16 KiB page each
 * from the first PAGES pages of FILE (page (i * 7919) % PAGES), with O_DIRECT
 * when DIRECT is 1 (with "read": lseek() then read(), the plain read whose
 * offset the probes take from the file's f_pos; with "aio": io_submit() of
 * one IOCB_CMD_PREAD, then io_getevents() for it). "preadv" and "aiov" read
 * two adjacent pages a call (page (i * 7919) % (PAGES - 1) and the next) into
 * two buffers that are not adjacent, with preadv() of two iovecs or one
 * IOCB_CMD_PREADV of them; "aiovw" writes the same two pages back with one
 * IOCB_CMD_PWRITEV, their headers what bench_iopath.py wrote there (the file
 * stays as it was); "uringv" reads the two pages with one io_uring READV (liburing);
 * "preadvK" (K of 3-16) reads K adjacent pages a call (from page (i * 7919) % (PAGES - K + 1))
 * into K buffers that are not adjacent, with preadv() of K iovecs (PostgreSQL 18's combined
 * reads are of up to 16 blocks by default). Prints "ready <pid>", waits for one byte on stdin (so the
 * caller can attach and add us to the targets first), reads, prints "done".
 * bench_iopath.py writes FILE as InnoDB index pages and registers it in
 * page_files, so each pread runs the whole sync-read path: fd -> inode at
 * enter, accounting and page classification at exit.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/aio_abi.h>
#include <liburing.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
static char buf[16384] __attribute__((aligned(4096)));
static char buf2[3 * 16384] __attribute__((aligned(4096)));
static char bufk[32 * 16384] __attribute__((aligned(4096)));
static void put_be(char *b, int n, unsigned long long v)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		b[i] = (char)(v & 0xff);
}

/* page p as bench_iopath.py's make_file() writes it */
static void page_of(char *b, long p)
{
	memset(b, 0, 16384);
	put_be(b + 4, 4, p);                         /* FIL_PAGE_OFFSET */
	put_be(b + 24, 2, 17855);                    /* FIL_PAGE_INDEX */
	put_be(b + 34, 4, 7);                        /* FIL_PAGE_SPACE_ID (SPACE_ID) */
	put_be(b + 64, 2, p % 3 == 0 ? 1 : 0);       /* PAGE_LEVEL: level_of() */
	put_be(b + 66, 8, 40 + p % 4);               /* PAGE_INDEX_ID: index_id_of() */
}

int main(int argc, char **argv)
{
	int aiovw = argc > 5 && !strcmp(argv[5], "aiovw");
	int fd = open(argv[1], (aiovw ? O_RDWR : O_RDONLY) | (atoi(argv[4]) ? O_DIRECT : 0));
	long n = atol(argv[2]), pages = atol(argv[3]);
	int plain = argc > 5 && !strcmp(argv[5], "read");
	int aio = argc > 5 && !strcmp(argv[5], "aio");
	int vec = argc > 5 && !strcmp(argv[5], "preadv");
	int aiov = aiovw || (argc > 5 && !strcmp(argv[5], "aiov"));
	int uringv = argc > 5 && !strcmp(argv[5], "uringv");
	/* "preadvK": K iovecs a call */
	int veck = argc > 5 && !strncmp(argv[5], "preadv", 6) && argv[5][6] ? atoi(argv[5] + 6) : -1;
	struct io_uring ring;
	struct iovec iov[2] = { { buf, 16384 }, { buf2 + 2 * 16384, 16384 } };
	struct iovec iovk[16];

	if (veck == -1) {
		veck = 0; /* not this mode */
	} else if (veck < 3 || veck > 16) {
		fprintf(stderr, "preadvK: K of 3-16\n");
		return 1;
	}
	for (int k = 0; k < 16; k++) { /* every other slot: no two buffers adjacent */
		iovk[k].iov_base = bufk + 2 * k * 16384;
		iovk[k].iov_len = 16384;
	}
	aio_context_t ctx = 0;
	struct iocb cb, *cbp = &cb;
	struct io_event ev;

	if ((aio || aiov) && syscall(SYS_io_setup, 4, &ctx) < 0) { perror("io_setup"); return 1; }
	if (uringv && io_uring_queue_init(4, &ring, 0) < 0) { perror("io_uring_queue_init"); return 1; }
	char c;
	if (fd < 0) { perror("open"); return 1; }
	printf("ready %d\n", getpid()); fflush(stdout);
	if (read(0, &c, 1) != 1) return 1;
	for (long i = 0; i < n; i++) {
		long p = (i * 7919) % (veck ? pages - veck + 1 : vec || aiov || uringv ? pages - 1 : pages);
		if (veck) {
			if (syscall(SYS_preadv, fd, iovk, veck, p * 16384, 0) != veck * 16384L) {
				perror("preadvK");
				return 1;
			}
		} else if (vec) {
			if (syscall(SYS_preadv, fd, iov, 2, p * 16384, 0) != 2 * 16384) {
				perror("preadv");
				return 1;
			}
		} else if (uringv) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			struct io_uring_cqe *cqe = NULL;

			io_uring_prep_readv(sqe, fd, iov, 2, p * 16384);
			if (io_uring_submit(&ring) != 1 || io_uring_wait_cqe(&ring, &cqe) < 0 || cqe->res != 2 * 16384) {
				fprintf(stderr, "uringv: %d\n", cqe ? cqe->res : -1);
				return 1;
			}
			io_uring_cqe_seen(&ring, cqe);
		} else if (aiov) {
			memset(&cb, 0, sizeof(cb));
			cb.aio_lio_opcode = aiovw ? IOCB_CMD_PWRITEV : IOCB_CMD_PREADV;
			if (aiovw) {
				page_of(buf, p);
				page_of(buf2 + 2 * 16384, p + 1);
			}
			cb.aio_fildes = fd;
			cb.aio_buf = (unsigned long)iov;
			cb.aio_nbytes = 2;
			cb.aio_offset = p * 16384;
			if (syscall(SYS_io_submit, ctx, 1, &cbp) != 1 ||
			    syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1 || ev.res != 2 * 16384) {
				perror(aiovw ? "aiovw" : "aiov");
				return 1;
			}
		} else if (aio) {
			memset(&cb, 0, sizeof(cb));
			cb.aio_lio_opcode = IOCB_CMD_PREAD;
			cb.aio_fildes = fd;
			cb.aio_buf = (unsigned long)buf;
			cb.aio_nbytes = 16384;
			cb.aio_offset = p * 16384;
			if (syscall(SYS_io_submit, ctx, 1, &cbp) != 1 ||
			    syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1 || ev.res != 16384) {
				perror("aio");
				return 1;
			}
		} else if (plain) {
			if (lseek(fd, p * 16384, SEEK_SET) < 0 || syscall(SYS_read, fd, buf, 16384) != 16384) {
				perror("read");
				return 1;
			}
		} else if (syscall(SYS_pread64, fd, buf, 16384, p * 16384) != 16384) {
			perror("pread");
			return 1;
		}
	}
	printf("done\n"); fflush(stdout);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * innodb_page_loop FILE N PAGES DIRECT [pread|read|aio|preadv|aiov]: N reads of one 16 KiB page each
 * from the first PAGES pages of FILE (page (i * 7919) % PAGES), with O_DIRECT
 * when DIRECT is 1 (with "read": lseek() then read(), the plain read whose
 * offset the probes take from the file's f_pos; with "aio": io_submit() of
 * one IOCB_CMD_PREAD, then io_getevents() for it). "preadv" and "aiov" read
 * two adjacent pages a call (page (i * 7919) % (PAGES - 1) and the next) into
 * two buffers that are not adjacent, with preadv() of two iovecs or one
 * IOCB_CMD_PREADV of them. Prints "ready <pid>", waits for one byte on stdin (so the
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
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
static char buf[16384] __attribute__((aligned(4096)));
static char buf2[3 * 16384] __attribute__((aligned(4096)));
int main(int argc, char **argv)
{
	int fd = open(argv[1], O_RDONLY | (atoi(argv[4]) ? O_DIRECT : 0));
	long n = atol(argv[2]), pages = atol(argv[3]);
	int plain = argc > 5 && !strcmp(argv[5], "read");
	int aio = argc > 5 && !strcmp(argv[5], "aio");
	int vec = argc > 5 && !strcmp(argv[5], "preadv");
	int aiov = argc > 5 && !strcmp(argv[5], "aiov");
	struct iovec iov[2] = { { buf, 16384 }, { buf2 + 2 * 16384, 16384 } };
	aio_context_t ctx = 0;
	struct iocb cb, *cbp = &cb;
	struct io_event ev;

	if ((aio || aiov) && syscall(SYS_io_setup, 4, &ctx) < 0) { perror("io_setup"); return 1; }
	char c;
	if (fd < 0) { perror("open"); return 1; }
	printf("ready %d\n", getpid()); fflush(stdout);
	if (read(0, &c, 1) != 1) return 1;
	for (long i = 0; i < n; i++) {
		long p = (i * 7919) % (vec || aiov ? pages - 1 : pages);
		if (vec) {
			if (syscall(SYS_preadv, fd, iov, 2, p * 16384, 0) != 2 * 16384) {
				perror("preadv");
				return 1;
			}
		} else if (aiov) {
			memset(&cb, 0, sizeof(cb));
			cb.aio_lio_opcode = IOCB_CMD_PREADV;
			cb.aio_fildes = fd;
			cb.aio_buf = (unsigned long)iov;
			cb.aio_nbytes = 2;
			cb.aio_offset = p * 16384;
			if (syscall(SYS_io_submit, ctx, 1, &cbp) != 1 ||
			    syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1 || ev.res != 2 * 16384) {
				perror("aiov");
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

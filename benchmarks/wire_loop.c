// SPDX-License-Identifier: GPL-2.0
/*
 * wire_loop N MODE: a MySQL-protocol "connection" over a unix socketpair, for
 * bench_iopath.py --wire. The parent is the server's connection thread: it
 * reads each command packet the way MariaDB's my_real_read() does --
 * recvfrom(fd, buf, 4, MSG_DONTWAIT) for the header (EAGAIN: poll, read again),
 * then recvfrom(fd, buf, length, MSG_DONTWAIT) for the payload, over the header
 * (MariaDB 10.11 under strace: the same address) -- and answers each with an 11-byte OK packet. The
 * child is the client: N statements, each sent as one packet, then reads the
 * answer (its recvfrom runs the wire reader too, as an untraced process).
 * MODE "query": COM_QUERY "SELECT c FROM sbtest1 WHERE id=<5 digits>" (one
 * digest); "range": COM_QUERY the insert benchmark's q100 range query,
 * "SELECT price, dt, id FROM ib.t FORCE INDEX (ix_price) WHERE price >= <n.nn>
 * ORDER BY price, dt, id LIMIT 10" (one digest, ~105 bytes); "long": COM_QUERY a
 * LinkBench-like multi-statement text of ~4 KiB, "INSERT ... VALUES (...), ... (40 rows,
 * quoted strings holding ';' and escaped quotes); COMMIT" (two statements, one digest: the
 * wire reader's scan past the digested bytes); "prepared": a COM_STMT_EXECUTE of 18 bytes. A third argument "solo": no client process (solo()). Prints "ready <pid>"
 * (the server's), waits for one byte on stdin (so the caller can attach and
 * add the server to the targets first), runs, prints "done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned char sbuf[1 << 16];

static long server_read(int fd, unsigned char *p, size_t n)
{
	for (;;) {
		long r = recvfrom(fd, p, n, MSG_DONTWAIT, NULL, NULL);
		if (r >= 0 || errno != EAGAIN)
			return r;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, -1) < 0)
			return -1;
	}
}

enum { PREPARED, QUERY, RANGE, LONG };
#define PKT_MAX 8192

/* Statement i's command packet (header and payload) into pkt; its length. */
static int packet(unsigned char *pkt, long i, int mode)
{
	int len;

	if (mode == QUERY) {
		pkt[4] = 3;
		len = 1 + sprintf((char *)pkt + 5, "SELECT c FROM sbtest1 WHERE id=%05ld", 10000 + i % 90000);
	} else if (mode == RANGE) {
		pkt[4] = 3;
		len = 1 + sprintf((char *)pkt + 5, "SELECT price, dt, id FROM ib.t FORCE INDEX (ix_price) "
				  "WHERE price >= %ld.%02ld ORDER BY price, dt, id LIMIT 10", i % 500, i % 100);
	} else if (mode == LONG) {
		char *t = (char *)pkt + 5;
		int o = sprintf(t, "INSERT INTO linktable (id1, link_type, id2, data) VALUES ");

		for (int r = 0; r < 40; r++)
			o += sprintf(t + o, "%s(%05ld, 123456789, %02d, 'payload of a link row; with \\'quotes\\' "
				     "0123456789abcdef0123456789abcdef')", r ? ", " : "", 10000 + i % 90000, r);
		o += sprintf(t + o, "; COMMIT");
		pkt[4] = 3;
		len = 1 + o;
	} else {
		memset(pkt + 4, 0, 18);
		pkt[4] = 0x17; /* COM_STMT_EXECUTE: id 1, no cursor, 1 iteration, one long param */
		pkt[5] = 1;
		pkt[10] = 1;
		pkt[15] = 1;
		pkt[16] = 3;
		memcpy(pkt + 18, &i, 4);
		len = 18;
	}
	pkt[0] = len & 0xff;
	pkt[1] = (len >> 8) & 0xff;
	pkt[2] = len >> 16;
	pkt[3] = 0;
	return 4 + len;
}

static int client(int fd, long n, int mode)
{
	static unsigned char pkt[PKT_MAX];
	unsigned char resp[64];

	for (long i = 0; i < n; i++) {
		int len = packet(pkt, i, mode);

		if (write(fd, pkt, len) != len)
			return 1;
		if (recv(fd, resp, 11, MSG_WAITALL) != 11)
			return 1;
	}
	return 0;
}

/* "solo": one process writes each packet into its own socketpair and reads it back the
 * server's way, with no second process and no wait: its wall time is CPU time, the
 * tracing's included (the recvfrom exits' dispatch too), without the ping-pong's scheduling */
static int solo(int *sv, long n, int mode)
{
	static unsigned char pkt[PKT_MAX];

	for (long i = 0; i < n; i++) {
		int len = packet(pkt, i, mode);

		if (write(sv[1], pkt, len) != len)
			return 1;
		if (server_read(sv[0], sbuf, 4) != 4 || server_read(sv[0], sbuf, len - 4) != len - 4)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = atol(argv[1]);
	int mode = argc < 3 ? PREPARED : !strcmp(argv[2], "query") ? QUERY : !strcmp(argv[2], "range") ? RANGE :
		   !strcmp(argv[2], "long") ? LONG : PREPARED;
	int sv[2];
	char c;
	static const unsigned char ok[11] = { 7, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0 };

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) { perror("socketpair"); return 1; }
	printf("ready %d\n", getpid()); fflush(stdout);
	if (read(0, &c, 1) != 1) return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (argc > 3 && !strcmp(argv[3], "solo")) {
		if (solo(sv, n, mode)) { perror("solo"); return 1; }
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("done %lld\n", (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
		fflush(stdout);
		return 0;
	}
	pid_t kid = fork();
	if (kid == 0) {
		close(sv[0]);
		_exit(client(sv[1], n, mode));
	}
	close(sv[1]);
	for (long i = 0; i < n; i++) {
		if (server_read(sv[0], sbuf, 4) != 4) { perror("header"); return 1; }
		unsigned len = sbuf[0] | sbuf[1] << 8 | sbuf[2] << 16;
		if (server_read(sv[0], sbuf, len) != (long)len) { perror("payload"); return 1; }
		if (send(sv[0], ok, sizeof(ok), 0) != sizeof(ok)) { perror("send"); return 1; }
	}
	int status;
	if (waitpid(kid, &status, 0) != kid || !WIFEXITED(status) || WEXITSTATUS(status)) return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* the wall time of the N statements, both processes' syscalls and their tracing included */
	printf("done %lld\n", (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	fflush(stdout);
	return 0;
}

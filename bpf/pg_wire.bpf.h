/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PostgreSQL statements from the wire (frontend/backend protocol 3.0), for bpf/stage.bpf.c's
 * wire reader (included there after the MySQL one; wire_recv calls pg_recv):
 * a target whose targets value has IOA_TARGET_PG_WIRE (a postmaster and its children, copied
 * at fork by bpf/targets.bpf.c) has its recvfrom()s parsed as PostgreSQL messages instead.
 * A backend reads its client socket with recv(sock, buf, 8192 - kept, 0) = recvfrom (strace,
 * postgresql-15 here): whatever arrived, several messages or a part of one. Each message is a
 * type byte, a big-endian int32 length that counts itself, and the body; the connection's
 * first is the startup packet (no type byte: length, protocol 3.0 or the SSL/GSS/cancel
 * request codes). Per thread (a backend is one process per connection):
 *   PG_UNKNOWN  where the stream is is not known (a fresh connection, a backend already
 *               connected when tracing started, or lost): the read's first bytes are taken as
 *               a startup packet, a TLS record (0x16 0x03: the connection went TLS after an
 *               SSLRequest -- PG_TLS, never read again, counted in pg_tls), or a typed message
 *               whose type is a frontend one and length plausible; else the read is skipped
 *   PG_SYNCED   the read starts with a message header
 *   PG_BODY     the read starts with wire_need bytes of a message begun in an earlier read
 * Up to PG_MAX_MSGS messages per read (bpf_loop); more, or a header cut by the read's end,
 * makes the state PG_UNKNOWN until a read starts with a message again. Per message: one 5-byte
 * bpf_probe_read_user of the header, and for
 *   'Q' Simple Query: a statement starts (statement_start: digest, count, text sample, phase
 *       marker), text read with bpf_probe_read_user_str, at most IOATTR_QUERY_MAX bytes and
 *       never past this read's bytes
 *   'P' Parse: the text is digested and sampled but not counted: the digest is remembered as
 *       the connection's unnamed statement (task storage pg_unnamed), or for a named one in
 *       pg_stmts[(tgid, FNV of the name)] (LRU)
 *   'B' Bind: the statement it binds (its name: the second string of the body, at most
 *       PG_BIND_SCAN bytes in) gives pg_bound
 *   'E' Execute: a statement of digest pg_bound starts (counted; PG_UNKNOWN_STATEMENT when its
 *       Parse was not seen: prepared before tracing started, or a name longer than the scan)
 * Other messages (Sync, Describe, Close, Flush, COPY data, Terminate...) are skipped by length.
 * A statement starts in IOA_STAGE_PARSE when the server's stage uprobes are attached
 * (WIRE_PROTO_PG_STAGED: bpf/pg_stage.bpf.h moves it on), else in IOA_STAGE_STATEMENT.
 */
enum { PG_UNKNOWN, PG_SYNCED, PG_BODY, PG_TLS };
#define PG_MAX_MSGS 32
#define PG_MAX_LEN (1U << 30)     /* PostgreSQL's own limit on a message (PQ_LARGE_MESSAGE_LIMIT) */
#define PG_STARTUP_MAX 10000      /* MAX_STARTUP_PACKET_LENGTH */
#define PG_NAME_MAX 64            /* NAMEDATALEN: a statement name is cut to 63 bytes */
#define PG_BIND_SCAN 128          /* Bind: portal name, statement name within this many bytes */
#define PG_PROTO_3 196608
#define PG_CANCEL_REQUEST 80877102
#define PG_SSL_REQUEST 80877103
#define PG_GSSENC_REQUEST 80877104
#define PG_UNKNOWN_STATEMENT 0x17 /* an Execute of a statement whose Parse was not seen: counted
                                   * as MySQL's COM_STMT_EXECUTE is, "stmt_execute" */

struct pg_stmt_key {
	__u32 tgid;
	__u32 pad;
	__u64 name; /* FNV-1a of the statement name */
};

BPF_LRU_HASH(pg_stmts, struct pg_stmt_key, __u64, 16384);

/* [0]: PostgreSQL connections seen switching to TLS (their statements are not read) */
BPF_ARRAY(pg_tls, __u64, 1);

/* The read's first PG_PEEK bytes, copied with one bpf_probe_read_user (~150-200 ns whatever the
 * size): the headers, Bind bodies and Parse names within them are taken from the copy, not read
 * one by one (a Bind/Describe/Execute/Sync batch is 4 headers and a Bind body: 1 read, not 5) */
#define PG_PEEK 256
struct pg_peek_buf {
	__u8 b[PG_PEEK];
};

BPF_PERCPU_ARRAY(pg_peek, struct pg_peek_buf, 1);

struct pg_walk {
	struct task_io_state *st;
	struct pg_peek_buf *peek;
	__u64 pid_tgid;
	__u64 buf;
	__u32 len;    /* bytes this read returned */
	__u32 pos;    /* where the next message header is */
	__u32 peek_base; /* peek holds the read's bytes [peek_base, peeked) */
	__u32 peeked;
};

/* n (<= PG_BIND_SCAN) bytes at offset off of the read into dst: from the peeked copy when all
 * there (bpf_probe_read_kernel: no byte loop for the verifier to walk), else from the socket buffer */
static __always_inline int pg_copy(struct pg_walk *w, __u8 *dst, __u32 off, __u64 n)
{
	asm volatile("" : "+r"(n));
	if (n > PG_BIND_SCAN)
		return -1;
	if (off >= w->peek_base && (__u64)off + n <= w->peeked)
		return bpf_probe_read_kernel(dst, n, &w->peek->b[(off - w->peek_base) & (PG_PEEK - 1)]) ? -1 : 0;
	return bpf_probe_read_user(dst, n, (void *)(w->buf + off)) ? -1 : 0;
}

/* the 5-byte message header at offset off: five loads from the copy when there */
static __always_inline int pg_header(struct pg_walk *w, __u8 *h, __u32 off)
{
	if (off >= w->peek_base && (__u64)off + 5 <= w->peeked) {
		__u32 i = off - w->peek_base;

		h[0] = w->peek->b[i & (PG_PEEK - 1)];
		h[1] = w->peek->b[(i + 1) & (PG_PEEK - 1)];
		h[2] = w->peek->b[(i + 2) & (PG_PEEK - 1)];
		h[3] = w->peek->b[(i + 3) & (PG_PEEK - 1)];
		h[4] = w->peek->b[(i + 4) & (PG_PEEK - 1)];
		return 0;
	}
	return bpf_probe_read_user(h, 5, (void *)(w->buf + off)) ? -1 : 0;
}

static __always_inline __u32 be32(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

/* The stage a statement starts in: parse when the server's stage uprobes move it on to
 * optimize (the planner) and execute (bpf/pg_stage.bpf.h), else "inside a statement, stage
 * not traced". */
static __always_inline __u8 pg_start_stage(struct task_io_state *st)
{
	return st->wire_proto == WIRE_PROTO_PG_STAGED ? IOA_STAGE_PARSE : IOA_STAGE_STATEMENT;
}

/* a message type a client sends (protocol 3.0) */
static __always_inline bool pg_frontend_type(__u8 t)
{
	return t == 'Q' || t == 'P' || t == 'B' || t == 'E' || t == 'S' || t == 'D' || t == 'C' ||
	       t == 'X' || t == 'H' || t == 'F' || t == 'd' || t == 'c' || t == 'f' || t == 'p';
}

/* Digest the NUL-terminated text at user address text (at most avail bytes of it there):
 * a statement start (counted) or a Parse's digest (not). Returns the digest (0: unread). */
static __always_inline __u64 pg_text(struct pg_walk *w, __u64 text, __u64 avail, int counted)
{
	__u32 zero = 0;
	struct digest_ctx *c = bpf_map_lookup_elem(&digest_scratch, &zero);
	__u64 n = avail < IOATTR_QUERY_MAX ? avail : IOATTR_QUERY_MAX;
	long got;

	w->st->digest = 0;
	if (!c || !n)
		return 0;
	asm volatile("" : "+r"(n)); /* the bound checked is the register passed */
	if (n > IOATTR_QUERY_MAX)
		return 0;
	got = bpf_probe_read_user_str(c->t->b, n, (void *)text);
	if (got <= 0)
		return 0;
	statement_start(w->st, w->pid_tgid, COM_QUERY, NULL, (__u32)got - 1, c, counted);
	w->st->stage = pg_start_stage(w->st);
	return w->st->digest;
}

/* FNV-1a of the name in b[from..] up to its NUL (0: the empty, unnamed; -1: no NUL in n bytes) */
static __always_inline __u64 pg_name_hash(const __u8 *b, __u32 from, __u32 n)
{
	__u64 h = FNV_OFFSET;

	for (int i = 0; i < PG_BIND_SCAN; i++) {
		if (i < from)
			continue;
		if (i >= n)
			return (__u64)-1;
		if (!b[i])
			return h == FNV_OFFSET ? 0 : h;
		h = (h ^ b[i]) * FNV_PRIME;
	}
	return (__u64)-1;
}

/* A Parse's statement name at offset off (avail bytes of its body in this read): *h its
 * hash (0: the unnamed statement), *nn its length with the NUL; false when it can't be
 * read here (a name past the scan or past this read: its Executes count as unknown). */
static __always_inline bool pg_parse_name(struct pg_walk *w, __u32 off, __u64 avail, __u64 *h, long *nn)
{
	__u8 name[PG_NAME_MAX];

	if (avail && off >= w->peek_base && (__u64)off + 1 <= w->peeked &&
	    !w->peek->b[(off - w->peek_base) & (PG_PEEK - 1)]) {
		*nn = 1; /* the unnamed statement (the usual case): no read, no name */
		*h = 0;
		return true;
	}
	*nn = bpf_probe_read_user_str(name, sizeof(name), (void *)(w->buf + off));
	if (*nn <= 0 || *nn >= PG_NAME_MAX || *nn > avail)
		return false;
	*h = pg_name_hash(name, 0, *nn);
	return true;
}

/* A Parse's text was digested (d): remember it under the statement's name h */
static __always_inline void pg_parse_done(struct pg_walk *w, __u64 h, __u64 d)
{
	struct pg_stmt_key k = { .tgid = w->pid_tgid >> 32, .name = h };

	if (!h)
		w->st->pg_unnamed = d;
	else if (d)
		bpf_map_update_elem(&pg_stmts, &k, &d, BPF_ANY);
}

static __always_inline void pg_bind(struct pg_walk *w, __u32 off, __u64 avail)
{
	__u8 b[PG_BIND_SCAN];
	struct pg_stmt_key k = { .tgid = w->pid_tgid >> 32 };
	__u64 n = avail < PG_BIND_SCAN ? avail : PG_BIND_SCAN, h = FNV_OFFSET, *d;
	bool in_name = false, named = false;

	w->st->pg_bound = 0;
	asm volatile("" : "+r"(n));
	if (!n || n > PG_BIND_SCAN || pg_copy(w, b, off, n))
		return;
	/* one pass: the portal name up to its NUL, then the statement name hashed (FNV-1a, as
	 * pg_name_hash) up to its NUL -- one unrolled loop for the verifier to walk, not two */
	for (int i = 0; i < PG_BIND_SCAN; i++) {
		if (i >= n)
			break;
		if (!in_name) {
			in_name = !b[i];
			continue;
		}
		if (!b[i]) {
			named = true;
			break;
		}
		h = (h ^ b[i]) * FNV_PRIME;
	}
	if (!named) /* no portal or statement name end within the scan or this read */
		return;
	if (h == FNV_OFFSET) {
		w->st->pg_bound = w->st->pg_unnamed;
	} else {
		k.name = h;
		d = bpf_map_lookup_elem(&pg_stmts, &k);
		if (d)
			w->st->pg_bound = *d;
	}
}

static __always_inline void pg_execute(struct pg_walk *w)
{
	struct task_io_state *st = w->st;
	__u64 d = st->pg_bound;

	st->stage = pg_start_stage(st);
	st->est_depth = 0;
	st->digest = d ?: PG_UNKNOWN_STATEMENT;
	if (d != IOA_DIGEST_INTERNAL) /* ioattr's own statements are not the workload's */
		count_statement(w->pid_tgid >> 32, st->digest);
}

static long pg_step(__u32 i, struct pg_walk *w)
{
	struct task_io_state *st = w->st;
	__u8 h[5];
	__u32 mlen;
	__u64 end, avail;

	if (w->pos >= w->len)
		return 1;
	if (w->len - w->pos < 5 || pg_header(w, h, w->pos)) {
		st->wire_state = PG_UNKNOWN; /* a header cut by the read's end */
		return 1;
	}
	mlen = be32(&h[1]);
	if (mlen < 4 || mlen > PG_MAX_LEN || !pg_frontend_type(h[0])) {
		st->wire_state = PG_UNKNOWN;
		return 1;
	}
	/* the body's bytes in this read */
	avail = w->len - w->pos - 5;
	if (avail > mlen - 4)
		avail = mlen - 4;
	if (h[0] == 'Q' || h[0] == 'P') {
		/* one digest call for both (a Simple Query's text, or a Parse's after its name):
		 * the verifier walks the inlined statement_start once here, not twice */
		__u64 name = 0;
		long nn = 0;

		if (h[0] == 'Q' || pg_parse_name(w, w->pos + 5, avail, &name, &nn)) {
			__u64 d = pg_text(w, w->buf + w->pos + 5 + nn, avail - nn, h[0] == 'Q');

			if (h[0] == 'P')
				pg_parse_done(w, name, d);
		}
	} else if (h[0] == 'B') {
		pg_bind(w, w->pos + 5, avail);
	} else if (h[0] == 'E') {
		pg_execute(w);
	}
	end = (__u64)w->pos + 1 + mlen;
	if (end > w->len) {
		st->wire_state = PG_BODY;
		st->wire_need = end - w->len;
		return 1;
	}
	w->pos = end;
	return 0;
}

static __always_inline int pg_recv(struct task_io_state *st, __u64 pid_tgid, int fd, __u64 buf, long ret)
{
	struct pg_walk w = { .st = st, .pid_tgid = pid_tgid, .buf = buf, .len = (__u32)ret, .pos = 0 };
	__u32 zero = 0;
	__u64 peek_n;
	__u8 h[8];

	if (ret > PG_MAX_LEN)
		return 0;
	if (fd != st->wire_fd) { /* another socket: its stream, from the start */
		st->wire_fd = fd;
		st->wire_state = PG_UNKNOWN;
		st->wire_need = 0;
	}
	if (st->wire_state == PG_TLS)
		return 0;
	if (st->wire_state == PG_BODY) {
		if ((__u64)ret < st->wire_need) {
			st->wire_need -= (__u32)ret;
			return 0;
		}
		w.pos = st->wire_need;
		st->wire_need = 0;
		st->wire_state = PG_SYNCED;
	} else if (st->wire_state == PG_UNKNOWN) {
		if (ret < 5 || bpf_probe_read_user(h, ret < 8 ? 5 : 8, (void *)buf))
			return 0;
		if (h[0] == 0x16 && h[1] == 3) { /* a TLS handshake record: encrypted from here on */
			__u32 zero = 0;
			__u64 *n = bpf_map_lookup_elem(&pg_tls, &zero);

			st->wire_state = PG_TLS;
			if (n)
				__sync_fetch_and_add(n, 1);
			return 0;
		}
		if (ret >= 8 && h[0] == 0) { /* a startup packet (its length's first byte is 0) */
			__u32 l = be32(h), code = be32(&h[4]);

			if (l < 8 || l > PG_STARTUP_MAX)
				return 0;
			if (code == PG_PROTO_3) { /* typed messages follow */
				if ((__u64)ret < l) {
					st->wire_state = PG_BODY;
					st->wire_need = l - (__u32)ret;
					return 0;
				}
				st->wire_state = PG_SYNCED;
				w.pos = l;
			} else { /* SSL/GSS request: the next read says whether TLS; cancel: the end */
				return 0;
			}
		} else if (pg_frontend_type(h[0])) {
			st->wire_state = PG_SYNCED; /* a plausible message; pg_step checks its length */
		} else {
			return 0;
		}
	}
	w.peek = bpf_map_lookup_elem(&pg_peek, &zero);
	if (!w.peek)
		return 0;
	peek_n = (__u64)ret - w.pos < PG_PEEK ? (__u64)ret - w.pos : PG_PEEK;
	asm volatile("" : "+r"(peek_n));
	/* the copy starts where the first header is (0, or past a body's rest or a startup packet) */
	if (peek_n && peek_n <= PG_PEEK && !bpf_probe_read_user(w.peek->b, peek_n, (void *)(buf + w.pos)))
		w.peek_base = w.pos, w.peeked = w.pos + (__u32)peek_n;
	bpf_loop(PG_MAX_MSGS, pg_step, &w, 0);
	if (st->wire_state == PG_SYNCED && w.pos < w.len)
		st->wire_state = PG_UNKNOWN; /* more messages than PG_MAX_MSGS */
	return 0;
}

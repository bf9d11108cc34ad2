// SPDX-License-Identifier: GPL-2.0
/*
 * Query and stage: where each connection thread's statement starts (from
 * the wire protocol, or a uprobe), and uprobes on mysqld's exported SQL-layer
 * functions for where in processing it is, so the IO probes can charge IO to
 * (digest, stage).
 *
 *   sock_recv_length            (ioattr_wire_recv, the default statement
 *                               source; syscalls:sys_exit_recvfrom where the
 *                               kernel lacks it) a recvfrom brought a command
 *                               packet: statement starts, digest computed. No
 *                               trap; see the comment above wire_recv()
 *   dispatch_command            entry: the same, for what the wire does not
 *                               show in clear (TLS, compression) or with
 *                               --statements uprobe
 *   mysql_execute_command       entry: execute
 *   JOIN::optimize              entry: optimize
 *   JOIN::exec                  entry: execute
 *   ha_commit_trans             entry: commit
 *   handler::multi_range_read_info_const
 *                               entry and return: estimate (index dives), in
 *                               both modes; only range-estimating statements hit it
 *   thd_attach_thd              entry: a background THD is attached: in MariaDB
 *                               10.x only InnoDB's purge tasks do this (acquire_thd)
 *   thd_detach_thd              entry: the purge task is done
 *
 * Each uprobe hit costs a trap (1.1 us idle, 3-5 us on a loaded small VM),
 * and a point select would hit the first five, so by default (`--stages
 * statement`) statements start from the wire and userspace attaches only the
 * purge and index-dive probes: a statement then runs in
 * IOA_STAGE_STATEMENT, "inside a statement, stage not traced", except
 * for the optimizer's index dives, which are IOA_STAGE_ESTIMATE. With
 * `--stages full` the loader sets cfg.fine_stages, attaches the stage probes
 * too, and a statement starts in parse.
 *
 * The digest is FNV-1a over the statement with literals (numbers, quoted
 * strings) replaced by '?', comments dropped and whitespace folded, so
 * statements that differ only in literals share it. The text itself goes
 * to userspace once per new digest, where literals are stripped again
 * before anything is stored.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "compat.bpf.h"
#include "maps.bpf.h"

#define COM_QUERY 3
/* The digest covers the first DIGEST_MAX bytes: enough to tell statements
 * apart, and it bounds the per-statement cost (one loop step per byte). */
#define DIGEST_MAX 256
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

BPF_HASH(stmt_stats, struct stmt_key, struct stmt_val, 16384);

/* A direct-mapped array in front of stmt_stats: every statement is counted, and in a busy
 * server a hash lookup there was a sixth of the statement reader's time (perf, issue 13:
 * the key's hash, a bucket and an element, each a cache miss). A key's slot is claimed
 * by its first statement (cmpxchg on the tag) and keeps it for the recording; a key whose
 * slot another holds, and digest 0, go to the hash. Userspace adds up both
 * (collectors/drain.py statement_drainer). struct stmt_slot: ioattr.h. */
BPF_ARRAY(stmt_slots, struct stmt_slot, STMT_SLOTS);

static __always_inline void stmt_slot_add(struct stmt_slot *s, int estimate)
{
	if (estimate)
		__sync_fetch_and_add(&s->estimates, 1);
	else
		__sync_fetch_and_add(&s->count, 1);
}

/* Count a statement start (estimate 0) or an index range estimate (estimate 1) of digest.
 * Returns 1 when the (process, phase, digest) entry was there already: this digest went
 * through statement_start before (an estimate's digest is its statement's). */
static __always_inline int count_stmt(__u32 tgid, __u64 digest, int estimate)
{
	struct stmt_key k = { .tgid = tgid, .phase = current_phase(), .digest = digest };
	struct stmt_val init = { .count = !estimate, .estimates = !!estimate };
	struct stmt_val *v;

	if (digest) {
		__u64 tag = (__u64)tgid << 32 | (__u64)k.phase << 1 | 1, t;
		/* the same mix as drain.py's stmt_slot_of (Fibonacci hashing: the top 12 bits) */
		__u32 i = ((digest ^ (__u64)tgid << 20 ^ k.phase) * 0x9E3779B97F4A7C15ULL) >> 52;
		struct stmt_slot *s = bpf_map_lookup_elem(&stmt_slots, &i);

		if (s) {
			t = s->tag;
			if (!t) {
				t = __sync_val_compare_and_swap(&s->tag, 0, tag);
				if (!t) { /* claimed: this key's first statement */
					s->digest = digest;
					stmt_slot_add(s, estimate);
					return 0;
				}
			}
			if (t == tag && s->digest == digest) {
				stmt_slot_add(s, estimate);
				return 1;
			}
		}
	}
	v = bpf_map_lookup_elem(&stmt_stats, &k);

	if (!v) {
		if (bpf_map_update_elem(&stmt_stats, &k, &init, BPF_NOEXIST) != -EEXIST)
			return 0;
		v = bpf_map_lookup_elem(&stmt_stats, &k);
		if (!v)
			return 0;
	}
	if (estimate)
		__sync_fetch_and_add(&v->estimates, 1);
	else
		__sync_fetch_and_add(&v->count, 1);
	return 1;
}

static __always_inline int count_statement(__u32 tgid, __u64 digest)
{
	return count_stmt(tgid, digest, 0);
}

/* [0]: the last phase number whose boundary a recorder has dealt with (counters
 * snapshotted), written by userspace; 0: no recorder waits for markers (top, the
 * exporter, or a recorder not yet started). See wait_for_recorder(). */
BPF_ARRAY(phase_ack, __u64, 1);

#define MARKER_WAIT_NS (2000ULL * 1000 * 1000) /* a marker waits at most this long */

struct ack_wait {
	__u64 phase;
	__u64 deadline;
};

static long ack_step(__u32 i, struct ack_wait *w)
{
	__u32 zero = 0;
	__u64 *ack = bpf_map_lookup_elem(&phase_ack, &zero);

	__u64 now = 0;
	int j;

	if (!ack || !*ack || *ack >= w->phase)
		return 1;
	/* pace the spin to ~1 us a step (a helper call costs ~25 ns here): bpf_loop stops after
	 * 8M steps, which unpaced would end the wait after ~0.1 s, before the deadline */
#pragma unroll
	for (j = 0; j < 32; j++)
		now = bpf_ktime_get_ns();
	return now > w->deadline;
}

/* A phase marker statement waits, before it runs, until the recorder has read the
 * engine's counters for the boundary it starts (bounded by MARKER_WAIT_NS): the
 * statements after it, on this connection, can't be in that snapshot, so the
 * engine's per-phase figures are cut at the same instant as ours. Only markers
 * wait, and only while a recorder says it snapshots (phase_ack non-zero). */
static __always_inline void wait_for_recorder(__u64 phase, __u64 now)
{
	struct ack_wait w = { .phase = phase, .deadline = now + MARKER_WAIT_NS };

	bpf_loop(1 << 23, ack_step, &w, 0);
}

/* digests already sampled to userspace */
BPF_LRU_HASH(seen_digests, __u64, __u8, 16384);

struct text_buf {
	char b[IOATTR_QUERY_MAX];
};

enum { S_CODE, S_SPACE, S_NUMBER, S_QUOTE, S_COMMENT, S_LINE_COMMENT };

/* The digest state lives in a per-CPU map value, not on the stack: the
 * verifier does not track map contents as constants, so the state machine's
 * branches converge instead of multiplying verifier states. */
struct digest_ctx {
	/* the wire reader reads a payload's command byte to wire_head[7] and
	 * its arguments right after it, to t: one bpf_probe_read_user for both */
	__u8 wire_head[8];
	struct text_buf t[1];
	__u64 hash;
	__u32 len;
	__u8 quote;
	__u8 prev;      /* last character that went into the hash */
	__u8 lead;      /* scan_byte(): a '/' or '-' that may start a comment, a '*' that may end one */
	__u8 prev2;     /* the character that went into the hash before prev */
	__u32 extra;    /* statements after the first in the text (a multi-statement COM_QUERY) */
	__u32 pad2;
	/* what digest_byte() must look at besides the byte itself, as one word: 0 (S_CODE, no
	 * match under way) or S_SPACE alone is the fast path's case (digest_plain_byte) */
	union {
		struct {
			__u8 state;
			__u8 escaped;
			__u8 marker;  /* how much of "ioattr:phase=" matched so far; 13 = found */
			__u8 local;   /* how much of "local" (any case) matched so far; 5 = found (LOAD DATA LOCAL) */
			__u8 semi;    /* a ';' outside literals and comments, no code after it yet */
			__u8 mode_pad[3];
		};
		__u64 mode;
	};
};

BPF_PERCPU_ARRAY(digest_scratch, struct digest_ctx, 1);

/* "ioattr:phase=" one character at a time (a const array would land in
 * .rodata, which holds only the loader's config) */
static __always_inline __u8 marker_char(__u32 i)
{
	switch (i) {
	case 0: return 'i';
	case 1: return 'o';
	case 2: return 'a';
	case 3: return 't';
	case 4: return 't';
	case 5: return 'r';
	case 6: return ':';
	case 7: return 'p';
	case 8: return 'h';
	case 9: return 'a';
	case 10: return 's';
	case 11: return 'e';
	default: return '=';
	}
}

/* "local" one character at a time, lower case */
static __always_inline __u8 local_char(__u32 i)
{
	switch (i) {
	case 1: return 'o';
	case 2: return 'c';
	case 3: return 'a';
	default: return 'l';
	}
}

static __always_inline void mix(struct digest_ctx *c, __u8 ch)
{
	c->hash = (c->hash ^ ch) * FNV_PRIME;
	c->prev2 = c->prev;
	c->prev = ch;
}

static __always_inline bool ident_char(__u8 ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '$' || ch >= 0x80;
}

/* t->b[i] with a bound the verifier can see (the compiler drops a plain mask) */
static __always_inline __u8 text_at(struct text_buf *t, __u32 i)
{
	asm volatile("" : "+r"(i));
	i &= IOATTR_QUERY_MAX - 1;
	return t->b[i];
}

/* bpf_loop wants its context on the stack: a pointer to the map value */
struct digest_ref {
	struct digest_ctx *c;
};

/* Bytes digest_slow_byte only lowers and hashes when the state is S_CODE or S_SPACE and no
 * match is under way (digits are decided before this mask, by what precedes them): not
 * whitespace or other controls, quotes, digits, '/', '-', '#' (which may
 * start a literal, a comment or change state), 'i' (starts "ioattr:phase="), 'l'/'L' (start
 * "local"), ';' (ends a statement of a multi-statement text), DEL; every byte >= 0x80. One bit
 * per byte value below 128. Not '$' either: it may start a PostgreSQL parameter. */
#define PLAIN_LO 0xf4005f6200000000ULL /* 0x00-0x3f: ! % & ( ) * + , . : < = > ? */
#define PLAIN_HI 0x7fffedffffffefffULL /* 0x40-0x7f: @ A-Z but L, [ \ ] ^ _ ` a-z but i l, { | } ~ */

/* The fast path of digest_byte(): most bytes of a statement are letters and punctuation
 * outside literals and comments, which the state machine would only lower and hash after a
 * dozen loads and compares, and digits inside a name or a number. Returns 1 when it dealt
 * with byte `ch` (exactly as digest_slow_byte would have: same hash, same state), 0 to leave
 * it to digest_slow_byte. */
static __always_inline int digest_plain_byte(struct digest_ctx *c, __u8 ch)
{
	__u64 mode = c->mode;

	if (ch >= '0' && ch <= '9') {
		/* the rest of a number literal (already a '?' in the hash) */
		if (mode == S_NUMBER)
			return 1;
		/* part of a name ("sbtest1"); a digit after anything else starts a literal */
		if (mode != S_CODE || !ident_char(c->prev))
			return 0;
		mix(c, ch);
		return 1;
	}
	if (mode > S_SPACE) /* another state, an escape to skip, or a match under way */
		return 0;
	if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
		if (mode != S_SPACE)
			c->mode = S_SPACE;
		return 1;
	}
	if (ch < 0x80 && !(((ch < 64 ? PLAIN_LO : PLAIN_HI) >> (ch & 63)) & 1))
		return 0;
	if (mode == S_SPACE) {
		if (c->prev && c->prev != ' ')
			mix(c, ' ');
		c->mode = S_CODE;
	}
	if (ch >= 'A' && ch <= 'Z')
		ch += 'a' - 'A';
	mix(c, ch);
	return 1;
}

/* A byte inside a quoted literal (digest_byte, scan_byte): a backslash escapes
 * the byte after it, the opening quote unescaped ends the literal. */
static __always_inline void quote_byte(struct digest_ctx *c, __u8 ch)
{
	if (c->escaped)
		c->escaped = 0;
	else if (ch == '\\')
		c->escaped = 1;
	else if (ch == c->quote)
		c->state = S_CODE;
}

/* Byte i of the digest, ch, when the fast path left it: quotes, comments, numbers, the phase
 * marker, LOCAL, ';'. A global function (verified once, on its own, whatever calls it) and
 * not inlined: inlined, the verifier walked this state machine once per byte of every
 * DIGEST_CHUNK-byte step, 2.2 s of CPU at every attach and past the kernel's limit for the
 * syscall-hook variant of the wire reader. The cost is a BPF-to-BPF call per slow byte,
 * a few ns; plain bytes never get here. Returns 1 at the end of the text. */
__noinline long digest_slow_byte(struct digest_ctx *c, __u32 i, __u8 ch)
{
	__u8 next;

	if (!c) /* a global function's pointer argument may be NULL to the verifier */
		return 1;
	next = (i + 1 < c->len) ? text_at(c->t, i + 1) : 0;
	/* look for the phase marker anywhere, comments included (most bytes are
	 * not an 'i' with no match under way: one compare, not marker_char's switch) */
	if (c->marker == 0) {
		if (ch == 'i')
			c->marker = 1;
	} else if (c->marker < 13) {
		if (ch == marker_char(c->marker))
			c->marker++;
		else
			c->marker = ch == 'i' ? 1 : 0;
	}
	/* and for LOCAL, anywhere (LOAD DATA LOCAL makes the client send the file in packets
	 * that are no commands: the wire reader reads the next headers; see WIRE_COMMAND) */
	if (c->local == 0) {
		if ((ch | 0x20) == 'l')
			c->local = 1;
	} else if (c->local < 5) {
		if ((ch | 0x20) == local_char(c->local))
			c->local++;
		else
			c->local = (ch | 0x20) == 'l';
	}
	switch (c->state) {
	case S_QUOTE:
		quote_byte(c, ch);
		return 0;
	case S_COMMENT:
		if (ch == '*' && next == '/') {
			c->state = S_SPACE;
			c->escaped = 1; /* skip the '/' */
		}
		return 0;
	case S_LINE_COMMENT:
		if (ch == '\n')
			c->state = S_SPACE;
		return 0;
	case S_NUMBER:
		if ((ch >= '0' && ch <= '9') || ch == '.' || ch == 'e' || ch == 'E' || ch == 'x' ||
		    (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'))
			return 0;
		c->state = S_CODE;
		break;
	}
	if (c->state == S_SPACE && c->escaped) { /* the '/' closing a comment */
		c->escaped = 0;
		return 0;
	}
	if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
		c->state = S_SPACE;
		return 0;
	}
	/* anything but spaces and ';' after a ';' is one more statement of the text, a comment
	 * too: as MariaDB counts them in Questions ("SELECT 1; -- x" is two, "SELECT 1;;" one) */
	if (c->semi && ch != ';') {
		c->semi = 0;
		c->extra++;
	}
	if (ch == ';')
		c->semi = 1;
	if (ch == '/' && next == '*') {
		c->state = S_COMMENT;
		return 0;
	}
	if ((ch == '-' && next == '-') || ch == '#') {
		c->state = S_LINE_COMMENT;
		return 0;
	}
	/* a sign before a number where no operand ends ("= -5", "+ -5", "(-5", ", -5"): part of the
	 * literal, so "a + -5" and "a + 5" are one statement (pgbench's deltas); "a - 5", "5-3" and
	 * "x) - 5" stay binary. Spaces are folded, so the last code byte is prev or the one before. */
	if (ch == '-' && next >= '0' && next <= '9') {
		__u8 last = c->prev == ' ' ? c->prev2 : c->prev;

		if (last && !ident_char(last) && last != '?' && last != ')' && last != ']')
			return 0;
	}
	if (c->state == S_SPACE) {
		if (c->prev && c->prev != ' ')
			mix(c, ' ');
		c->state = S_CODE;
	}
	if (ch == '\'' || ch == '"') {
		c->state = S_QUOTE;
		c->quote = ch;
		mix(c, '?');
		return 0;
	}
	if (ch >= '0' && ch <= '9' && !ident_char(c->prev)) {
		c->state = S_NUMBER;
		mix(c, '?');
		return 0;
	}
	/* a PostgreSQL parameter ($1, $2, ...) where no name goes on is a literal too: a statement
	 * sent with its values (Simple Query) and with parameters (Parse, Bind) is one digest, as
	 * MySQL's '?' markers already are */
	if (ch == '$' && next >= '0' && next <= '9' && !ident_char(c->prev)) {
		c->state = S_NUMBER;
		mix(c, '?');
		return 0;
	}
	if (ch >= 'A' && ch <= 'Z')
		ch += 'a' - 'A';
	mix(c, ch);
	return 0;
}

/* One byte of the digest; returns 1 at the end of the text. */
static __always_inline long digest_byte(struct digest_ctx *c, __u32 i)
{
	__u8 ch;

	if (i >= c->len || i >= IOATTR_QUERY_MAX)
		return 1;
	ch = text_at(c->t, i);
	if (digest_plain_byte(c, ch))
		return 0;
	return digest_slow_byte(c, i, ch);
}

/* The digest walks the text DIGEST_CHUNK bytes per bpf_loop step: a step
 * costs an indirect call and return, ~60 ns a byte on this retpoline+SRSO
 * VM when it was one byte a step (2.5-3 us for a 40-byte point select),
 * more than the byte's work. Same bytes, same order, same digest. */
#define DIGEST_CHUNK 16

static long digest_step(__u32 k, struct digest_ref *ref)
{
	struct digest_ctx *c = ref->c;
	__u32 base = k * DIGEST_CHUNK;

	for (int j = 0; j < DIGEST_CHUNK; j++)
		if (digest_byte(c, base + j))
			return 1;
	return 0;
}

/*
 * The statements of a long multi-statement COM_QUERY. The digest looks at the first DIGEST_MAX
 * bytes; a packet of several statements (`INSERT ... VALUES (...), (...); COMMIT`, as LinkBench
 * sends with CLIENT_MULTI_STATEMENTS) is as many Questions wherever its separators are, so the
 * rest of the text is scanned for them -- only the rest, and only for what decides a statement
 * boundary: quotes (with backslash escapes), comments and ';'. No hash, no lowering, no phase
 * marker or LOCAL match: a few compares a byte, SCAN_STEP bytes per bpf_loop step and one
 * bpf_probe_read_user per IOATTR_QUERY_MAX bytes (the digest scratch holds the window). A text
 * of at most DIGEST_MAX bytes (nearly every statement) never gets here. Past SCAN_MAX bytes a
 * text is not scanned (bulk loads send megabytes a statement): such packets are counted in
 * wire_long, and userspace names them when the wire's count falls short of Questions.
 */
#define SCAN_STEP 64
#define SCAN_MAX (64U << 10)

/* [0]: COM_QUERY texts whose statements were not all looked for (longer than SCAN_MAX, or a
 * read of their payload that could not be scanned) */
BPF_ARRAY(wire_long, __u64, 1);

static __always_inline void count_wire_long(void)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&wire_long, &zero);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* One byte of the scan: the digest's rules for quotes, comments and ';' (digest_byte), with the
 * comment openers remembered in c->lead instead of looked ahead to */
static __always_inline void scan_byte(struct digest_ctx *c, __u8 ch)
{
	__u8 lead = c->lead;

	c->lead = 0;
	switch (c->state) {
	case S_QUOTE:
		quote_byte(c, ch);
		return;
	case S_COMMENT:
		if (lead == '*' && ch == '/')
			c->state = S_CODE;
		else if (ch == '*')
			c->lead = '*';
		return;
	case S_LINE_COMMENT:
		if (ch == '\n')
			c->state = S_CODE;
		return;
	}
	if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
		return;
	if (lead == '/' && ch == '*') {
		c->state = S_COMMENT;
		return;
	}
	if (lead == '-' && ch == '-') {
		c->state = S_LINE_COMMENT;
		return;
	}
	/* as digest_byte: anything but ';' after a ';' starts one more statement, a comment too */
	if (c->semi && ch != ';') {
		c->semi = 0;
		c->extra++;
	}
	if (ch == ';')
		c->semi = 1;
	else if (ch == '\'' || ch == '"') {
		c->state = S_QUOTE;
		c->quote = ch;
	} else if (ch == '#')
		c->state = S_LINE_COMMENT;
	else if (ch == '/' || ch == '-')
		c->lead = ch;
}

struct scan_ref {
	struct digest_ctx *c;
	__u64 src;     /* user address of offset 0 */
	__u32 start;   /* the first offset scanned (a multiple of SCAN_STEP) */
	__u32 end;     /* past the last */
	__u32 window;  /* 1 + which IOATTR_QUERY_MAX bytes of src c->t holds (0: none) */
	__u32 failed;  /* a window could not be read */
};

static long scan_step(__u32 k, struct scan_ref *r)
{
	struct digest_ctx *c = r->c;
	__u32 off = r->start + k * SCAN_STEP, w = off / IOATTR_QUERY_MAX + 1;

	if (off >= r->end)
		return 1;
	if (w != r->window) {
		__u64 n = r->end - (w - 1) * IOATTR_QUERY_MAX;

		if (n > IOATTR_QUERY_MAX)
			n = IOATTR_QUERY_MAX;
		asm volatile("" : "+r"(n)); /* the bound checked is the register passed */
		if (n > IOATTR_QUERY_MAX ||
		    bpf_probe_read_user(c->t->b, n, (void *)(r->src + (__u64)(w - 1) * IOATTR_QUERY_MAX))) {
			r->failed = 1;
			return 1;
		}
		r->window = w;
	}
#pragma unroll
	for (int j = 0; j < SCAN_STEP; j++) {
		if (off + j >= r->end)
			return 1;
		scan_byte(c, text_at(c->t, off + j));
	}
	return 0;
}

/* Scan offsets [start, end) of the text at user address src (window: 1 when c->t already holds
 * its first IOATTR_QUERY_MAX bytes); the statements found are added to c->extra. Returns 0 if a
 * window could not be read. A global function: the verifier checks it once, on its own, not
 * once per path of the wire reader that reaches it (with the PostgreSQL branch loaded, those
 * paths took the wire program past the verifier's 1M-instruction budget). */
__noinline int scan_text(struct digest_ctx *c, __u64 src, __u32 start, __u32 end, __u32 window)
{
	struct scan_ref ref = { .c = c, .src = src, .start = start, .end = end, .window = window };

	if (!c || start >= end)
		return !!c;
	bpf_loop((end - start + SCAN_STEP - 1) / SCAN_STEP, scan_step, &ref, 0);
	return !ref.failed;
}

/* The wire reader read a COM_QUERY payload of text_len text bytes (its command byte excluded),
 * `got` of them in this read, at user address text; the digest (statement_start) looked at the
 * first DIGEST_MAX: scan the rest for statements (c->extra), and keep the scanner's state in st
 * when the payload's next read brings more. */
static __always_inline void scan_query(struct task_io_state *st, struct digest_ctx *c, __u64 text,
				       __u32 got, __u32 text_len)
{
	__u32 end = text_len < SCAN_MAX ? text_len : SCAN_MAX;

	if (text_len <= DIGEST_MAX)
		return;
	if (text_len > SCAN_MAX)
		count_wire_long();
	/* where the digest stopped: its S_SPACE and S_NUMBER are code here; a comment's closing
	 * '/' it looked ahead to and has yet to skip ends a comment here */
	if (c->state == S_SPACE && c->escaped) {
		c->state = S_COMMENT;
		c->lead = '*';
	} else {
		c->lead = 0;
		if (c->state != S_QUOTE && c->state != S_COMMENT && c->state != S_LINE_COMMENT)
			c->state = S_CODE;
	}
	if (c->state != S_QUOTE)
		c->escaped = 0;
	if (!scan_text(c, text, DIGEST_MAX, got < end ? got : end, 1)) {
		if (text_len <= SCAN_MAX)
			count_wire_long();
		return;
	}
	if (got >= end)
		return;
	st->scan_state = c->state + 1;
	st->scan_quote = c->quote;
	st->scan_bits = c->escaped | c->semi << 1;
	st->scan_lead = c->lead;
	st->scan_done = got;
}

/* The payload's next read brought `got` more bytes at user address buf: scan them on (up to
 * SCAN_MAX bytes of text in all); returns the statements found */
static __always_inline __u32 scan_query_rest(struct task_io_state *st, __u64 buf, __u32 got)
{
	__u32 zero = 0, left = SCAN_MAX - st->scan_done;
	struct digest_ctx *c = bpf_map_lookup_elem(&digest_scratch, &zero);

	if (!c || st->scan_done >= SCAN_MAX) {
		st->scan_state = 0;
		return 0;
	}
	c->state = st->scan_state - 1;
	c->quote = st->scan_quote;
	c->escaped = st->scan_bits & 1;
	c->semi = (st->scan_bits >> 1) & 1;
	c->lead = st->scan_lead;
	c->extra = 0;
	st->scan_state = 0;
	if (!scan_text(c, buf, 0, got < left ? got : left, 0)) {
		count_wire_long();
		return c->extra;
	}
	st->scan_done += got;
	if (st->scan_done < SCAN_MAX) {
		st->scan_state = c->state + 1;
		st->scan_quote = c->quote;
		st->scan_bits = c->escaped | c->semi << 1;
		st->scan_lead = c->lead;
	}
	return c->extra;
}

static __always_inline struct task_io_state *thread_state(void)
{
	return bpf_task_storage_get(&task_state, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* The calling thread's state if its process is traced (created on first use), else NULL. */
static __always_inline struct task_io_state *target_thread(__u64 pid_tgid)
{
	if (!is_target(pid_tgid >> 32))
		return NULL;
	return thread_state();
}

static __always_inline void set_stage(__u8 stage)
{
	struct task_io_state *st = target_thread(bpf_get_current_pid_tgid());

	if (st)
		st->stage = stage;
}

/* A uprobe whose only job is to say where the thread now is: program `name`
 * sets the traced thread's stage to `stage` (the entries of mysql_execute_command,
 * JOIN::optimize, JOIN::exec, ha_commit_trans, thd_attach_thd, thd_detach_thd). */
#define STAGE_PROBE(name, stage)            \
	SEC("uprobe")                       \
	int BPF_KPROBE(name)                \
	{                                   \
		set_stage(stage);           \
		return 0;                   \
	}

/* A client statement starts on this thread: command `command` with its
 * `length` bytes of arguments at user address `packet` (for COM_QUERY, the
 * text), or, with `packet` NULL and `c` given, already in c->t (the wire
 * reader's one read; `length` <= IOATTR_QUERY_MAX). The one body of both
 * statement sources, the wire reader and the dispatch_command uprobe, so they
 * give the same stages, digests, counts, texts and phase markers. Returns 1
 * for a COM_QUERY whose whole text was digested and holds no LOCAL (so it is
 * no LOAD DATA LOCAL), else 0. `counted` 0 (a PostgreSQL Parse: the statement starts at its
 * Executes) digests and samples the text but neither counts it nor starts a phase; every MySQL
 * caller passes 1 (a constant: the inlined code is the same as before the parameter). */
static __always_inline int statement_start(struct task_io_state *st, __u64 pid_tgid, int command,
					   const char *packet, unsigned int length, struct digest_ctx *c,
					   int counted)
{
	__u32 zero = 0, len;

	st->stage = cfg.fine_stages ? IOA_STAGE_PARSE : IOA_STAGE_STATEMENT;
	st->est_depth = 0; /* an estimate whose return was never seen ends with its statement */
	st->digest = 0;
	if (command != COM_QUERY || (!packet && !c)) {
		count_statement(pid_tgid >> 32, (__u64)(command & 0xff));
		return 0;
	}
	len = length < IOATTR_QUERY_MAX ? length : IOATTR_QUERY_MAX;
	if (packet) {
		c = bpf_map_lookup_elem(&digest_scratch, &zero);
		if (!c)
			return 0;
		/* only the statement's bytes (the digest and userspace, which slices the
		 * text by len, never look past them) */
		__u64 nread = len; /* 64-bit, so the bound checked is the register passed */

		asm volatile("" : "+r"(nread));
		if (nread > IOATTR_QUERY_MAX)
			return 0;
		if (bpf_probe_read_user(c->t->b, nread, packet))
			return 0;
	}
	/* ioattr's own statements (prefixed with the ioattr-internal comment) are neither digested
	 * nor counted: they are not the workload's */
	if (len >= 12 && c->t->b[0] == '/' && c->t->b[1] == '*' && c->t->b[3] == 'i' &&
	    c->t->b[4] == 'o' && c->t->b[5] == 'a' && c->t->b[6] == 't' && c->t->b[7] == 't' &&
	    c->t->b[8] == 'r' && c->t->b[9] == '-' && c->t->b[10] == 'i' && c->t->b[11] == 'n') {
		st->digest = IOA_DIGEST_INTERNAL;
		return 0;
	}
	c->len = len;
	c->hash = FNV_OFFSET;
	c->state = S_SPACE;
	c->quote = 0;
	c->prev = 0;
	c->escaped = 0;
	c->marker = 0;
	c->local = 0;
	c->semi = 0;
	c->extra = 0;
	struct digest_ref ref = { .c = c };

	bpf_loop(((len < DIGEST_MAX ? len : DIGEST_MAX) + DIGEST_CHUNK - 1) / DIGEST_CHUNK, digest_step, &ref, 0);
	/* every byte looked at, and no LOCAL: not LOAD DATA LOCAL, the client's next packet is a command */
	int between = length <= DIGEST_MAX && c->local < 5;

	if (c->hash < 256)
		c->hash += 256; /* below 256 are command numbers */
	st->digest = c->hash;
	/* a phase marker starts its phase here and now, before any IO of what follows
	 * (the marker statement included): every key taken from here on has the new number */
	__u64 new_phase = 0, marker_ts = 0;
	if (!counted)
		c->marker = 0; /* markers are Simple Query texts only */
	if (c->marker >= 13) {
		__u64 *seq = bpf_map_lookup_elem(&phase_seq, &zero);

		if (seq) {
			new_phase = __sync_fetch_and_add(seq, 1) + 1;
			marker_ts = bpf_ktime_get_ns();
		}
	}
	int known = counted ? count_statement(pid_tgid >> 32, c->hash) : 0;

	/* a sample of the text, once per digest (or always for a phase marker) */
	__u8 one = 1;
	__u64 digest = c->hash;
	/* a digest already counted in this process and phase was looked up here before
	 * (its text sent then, or its sending attempted): no seen_digests lookup. Else
	 * look first: an update of an LRU map takes a free node (and its lock) before it
	 * finds the key exists */
	if (c->marker < 13 && (known || bpf_map_lookup_elem(&seen_digests, &digest) ||
			       bpf_map_update_elem(&seen_digests, &digest, &one, BPF_NOEXIST)))
		return between;
	struct query_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(IOA_DROP_EVENTS_FULL);
		return between; /* the recorder won't hear of it: don't wait for it either */
	}
	e->type = IOA_EV_QUERY;
	e->tgid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->len = len;
	e->digest = digest;
	e->marker = c->marker >= 13;
	e->phase = (__u32)new_phase;
	e->ts = marker_ts;
	__builtin_memcpy(e->text, c->t->b, IOATTR_QUERY_MAX);
	/* a marker wakes the recorder, which snapshots the engine counters at the boundary */
	if (!new_phase) {
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
		return between;
	}
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP); /* wake the recorder now */
	wait_for_recorder(new_phase, marker_ts);
	return between;
}

SEC("uprobe")
int BPF_KPROBE(ioattr_dispatch_command, int command, void *thd, const char *packet, unsigned int length)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_io_state *st = target_thread(pid_tgid);

	if (!st)
		return 0;
	/* attached as the fallback next to the wire reader: a statement the wire
	 * reader already started (a connection in clear) is not started twice */
	if (st->wire_stmt) {
		st->wire_stmt = 0;
		return 0;
	}
	statement_start(st, pid_tgid, command, packet, length, NULL, 1);
	return 0;
}

/*
 * Statement boundaries from the MySQL client/server protocol, at the end of
 * each recvfrom (the programs after wire_recv() say where): no trap per
 * statement, one tracepoint dispatch per recvfrom. A MariaDB connection thread reads each
 * packet as recvfrom(fd, buf, 4, MSG_DONTWAIT) = the header (3-byte
 * little-endian payload length, 1-byte sequence id, 0 for a command), then
 * recvfrom(fd, buf, length) = the payload, whose first byte is the command
 * (checked with strace on unix sockets and TCP, 10.11: the server reads
 * unbuffered). The syscall's arguments come from the task's saved user
 * registers (an exit-only program: no enter program, no saved state per
 * call). Per thread (task storage):
 *   WIRE_IDLE     a 4-byte read whose 4th byte is 0 and length non-zero is a
 *                 command header: WIRE_PAYLOAD on that fd, wire_need = length;
 *                 another sequence id (authentication, LOAD DATA LOCAL, the
 *                 continuation packets of a payload of 16 MB or more) is
 *                 skipped over as WIRE_REST, never a statement
 *   WIRE_PAYLOAD  the next read on wire_fd asking for wire_need bytes starts
 *                 the statement (statement_start, the same body as the
 *                 uprobe's: command = its first byte, the text after it,
 *                 both read with one bpf_probe_read_user)
 *   WIRE_REST     the rest of a payload that came in several reads
 *   WIRE_COMMAND  a 4-byte read on a connection known to be between commands
 *                 (below), header not read: the next read on wire_fd is a
 *                 command packet's payload of the size it asks for
 * Between commands: the header read costs a bpf_probe_read_user (~130-200 ns)
 * whose answer is known when the connection is between commands -- its next
 * packet is a command, sequence id 0, and MariaDB asks for exactly the length
 * the header says. The wire reader knows it after a command whose exchange
 * has no other client packet than the command itself (client_command_only,
 * or a COM_QUERY read whole, up to DIGEST_MAX bytes, without the word LOCAL:
 * LOAD DATA LOCAL makes the client send the file; not COM_CHANGE_USER's
 * authentication exchange, nor a 16 MB packet's continuation), and only for
 * that connection: wire_conn is the socket's inode
 * number (unique per socket: a thread that serves a new connection, even on
 * the same fd number with the same buffer, reads its handshake and
 * authentication packets with headers read again). Anything out of step, or a
 * payload that is no client command, forgets it.
 * Any read that does not fit (another fd, another size) drops the state, so a
 * thread attached mid-packet resynchronises at the next header. What the
 * socket does not carry in clear -- TLS records (5-byte headers), the
 * compressed protocol (7-byte headers) -- never looks like a command header:
 * such statements are not seen here, and userspace attaches the
 * dispatch_command uprobe as the fallback (collectors/stage_probes.py).
 */
enum { WIRE_IDLE, WIRE_PAYLOAD, WIRE_REST, WIRE_COMMAND };

/* statements the wire reader started, per target process (ioattr's own included):
 * userspace compares their growth with the server's Questions to tell whether
 * the clients' statements are on the wire in clear, else it attaches the
 * dispatch_command uprobe (collectors/stage_probes.py). Counted in wire_slots[tgid
 * & TARGET_SLOT_MASK] when the slot is this process's (the first to count there
 * claims it), else in the hash wire_stmts: an array lookup is inlined, a hash
 * lookup is a helper call (~35 ns a statement here); userspace adds up both. */
struct wire_slot {
	__u64 tgid; /* 64-bit: the BPF backend (without -mcpu=v3) has only 64-bit cmpxchg */
	__u64 count;
};

BPF_ARRAY(wire_slots, struct wire_slot, TARGET_SLOTS);

BPF_HASH(wire_stmts, __u32, __u64, 1024);

/* n statements came in one packet (a multi-statement COM_QUERY has several) */
static __always_inline void count_wire(__u32 tgid, __u64 n)
{
	__u32 slot = tgid & TARGET_SLOT_MASK;
	struct wire_slot *w = bpf_map_lookup_elem(&wire_slots, &slot);
	__u64 *v, owner;

	if (w) {
		owner = w->tgid;
		if (!owner) /* unclaimed: claim it (0 back: ours; else whoever was first) */
			owner = __sync_val_compare_and_swap(&w->tgid, 0, (__u64)tgid) ?: tgid;
		if (owner == tgid) {
			__sync_fetch_and_add(&w->count, n);
			return;
		}
	}
	v = bpf_map_lookup_elem(&wire_stmts, &tgid);
	if (v)
		__sync_fetch_and_add(v, n);
	else
		bpf_map_update_elem(&wire_stmts, &tgid, &n, BPF_NOEXIST);
}
#define WIRE_MAX_PACKET 0xffffff

/* commands a client sends (1..0x1f; COM_STMT_BULK_EXECUTE 0xfa): a 0 first byte
 * is no command (a replica's IO thread reads the primary's OK-prefixed events,
 * whose sequence id wraps to 0 every 256 packets) */
static __always_inline bool client_command(__u8 cmd)
{
	return (cmd >= 1 && cmd <= 0x1f) || cmd == 0xfa;
}

/* commands after which the client's next packet is a command again: no client
 * packet is part of their exchange (a prepared statement cannot be LOAD DATA
 * LOCAL: it is not preparable). COM_INIT_DB 2, COM_PING 0xe, COM_STMT_PREPARE
 * 0x16 .. COM_STMT_FETCH 0x1c (EXECUTE, SEND_LONG_DATA, CLOSE, RESET, SET_OPTION),
 * COM_RESET_CONNECTION 0x1f, COM_STMT_BULK_EXECUTE 0xfa */
static __always_inline bool client_command_only(__u8 cmd)
{
	return cmd == 2 || cmd == 0xe || (cmd >= 0x16 && cmd <= 0x1c) || cmd == 0x1f || cmd == 0xfa;
}

/* wire_fd's socket inode number (0: none, or no bpf_rdonly_cast: the header is
 * then always read, fd_to_file()'s probe reads would cost as much). sk: the socket
 * the socket-layer tracepoints hand over, fd's own: its inode is the one its struct
 * socket is allocated with (struct socket_alloc, SOCK_INODE()), two loads where the
 * fd table's walk takes six or more, most of them cache misses in a busy server; the
 * same number either way (a socket file's f_inode is SOCK_INODE()). NULL: the
 * syscall tracepoints' callers, which have only the fd. */
static __always_inline __u64 wire_socket(struct task_struct *task, int fd, struct sock *sk)
{
	struct inode_id id;

	if (!bpf_rdonly_cast)
		return 0;
	if (sk) {
		__u64 sock = (__u64)sk->sk_socket;
		struct inode *inode;

		if (!sock)
			return 0;
		inode = bpf_rdonly_cast((void *)(sock - bpf_core_field_offset(struct socket_alloc, socket) +
						 bpf_core_field_offset(struct socket_alloc, vfs_inode)),
					bpf_core_type_id_kernel(struct inode));
		return inode->i_ino;
	}
	if (!fd_inode_id(task, fd, &id))
		return 0;
	return id.ino;
}

/* prepared statements: COM_STMT_PREPARE's digest, kept per statement id */
#include "mysql_wire.bpf.h"

/* PostgreSQL statements: the frontend/backend protocol */
#include "pg_wire.bpf.h"

/* One recvfrom's bytes, `ret` of them, arrived: the body of both attach points below.
 * in_sock: called from inside the socket layer, where any receive of any socket
 * lands, so only a recvfrom syscall's is taken (the syscall tracepoint is recvfrom's
 * by construction); sk is then the socket read (wire_socket()), else NULL. */
static __always_inline int wire_recv(long ret, bool in_sock, struct sock *sk)
{
	struct task_io_state *st;
	struct task_struct *task;
	struct pt_regs *regs;
	__u64 size, buf, pid_tgid;
	int fd;

	if (ret <= 0)
		return 0;
	/* one helper call for both the target check and the task (every receive of every
	 * process on the host gets this far); tgid and pid are plain loads */
	task = bpf_get_current_task_btf();
	if (!is_target(task->tgid))
		return 0;
	pid_tgid = (__u64)task->tgid << 32 | (__u32)task->pid;
	/* The syscall's saved registers: bpf_task_pt_regs() once per thread, then the address
	 * its task storage kept (a task's kernel stack, where they are, never moves), read with
	 * plain loads through bpf_rdonly_cast() where the kernel has it. */
	st = bpf_task_storage_get(&task_state, task, 0, 0);
	if (st && st->regs && bpf_rdonly_cast)
		regs = bpf_rdonly_cast((void *)st->regs, bpf_core_type_id_kernel(struct pt_regs));
	else
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return 0;
	/* read() on a socket, recvmsg(), a kernel thread's or io_uring's receive: not the
	 * reads this reader knows the layout of (nor did the syscall tracepoint see them) */
	if (in_sock && SYSCALL_NR(regs) != NR_recvfrom)
		return 0;
	/* plain loads, no probe-read helper calls */
	fd = (int)regs->di;
	buf = regs->si;
	size = regs->dx;
	if (!st) {
		st = bpf_task_storage_get(&task_state, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st)
			return 0;
	}
	if (!st->regs)
		st->regs = (__u64)regs;
	/* which protocol: the targets value, looked up once per thread (a hash lookup) */
	if (!st->wire_proto) {
		__u32 tgid = pid_tgid >> 32, *flags = bpf_map_lookup_elem(&targets, &tgid);

		st->wire_proto = !flags || !(*flags & IOA_TARGET_PG_WIRE) ? WIRE_PROTO_MYSQL :
				 *flags & IOA_TARGET_PG_STAGES ? WIRE_PROTO_PG_STAGED : WIRE_PROTO_PG;
	}
	if (st->wire_proto >= WIRE_PROTO_PG)
		/* cfg.pg_wire is a load-time constant: without PostgreSQL targets the verifier
		 * never walks pg_recv (it is most of this object's verification time) */
		return cfg.pg_wire ? pg_recv(st, pid_tgid, fd, buf, ret) : 0;
	/* set again below if this read starts a statement: a TLS read leaves no stale mark for
	 * the fallback uprobe (a cached thread's last clear statement) to skip a statement by */
	st->wire_stmt = 0;
	if (st->wire_state != WIRE_IDLE) {
		/* WIRE_COMMAND: the header was not read; MariaDB asks for the length it says */
		if (fd == st->wire_fd && ((st->wire_state == WIRE_PAYLOAD && size == st->wire_need) ||
					  (st->wire_state == WIRE_COMMAND && size && size <= WIRE_MAX_PACKET))) {
			__u32 need = st->wire_state == WIRE_COMMAND ? (__u32)size : st->wire_need, zero = 0;
			struct digest_ctx *c = bpf_map_lookup_elem(&digest_scratch, &zero);
			/* the command and up to IOATTR_QUERY_MAX bytes of its arguments (those
			 * that arrived: all of them but for a payload split across reads), in
			 * one read into the digest scratch: a bpf_probe_read_user costs ~200 ns
			 * whatever its size, and COM_QUERY's text is digested from there */
			__u64 n = (__u64)ret < IOATTR_QUERY_MAX + 1 ? (__u64)ret : IOATTR_QUERY_MAX + 1, conn = 0;
			__u8 cmd;
			int between;

			st->wire_state = (__u64)ret < need ? WIRE_REST : WIRE_IDLE;
			st->wire_need = (__u64)ret < need ? need - (__u32)ret : 0;
			asm volatile("" : "+r"(n)); /* the bound checked is the register passed */
			if (!c || n > IOATTR_QUERY_MAX + 1 || bpf_probe_read_user(&c->wire_head[7], n, (void *)buf) ||
			    !client_command(c->wire_head[7])) {
				st->wire_conn = 0;
				return 0;
			}
			cmd = c->wire_head[7];
			st->wire_stmt = 1;
			prep_forget(st); /* a prepare's answer not seen before the next command: not awaited */
			c->extra = 0;
			if (cmd == COM_STMT_PREPARE || stmt_id_command(cmd)) {
				/* the statement ids are the connection's: its socket's inode */
				if (!st->wire_conn)
					st->wire_conn = wire_socket(task, fd, sk);
				conn = st->wire_conn;
			}
			if (stmt_id_command(cmd)) {
				prep_command(st, pid_tgid, cmd, (const __u8 *)c->t->b, (__u32)n - 1, conn);
				between = 0;
			} else {
				/* a prepare's text is digested as a COM_QUERY's, but counted as the command */
				between = statement_start(st, pid_tgid, cmd == COM_STMT_PREPARE ? COM_QUERY : cmd, NULL,
							  (__u32)n - 1, c, cmd != COM_STMT_PREPARE);
				if (cmd == COM_STMT_PREPARE) {
					count_statement(pid_tgid >> 32, cmd);
					prep_read(st, conn);
				} else if (cmd == COM_QUERY && need > DIGEST_MAX + 1 && st->digest != IOA_DIGEST_INTERNAL) {
					/* a long text: its statements past the digested bytes */
					scan_query(st, c, buf + 1, (__u32)ret - 1, need - 1);
				}
			}
			count_wire(pid_tgid >> 32, 1 + (cmd == COM_QUERY ? c->extra : 0));
			/* between commands after this one? (a COM_QUERY: if all of it was read and
			 * scanned; a 16 MB payload: its continuation's header comes next, sequence id 1) */
			if (!(client_command_only(cmd) || (between && (__u64)ret == need)) ||
			    need >= WIRE_MAX_PACKET)
				st->wire_conn = 0;
			else if (!st->wire_conn)
				st->wire_conn = wire_socket(task, fd, sk);
			return 0;
		}
		if (fd == st->wire_fd && st->wire_state == WIRE_REST && size == st->wire_need) {
			if (st->scan_state) { /* a long COM_QUERY's text goes on: its statements */
				__u32 more = scan_query_rest(st, buf, (__u64)ret < st->wire_need ? (__u32)ret : st->wire_need);

				if (more)
					count_wire(pid_tgid >> 32, more);
			}
			if ((__u64)ret < st->wire_need) {
				st->wire_need -= (__u32)ret;
			} else {
				st->wire_state = WIRE_IDLE;
				st->wire_need = 0;
				st->scan_state = 0;
			}
			return 0;
		}
		st->wire_state = WIRE_IDLE; /* out of step: look for the next header */
		st->wire_conn = 0;
		if (st->scan_state) { /* a long text's rest never came as expected: not all scanned */
			st->scan_state = 0;
			count_wire_long();
		}
	}
	if (size == 4 && ret == 4) {
		__u8 h[4];
		__u32 len;

		if (st->wire_conn) {
			if (fd == st->wire_fd && wire_socket(task, fd, sk) == st->wire_conn) {
				st->wire_state = WIRE_COMMAND;
				return 0;
			}
			st->wire_conn = 0; /* another fd, or another connection on this fd number */
		}
		if (bpf_probe_read_user(h, sizeof(h), (void *)buf))
			return 0;
		len = h[0] | (h[1] << 8) | ((__u32)h[2] << 16);
		if (!len)
			return 0;
		st->wire_fd = fd;
		st->wire_need = len;
		st->wire_state = h[3] == 0 ? WIRE_PAYLOAD : WIRE_REST;
	} else {
		st->wire_conn = 0; /* not a header where one was due: where the connection is is not known */
	}
	return 0;
}

/*
 * The two attach points of a wire handler, the loader loads the pair of one
 * (collectors/probes.py WIRE_CHOICE). The default: the socket layer's
 * sock_{recv,send}_length tracepoint, taken as a raw BTF tracepoint. It fires
 * inside the recvfrom (sendto) syscall once the bytes are in the caller's
 * buffer, with what the syscall returns. A raw tracepoint costs its programs'
 * dispatch only; a per-syscall tracepoint builds a perf record for every hit
 * first. A MariaDB connection takes 2-3 recvfroms a statement, its client as
 * many; perf put the difference at ~0.1-0.2 us a point select in each
 * (docs/cost.md). Kernels without the tracepoint: the syscall's exit
 * tracepoint.
 */
#define WIRE_PROGS(handler, sock_tp, sock_prog, sys_tp, sys_prog)	\
SEC("tp_btf/" sock_tp)							\
int BPF_PROG(sock_prog, struct sock *sk, int ret, int flags)		\
{									\
	return handler(ret, true, sk);					\
}									\
									\
SEC("tracepoint/syscalls/" sys_tp)					\
int sys_prog(struct syscall_trace_exit *ctx)				\
{									\
	return handler(ctx->ret, false, NULL);				\
}

WIRE_PROGS(wire_recv, "sock_recv_length", ioattr_wire_recv, "sys_exit_recvfrom", ioattr_wire_sys)

/* A sendto's bytes, `ret` of them, went out: a server thread waiting for its answer to a
 * COM_STMT_PREPARE (bpf/mysql_wire.bpf.h) reads the statement id from it. Every other send
 * leaves at the first test. in_sock: as wire_recv's. */
static __always_inline int wire_send(long ret, bool in_sock, struct sock *sk)
{
	struct task_io_state *st;
	struct task_struct *task;
	struct pt_regs *regs;
	__u32 zero = 0;
	__u64 *waiting = bpf_map_lookup_elem(&prep_waiting, &zero);

	if (!waiting || !*waiting || ret <= 0)
		return 0;
	task = bpf_get_current_task_btf();
	if (!is_target(task->tgid))
		return 0;
	st = bpf_task_storage_get(&task_state, task, 0, 0);
	if (!st || !st->prep_conn)
		return 0;
	if (st->regs && bpf_rdonly_cast)
		regs = bpf_rdonly_cast((void *)st->regs, bpf_core_type_id_kernel(struct pt_regs));
	else
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs || (in_sock && SYSCALL_NR(regs) != NR_sendto))
		return 0;
	prep_answer(st, wire_socket(task, (int)regs->di, sk), regs->si, ret);
	return 0;
}

/* the send side of the wire reader, at the same layer as ioattr_wire_recv (the loader loads
 * the pair of the hook it picked: collectors/probes.py WIRE_CHOICE) */
WIRE_PROGS(wire_send, "sock_send_length", ioattr_wire_send, "sys_exit_sendto", ioattr_wire_send_sys)

/* Userspace's way to start a phase (ioattr mark, --phase-pattern): run with
 * BPF_PROG_TEST_RUN, it bumps phase_seq atomically with respect to the marker
 * probe above and returns the new number. */
SEC("syscall")
int ioattr_phase_bump(void *ctx)
{
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&phase_seq, &zero);

	if (!seq)
		return 0;
	return (int)(__sync_fetch_and_add(seq, 1) + 1);
}

STAGE_PROBE(ioattr_execute_command, IOA_STAGE_EXECUTE)

STAGE_PROBE(ioattr_join_optimize, IOA_STAGE_OPTIMIZE)

STAGE_PROBE(ioattr_join_exec, IOA_STAGE_EXECUTE)

STAGE_PROBE(ioattr_commit, IOA_STAGE_COMMIT)

/* Index range estimates (index dives): entry and return of
 * handler::multi_range_read_info_const, which the optimizer calls once per
 * index whose ranges it estimates (InnoDB reaches it through
 * DsMrr_impl::dsmrr_info_const) and which calls the engine's records_in_range
 * once per range (up to eq_range_index_dive_limit equality ranges; past it,
 * index statistics and no IO). IO in between is IOA_STAGE_ESTIMATE, in both
 * modes. Only statements that estimate ranges hit these probes: a point select
 * by primary key is a const table and is never range-estimated. The entry
 * saves the stage it interrupts (parse/optimize/execute or "statement") and the
 * return restores it; est_depth makes nested entries keep the outermost save,
 * and a return without a seen entry (attached mid-call) changes nothing. */
SEC("uprobe")
int BPF_KPROBE(ioattr_estimate_enter)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_io_state *st = target_thread(pid_tgid);

	if (!st)
		return 0;
	if (!st->est_depth) {
		st->est_saved = st->stage;
		st->stage = IOA_STAGE_ESTIMATE;
	}
	if (st->est_depth < 255)
		st->est_depth++;
	if (st->digest != IOA_DIGEST_INTERNAL)
		count_stmt(pid_tgid >> 32, st->digest, 1);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ioattr_estimate_return)
{
	struct task_io_state *st;

	if (!is_target(bpf_get_current_pid_tgid() >> 32))
		return 0;
	st = bpf_task_storage_get(&task_state, bpf_get_current_task_btf(), 0, 0);
	if (!st || !st->est_depth)
		return 0;
	if (--st->est_depth == 0)
		st->stage = st->est_saved;
	return 0;
}

STAGE_PROBE(ioattr_thd_attach, IOA_STAGE_PURGE)

STAGE_PROBE(ioattr_thd_detach, IOA_STAGE_UNKNOWN)

#include "pg_aio.bpf.h"

#include "pg_stage.bpf.h"

char LICENSE[] SEC("license") = "GPL";

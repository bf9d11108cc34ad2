/* SPDX-License-Identifier: GPL-2.0 */
/*
 * MySQL/MariaDB server-side prepared statements (the binary protocol) on the wire, for
 * bpf/stage.bpf.c's wire reader: which statement each COM_STMT_EXECUTE runs, so its IO and
 * its count go to the statement's digest, as a COM_QUERY's do.
 *
 *   COM_STMT_PREPARE 0x16  client -> server: the statement's text (with '?' markers). The
 *                          wire reader digests it (statement_start, not counted: a prepare
 *                          is no execution; the command is counted as stmt_prepare) and
 *                          keeps the digest pending in the thread's task storage with the
 *                          socket's inode (prep_digest, prep_conn)
 *   COM_STMT_PREPARE_OK    server -> client, sent by the thread that read the prepare before
 *                          it reads anything else: header (sequence id 1), then 0x00 and the
 *                          4-byte little-endian statement id the server chose. wire_send()
 *                          (at the socket's send tracepoint) reads it and stores the digest
 *                          under (socket inode, id) in prep_stmts; an error packet (0xff)
 *                          just ends the wait
 *   COM_STMT_EXECUTE 0x17  client -> server: id in bytes 1..4 of the payload: a statement
 *                          of that digest starts (counted, its IO charged to it). MariaDB's
 *                          id 0xffffffff means "the connection's last prepared statement"
 *   COM_STMT_FETCH 0x1c    a cursor's rows: IO charged to the digest, counted as stmt_fetch
 *   COM_STMT_BULK_EXECUTE 0xfa  as an execute
 *   COM_STMT_CLOSE 0x19    the id's entry is deleted
 *
 * prep_stmts is an LRU: entries of connections that closed without COM_STMT_CLOSE age out
 * instead of filling it. An execute whose id has no entry is labelled by prep_conns, the first
 * id this recording saw prepared on the connection (ids grow per connection in MariaDB and
 * MySQL): an id below it, or a connection never seen preparing, was prepared before the
 * recording (IOA_DIGEST_PREPARED_BEFORE); an id at or above it had its entry evicted
 * (IOA_DIGEST_PREPARED_LOST, counted per execution as drop reason IOA_DROP_PREPARED_LOST).
 *
 * The send program runs at every send of every process on the host: it leaves on one inlined
 * array load (prep_waiting, the prepares whose answer no thread has read yet) unless a
 * prepare is waiting, so text statements pay the dispatch only.
 */
#ifndef IOATTR_MYSQL_WIRE_BPF_H
#define IOATTR_MYSQL_WIRE_BPF_H

#define COM_STMT_PREPARE 0x16
#define COM_STMT_EXECUTE 0x17
#define COM_STMT_CLOSE 0x19
#define COM_STMT_FETCH 0x1c
#define COM_STMT_BULK_EXECUTE 0xfa
#define PREP_LAST_ID 0xffffffffU /* MariaDB: execute the connection's last prepared statement */
#define PREP_STMTS_MAX 65536
#define PREP_CONNS_MAX 16384

struct prep_key {
	__u64 conn; /* the connection socket's inode number */
	__u32 id;   /* the statement id the server chose */
	__u32 pad;
};

struct prep_conn {
	__u32 first; /* the first id this recording saw prepared on the connection */
	__u32 last;  /* the last one (MariaDB's id PREP_LAST_ID) */
	__u64 last_digest;
};

BPF_LRU_HASH(prep_stmts, struct prep_key, __u64, PREP_STMTS_MAX);

BPF_LRU_HASH(prep_conns, __u64, struct prep_conn, PREP_CONNS_MAX);

/* [0]: prepares read whose answer was not read yet (the send program's early exit) */
BPF_ARRAY(prep_waiting, __u64, 1);

static __always_inline bool stmt_id_command(__u8 cmd)
{
	return cmd == COM_STMT_EXECUTE || cmd == COM_STMT_CLOSE || cmd == COM_STMT_FETCH ||
	       cmd == COM_STMT_BULK_EXECUTE;
}

/* the thread no longer waits for a prepare's answer */
static __always_inline void prep_forget(struct task_io_state *st)
{
	__u32 zero = 0;
	__u64 *w;

	if (!st->prep_conn)
		return;
	st->prep_conn = 0;
	w = bpf_map_lookup_elem(&prep_waiting, &zero);
	if (w)
		__sync_fetch_and_add(w, -1);
}

/* A COM_STMT_PREPARE was read on connection conn and its text digested into st->digest:
 * wait for the server's answer on this thread. */
static __always_inline void prep_read(struct task_io_state *st, __u64 conn)
{
	__u32 zero = 0;
	__u64 *w;

	prep_forget(st);
	if (!conn || !st->digest || st->digest == IOA_DIGEST_INTERNAL)
		return;
	st->prep_digest = st->digest;
	st->prep_conn = conn;
	w = bpf_map_lookup_elem(&prep_waiting, &zero);
	if (w)
		__sync_fetch_and_add(w, 1);
}

/* The digest of statement id on connection conn, or the label of why it is not known. */
static __always_inline __u64 prep_digest_of(__u64 conn, __u32 id)
{
	struct prep_key k = { .conn = conn, .id = id };
	struct prep_conn *pc;
	__u64 *d;

	if (!conn)
		return IOA_DIGEST_PREPARED_BEFORE;
	if (id != PREP_LAST_ID) {
		d = bpf_map_lookup_elem(&prep_stmts, &k);
		if (d)
			return *d;
	}
	pc = bpf_map_lookup_elem(&prep_conns, &conn);
	if (!pc)
		return IOA_DIGEST_PREPARED_BEFORE;
	if (id == PREP_LAST_ID)
		return pc->last_digest ?: IOA_DIGEST_PREPARED_BEFORE;
	if (id < pc->first)
		return IOA_DIGEST_PREPARED_BEFORE;
	count_drop(IOA_DROP_PREPARED_LOST);
	return IOA_DIGEST_PREPARED_LOST;
}

/* A command naming a statement id (stmt_id_command) was read on connection conn: id is the
 * payload's bytes 1..4 (args: the bytes after the command byte; n of them were read). */
static __always_inline void prep_command(struct task_io_state *st, __u64 pid_tgid, __u8 cmd,
					 const __u8 *args, __u32 n, __u64 conn)
{
	struct prep_key k = { .conn = conn };
	__u64 d;

	st->est_depth = 0;
	st->digest = 0;
	st->stage = cfg.fine_stages ? IOA_STAGE_PARSE : IOA_STAGE_STATEMENT;
	if (n < 4) {
		count_statement(pid_tgid >> 32, cmd);
		return;
	}
	k.id = args[0] | (__u32)args[1] << 8 | (__u32)args[2] << 16 | (__u32)args[3] << 24;
	if (cmd == COM_STMT_CLOSE) {
		count_statement(pid_tgid >> 32, cmd);
		if (conn)
			bpf_map_delete_elem(&prep_stmts, &k);
		return;
	}
	d = prep_digest_of(conn, k.id);
	st->digest = d;
	/* an execution counts under its statement's digest; a fetch of its rows as a command */
	count_statement(pid_tgid >> 32, cmd == COM_STMT_FETCH ? cmd : d);
}

/* The server sends on the thread that waits for a prepare's answer (st->prep_conn): the
 * first bytes of the send at user address buf (len of them) on socket conn. */
static __always_inline void prep_answer(struct task_io_state *st, __u64 conn, __u64 buf, long len)
{
	struct prep_key k = { .conn = conn };
	struct prep_conn pc = {}, *old;
	__u64 digest = st->prep_digest;
	__u8 h[9];

	if (conn != st->prep_conn)
		return; /* another socket (a replica's, a log): keep waiting */
	prep_forget(st);
	if (len < 9 || bpf_probe_read_user(h, sizeof(h), (void *)buf))
		return;
	/* header: 3-byte length, sequence id 1 (the answer to the client's packet 0); then
	 * COM_STMT_PREPARE_OK's status 0x00 (0xff: an error, no statement) */
	if (h[3] != 1 || h[4] != 0)
		return;
	k.id = h[5] | (__u32)h[6] << 8 | (__u32)h[7] << 16 | (__u32)h[8] << 24;
	bpf_map_update_elem(&prep_stmts, &k, &digest, BPF_ANY);
	old = bpf_map_lookup_elem(&prep_conns, &conn);
	if (old) {
		old->last = k.id;
		old->last_digest = digest;
		return;
	}
	pc.first = k.id;
	pc.last = k.id;
	pc.last_digest = digest;
	bpf_map_update_elem(&prep_conns, &conn, &pc, BPF_NOEXIST);
}

#endif /* IOATTR_MYSQL_WIRE_BPF_H */

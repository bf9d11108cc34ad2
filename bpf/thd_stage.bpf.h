/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stage of IO inside a client statement, with `--stages full`: read from
 * the server at IO time instead of followed by stage uprobes.
 *
 * MariaDB stores each stage's name in THD::proc_info as it enters it
 * (THD_STAGE_INFO; SHOW PROCESSLIST's State), and the running thread's THD
 * in the thread-local THR_THD. So a thread that does IO while its statement
 * is in IOA_STAGE_PARSE (the start: nothing moved it, no stage uprobes on
 * this server) has its stage found by two user reads and one lookup: the
 * THR_THD slot below the thread pointer, the name pointer in the THD, the
 * name's stage in thd_stage_names. Statements without IO pay nothing; the
 * four stage uprobes cost four traps to every statement.
 *
 * A server whose binary's layout was not found (collectors/thd_stages.py)
 * has, with `--stages full`, the stage uprobes and an entry saying so
 * (stage_off 0): a stage they set is returned as it is, and PARSE is parse.
 * With `--stages auto` it has no entry: its IO inside statements is
 * IOA_STAGE_STATEMENT (not traced), like `--stages statement`'s. Estimate
 * (index dives) and purge come from their own uprobes in every case: the
 * stage is read only in PARSE.
 */
#ifndef IOATTR_THD_STAGE_BPF_H
#define IOATTR_THD_STAGE_BPF_H

#include "maps.bpf.h"
#include "compat.bpf.h"

#define MAX_THD_STAGE_NAMES 8192

/* By target slot, like target_slots (an array lookup the verifier inlines, not a hash
 * helper call on every IO): a server whose slot another server holds is treated as one
 * whose layout was not found (collectors/stage_probes.py): null stages inside statements
 * with --stages auto, the stage uprobes with full. */
BPF_ARRAY(thd_layouts, struct thd_layout, TARGET_SLOTS);

BPF_HASH(thd_stage_names, struct thd_stage_key, __u8, MAX_THD_STAGE_NAMES);

BPF_PERCPU_ARRAY(thd_stage_misses, __u64, THD_MISS_SLOTS);

/* Names read at IO time that thd_stage_names lacks (a proc_info set from a literal, not a
 * stage object): userspace reads each name from the process, adds it to thd_stage_names and
 * deletes it here (StageProbes.learn_thd_names), so each costs a miss or a few, not all. */
BPF_HASH(thd_stage_unknown, struct thd_stage_key, __u8, 256);

static __always_inline void thd_miss(__u32 why)
{
	__u64 *n = bpf_map_lookup_elem(&thd_stage_misses, &why);

	if (n)
		*n += 1;
}

/* The stage to charge an IO of `task`, a thread of process tgid whose state is `st`. */
static __always_inline __u8 io_stage(struct task_struct *task, struct task_io_state *st, __u32 tgid)
{
	struct thd_stage_key k = { .tgid = tgid };
	__u32 slot = tgid & TARGET_SLOT_MASK;
	struct thd_layout *l;
	__u64 thd = 0;
	__u8 *s;

	/* a PostgreSQL backend's stage is set by its stage uprobes (bpf/pg_stage.bpf.h) */
	if (!cfg.fine_stages || st->stage != IOA_STAGE_PARSE || st->wire_proto == WIRE_PROTO_PG_STAGED)
		return st->stage;
	l = bpf_map_lookup_elem(&thd_layouts, &slot);
	if (!l || l->tgid != tgid)
		return IOA_STAGE_STATEMENT; /* no stages inside this server's statements (--stages auto) */
	if (!l->stage_off)
		return IOA_STAGE_PARSE; /* its stages come from the uprobes, none hit yet */
	if (bpf_probe_read_user(&thd, sizeof(thd), (void *)(task_thread_pointer(task) + l->tls_off)) || !thd ||
	    bpf_probe_read_user(&k.name, sizeof(k.name), (void *)(thd + l->stage_off)) || !k.name) {
		thd_miss(THD_MISS_READ);
		return IOA_STAGE_STATEMENT;
	}
	if (k.name != st->thd_name) {
		s = bpf_map_lookup_elem(&thd_stage_names, &k);
		if (!s) {
			__u8 one = 1;

			thd_miss(THD_MISS_NAME);
			bpf_map_update_elem(&thd_stage_unknown, &k, &one, BPF_NOEXIST);
			return IOA_STAGE_STATEMENT;
		}
		st->thd_name = k.name;
		st->thd_stage = *s;
	}
	/* No client statement runs on the thread ("login": a cached thread taken by a new
	 * connection). Its last statement's digest is not this IO's: a connection that ended
	 * without COM_QUIT (a killed client, a dropped link) left it there, and the callers
	 * read st->digest after this. The next statement sets its own. */
	if (st->thd_stage == IOA_STAGE_BACKGROUND)
		st->digest = 0;
	return st->thd_stage;
}

#endif /* IOATTR_THD_STAGE_BPF_H */

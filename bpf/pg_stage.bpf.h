/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stages inside a PostgreSQL statement: parse, optimize (the planner), execute.
 *
 * A statement starts in IOA_STAGE_PARSE when the wire reader sees its Simple Query or
 * Execute (bpf/pg_wire.bpf.h; the server's targets value has IOA_TARGET_PG_STAGES): raw
 * parsing, parse analysis and rewriting, with their catalog lookups, are parse. Then
 *
 *   ioattr_pg_plan      uprobe on standard_planner(): optimize. Every planning goes through it
 *                       (pg_plan_query, a cached plan's rebuild at Bind, EXPLAIN, a function's
 *                       query planned while its caller executes; an extension's planner_hook
 *                       calls it too)
 *   ioattr_pg_execute   uprobe on ExecutorStart() and standard_ProcessUtility(): execute. Every
 *                       plan's execution starts with ExecutorStart (a top-level statement's in
 *                       PortalStart or ProcessQuery, a function's or EXPLAIN ANALYZE's nested
 *                       ones), so reads after a nested planning are execute again; a utility
 *                       statement (BEGIN, COMMIT, CREATE INDEX, VACUUM, EXPLAIN...) has no plan
 *                       and runs in ProcessUtility
 *
 * Entry probes only (a uretprobe costs about twice a uprobe), on functions whose first
 * instruction is a push, which the kernel emulates (planner() and ProcessUtility() start with a
 * rip-relative load of their hook, which a uprobe single-steps out of line: far dearer here,
 * docs/cost.md): a planned statement (a SELECT by key) costs two traps, a utility statement
 * one, an Execute of a cached generic plan one (ExecutorStart: no planning). What it gives up: the commit at the statement's end is part
 * of execute, and in a Simple Query of several statements the second one's parse analysis
 * follows the first one's execution and is charged to execute.
 * The uprobes are attached to the server's binary, not per process (a backend forked later
 * must hit them), so every process running that binary traps; only targets' are kept.
 */
#ifndef IOATTR_PG_STAGE_BPF_H
#define IOATTR_PG_STAGE_BPF_H

STAGE_PROBE(ioattr_pg_plan, IOA_STAGE_OPTIMIZE)

STAGE_PROBE(ioattr_pg_execute, IOA_STAGE_EXECUTE)

#endif /* IOATTR_PG_STAGE_BPF_H */

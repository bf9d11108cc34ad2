// SPDX-License-Identifier: GPL-2.0
/*
 * The floor for ioattr's per-io_uring-op cost: the two tracepoints ioattr's
 * uring set hooks (io_uring:io_uring_submit_req, io_uring_complete), each
 * with the same early pid filter as floor.bpf.c and one counter bump,
 * nothing else. ioattr's uring.bpf.c additionally checks the target map,
 * keeps the request in flight (a slot in a per-address array, claimed at
 * submit and released at completion), reads the file's inode and aggregates.
 *
 * Built twice: as is, on the classic (perf) tracepoints -- the bare floor
 * the issue measures against; with -DFLOOR_TP_BTF on the same tracepoints
 * through tp_btf (entered directly, no trace record built), which is how
 * ioattr attaches them: the "attach method" comparison.
 *
 * The filter is on the tgid: an io_uring completion may run in another
 * thread of the submitter's process (an iou-wrk worker for punted work, an
 * SQPOLL thread), but for buffered reads that hit the page cache it runs
 * inline, in the submitting thread, during io_uring_enter(). Either way
 * it is the target's tgid, so both counters must equal the target's ops.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "floor.bpf.h"

#ifdef FLOOR_TP_BTF
#define SUBMIT_SEC "tp_btf/io_uring_submit_req"
#define COMPLETE_SEC "tp_btf/io_uring_complete"
#else
#define SUBMIT_SEC "tracepoint/io_uring/io_uring_submit_req"
#define COMPLETE_SEC "tracepoint/io_uring/io_uring_complete"
#endif

FLOOR_PROG(uring_floor_submit, SUBMIT_SEC, enter_hits)
FLOOR_PROG(uring_floor_complete, COMPLETE_SEC, exit_hits)

char LICENSE[] SEC("license") = "GPL";

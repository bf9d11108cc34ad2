// SPDX-License-Identifier: GPL-2.0
/*
 * Tiny programs `ioattr doctor` loads to find out, by trying, what this
 * kernel can do. One program per feature; the doctor opens this object once
 * per check and autoloads only that check's program (and creates only the
 * maps it needs), so one section the kernel rejects (fentry, kprobe ...)
 * never stops the others from being tried.
 *
 * Programs that can fire count hits for the doctor's own process only
 * (doctor_tgid), so a check can tell "attached" from "attached and ran".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "map_defs.bpf.h"

/* slots of doctor_hits; mirrored in ioattr/host/doctor.py */
enum {
	HIT_TP = 0,
	HIT_RAW_TP = 1,
	HIT_TP_BTF = 2,
	HIT_UPROBE = 3,
	HIT_URETPROBE = 4,
	HIT_KPROBE = 5,
	HIT_FENTRY = 6,
	HIT_FEXIT = 7,
	HIT_RINGBUF = 8,
	HIT_TASK_STORAGE = 9,
	HIT_SLOTS = 16,
};

/* the only .rodata variable: ioattr/host/doctor.py writes the first 4 bytes */
const volatile __u32 doctor_tgid = 0;

BPF_ARRAY(doctor_hits, __u64, HIT_SLOTS);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} doctor_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} doctor_task SEC(".maps");

/* filled and drained from userspace only: BPF_MAP_LOOKUP_BATCH */
BPF_HASH(doctor_hash, __u32, __u64, 64);

static __always_inline bool mine(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == doctor_tgid;
}

static __always_inline void hit(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&doctor_hits, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/*
 * A program that only counts its hits (in the doctor's own process) in slot:
 * SEC(sec) int <signature> { if (mine()) hit(slot); return 0; }. The signature
 * is the plain one, or BPF_PROG's for the BTF-typed hooks.
 */
#define COUNTING_PROG(sec, slot, signature)	\
SEC(sec)					\
int signature					\
{						\
	if (mine())				\
		hit(slot);			\
	return 0;				\
}

COUNTING_PROG("tracepoint/raw_syscalls/sys_enter", HIT_TP, doctor_tp(void *ctx))
COUNTING_PROG("raw_tp/sys_enter", HIT_RAW_TP, doctor_raw_tp(void *ctx))
COUNTING_PROG("tp_btf/sys_enter", HIT_TP_BTF, BPF_PROG(doctor_tp_btf, struct pt_regs *regs, long id))

/* attached by hand (bpf_program__attach_tracepoint) to each tracepoint
 * ioattr uses, to prove each one can take a BPF program */
SEC("tracepoint")
int doctor_tp_named(void *ctx)
{
	return 0;
}

/* attached by hand to libc's getpid */
COUNTING_PROG("uprobe", HIT_UPROBE, doctor_uprobe(void *ctx))
COUNTING_PROG("uretprobe", HIT_URETPROBE, doctor_uretprobe(void *ctx))
COUNTING_PROG("kprobe/vfs_read", HIT_KPROBE, doctor_kprobe(void *ctx))
COUNTING_PROG("fentry/vfs_read", HIT_FENTRY, BPF_PROG(doctor_fentry, struct file *file))
COUNTING_PROG("fexit/vfs_read", HIT_FEXIT, BPF_PROG(doctor_fexit, struct file *file))

SEC("raw_tp/sys_enter")
int doctor_ringbuf(void *ctx)
{
	__u32 tgid;

	if (!mine())
		return 0;
	tgid = doctor_tgid;
	if (bpf_ringbuf_output(&doctor_rb, &tgid, sizeof(tgid), 0) == 0)
		hit(HIT_RINGBUF);
	return 0;
}

/* counts this task's syscalls in task storage and publishes the count, so
 * a value >= 2 proves the storage was created and then found again */
SEC("raw_tp/sys_enter")
int doctor_task_st(void *ctx)
{
	__u32 slot = HIT_TASK_STORAGE;
	__u64 *n, *out;

	if (!mine())
		return 0;
	n = bpf_task_storage_get(&doctor_task, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!n)
		return 0;
	*n += 1;
	out = bpf_map_lookup_elem(&doctor_hits, &slot);
	if (out)
		*out = *n;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

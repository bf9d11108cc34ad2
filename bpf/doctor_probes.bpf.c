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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HIT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} doctor_hits SEC(".maps");

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
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} doctor_hash SEC(".maps");

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

SEC("tracepoint/raw_syscalls/sys_enter")
int doctor_tp(void *ctx)
{
	if (mine())
		hit(HIT_TP);
	return 0;
}

SEC("raw_tp/sys_enter")
int doctor_raw_tp(void *ctx)
{
	if (mine())
		hit(HIT_RAW_TP);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(doctor_tp_btf, struct pt_regs *regs, long id)
{
	if (mine())
		hit(HIT_TP_BTF);
	return 0;
}

/* attached by hand (bpf_program__attach_tracepoint) to each tracepoint
 * ioattr uses, to prove each one can take a BPF program */
SEC("tracepoint")
int doctor_tp_named(void *ctx)
{
	return 0;
}

/* attached by hand to libc's getpid */
SEC("uprobe")
int doctor_uprobe(void *ctx)
{
	if (mine())
		hit(HIT_UPROBE);
	return 0;
}

SEC("uretprobe")
int doctor_uretprobe(void *ctx)
{
	if (mine())
		hit(HIT_URETPROBE);
	return 0;
}

SEC("kprobe/vfs_read")
int doctor_kprobe(void *ctx)
{
	if (mine())
		hit(HIT_KPROBE);
	return 0;
}

SEC("fentry/vfs_read")
int BPF_PROG(doctor_fentry, struct file *file)
{
	if (mine())
		hit(HIT_FENTRY);
	return 0;
}

SEC("fexit/vfs_read")
int BPF_PROG(doctor_fexit, struct file *file)
{
	if (mine())
		hit(HIT_FEXIT);
	return 0;
}

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

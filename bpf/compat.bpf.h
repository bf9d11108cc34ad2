/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every place where ioattr depends on a kernel's internal layout or on the
 * architecture lives here, behind CO-RE reads and existence checks, so a
 * kernel difference is fixed in one file.
 */
#ifndef IOATTR_COMPAT_BPF_H
#define IOATTR_COMPAT_BPF_H

#include <bpf/bpf_core_read.h>
#include "ioattr.h"

#ifndef E2BIG
#define E2BIG 7
#endif
#ifndef EEXIST
#define EEXIST 17
#endif

#define S_IFMT 00170000
#define S_IFREG 0100000
#define S_IFBLK 0060000
#define S_IFDIR 0040000

/* ---- syscall numbers (x86_64) ---------------------------------------- */
#if defined(__TARGET_ARCH_x86)
#define NR_read 0
#define NR_write 1
#define NR_open 2
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_readv 19
#define NR_writev 20
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_creat 85
#define NR_io_getevents 208
#define NR_io_submit 209
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_openat 257
#define NR_sync_file_range 277
#define NR_preadv 295
#define NR_pwritev 296
#define NR_preadv2 327
#define NR_pwritev2 328
#define NR_io_pgetevents 333
#define NR_openat2 437
/* syscall arguments as the entry code saved them */
#define SYSARG1(regs) ((regs)->di)
#define SYSARG2(regs) ((regs)->si)
#define SYSARG3(regs) ((regs)->dx)
#define SYSARG4(regs) ((regs)->r10)
#define SYSCALL_NR(regs) ((regs)->orig_ax)
#else
#error "ioattr's syscall probes currently know only x86_64 syscall numbers"
#endif

/* ---- files and inodes ------------------------------------------------- */

/* The struct file behind fd in the current task, or NULL. */
static __always_inline struct file *fd_to_file(struct task_struct *task, int fd)
{
	struct files_struct *files;
	struct fdtable *fdt;
	struct file **fds;
	struct file *f = NULL;
	unsigned int max;

	if (fd < 0)
		return NULL;
	files = BPF_CORE_READ(task, files);
	if (!files)
		return NULL;
	fdt = BPF_CORE_READ(files, fdt);
	if (!fdt)
		return NULL;
	max = BPF_CORE_READ(fdt, max_fds);
	if ((unsigned int)fd >= max)
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

struct inode_id {
	__u64 ino;
	__u32 dev;
	__u32 mode;
};

#define BTRFS_SUPER_MAGIC 0x9123683E
#define BTRFS_BTREE_INODE_OBJECTID 1

/* The subvolume device of a btrfs inode, 0 when there is none (the btree inode, whose
 * root is the tree root). btrfs gives each subvolume an anonymous device and numbers
 * inodes per subvolume; stat() reports the subvolume's device (btrfs_getattr:
 * BTRFS_I(inode)->root->anon_dev), never the superblock's s_dev, so (s_dev, ino) would
 * neither match the names userspace finds (/proc/PID/fd, stat) nor be unique across
 * subvolumes. CO-RE probe reads, not bpf_rdonly_cast: btrfs may be a module, whose
 * types that kfunc can't take. Compiled out where the kernel has no btrfs types; a
 * subprogram, so its reads take no stack in the (large) programs that inline the rest. */
static __noinline __u32 btrfs_inode_dev(struct inode *inode)
{
	struct btrfs_inode *bi;

	if (!bpf_core_type_exists(struct btrfs_inode))
		return 0;
	bi = (struct btrfs_inode *)((unsigned long)inode - bpf_core_field_offset(struct btrfs_inode, vfs_inode));
	return BPF_CORE_READ(bi, root, anon_dev);
}

/* The device an inode's (dev, ino) key carries: what stat() says (see btrfs_inode_dev). */
static __always_inline __u32 inode_dev(struct inode *inode, __u32 s_dev, unsigned long magic)
{
	__u32 dev;

	if (magic != BTRFS_SUPER_MAGIC)
		return s_dev;
	dev = btrfs_inode_dev(inode);
	return dev ? dev : s_dev;
}

static __always_inline bool inode_id_of(struct inode *inode, struct inode_id *id)
{
	struct super_block *sb;

	if (!inode)
		return false;
	id->ino = BPF_CORE_READ(inode, i_ino);
	id->mode = BPF_CORE_READ(inode, i_mode);
	sb = BPF_CORE_READ(inode, i_sb);
	id->dev = inode_dev(inode, BPF_CORE_READ(sb, s_dev), BPF_CORE_READ(sb, s_magic));
	return true;
}

static __always_inline bool file_inode_id(struct file *f, struct inode_id *id)
{
	if (!f)
		return false;
	return inode_id_of(BPF_CORE_READ(f, f_inode), id);
}

/* inode_id_of() for an inode reached with plain BTF loads. */
static __always_inline bool inode_id_btf(struct inode *inode, struct inode_id *id)
{
	if (!inode)
		return false;
	id->ino = inode->i_ino;
	id->mode = inode->i_mode;
	id->dev = inode_dev(inode, inode->i_sb->s_dev, inode->i_sb->s_magic);
	return true;
}

/* Kernels with the bpf_rdonly_cast kfunc (6.2+) let the hot path read the
 * struct file and inode with plain BTF loads instead of one helper call per
 * field (measured: added cost per traced pread 2.25x -> 1.43x the bare
 * tracepoint floor, benchmarks/variants/fastfd.patch). Weak, so an older
 * kernel falls back to the CO-RE probe reads above. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* fd_inode_id(), also handing back the struct file for more plain loads
 * (read/write's f_pos) -- NULL where the kernel has no bpf_rdonly_cast:
 * read the file through fd_to_file() there. */
static __always_inline bool fd_file_inode_id(struct task_struct *task, int fd, struct inode_id *id,
					     struct file **filep)
{
	struct files_struct *files;
	struct fdtable *fdt;
	struct file *f = NULL;

	*filep = NULL;
	if (!bpf_rdonly_cast)
		return file_inode_id(fd_to_file(task, fd), id);
	files = task->files;
	if (fd < 0 || !files)
		return false;
	fdt = files->fdt;
	if (!fdt || (unsigned int)fd >= fdt->max_fds)
		return false;
	/* A variable index into the fd array, which a BTF load can't take: cast
	 * the slot's address to a type whose first member is a pointer, so the
	 * read is a plain fault-safe load rather than a bpf_probe_read_kernel
	 * call (~25 ns here). */
	f = (struct file *)((struct list_head *)bpf_rdonly_cast(
		(void *)((unsigned long)fdt->fd + (unsigned int)fd * sizeof(void *)),
		bpf_core_type_id_kernel(struct list_head)))->next;
	if (!f)
		return false;
	f = bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));
	*filep = f;
	return inode_id_btf(f->f_inode, id);
}

static __always_inline bool fd_inode_id(struct task_struct *task, int fd, struct inode_id *id)
{
	struct file *f;

	return fd_file_inode_id(task, fd, id, &f);
}

static __always_inline bool is_data_inode(__u32 mode)
{
	__u32 t = mode & S_IFMT;

	return t == S_IFREG || t == S_IFBLK;
}

/* ---- tasks ------------------------------------------------------------------ */

#define PF_IO_WORKER 0x00000010

/* The thread an io_uring worker (iou-wrk-*) works for; tid itself otherwise.
 * Workers are threads of the owner's process, so only the tid needs fixing.
 * task is a BTF pointer (bpf_get_current_task_btf()): plain loads, and past
 * the void * worker_private with bpf_rdonly_cast() where the kernel has it. */
static __always_inline __u32 owner_tid(struct task_struct *task, __u32 tid)
{
	struct io_worker *w;
	__u32 owner;

	if (!(task->flags & PF_IO_WORKER))
		return tid;
	if (!bpf_core_type_exists(struct io_worker))
		return tid;
	if (bpf_rdonly_cast) {
		w = bpf_rdonly_cast(task->worker_private, bpf_core_type_id_kernel(struct io_worker));
		owner = w->wq->task->pid; /* 0 if any link is NULL: the loads are fault-safe */
	} else {
		w = task->worker_private;
		if (!w)
			return tid;
		owner = BPF_CORE_READ(w, wq, task, pid);
	}
	return owner ? owner : tid;
}

/* ---- block requests ---------------------------------------------------- */
/*
 * The block programs are tp_btf: the request or bio they get is a BTF
 * pointer, so fields are read with plain loads (the verifier turns them into
 * fault-safe PROBE_MEM loads, no helper call), and so are pointers reached
 * through typed fields. A void * (bio->bi_private) or an address computed
 * from a scalar goes back to a typed pointer with bpf_rdonly_cast(); kernels
 * without that kfunc take the CO-RE probe-read path instead.
 */

/* dev_t of the partition (or whole disk) a request targets. */
static __always_inline __u32 request_dev(struct request *rq)
{
	struct block_device *part = rq->part;
	struct gendisk *disk;

	if (part)
		return part->bd_dev;
	disk = rq->q->disk;
	if (!disk)
		return 0;
	return ((__u32)disk->major << 20) | disk->first_minor;
}

/* The inode of a direct-IO bio (its end_io is iomap_dio_bio_end_io): its
 * bi_private is the iomap_dio, whose kiocb names the file. */
static __always_inline bool dio_bio_inode_id(struct bio *bio, struct inode_id *id)
{
	struct iomap_dio *dio;
	struct file *f;

	if (!bpf_rdonly_cast) {
		dio = bio->bi_private;
		return file_inode_id(BPF_CORE_READ(dio, iocb, ki_filp), id);
	}
	dio = bpf_rdonly_cast(bio->bi_private, bpf_core_type_id_kernel(struct iomap_dio));
	f = dio->iocb->ki_filp;
	if (!f)
		return false;
	return inode_id_btf(f->f_inode, id);
}

/* A split bio's original (block.bpf.c, block_split): -1 when it is not a
 * direct-IO bio (end_io != dio_end_io), else whether its file's inode was
 * found (1) or not (0). The split carries only a share of the original's
 * pages; the original, alive until every split of it completes, carries the
 * iomap_dio. Every kernel ioattr supports chains a split to its original
 * with bio_chain() and fires trace_block_split() right after it (5.x:
 * __blk_queue_split(); later bio_split_to_limits()/bio_submit_split(); 6.18:
 * bio_submit_split_bioset(), added by the 2025 commit "block: add
 * bio_submit_split_bioset"), so bi_private is the original when the
 * tracepoint fires. A stacking driver (dm, md) that clones bios instead is
 * not followed. */
static __always_inline int split_dio_inode_id(__u64 parent, __u64 dio_end_io, struct inode_id *id)
{
	struct bio *orig;
	struct iomap_dio *dio;

	if (!bpf_rdonly_cast) {
		orig = (struct bio *)parent;
		if ((__u64)BPF_CORE_READ(orig, bi_end_io) != dio_end_io)
			return -1;
		dio = BPF_CORE_READ(orig, bi_private);
		return file_inode_id(BPF_CORE_READ(dio, iocb, ki_filp), id) ? 1 : 0;
	}
	orig = bpf_rdonly_cast((void *)parent, bpf_core_type_id_kernel(struct bio));
	if ((__u64)orig->bi_end_io != dio_end_io)
		return -1;
	return dio_bio_inode_id(orig, id) ? 1 : 0;
}

/* The inode whose page cache the first page of a bio belongs to (following
 * a large folio's tail page to its head), or false for anonymous and unowned
 * pages. */
static __always_inline bool bio_first_inode_id(struct bio *bio, struct inode_id *id)
{
	struct bio_vec *vec = bio->bi_io_vec;
	unsigned int idx = bio->bi_iter.bi_idx;
	struct page *page = NULL;
	unsigned long head, mapping;
	struct address_space *as;

	if (!vec)
		return false;
	if (!bpf_rdonly_cast)
		bpf_probe_read_kernel(&page, sizeof(page), &vec[idx & 0xff].bv_page);
	else if (idx) /* a split bio: a variable index needs a cast for a plain load */
		page = ((struct bio_vec *)bpf_rdonly_cast(&vec[idx & 0xff],
				bpf_core_type_id_kernel(struct bio_vec)))->bv_page;
	else
		page = vec->bv_page;
	if (!page)
		return false;
	/* Probe reads: these two share their words with list heads in unions, so
	 * a plain load would type them as pointers, whose tag bits can't be tested. */
	head = BPF_CORE_READ(page, compound_head);
	if (head & 1)
		page = (struct page *)(head - 1);
	mapping = (unsigned long)BPF_CORE_READ(page, mapping);
	if (!mapping || (mapping & 3)) /* anon, movable or KSM */
		return false;
	if (!bpf_rdonly_cast)
		return inode_id_of(BPF_CORE_READ((struct address_space *)mapping, host), id);
	as = bpf_rdonly_cast((void *)mapping, bpf_core_type_id_kernel(struct address_space));
	return inode_id_btf(as->host, id);
}

/* ---- btrfs bios ----------------------------------------------------------
 * btrfs sends every bio of its own: a struct bio embedded at the end of a struct
 * btrfs_bio (its bio sets are front-padded for it), whose `inode` is the file whose
 * data it carries (the btree inode for metadata; NULL for a few of its own, e.g.
 * scrub). Its end_io is btrfs_simple_end_io when it goes to one device, and
 * btrfs_orig_write_end_io for the last mirror of a DUP/RAID1 write, whose other
 * mirrors are clones (btrfs_clone_write_end_io) with the stripe as bi_private, the
 * stripe's io context holding the original. Direct IO keeps iomap's bio but
 * btrfs_dio_submit_io() re-inits it: btrfs_dio_end_io, with the iomap_dio as the
 * btrfs_bio's private; a bio btrfs splits off a bigger one to fit a chunk has no
 * end_io and the original as its private. So a direct-IO bio on btrfs is neither
 * iomap's (end_io) nor carries page-cache pages: the btrfs_bio names both its file
 * and its iomap_dio. CO-RE probe reads throughout (btrfs may be a module). */

/* The btrfs_bio a bio is, or (a clone of a mirrored write) was cloned from; NULL
 * when it is not btrfs's. */
static __always_inline struct btrfs_bio *btrfs_bio_of(struct bio *bio, __u64 simple_end, __u64 orig_end,
						      __u64 clone_end)
{
	__u64 end;

	if (!bpf_core_type_exists(struct btrfs_bio) || !simple_end || !bio)
		return NULL;
	end = (__u64)BPF_CORE_READ(bio, bi_end_io);
	if (end == clone_end) {
		struct btrfs_io_stripe *stripe = BPF_CORE_READ(bio, bi_private);

		bio = BPF_CORE_READ(stripe, bioc, orig_bio);
		if (!bio)
			return NULL;
		end = (__u64)BPF_CORE_READ(bio, bi_end_io);
	}
	if (end != simple_end && end != orig_end)
		return NULL;
	return (struct btrfs_bio *)((unsigned long)bio - bpf_core_field_offset(struct btrfs_bio, bio));
}

/* The iomap_dio of a btrfs direct-IO bio, NULL when it is not direct IO. A split's
 * private is taken for the original only when it names the same inode (a read-repair
 * bio has no end_io either, and another struct as its private). */
static __always_inline void *btrfs_bio_dio(struct btrfs_bio *bb, __u64 dio_end)
{
	__u64 end = (__u64)BPF_CORE_READ(bb, end_io);
	void *priv = BPF_CORE_READ(bb, private);

	if (!dio_end)
		return NULL;
	if (!end && priv) {
		struct btrfs_bio *orig = priv;

		if (BPF_CORE_READ(orig, inode) != BPF_CORE_READ(bb, inode))
			return NULL;
		end = (__u64)BPF_CORE_READ(orig, end_io);
		priv = BPF_CORE_READ(orig, private);
	}
	return end == dio_end ? priv : NULL;
}

/* The inode a btrfs bio serves (false: none, a bio of btrfs's own). */
static __always_inline bool btrfs_bio_inode_id(struct btrfs_bio *bb, struct inode_id *id)
{
	struct btrfs_inode *bi = BPF_CORE_READ(bb, inode);

	if (!bi)
		return false;
	return inode_id_of((struct inode *)((unsigned long)bi + bpf_core_field_offset(struct btrfs_inode, vfs_inode)),
			   id);
}

/* log2 of a folio's pages, as folio_order(): a large folio has PG_head in its flags and
 * its order in the low byte of _flags_1. Kernels before _flags_1: 0 (one page). */
static __always_inline __u32 folio_order_of(struct folio *folio)
{
	unsigned long flags = 0, flags1 = 0;

	if (!bpf_core_field_exists(struct folio, _flags_1))
		return 0;
	bpf_core_read(&flags, sizeof(flags), &folio->flags);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 0;
	bpf_core_read(&flags1, sizeof(flags1), &folio->_flags_1);
	return flags1 & 0xff;
}

/* ---- io_uring ------------------------------------------------------------ */

/*
 * The io_uring programs are tp_btf. On every kernel with the
 * io_uring_submit_req tracepoint, its one argument is the request (a BTF
 * pointer: plain loads), and io_uring_complete's second argument is the
 * request as a void * (NULL for a CQE not tied to one); complete's other
 * arguments changed (6.3 replaced user_data/res/cflags with the CQE), so the
 * result is read from the request's own cqe, which the kernel copies into
 * the ring just before the tracepoint. Kernels without bpf_rdonly_cast read
 * the void * request with CO-RE probe reads instead.
 */

/* The fd a request names, or false for a registered ("fixed") file, whose
 * number indexes the ring's file table, not the process's. At submission. */
static __always_inline bool uring_req_fd(struct io_kiocb *req, int *fd)
{
	if (req->flags & REQ_F_FIXED_FILE)
		return false;
	*fd = req->cqe.fd; /* the fd until the result replaces it */
	return true;
}

/* The user buffer, length and file offset of a read/write request, at
 * submission. The request's command area is a struct io_rw once prepared
 * (before the submission tracepoint fires); vectored opcodes point at an
 * iovec array, of which the first entry is used. */
static __always_inline bool uring_rw_buffer(struct io_kiocb *req, __u8 opcode, __u64 *buf, __u64 *len,
					    __u64 *pos)
{
	struct io_rw *rw;

	if (bpf_rdonly_cast) {
		rw = bpf_rdonly_cast(&req->cmd, bpf_core_type_id_kernel(struct io_rw));
		*buf = rw->addr;
		*len = rw->len;
		*pos = rw->kiocb.ki_pos;
	} else {
		rw = (struct io_rw *)&req->cmd;
		*buf = BPF_CORE_READ(rw, addr);
		*len = BPF_CORE_READ(rw, len);
		*pos = BPF_CORE_READ(rw, kiocb.ki_pos);
	}
	if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_READV) ||
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_WRITEV)) {
		struct iovec iov;

		if (bpf_probe_read_user(&iov, sizeof(iov), (void *)*buf))
			return false;
		*buf = (__u64)iov.iov_base;
		*len = iov.iov_len;
	}
	return *buf != 0;
}

/* The ring (struct io_ring_ctx *) of a completing request. */
static __always_inline __u64 uring_req_ring(void *req)
{
	if (bpf_rdonly_cast)
		return (__u64)((struct io_kiocb *)bpf_rdonly_cast(req, bpf_core_type_id_kernel(struct io_kiocb)))->ctx;
	return (__u64)BPF_CORE_READ((struct io_kiocb *)req, ctx);
}

/* A completing request's result, and the inode of its file (false: none).
 * The file is read now, when the kernel has resolved it (fixed files too). */
static __always_inline bool uring_req_result(void *req, __s32 *res, struct inode_id *id)
{
	struct io_kiocb *r;
	struct file *f;

	if (!bpf_rdonly_cast) {
		*res = BPF_CORE_READ((struct io_kiocb *)req, cqe.res);
		return file_inode_id(BPF_CORE_READ((struct io_kiocb *)req, file), id);
	}
	r = bpf_rdonly_cast(req, bpf_core_type_id_kernel(struct io_kiocb));
	*res = r->cqe.res;
	f = r->file;
	if (!f)
		return false;
	return inode_id_btf(f->f_inode, id);
}

/* Map an io_uring opcode to an ioattr op; returns false for non-IO opcodes.
 * Opcode values come from this kernel's BTF so renumbering can't bite. */
static __always_inline bool uring_op(__u8 opcode, __u8 *op, __u8 *api)
{
	*api = IOA_API_IO_URING;
	if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_READV) ||
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_READ_FIXED) ||
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_READ)) {
		*op = IOA_OP_READ;
		return true;
	}
	if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_WRITEV) ||
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_WRITE_FIXED) ||
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_WRITE)) {
		*op = IOA_OP_WRITE;
		return true;
	}
	if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_FSYNC) ||
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_SYNC_FILE_RANGE)) {
		*op = IOA_OP_FSYNC;
		return true;
	}
	if (bpf_core_enum_value_exists(enum io_uring_op, IORING_OP_READV_FIXED) &&
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_READV_FIXED)) {
		*op = IOA_OP_READ;
		return true;
	}
	if (bpf_core_enum_value_exists(enum io_uring_op, IORING_OP_WRITEV_FIXED) &&
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_WRITEV_FIXED)) {
		*op = IOA_OP_WRITE;
		return true;
	}
	return false;
}

/* ---- the user thread pointer -------------------------------------------
 * Where a thread's thread-local variables are found: on x86-64 the FS base,
 * at which glibc's thread-local block of the executable ends (variant II).
 * bpf/thd_stage.bpf.h reads a server's THR_THD from it. 0 on other
 * architectures: userspace configures no server there (collectors/thd_stages.py
 * reads x86-64 code only), so the stage read is never tried. */
static __always_inline __u64 task_thread_pointer(struct task_struct *t)
{
#if defined(__TARGET_ARCH_x86)
	return t->thread.fsbase;
#else
	return 0;
#endif
}

#endif /* IOATTR_COMPAT_BPF_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Key/value structs shared by every ioattr BPF object and mirrored in
 * userspace by collectors/abi.py (installed as ioattr.collectors.abi). Change
 * both together: before every load, collectors/abi_check.py compares each
 * struct in the object's BTF with the mirror field by field and refuses a
 * drift; tests/unit/test_abi.py also compiles this header against every
 * mirrored layout (events included) and reads the enums from it.
 */
#ifndef IOATTR_H
#define IOATTR_H

#define IOATTR_HIST_SLOTS 64   /* latency histogram: 2 slots per octave of ns */
#define IOATTR_HIST_MIN_SHIFT 8 /* slot 0 holds everything below 2^8 ns */
#define IOATTR_PATH_MAX 256

/* Which layer saw the IO. */
enum ioattr_layer {
	IOA_LAYER_SYSCALL = 0,   /* what the process asked for (read/write families, libaio, io_uring) */
	IOA_LAYER_BLOCK = 1,     /* what reached the device */
	IOA_LAYER_PAGECACHE = 2, /* pages brought into the page cache by a miss */
};

enum ioattr_op {
	IOA_OP_READ = 0,
	IOA_OP_WRITE = 1,
	IOA_OP_FSYNC = 2,
};

/* How the IO was issued (report dimension `api`). */
enum ioattr_api {
	IOA_API_SYNC = 0,      /* read/pread64/write/pwrite64 */
	IOA_API_VECTOR = 1,    /* readv/preadv/preadv2/writev/pwritev/pwritev2 */
	IOA_API_SYNCCALL = 2,  /* fsync/fdatasync/sync_file_range */
	IOA_API_LIBAIO = 3,    /* io_submit .. io_getevents */
	IOA_API_IO_URING = 4,  /* io_uring submission .. completion */
	IOA_API_DIRECT = 5,    /* block: direct IO bio (iomap) */
	IOA_API_BUFFERED = 6,  /* block: page-cache read or writeback */
	IOA_API_READAHEAD = 7, /* pagecache: pages added by a read miss or readahead */
	IOA_API_OTHER = 8,
	IOA_API_IO_WORKER = 9, /* a PostgreSQL io worker's syscall for a backend (bpf/pg_aio.bpf.h),
	                        * charged to that backend */
};

/* What a block request served when it is not a tracked file's data. */
enum ioattr_kind {
	IOA_KIND_FILE = 0,      /* a regular file's data */
	IOA_KIND_JOURNAL = 1,   /* filesystem journal (jbd2) */
	IOA_KIND_METADATA = 2,  /* filesystem metadata (bdev buffers, directories, REQ_META) */
	IOA_KIND_SWAP = 3,
	IOA_KIND_UNKNOWN = 4,   /* pages we could not map to an owner */
	IOA_KIND_UNTRACKED = 5, /* a file none of the targets touched */
	IOA_KIND_DISCARD = 6,   /* discard / write-zeroes: no data moved */
	IOA_KIND_FLUSH = 7,     /* cache flush requests */
	IOA_KIND_OTHERS_DIRTY = 8, /* writeback of a target's file's pages no target dirtied while
	                            * traced (another process, or before the recording): tgid 0 */
};

enum ioattr_drop {
	IOA_DROP_STATS_FULL = 0,    /* io_stats had no room for a new key */
	IOA_DROP_INFLIGHT_FULL = 1, /* an async/in-flight table had no room */
	IOA_DROP_EVENTS_FULL = 2,   /* ring buffer full: open event lost */
	IOA_DROP_TRACKED_FULL = 3,  /* tracked_inodes had no room */
	IOA_DROP_PAGES_FULL = 4,    /* page_stats had no room for a new key */
	IOA_DROP_PAGES_CUT = 5,     /* an IO had more pages than one probe classifies */
	IOA_DROP_PREPARED_LOST = 6, /* a prepared statement's execution whose id prep_stmts no longer
	                             * held (evicted): labelled IOA_DIGEST_PREPARED_LOST */
	IOA_DROP_SLOTS = 7,
};

/* Where in query processing a thread is (set by the stage uprobes). */
enum ioattr_stage {
	IOA_STAGE_UNKNOWN = 0,    /* stage probes not attached */
	IOA_STAGE_BACKGROUND = 1, /* not inside a client statement */
	IOA_STAGE_PARSE = 2,
	IOA_STAGE_OPTIMIZE = 3,
	IOA_STAGE_EXECUTE = 4,
	IOA_STAGE_COMMIT = 5,
	IOA_STAGE_PURGE = 6,      /* a background thread running InnoDB purge (thd_attach_thd) */
	IOA_STAGE_STATEMENT = 7,  /* inside a client statement whose stage is not traced
	                           * (cfg.fine_stages off: only dispatch_command attached) */
	IOA_STAGE_ESTIMATE = 8,   /* the optimizer estimates rows in index ranges (index dives,
	                           * handler::multi_range_read_info_const): traced in both modes */
};

struct io_key {
	__u32 tgid;   /* target process; 0 when unknown (block IO of untracked files) */
	__u32 tid;    /* thread; 0 when unknown */
	__u64 ino;
	__u64 digest; /* normalized statement digest; 0 when none/unknown */
	__u32 dev;    /* kernel dev_t (major << 20 | minor) of the filesystem or disk */
	__u8 layer;   /* enum ioattr_layer */
	__u8 op;      /* enum ioattr_op */
	__u8 api;     /* enum ioattr_api */
	__u8 kind;    /* enum ioattr_kind */
	__u8 stage;   /* enum ioattr_stage */
	__u8 pad0;
	__u16 phase;  /* phase sequence number in force when the IO was issued (low 16 bits of
	               * phase_seq); IOA_PHASE_NOW: account() fills in the current one */
	__u8 pad[4];
};

/* File classes of every engine (report dimension file_class): enum ioattr_file_class,
 * IOA_FC_<NAME>, generated from the one table collectors/file_classes.py. */
#include "file_classes.h"

/* Whose pages a registered file holds (innodb_file.engine): how its pages are read and
 * classified (InnoDB: innodb_page.h; PostgreSQL: pg_page.h, by the relation's kind). */
enum ioattr_page_engine {
	IOA_ENGINE_INNODB = 0,
	IOA_ENGINE_PG_HEAP = 1,  /* a PostgreSQL heap relation's main fork (table, toast, matview) */
	IOA_ENGINE_PG_BTREE = 2, /* a PostgreSQL btree index's main fork */
	IOA_ENGINE_PG_OTHER = 3, /* another PostgreSQL relation (other index AMs, sequences): not read */
	IOA_ENGINE_ROCKSDB_SST = 4, /* a MyRocks SST: reads classified by offset (rocksdb_sst.h) */
};

/* userspace -> BPF: a page file of a target server (map page_files): an InnoDB tablespace,
 * or a PostgreSQL relation's main fork (engine != IOA_ENGINE_INNODB: space_id is the database
 * oid, object_id the relfilenode, segment the 1 GiB segment number) */
struct innodb_file {
	__u32 space_id;
	__u8 page_shift;  /* log2 of the physical page size */
	__u8 file_class;  /* enum ioattr_file_class */
	__u8 encrypted;   /* pages are encrypted: their index id can't be read */
	__u8 engine;      /* enum ioattr_page_engine (was padding: InnoDB's files are 0) */
	__u32 dblwr_lo;   /* system tablespace: doublewrite pages [lo, hi) */
	__u32 dblwr_hi;
	__u32 object_id;  /* PostgreSQL: relfilenode (page_key.index_id's low 32 bits) */
	__u32 segment;    /* PostgreSQL: segment number (page_key.index_id's high 32 bits) */
	/* a MyRocks SST (engine IOA_ENGINE_ROCKSDB_SST; object_id and segment: its file number's
	 * low and high halves): its block extents in bytes, trailers included (rocksdb_sst.h) */
	__u64 sst_data_end;   /* data blocks are [0, sst_data_end) */
	__u64 sst_index_off;  /* the index block [off, off + len) */
	__u64 sst_filter_off; /* the filter block, if sst_filter_len */
	__u32 sst_index_len;
	__u32 sst_filter_len;
	__u8 sst_level;       /* its LSM level, IOA_LEVEL_NONE if not known */
	__u8 sst_pad[7];
};

#define IOA_PAGE_F_MISMATCH 1   /* header's space/page is not where it was read */
#define IOA_PAGE_F_UNREADABLE 2 /* the header could not be read */
#define IOA_PAGE_F_ENCRYPTED 4
#define IOA_LEVEL_NONE 0xff

/* One class of InnoDB pages read or written (map page_stats). */
struct page_key {
	__u64 index_id;
	__u64 digest;
	__u32 tgid;
	__u32 tid;
	__u32 space_id;
	__u16 page_type;  /* FIL_PAGE_TYPE as found */
	__u8 level;       /* PAGE_LEVEL (0 = leaf), IOA_LEVEL_NONE when not an index page */
	__u8 op;
	__u8 api;
	__u8 stage;
	__u8 file_class;
	__u8 flags;       /* IOA_PAGE_F_* */
	__u16 phase;      /* as io_key.phase */
	__u16 pad;
};

/* Statements started, per server and digest (map stmt_stats). COM_QUERY is
 * keyed by its digest; other commands by their command number (small values
 * an FNV-1a digest does not take). */
struct stmt_key {
	__u32 tgid;
	__u16 phase;  /* as io_key.phase: the phase the statement started in */
	__u16 pad;
	__u64 digest;
};

struct stmt_val {
	__u64 count;     /* statements started */
	__u64 estimates; /* index range estimates the optimizer made for them (estimate stage entries) */
};

/* One slot of stmt_slots (bpf/stage.bpf.c), the array in front of stmt_stats: a
 * (process, phase, digest) key and its counts. Slot of a key: the top 12 bits of
 * (digest ^ tgid << 20 ^ phase) * 0x9E3779B97F4A7C15. */
#define STMT_SLOTS 4096

struct stmt_slot {
	__u64 tag;       /* tgid << 32 | phase << 1 | 1 of the key that claimed it; 0: free */
	__u64 digest;    /* that key's digest: written after the claim (0 until then: no match) */
	__u64 count;     /* as struct stmt_val */
	__u64 estimates;
};

/* Phases. The map phase_seq (maps.bpf.h) holds the current phase's sequence
 * number; every aggregation key carries its low 16 bits, taken when the IO
 * was issued, so one drain splits each key's counts exactly at the moment a
 * phase started. A statement containing "ioattr:phase=" bumps it in BPF (its
 * query_event carries the new number); userspace bumps it for marks and
 * output patterns. Userspace starts it at 1, so 0 is free to mean "not
 * taken yet: use the current one" (account(), account_pages()). */
#define IOA_PHASE_NOW 0

struct page_val {
	__u64 pages;
	__u64 bytes;
};

struct io_val {
	__u64 count;
	__u64 bytes;
	__u64 lat_sum_ns;
	__u64 hist[IOATTR_HIST_SLOTS];
};

struct inode_key {
	__u32 dev;
	__u32 pad;
	__u64 ino;
};

/* The rare per-event stream (ring buffer `events`); `type` comes first. */
enum ioattr_event_type {
	IOA_EV_OPEN = 1, /* a target opened a regular file */
	IOA_EV_TASK = 2, /* first IO seen from a thread: its name, before it can exit */
	IOA_EV_EXEC = 3, /* a target exec'd: its new name replaces the old one */
	IOA_EV_QUERY = 4, /* first statement seen with a digest: a sample of its text */
};

#define IOATTR_QUERY_MAX 512
#define IOA_DIGEST_INTERNAL 255 /* statements ioattr itself runs on the server */
/* executions of prepared statements whose text is not known (bpf/mysql_wire.bpf.h): prepared
 * before the recording started, or prepared during it but their id not kept (evicted) */
#define IOA_DIGEST_PREPARED_BEFORE 253
#define IOA_DIGEST_PREPARED_LOST 254
/* A bit of the targets map's value (bpf/maps.bpf.h, tgid -> flags; 1 explicit, 2 followed at
 * fork): the process speaks the PostgreSQL wire protocol (a postmaster and its backends), so
 * bpf/stage.bpf.c's wire reader parses its recvfrom()s as PostgreSQL messages, not MySQL
 * packets. Set by userspace for a postmaster and its children, copied to children at fork. */
#define IOA_TARGET_PG_WIRE 4
/* Another bit: that PostgreSQL server's stage uprobes are attached (bpf/pg_stage.bpf.h): its
 * statements start in IOA_STAGE_PARSE, not IOA_STAGE_STATEMENT. Set and copied as the above. */
#define IOA_TARGET_PG_STAGES 8
/* task_io_state.wire_proto: which protocol the thread's recvfrom()s carry (bpf/stage.bpf.c) */
#define WIRE_PROTO_MYSQL 1
#define WIRE_PROTO_PG 2
#define WIRE_PROTO_PG_STAGED 3 /* PostgreSQL, and its stages are traced */

struct query_event {
	__u32 type;
	__u32 tgid;
	__u32 tid;
	__u32 len;      /* bytes of text that follow */
	__u64 digest;
	__u32 marker;   /* the text contains "ioattr:phase=" */
	__u32 phase;    /* a marker: the phase sequence number it started (low 16 bits) */
	__u64 ts;       /* a marker: bpf_ktime_get_ns() when it started the phase */
	char text[IOATTR_QUERY_MAX];
};

struct open_event {
	__u32 type;
	__u32 tgid;
	__u32 tid;
	__s32 fd;
	__u64 ino;
	__u32 dev;
	__s32 dfd;
	char path[IOATTR_PATH_MAX];
};

struct task_event {
	__u32 type;
	__u32 tgid;
	__u32 tid;
	__u32 pad;
	char comm[16];
};

/* A MariaDB server's own stage, read at IO time (bpf/thd_stage.bpf.h; the facts come from
 * its binary: collectors/thd_stages.py). thd_layouts[tgid & TARGET_SLOT_MASK], owned by
 * `tgid`: where THR_THD is from the thread pointer, and THD::proc_info's offset in the THD.
 * thd_stage_names[{name, tgid}]: the ioattr stage (enum ioattr_stage) of a stage name's
 * address in that process. */
struct thd_layout {
	__s64 tls_off;
	__u32 stage_off;
	__u32 tgid;
};

struct thd_stage_key {
	__u64 name;
	__u32 tgid;
	__u32 pad;
};

/* thd_stage_misses slots: IO inside a statement whose server stage was not read */
enum thd_stage_miss {
	THD_MISS_NAME = 0,  /* a stage name ioattr was not told about (stage: statement) */
	THD_MISS_READ = 1,  /* no THD or no name at IO time, or the user read failed */
	THD_MISS_SLOTS = 2,
};

/* The recorder's request sweep (block.bpf.c's ioattr_rq_sweep, run by
 * BPF_PROG_TEST_RUN with this as its context): which open requests to count
 * without a latency, and how many it counted. */
struct rq_sweep_args {
	__u64 min_age_ns;    /* only requests issued at least this long ago */
	__u32 finished_only; /* only those the block layer no longer has in flight */
	__u32 pad;
	__u64 swept;         /* out: requests counted by this run */
};

/* Read-only configuration, set by the loader before load. Every object has
 * exactly this in .rodata so the loader can write it by one layout. */
struct ioattr_config {
	__u64 dio_end_io_addr; /* address of iomap_dio_bio_end_io, 0 if unknown */
	__u32 self_tgid;       /* never trace ioattr itself */
	__u8 follow_forks;     /* add children of targets to the target set */
	__u8 trace_all;        /* every process is a target (testing/ad hoc) */
	__u8 innodb_pages;     /* classify the pages of page_files' files */
	__u8 fine_stages;      /* the stage uprobes past dispatch_command are attached: a
	                        * statement starts in parse, not in IOA_STAGE_STATEMENT */
	__u64 chain_end_io_addr; /* address of bio_chain_endio (a split bio's end_io), 0 if unknown */
	__u8 pg_wire;          /* a PostgreSQL server may be traced: the wire reader's PostgreSQL
	                        * branch is loaded (0: the verifier prunes it, ~1.2 s less per load) */
	__u8 dirtiers;         /* bpf/block.bpf.c's dirty-page program is loaded: writeback is
	                        * charged to whoever dirtied the pages (0: to the file's owner) */
	__u8 pad_cfg[6];
	/* btrfs submits its own bios (block.bpf.c): the end_io of a bio it sends to one device
	 * (btrfs_simple_end_io), of the last mirror of a DUP/RAID1 write (btrfs_orig_write_end_io)
	 * and of the other mirrors' clones (btrfs_clone_write_end_io), and its direct-IO
	 * completion (btrfs_dio_end_io); 0 if unknown (no btrfs, or kallsyms hides them) */
	__u64 btrfs_simple_end_io_addr;
	__u64 btrfs_orig_write_end_io_addr;
	__u64 btrfs_clone_write_end_io_addr;
	__u64 btrfs_dio_end_io_addr;
};

#endif /* IOATTR_H */

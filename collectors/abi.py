"""Userspace mirror of bpf/ioattr.h: the structs the BPF side writes and the
enum values it uses. collectors/abi_check.py compares these layouts with each
object's BTF before it is loaded, so a header change without a matching change
here fails loudly at load time (and in tests/unit/test_abi.py)."""
from __future__ import annotations

import ctypes
import enum
import os

import numpy as np

from ioattr.collectors.file_classes import FILE_CLASSES

HIST_SLOTS = 64
HIST_MIN_SHIFT = 8
PATH_MAX = 256


class Layer(enum.IntEnum):
    SYSCALL = 0
    BLOCK = 1
    PAGECACHE = 2


class Op(enum.IntEnum):
    READ = 0
    WRITE = 1
    FSYNC = 2


class Api(enum.IntEnum):
    SYNC = 0
    VECTOR = 1
    SYNCCALL = 2
    LIBAIO = 3
    IO_URING = 4
    DIRECT = 5
    BUFFERED = 6
    READAHEAD = 7
    OTHER = 8
    IO_WORKER = 9  # a PostgreSQL io worker's IO for a backend, charged to the backend


class Kind(enum.IntEnum):
    FILE = 0
    JOURNAL = 1
    METADATA = 2
    SWAP = 3
    UNKNOWN = 4
    UNTRACKED = 5
    DISCARD = 6
    FLUSH = 7
    OTHERS_DIRTY = 8


class Drop(enum.IntEnum):
    STATS_FULL = 0
    INFLIGHT_FULL = 1
    EVENTS_FULL = 2
    TRACKED_FULL = 3
    PAGES_FULL = 4
    PAGES_CUT = 5
    PREPARED_LOST = 6


DROP_SLOTS = 7


class Stage(enum.IntEnum):
    UNKNOWN = 0
    BACKGROUND = 1
    PARSE = 2
    OPTIMIZE = 3
    EXECUTE = 4
    COMMIT = 5
    PURGE = 6
    STATEMENT = 7  # inside a client statement, stage not traced (--stages statement)
    ESTIMATE = 8   # the optimizer estimating index ranges (index dives), traced in both modes


#: enum ioattr_file_class, built from the one table of file classes (collectors/file_classes.py):
#: FileClass.TABLESPACE, FileClass.SST, ...
FileClass = enum.IntEnum("FileClass", [(c.name.upper(), c.number) for c in sorted(FILE_CLASSES, key=lambda c: c.number)],
                         module=__name__)


PAGE_F_MISMATCH = 1
PAGE_F_UNREADABLE = 2
PAGE_F_ENCRYPTED = 4
LEVEL_NONE = 0xFF


class IoKey(ctypes.Structure):
    _fields_ = [("tgid", ctypes.c_uint32), ("tid", ctypes.c_uint32), ("ino", ctypes.c_uint64),
                ("digest", ctypes.c_uint64), ("dev", ctypes.c_uint32), ("layer", ctypes.c_uint8),
                ("op", ctypes.c_uint8), ("api", ctypes.c_uint8), ("kind", ctypes.c_uint8),
                ("stage", ctypes.c_uint8), ("pad0", ctypes.c_uint8), ("phase", ctypes.c_uint16),
                ("pad", ctypes.c_uint8 * 4)]


class PageEngine(enum.IntEnum):
    """Whose pages a registered page file holds (innodb_file.engine, enum ioattr_page_engine)."""

    INNODB = 0
    PG_HEAP = 1
    PG_BTREE = 2
    PG_OTHER = 3
    ROCKSDB_SST = 4  # a MyRocks SST: reads classified by offset (bpf/rocksdb_sst.h)


class InnodbFile(ctypes.Structure):
    _fields_ = [("space_id", ctypes.c_uint32), ("page_shift", ctypes.c_uint8),
                ("file_class", ctypes.c_uint8), ("encrypted", ctypes.c_uint8), ("engine", ctypes.c_uint8),
                ("dblwr_lo", ctypes.c_uint32), ("dblwr_hi", ctypes.c_uint32),
                # PostgreSQL relation files: relfilenode and segment (page_key.index_id's two halves)
                ("object_id", ctypes.c_uint32), ("segment", ctypes.c_uint32),
                # MyRocks SSTs: block extents (bytes, trailers included) and LSM level
                ("sst_data_end", ctypes.c_uint64), ("sst_index_off", ctypes.c_uint64),
                ("sst_filter_off", ctypes.c_uint64), ("sst_index_len", ctypes.c_uint32),
                ("sst_filter_len", ctypes.c_uint32), ("sst_level", ctypes.c_uint8),
                ("sst_pad", ctypes.c_uint8 * 7)]


class InodeKey(ctypes.Structure):
    _fields_ = [("dev", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("ino", ctypes.c_uint64)]


class IoVal(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("bytes", ctypes.c_uint64),
                ("lat_sum_ns", ctypes.c_uint64), ("hist", ctypes.c_uint64 * HIST_SLOTS)]


EV_OPEN = 1
EV_TASK = 2
EV_EXEC = 3
EV_QUERY = 4
DIGEST_INTERNAL = 255
# executions of prepared statements whose text is not known (bpf/mysql_wire.bpf.h)
DIGEST_PREPARED_BEFORE = 253
DIGEST_PREPARED_LOST = 254
QUERY_MAX = 512
# Phases (bpf/ioattr.h): keys carry the low 16 bits of the phase sequence number, which
# starts at PHASE_FIRST; PHASE_NOW (0) is never a phase.
PHASE_NOW = 0
PHASE_FIRST = 1
PHASE_MASK = 0xFFFF


class OpenEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("tgid", ctypes.c_uint32), ("tid", ctypes.c_uint32),
                ("fd", ctypes.c_int32), ("ino", ctypes.c_uint64), ("dev", ctypes.c_uint32),
                ("dfd", ctypes.c_int32), ("path", ctypes.c_char * PATH_MAX)]


class QueryEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("tgid", ctypes.c_uint32), ("tid", ctypes.c_uint32),
                ("len", ctypes.c_uint32), ("digest", ctypes.c_uint64), ("marker", ctypes.c_uint32),
                ("phase", ctypes.c_uint32), ("ts", ctypes.c_uint64), ("text", ctypes.c_char * 512)]


class TaskEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("tgid", ctypes.c_uint32), ("tid", ctypes.c_uint32),
                ("pad", ctypes.c_uint32), ("comm", ctypes.c_char * 16)]


class ThdLayout(ctypes.Structure):
    """struct thd_layout: where a MariaDB server keeps its THD's stage name (collectors/thd_stages.py)."""
    _fields_ = [("tls_off", ctypes.c_int64), ("stage_off", ctypes.c_uint32), ("tgid", ctypes.c_uint32)]


class ThdStageKey(ctypes.Structure):
    """struct thd_stage_key: a stage name's address in one server process."""
    _fields_ = [("name", ctypes.c_uint64), ("tgid", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


class ThdMiss(enum.IntEnum):
    """enum thd_stage_miss: slots of thd_stage_misses."""
    NAME = 0
    READ = 1


class RqSweepArgs(ctypes.Structure):
    """struct rq_sweep_args: block.bpf.c's ioattr_rq_sweep's context (ProbeSession.sweep_block)."""
    _fields_ = [("min_age_ns", ctypes.c_uint64), ("finished_only", ctypes.c_uint32),
                ("pad", ctypes.c_uint32), ("swept", ctypes.c_uint64)]


class Config(ctypes.Structure):
    _fields_ = [("dio_end_io_addr", ctypes.c_uint64), ("self_tgid", ctypes.c_uint32),
                ("follow_forks", ctypes.c_uint8), ("trace_all", ctypes.c_uint8),
                ("innodb_pages", ctypes.c_uint8), ("fine_stages", ctypes.c_uint8),
                ("chain_end_io_addr", ctypes.c_uint64), ("pg_wire", ctypes.c_uint8),
                ("dirtiers", ctypes.c_uint8), ("pad_cfg", ctypes.c_uint8 * 6),
                ("btrfs_simple_end_io_addr", ctypes.c_uint64), ("btrfs_orig_write_end_io_addr", ctypes.c_uint64),
                ("btrfs_clone_write_end_io_addr", ctypes.c_uint64), ("btrfs_dio_end_io_addr", ctypes.c_uint64)]


# numpy views of the same layouts, for decoding batch drains without a Python loop per field
IO_KEY_DTYPE = np.dtype([("tgid", "<u4"), ("tid", "<u4"), ("ino", "<u8"), ("digest", "<u8"),
                         ("dev", "<u4"), ("layer", "u1"), ("op", "u1"), ("api", "u1"), ("kind", "u1"),
                         ("stage", "u1"), ("pad0", "u1"), ("phase", "<u2"), ("pad", "u1", (4,))])
IO_VAL_DTYPE = np.dtype([("count", "<u8"), ("bytes", "<u8"), ("lat_sum_ns", "<u8"),
                         ("hist", "<u8", (HIST_SLOTS,))])

PAGE_KEY_DTYPE = np.dtype([("index_id", "<u8"), ("digest", "<u8"), ("tgid", "<u4"), ("tid", "<u4"),
                           ("space_id", "<u4"), ("page_type", "<u2"), ("level", "u1"), ("op", "u1"),
                           ("api", "u1"), ("stage", "u1"), ("file_class", "u1"), ("flags", "u1"),
                           ("phase", "<u2"), ("pad", "<u2")])
PAGE_VAL_DTYPE = np.dtype([("pages", "<u8"), ("bytes", "<u8")])
STMT_KEY_DTYPE = np.dtype([("tgid", "<u4"), ("phase", "<u2"), ("pad", "<u2"), ("digest", "<u8")])
STMT_VAL_DTYPE = np.dtype([("count", "<u8"), ("estimates", "<u8")])  # struct stmt_val
# struct stmt_slot: one slot of the array in front of stmt_stats (collectors/drain.py statement_drainer)
STMT_SLOTS = 4096
STMT_SLOT_DTYPE = np.dtype([("tag", "<u8"), ("digest", "<u8"), ("count", "<u8"), ("estimates", "<u8")])

# client protocol commands (enum_server_command) that are not COM_QUERY
COMMANDS = {0: "sleep", 1: "quit", 2: "init_db", 3: "query", 4: "field_list", 5: "create_db", 6: "drop_db",
            7: "refresh", 9: "statistics", 10: "process_info", 12: "process_kill", 14: "ping",
            17: "change_user", 18: "binlog_dump", 22: "stmt_prepare", 23: "stmt_execute",
            24: "stmt_send_long_data", 25: "stmt_close", 26: "stmt_reset", 27: "set_option",
            28: "stmt_fetch", 31: "reset_connection", 250: "stmt_bulk_execute"}

assert IO_KEY_DTYPE.itemsize == ctypes.sizeof(IoKey) == 40
assert PAGE_KEY_DTYPE.itemsize == 40 and PAGE_VAL_DTYPE.itemsize == 16
assert ctypes.sizeof(InnodbFile) == 64
assert IO_VAL_DTYPE.itemsize == ctypes.sizeof(IoVal) == 24 + 8 * HIST_SLOTS
assert ctypes.sizeof(Config) == 64
assert ctypes.sizeof(ThdLayout) == ctypes.sizeof(ThdStageKey) == 16
assert ctypes.sizeof(OpenEvent) == 32 + PATH_MAX
assert ctypes.sizeof(TaskEvent) == 32
assert ctypes.sizeof(QueryEvent) == 40 + QUERY_MAX
assert IO_KEY_DTYPE.fields["phase"][1] == IoKey.phase.offset == 34
assert STMT_KEY_DTYPE.itemsize == 16 and STMT_VAL_DTYPE.itemsize == 16 and STMT_SLOT_DTYPE.itemsize == 32


def kernel_dev(major: int, minor: int) -> int:
    """Encode a device the way the kernel's dev_t does (MINORBITS = 20)."""
    return (major << 20) | minor


def dev_major_minor(dev: int) -> tuple[int, int]:
    return dev >> 20, dev & 0xFFFFF


def kernel_dev_of_stat(st_dev: int) -> int:
    """Convert a stat() st_dev (glibc encoding) to the kernel's encoding."""
    return kernel_dev(os.major(st_dev), os.minor(st_dev))

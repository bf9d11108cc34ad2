"""Drained BPF keys -> recording rows (ioattr/live/rows.py), without BPF: io_stats and
stmt_stats entries are built as the kernel writes them (the ctypes structs and numpy dtypes
of collectors/abi.py, one key's bytes at a time) and decoded into the io and statements
columns: every enum value named, zero pid/tid/digest/inode null, unknown api/kind codes
named "other"/"unknown" rather than failing, counts and histograms carried exactly."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ioattr.collectors import abi
from ioattr.collectors.drain import Deltas
from ioattr.format.schema import HIST_COLUMNS
from ioattr.live.rows import IoRows, Naming, StatementRows, page_flags_label, statement_kind

PID = 4_194_000          # above any pid this host hands out: nothing is read from /proc for it
DEV = abi.kernel_dev(250, 77)  # no such block device: named major:minor


def io_key(**kw: int) -> bytes:
    k = abi.IoKey(**{"tgid": PID, "tid": PID + 1, "ino": 12, "dev": DEV, **kw})
    return bytes(k)


def io_val(count: int, nbytes: int, slots: dict[int, int] | None = None) -> bytes:
    v = abi.IoVal(count=count, bytes=nbytes, lat_sum_ns=1000 * count)
    for s, n in (slots or {}).items():
        v.hist[s] = n
    return bytes(v)


def deltas(keys: list[bytes], vals: list[bytes], kdt: np.dtype, vdt: np.dtype) -> Deltas:
    """What MapDrainer returns: the raw bytes viewed through the map's dtypes."""
    k = np.frombuffer(b"".join(keys), dtype=kdt)
    v = np.frombuffer(b"".join(vals), dtype=vdt)
    return Deltas(keys=k, values=v, map_entries=len(keys), drain_seconds=0.0)


@pytest.fixture
def naming() -> Naming:
    n = Naming(stage_probes=True, stages="statement")
    n.files.set(DEV, 12, "/data/db/t.ibd")
    n.files.set(DEV, 13, "/data/db/ib_logfile0")
    n.tasks.on_task_event(PID, PID, "mariadbd")
    n.tasks.on_task_event(PID, PID + 1, "conn-7")
    n.queries[0x1234_5678_9ABC] = "SELECT c FROM t WHERE id = ?"
    return n


def test_the_dtypes_read_the_ctypes_bytes() -> None:
    raw = io_key(layer=int(abi.Layer.BLOCK), op=int(abi.Op.WRITE), phase=0xBEEF, digest=7)
    (k,) = np.frombuffer(raw, dtype=abi.IO_KEY_DTYPE)
    assert (int(k["tgid"]), int(k["layer"]), int(k["op"]), int(k["phase"]), int(k["digest"])) == (
        PID, 1, 1, 0xBEEF, 7)
    assert ctypes.sizeof(abi.IoKey) == abi.IO_KEY_DTYPE.itemsize == len(raw)


def test_io_rows_name_every_field(naming: Naming) -> None:
    keys = [io_key(layer=int(abi.Layer.SYSCALL), op=int(abi.Op.READ), api=int(abi.Api.IO_URING),
                   stage=int(abi.Stage.STATEMENT), digest=0x1234_5678_9ABC),
            io_key(layer=int(abi.Layer.BLOCK), op=int(abi.Op.WRITE), api=int(abi.Api.DIRECT), ino=13),
            io_key(layer=int(abi.Layer.BLOCK), op=int(abi.Op.FSYNC), kind=int(abi.Kind.FLUSH), tgid=0, tid=0,
                   ino=0),
            io_key(layer=int(abi.Layer.PAGECACHE), op=int(abi.Op.READ), api=200, kind=int(abi.Kind.FILE),
                   stage=int(abi.Stage.UNKNOWN), digest=abi.DIGEST_INTERNAL)]
    vals = [io_val(3, 3 * 16384, {5: 2, 9: 1}), io_val(1, 4096), io_val(1, 0), io_val(2, 8192)]
    cols = IoRows(naming).columns(deltas(keys, vals, abi.IO_KEY_DTYPE, abi.IO_VAL_DTYPE), 10.0, 11.0, "main")
    assert cols["layer"] == ["syscall", "block", "block", "pagecache"]
    assert cols["op"] == ["read", "write", "fsync", "read"]
    assert cols["api"] == ["io_uring", "direct", "sync", "other"]        # 200: no such api
    assert cols["kind"] == ["file", "file", "flush", "file"]
    assert cols["file"] == ["/data/db/t.ibd", "/data/db/ib_logfile0", "[cache flush]", "/data/db/t.ibd"]
    assert cols["file_class"] == ["tablespace", "redo_log", None, "tablespace"]
    assert cols["pid"] == [PID, PID, None, PID] and cols["tid"] == [PID + 1, PID + 1, None, PID + 1]
    assert cols["process"] == ["mariadbd", "mariadbd", None, "mariadbd"]
    assert cols["thread"] == ["conn-7", "conn-7", None, "conn-7"]
    # a statement was seen on the thread: its IO is a connection's, block IO included
    assert cols["role"] == ["connection", "connection", None, "connection"]
    # statement: stage not traced; the block write had no syscall of its thread on its inode
    # in the interval to take a stage from: null, never `background`
    assert cols["stage"] == [None, None, None, "background"]
    assert cols["digest"] == [0x1234_5678_9ABC, None, None, abi.DIGEST_INTERNAL]
    assert cols["query"] == ["SELECT c FROM t WHERE id = ?", None, None, "[ioattr's own statements]"]
    assert cols["dev"] == ["250:77"] * 4 and cols["device"] == ["250:77"] * 4
    assert cols["ino"] == [12, 13, None, 12]
    assert cols["count"].tolist() == [3, 1, 1, 2] and cols["bytes"].tolist() == [49152, 4096, 0, 8192]
    assert cols["lat_sum_ns"].tolist() == [3000, 1000, 1000, 2000]
    assert cols["h05"].tolist() == [2, 0, 0, 0] and cols["h09"].tolist() == [1, 0, 0, 0]
    assert sum(int(cols[c].sum()) for c in HIST_COLUMNS) == 3
    assert cols["phase"] == ["main"] * 4 and cols["ts_start"] == [10.0] * 4 and cols["ts_end"] == [11.0] * 4


def test_no_rows(naming: Naming) -> None:
    empty = deltas([], [], abi.IO_KEY_DTYPE, abi.IO_VAL_DTYPE)
    cols = IoRows(naming).columns(empty, 0.0, 1.0, "p")
    assert all(len(v) == 0 for v in cols.values()) and set(HIST_COLUMNS) <= set(cols)


def test_stage_names_without_stage_probes() -> None:
    n = Naming(stage_probes=False)
    assert n.stage(int(abi.Stage.UNKNOWN)) is None       # not traced: unknown, not background
    assert n.stage(int(abi.Stage.PURGE)) == "background" and n.stage(int(abi.Stage.ESTIMATE)) == "estimate"
    assert n.stage(99) is None
    assert n.role(PID, 0) is None and n.role(PID, PID + 5, int(abi.Stage.PURGE)) == "purge"


def test_statement_rows(naming: Naming) -> None:
    keys = [np.array([(PID, 1, 0, 0x1234_5678_9ABC)], dtype=abi.STMT_KEY_DTYPE).tobytes(),
            np.array([(PID, 1, 0, 23)], dtype=abi.STMT_KEY_DTYPE).tobytes(),      # COM_STMT_EXECUTE
            np.array([(PID, 1, 0, 0)], dtype=abi.STMT_KEY_DTYPE).tobytes(),       # no digest: unknown
            np.array([(0, 1, 0, 99)], dtype=abi.STMT_KEY_DTYPE).tobytes()]        # an unnamed command
    vals = [np.array([(n, e)], dtype=abi.STMT_VAL_DTYPE).tobytes() for n, e in ((40, 3), (7, 0), (0, 5), (1, 0))]
    cols = StatementRows(naming).columns(deltas(keys, vals, abi.STMT_KEY_DTYPE, abi.STMT_VAL_DTYPE), 0.0, 1.0, "q")
    assert cols["command"] == ["query", "stmt_execute", None, "command_99"]
    assert cols["kind"] == ["select", "stmt_execute", None, "command_99"]
    assert cols["query"] == ["SELECT c FROM t WHERE id = ?", None, None, None]
    assert cols["pid"] == [PID, PID, PID, None] and cols["process"] == ["mariadbd", "mariadbd", "mariadbd", None]
    assert cols["count"].tolist() == [40, 7, 0, 1] and cols["estimates"].tolist() == [3, 0, 5, 0]


def test_statement_kind_and_page_flags() -> None:
    assert statement_kind("query", "  ( SELECT 1") == "select"
    assert statement_kind("query", "CREATE INDEX k ON t (a)") == "create_index"
    assert statement_kind("query", None) == "query" and statement_kind("ping", "x") == "ping"
    assert page_flags_label(0) is None
    assert page_flags_label(abi.PAGE_F_MISMATCH) == "mismatch"
    assert page_flags_label(abi.PAGE_F_MISMATCH | abi.PAGE_F_UNREADABLE) == "unreadable"
    assert page_flags_label(abi.PAGE_F_ENCRYPTED | abi.PAGE_F_UNREADABLE) == "encrypted"


def test_prepared_statement_labels(naming: Naming) -> None:
    """Executions of prepared statements whose text is not known (bpf/ioattr.h
    IOA_DIGEST_PREPARED_*) are stmt_execute rows under their label, in statements and io rows."""
    keys = [np.array([(PID, 1, 0, d)], dtype=abi.STMT_KEY_DTYPE).tobytes()
            for d in (abi.DIGEST_PREPARED_BEFORE, abi.DIGEST_PREPARED_LOST)]
    vals = [np.array([(n, 0)], dtype=abi.STMT_VAL_DTYPE).tobytes() for n in (5, 2)]
    cols = StatementRows(naming).columns(deltas(keys, vals, abi.STMT_KEY_DTYPE, abi.STMT_VAL_DTYPE), 0.0, 1.0, "q")
    assert cols["command"] == ["stmt_execute", "stmt_execute"] and cols["kind"] == ["stmt_execute"] * 2
    assert cols["query"] == ["[prepared before the recording]", "[prepared statement, id not kept]"]
    assert naming.query(abi.DIGEST_PREPARED_LOST) == "[prepared statement, id not kept]"

"""MyRocks' files: RocksDB's own files under the server's `#rocksdb/` directory, by name (the
MyRocks adapter's "files").

MariaDB's MyRocks keeps one RocksDB instance in DATADIR/#rocksdb (rocksdb_datadir, default
./#rocksdb; rocksdb_wal_dir, default the same). What RocksDB writes there, and the file_class
each gets (bpf/ioattr.h enum ioattr_file_class, collectors/abi.FileClass):

    NNNNNN.sst            sst        table files: flushes and compactions write them once,
                                     reads of keys not in the block cache read them
    NNNNNN.log            wal        the write-ahead log (one per memtable generation)
    MANIFEST-NNNNNN       manifest   the LSM's version edits: which SST is at which level
    CURRENT, IDENTITY,    manifest   small files naming the current MANIFEST and the instance
    LOCK                             (RocksDB's metadata, written at start-up and MANIFEST rolls)
    OPTIONS-NNNNNN        options    the options the instance was opened with
    LOG, LOG.old.N        info_log   RocksDB's text log (flush/compaction events, stats dumps)
    *.trash               trash      deleted SSTs the delete scheduler removes at a rate
    *.dbtmp               tmp        a file being written before its rename (CURRENT, OPTIONS)
    [N .sst files reusing one inode]  sst  one inode that carried several SSTs in one interval
                                     (collectors/names.py's label; likewise .log: wal)

The directory is recognised by its name (`#rocksdb`), so paths are classified without a
server connection; a rocksdb_datadir or rocksdb_wal_dir set elsewhere is not recognised
(its files stay 'other'). Nothing here needs BPF: RocksDB's blocks are not classified in the
kernel (no file map), so MyRocks' files are attributed at file granularity, and SST files
are named (level, indexes) in userspace by sst.py.
"""
from __future__ import annotations

import os
import re

from ioattr.collectors import abi

FC = abi.FileClass

#: the directory name MyRocks gives its RocksDB instance inside the datadir
ROCKSDB_DIR = "#rocksdb"

_SST_RE = re.compile(r"^\d+\.(sst|ldb)$")
_WAL_RE = re.compile(r"^\d+\.log$")
_MANIFEST_RE = re.compile(r"^MANIFEST-\d+$")
_OPTIONS_RE = re.compile(r"^OPTIONS-\d+$")
_INFO_LOG_RE = re.compile(r"^LOG(\.old\.\d+)?$")
_META_NAMES = frozenset({"CURRENT", "IDENTITY", "LOCK"})
# collectors/names.py's label for an inode that had several paths in one interval, all with this
# extension (compaction writes its outputs on the inodes of the inputs it just deleted)
_REUSED_RE = re.compile(r"^\[\d+ (?P<ext>\.\w+) files reusing one inode\]$")
_REUSED_CLASSES = {".sst": FC.SST, ".ldb": FC.SST, ".log": FC.WAL}


def in_rocksdb_dir(path: str) -> bool:
    """Whether `path` is a file directly inside a `#rocksdb` directory."""
    return os.path.basename(os.path.dirname(path)) == ROCKSDB_DIR


def classify_name(name: str) -> FC | None:
    """The file_class of a file name inside `#rocksdb/` (None: a name RocksDB is not known to write)."""
    if _SST_RE.match(name):
        return FC.SST
    if _WAL_RE.match(name):
        return FC.WAL
    if _MANIFEST_RE.match(name) or name in _META_NAMES:
        return FC.MANIFEST
    if _OPTIONS_RE.match(name):
        return FC.OPTIONS
    if _INFO_LOG_RE.match(name):
        return FC.INFO_LOG
    if name.endswith(".trash"):
        return FC.TRASH
    if name.endswith(".dbtmp"):
        return FC.TMP
    m = _REUSED_RE.match(name)
    if m:
        return _REUSED_CLASSES.get(m.group("ext"))
    return None


def classify_path(path: str | None) -> FC | None:
    """The file_class of a server file if it is one of RocksDB's (None otherwise). A file the
    server still has open after its deletion (" (deleted)": an SST compaction just replaced)
    keeps its class."""
    if not path:
        return None
    p = path.removesuffix(" (deleted)")
    if not in_rocksdb_dir(p):
        return None
    return classify_name(os.path.basename(p))


def sst_number(path: str | None) -> int | None:
    """The file number of an SST path ('/d/#rocksdb/000013.sst' -> 13), None if not an SST."""
    if path is None or classify_path(path) != FC.SST:
        return None
    return int(os.path.basename(path.removesuffix(" (deleted)")).split(".", 1)[0])

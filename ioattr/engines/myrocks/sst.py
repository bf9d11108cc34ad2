"""MyRocks' SST files named: for every SST, its LSM level and the indexes whose key ranges it
holds (the MyRocks adapter's file catalog, meta.json "files").

Where each fact comes from on MariaDB 10.11's plugin (what its INFORMATION_SCHEMA has):

  indexes  ROCKSDB_INDEX_FILE_MAP: one row per (SST, index) with the index's rows and data
           bytes in that SST (COLUMN_FAMILY, INDEX_NUMBER, SST_NAME, NUM_ROWS, DATA_SIZE),
           named through ROCKSDB_DDL (names.py); MyRocks' data dictionary indexes (numbers
           below 256, column family __system__) are myrocks.__system__.N.
  level    not in INFORMATION_SCHEMA (ROCKSDB_SST_PROPS has no level, ROCKSDB_CFSTATS and
           ROCKSDB_COMPACTION_STATS only count files per level): read from the MANIFEST the
           CURRENT file names, RocksDB's own record of which file is at which level -- a log of
           version edits (32 KiB blocks of checksummed records; each edit adds files
           (NewFile4: level, number, size, keys, ...) and deletes them (level, number), per
           column family). parse_manifest replays it; a record it cannot decode is skipped
           and counted (levels then stay unknown for the files it touched, never guessed).
           RocksDB appends to the MANIFEST as flushes and compactions finish, so re-reading
           it (a few KiB) gives the levels of now.
  identity the file's (dev, inode) and size from stat(2), so a recording's io rows (which
           carry dev, inode and path) can be matched; keyed by path in meta.json, as SST
           numbers never repeat while inodes are reused.

The catalog is refreshed when the #rocksdb directory changes (its mtime: an SST or WAL
created or deleted) and at the end of every recording; an SST that vanished (compacted away)
keeps its last entry, marked "deleted", so the IO it had before is still named.
"""
from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from ioattr.collectors import abi, libbpf
from ioattr.collectors.engine import EngineError
from ioattr.engines.base import Connection
from ioattr.engines.myrocks import files, sst_blocks
from ioattr.engines.myrocks.counters import rocksdb_active
from ioattr.engines.myrocks.names import FIRST_USER_INDEX, IndexNames

BLOCK = 32768
# record types of RocksDB's log format (db/log_format.h): full, first, middle, last; +4 recyclable
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
# version edit tags (db/version_edit.h)
_COMPARATOR, _LOG_NUMBER, _NEXT_FILE, _LAST_SEQ, _COMPACT_CURSOR = 1, 2, 3, 4, 5
_DELETED_FILE, _NEW_FILE, _PREV_LOG, _MIN_LOG = 6, 7, 9, 10
_NEW_FILE2, _NEW_FILE3, _NEW_FILE4 = 100, 102, 103
_CF, _CF_ADD, _CF_DROP, _MAX_CF = 200, 201, 202, 203
_ATOMIC_GROUP = 300
_SAFE_IGNORE = 1 << 13  # tags from the future with this bit carry one length-prefixed payload
_TERMINATE = 1          # end of a NewFile4's custom fields

INDEX_FILE_MAP_QUERY = ("SELECT COLUMN_FAMILY, INDEX_NUMBER, SST_NAME, NUM_ROWS, DATA_SIZE "
                        "FROM INFORMATION_SCHEMA.ROCKSDB_INDEX_FILE_MAP")
# column family id (NAME) -> "name [flags]" (VALUE)
CF_QUERY = "SELECT NAME, VALUE FROM INFORMATION_SCHEMA.ROCKSDB_GLOBAL_INFO WHERE TYPE = 'CF_FLAGS'"


class _Bad(ValueError):
    pass


# RocksDB's varint64; a truncated one raises sst_blocks.BadSst, a ValueError like _Bad
_varint = sst_blocks.varint


def _slice(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = _varint(buf, pos)
    if pos + n > len(buf):
        raise _Bad("truncated slice")
    return buf[pos:pos + n], pos + n


def log_records(data: bytes) -> tuple[list[bytes], int]:
    """The records of a RocksDB log file (the MANIFEST's format), fragments joined; and how many
    fragments were skipped (a torn tail while RocksDB appends, or damage)."""
    out: list[bytes] = []
    skipped = 0
    partial: bytearray | None = None
    for start in range(0, len(data), BLOCK):
        block = data[start:start + BLOCK]
        pos = 0
        while pos + 7 <= len(block):
            length = struct.unpack_from("<H", block, pos + 4)[0]
            rtype = block[pos + 6]
            header = 7
            if rtype == 0 and length == 0:
                break  # zero padding: the rest of the block is unused (preallocated)
            if rtype > 4:  # recyclable records carry a 4-byte log number
                header, rtype = 11, rtype - 4
            end = pos + header + length
            if end > len(block) or rtype not in (_FULL, _FIRST, _MIDDLE, _LAST):
                skipped += 1
                break
            payload = block[pos + header:end]
            pos = end
            if rtype == _FULL:
                out.append(bytes(payload))
                partial = None
            elif rtype == _FIRST:
                partial = bytearray(payload)
            elif partial is None:
                skipped += 1
            else:
                partial += payload
                if rtype == _LAST:
                    out.append(bytes(partial))
                    partial = None
    return out, skipped


@dataclass
class Edit:
    """What one version edit says about files: column family, files added (level, number,
    size), files deleted (level, number)."""

    cf: int = 0
    added: list[tuple[int, int, int]] = field(default_factory=list)
    deleted: list[tuple[int, int]] = field(default_factory=list)
    cf_name: str | None = None  # a column family added
    cf_dropped: bool = False


def decode_edit(rec: bytes) -> Edit:
    """One VersionEdit record. Raises ValueError for a tag it does not know how to skip."""
    e = Edit()
    pos = 0
    while pos < len(rec):
        tag, pos = _varint(rec, pos)
        if tag in (_LOG_NUMBER, _NEXT_FILE, _LAST_SEQ, _PREV_LOG, _MIN_LOG):
            _, pos = _varint(rec, pos)
        elif tag == _COMPARATOR or tag == _CF_ADD:
            name, pos = _slice(rec, pos)
            if tag == _CF_ADD:
                e.cf_name = name.decode(errors="replace")
        elif tag == _COMPACT_CURSOR:
            _, pos = _varint(rec, pos)
            _, pos = _slice(rec, pos)
        elif tag == _DELETED_FILE:
            level, pos = _varint(rec, pos)
            number, pos = _varint(rec, pos)
            e.deleted.append((level, number))
        elif tag in (_NEW_FILE, _NEW_FILE2, _NEW_FILE3, _NEW_FILE4):
            level, pos = _varint(rec, pos)
            number, pos = _varint(rec, pos)
            if tag == _NEW_FILE3:
                _, pos = _varint(rec, pos)  # path id
            size, pos = _varint(rec, pos)
            _, pos = _slice(rec, pos)  # smallest key
            _, pos = _slice(rec, pos)  # largest key
            if tag != _NEW_FILE:
                _, pos = _varint(rec, pos)  # smallest seqno
                _, pos = _varint(rec, pos)  # largest seqno
            if tag == _NEW_FILE4:
                while True:
                    ftag, pos = _varint(rec, pos)
                    if ftag == _TERMINATE:
                        break
                    _, pos = _slice(rec, pos)
            e.added.append((level, number & 0x3FFFFFFFFFFFFFFF, size))
        elif tag in (_CF, _MAX_CF, _ATOMIC_GROUP):
            v, pos = _varint(rec, pos)
            if tag == _CF:
                e.cf = v
        elif tag == _CF_DROP:
            e.cf_dropped = True
        elif tag & _SAFE_IGNORE:
            _, pos = _slice(rec, pos)
        else:
            raise _Bad(f"version edit tag {tag} not understood")
    return e


def parse_manifest(data: bytes) -> tuple[dict[int, tuple[int, int]], int]:
    """SST file number -> (column family id, level) of the live files a MANIFEST describes,
    and how many records could not be decoded."""
    records, bad = log_records(data)
    live: dict[int, tuple[int, int]] = {}
    for rec in records:
        try:
            e = decode_edit(rec)
        except ValueError:
            bad += 1
            continue
        if e.cf_dropped:
            for n in [n for n, (cf, _) in live.items() if cf == e.cf]:
                del live[n]
            continue
        for level, number in e.deleted:
            if live.get(number) == (e.cf, level):
                del live[number]
        for level, number, _size in e.added:
            live[number] = (e.cf, level)
    return live, bad


def read_manifest(rocksdb_dir: str) -> tuple[dict[int, tuple[int, int]], str | None]:
    """parse_manifest of the MANIFEST that rocksdb_dir/CURRENT names; (levels, error)."""
    try:
        with open(os.path.join(rocksdb_dir, "CURRENT"), "rb") as f:
            name = f.read(256).decode(errors="replace").strip()
        with open(os.path.join(rocksdb_dir, os.path.basename(name)), "rb") as f:
            data = f.read()
    except OSError as e:
        return {}, f"MANIFEST unreadable ({e.strerror or e})"
    levels, bad = parse_manifest(data)
    return levels, (f"{bad} MANIFEST records not decoded" if bad else None)


def _text(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def _number(path: str) -> int | None:
    """An SST's file number from its name (000123.sst -> 123)."""
    head = os.path.basename(path).split(".", 1)[0]
    return int(head) if head.isdigit() else None


@dataclass
class SstFile:
    """An SST's identity as page rows give it (path, kernel dev, inode)."""

    path: str
    dev: int
    ino: int


class SstCatalog:
    """One server's SST files: path -> {dev, ino, size, level, column_family, indexes, deleted}
    (EngineAdapter.file_catalog: meta.json "files")."""

    #: at most one re-read per this many seconds while the directory keeps changing
    min_interval = 0.5

    def __init__(self) -> None:
        self.files: dict[str, dict[str, Any]] = {}
        self.error: str | None = None
        self.active: bool | None = None
        self.rocksdb_dir: str | None = None
        self.names = IndexNames()
        self._cf_names: dict[int, str] = {}
        self._dir_mtime: int | None = None
        self._layouts: dict[tuple[str, int, int], dict[str, Any] | None] = {}
        self._numbers: dict[str, list[int]] = {}  # path -> index numbers of files[path]["indexes"]
        self._read_at = 0.0
        # BPF registration (attach_map): the map page_files' fd, and what this catalog put in
        # it: (kernel dev, inode) -> (path, the value's fields), to update only what changed
        self.map_fd: int | None = None
        self._kdev: dict[str, int] = {}   # path -> kernel dev of the file as last stat'ed
        self.registered: dict[tuple[int, int], tuple[str, tuple]] = {}

    def _locate(self, conn: Connection) -> None:
        self.active = rocksdb_active(conn)
        if not self.active:
            return
        try:
            rocks, datadir = conn.query("SELECT @@rocksdb_datadir, @@datadir")[0]
        except (EngineError, IndexError) as e:
            self.error = f"MyRocks directory unknown: {e}"
            self.active = False
            return
        path = os.path.join(_text(datadir), _text(rocks))
        self.rocksdb_dir = os.path.realpath(path)

    def refresh(self, conn: Connection, force: bool = False, final: bool = False) -> bool:
        """Re-read if the directory changed (or `force`); True when the table was re-read.
        `final`: the end of a recording, after its last counters snapshot (forces a re-read)."""
        if self.active is None:
            self._locate(conn)
        if not self.active or self.rocksdb_dir is None:
            return False
        try:
            mtime = os.stat(self.rocksdb_dir).st_mtime_ns
        except OSError as e:
            self.error = f"{self.rocksdb_dir}: {e.strerror}"
            return False
        now = time.monotonic()
        if not (force or final) and (mtime == self._dir_mtime or now - self._read_at < self.min_interval):
            return False
        self._read_at = now
        try:
            self._read(conn, final)
        except EngineError as e:
            self.error = f"SST names unavailable: {e}"
            return False
        self._dir_mtime = mtime
        return True

    def _read(self, conn: Connection, final: bool = False) -> None:
        assert self.rocksdb_dir is not None
        if not self._cf_names:
            for cf_id, value in conn.query(CF_QUERY):  # ("0", "default [0]")
                try:
                    self._cf_names[int(_text(cf_id))] = _text(value).rpartition(" [")[0] or _text(value)
                except ValueError:
                    continue
        file_map = conn.query(INDEX_FILE_MAP_QUERY)
        # ROCKSDB_DDL is read from MyRocks' dictionary in RocksDB (its block cache counts the
        # reads: hits, and a miss after the dictionary's column family was flushed), so it is
        # re-read only when an SST holds an index number not named yet (numbers are never
        # reused), not at every refresh or phase boundary: the recorder's own reads stay out of
        # the phases' block-cache counters. (A table renamed during a recording keeps its old
        # name here.)
        #
        # After a restart ROCKSDB_DDL lists a table nobody opened yet with an empty INDEX_NAME
        # (its indexes read 'db.t.'). Those names are re-read once, at the end of the recording
        # (`final`: after its last counters snapshot and drain, so no phase is charged the
        # dictionary's block reads), when an SST read then or before holds such an index: by
        # then the workload opened the table if it used it. Every entry is re-named then,
        # those of SSTs compacted away included (meta.json "files" holds the final names).
        numbers = {int(row[1]) for row in file_map}
        used = numbers.union(*self._numbers.values())
        if not self.names.names or any(
                n >= FIRST_USER_INDEX and n not in self.names.names for n in numbers) or (
                final and not self.names.unnamed.isdisjoint(used)):
            self.names.refresh(conn)
        by_sst: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for cf, number, sst, rows, size in file_map:
            n = int(number)
            by_sst.setdefault(os.path.basename(_text(sst)), []).append(
                (n, {"index": self._name(n), "rows": int(rows or 0), "bytes": int(size or 0)}))
        levels, err = read_manifest(self.rocksdb_dir)
        self.error = err or self.names.error
        present = set()
        try:
            entries = list(os.scandir(self.rocksdb_dir))
        except OSError as e:
            self.error = f"{self.rocksdb_dir}: {e.strerror}"
            entries = []
        for ent in entries:
            if files.classify_name(ent.name) != abi.FileClass.SST:
                continue
            try:
                st = ent.stat(follow_symlinks=False)
            except OSError:
                continue  # deleted meanwhile
            number = int(ent.name.split(".", 1)[0])
            cf_level = levels.get(number)
            held = sorted(by_sst.get(ent.name, []), key=lambda x: (-x[1]["bytes"], x[1]["index"]))
            indexes = [x for _, x in held]
            path = ent.path
            present.add(path)
            self._numbers[path] = [n for n, _ in held]
            self.files[path] = {
                "engine": "rocksdb",
                "dev": "%d:%d" % abi.dev_major_minor(abi.kernel_dev_of_stat(st.st_dev)),
                "ino": st.st_ino,
                "size": st.st_size,
                "level": cf_level[1] if cf_level else None,
                "column_family": (self._cf_names.get(cf_level[0], str(cf_level[0])) if cf_level else None),
                "indexes": indexes,
                "blocks": self._blocks(path, st.st_ino, st.st_size),
                "deleted": False,
            }
            self._kdev[path] = abi.kernel_dev_of_stat(st.st_dev)
        for path, entry in self.files.items():
            if path not in present:
                entry["deleted"] = True
                for n, idx in zip(self._numbers.get(path, ()), entry.get("indexes") or []):
                    idx["index"] = self._name(n)  # a name re-read since it was catalogued
        self._sync_map()

    def _name(self, number: int) -> str:
        return self.names.lookup(number) or f"index_{number}"

    # -- BPF registration: each SST's block extents, for classifying its reads by offset ------
    def attach_map(self, map_fd: int | None) -> None:
        """Register this server's SSTs in the BPF map page_files (engine ROCKSDB_SST) from
        now on, at every re-read: bpf/rocksdb_sst.h counts each read of a registered SST in
        page_stats by the block kind at its offset. None: page classification is off."""
        if map_fd == self.map_fd:
            return
        self.map_fd = map_fd
        self._sync_map()

    def _sync_map(self) -> None:
        """Make the map hold exactly this catalog's live SSTs whose layout is known: new ones
        added, an inode now holding another SST replaced, vanished ones removed (a file being
        written has no footer yet: registered at the first re-read after it is complete)."""
        if self.map_fd is None:
            return
        want: dict[tuple[int, int], tuple[str, tuple]] = {}
        for path, f in self.files.items():
            b = f.get("blocks")
            number = _number(path)
            if f.get("deleted") or not isinstance(b, dict) or path not in self._kdev or number is None:
                continue
            filt = b.get("filter") or (0, 0)
            level = f.get("level")
            fields = (number, int(b["data_end"]), int(b["index"][0]), int(b["index"][1]),
                      int(filt[0]), int(filt[1]),
                      level if isinstance(level, int) and 0 <= level < abi.LEVEL_NONE else abi.LEVEL_NONE)
            want[(self._kdev[path], int(f["ino"]))] = (path, fields)
        for key in [k for k in self.registered if k not in want]:
            libbpf.map_delete(self.map_fd, abi.InodeKey(dev=key[0], ino=key[1]))
            del self.registered[key]
        for key, (path, fields) in want.items():
            if self.registered.get(key) == (path, fields):
                continue
            number, data_end, ioff, ilen, foff, flen, level = fields
            val = abi.InnodbFile(space_id=0, page_shift=0, file_class=int(abi.FileClass.SST), encrypted=0,
                                 engine=int(abi.PageEngine.ROCKSDB_SST), object_id=number & 0xFFFFFFFF,
                                 segment=number >> 32, sst_data_end=data_end, sst_index_off=ioff,
                                 sst_index_len=ilen, sst_filter_off=foff, sst_filter_len=flen, sst_level=level)
            libbpf.map_update(self.map_fd, abi.InodeKey(dev=key[0], ino=key[1]), val)
            self.registered[key] = (path, fields)

    def page_file(self, number: int) -> tuple[SstFile, str | None] | None:
        """A page row of an SST read (index_id = the SST's file number) -> (its file, the index
        it holds when it holds exactly one, else None); an SST compacted away since keeps its
        last entry, so its reads are still named."""
        for path, f in self.files.items():
            if _number(path) == number and path in self._kdev:
                indexes = f.get("indexes") or []
                return SstFile(path, self._kdev[path], int(f["ino"])), (
                    indexes[0]["index"] if len(indexes) == 1 else None)
        return None

    def close(self) -> None:
        """Remove this catalog's registrations (the map outlives the server)."""
        if self.map_fd is not None:
            for dev, ino in self.registered:
                libbpf.map_delete(self.map_fd, abi.InodeKey(dev=dev, ino=ino))
        self.registered.clear()

    def _blocks(self, path: str, ino: int, size: int) -> dict[str, Any] | None:
        """Where the SST's data, index and filter blocks lie (sst_blocks.py), read once per file:
        an SST never changes once written (the key has the inode and size, so a file still
        being written is read again when complete)."""
        key = (path, ino, size)
        if key not in self._layouts:
            try:
                self._layouts[key] = sst_blocks.read_layout(path).as_dict()
            except (OSError, sst_blocks.BadSst):
                self._layouts[key] = None  # being written (no footer yet), or gone
        return self._layouts[key]

    def entries(self) -> dict[str, dict[str, Any]]:
        return self.files

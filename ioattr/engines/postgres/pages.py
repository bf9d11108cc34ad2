"""PostgreSQL relation pages: the userspace half of bpf/pg_page.h (page types named once), and
the registry that marks a cluster's relation files for classification in BPF.

The BPF classifier counts every 8 KiB page a traced process reads or writes in a registered
file by (database oid, relfilenode and segment, page type, btree level). It needs to know a
file's kind to read the right bytes (a heap page's header, a btree page's special space), and
only the catalogs say that: userspace registers each relation main fork it finds under the data
directory with the kind pg_class and pg_am give it, in the map page_files (shared with InnoDB:
the value's `engine` byte says whose file it is). A file whose relation is not known yet (no
connection, a relation created since the last catalog read) is not registered: its pages stay
unclassified (null), never guessed. The numbers below are bpf/pg_page.h's #defines:
tests/unit/test_postgres_pages.py parses the header and compiles the decoder against them.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ioattr.collectors import abi, libbpf
from ioattr.engines.postgres.files import RelationFile, parse_relation_path

PE = abi.PageEngine

BLCKSZ = 8192                 # PostgreSQL's default block size (Debian's build)

# page types (bpf/pg_page.h IOA_PG_PAGE_*), above every InnoDB FIL_PAGE_TYPE
PG_PAGE_NEW = 0xE000
PG_PAGE_HEAP = 0xE001
PG_PAGE_BTREE_META = 0xE002
PG_PAGE_BTREE_ROOT = 0xE003
PG_PAGE_BTREE_INTERNAL = 0xE004
PG_PAGE_BTREE_LEAF = 0xE005
PG_PAGE_BTREE_DELETED = 0xE006
PG_PAGE_INDEX_OTHER = 0xE007
PG_PAGE_UNRECOGNISED = 0xE008

PAGE_TYPES: dict[int, str] = {
    PG_PAGE_NEW: "new",
    PG_PAGE_HEAP: "heap",
    PG_PAGE_BTREE_META: "btree_meta",
    PG_PAGE_BTREE_ROOT: "btree_root",
    PG_PAGE_BTREE_INTERNAL: "btree_internal",
    PG_PAGE_BTREE_LEAF: "btree_leaf",
    PG_PAGE_BTREE_DELETED: "btree_deleted",
    PG_PAGE_INDEX_OTHER: "index_other",
    PG_PAGE_UNRECOGNISED: "unrecognised",
}
#: page types BPF gives a btree level (0 = leaf)
LEVEL_PAGE_TYPES = frozenset({PG_PAGE_BTREE_ROOT, PG_PAGE_BTREE_INTERNAL, PG_PAGE_BTREE_LEAF})

#: the access methods whose pages are read (pg_am.amname) and the relation kinds of heap files
HEAP_KINDS = frozenset({"table", "toast", "materialized_view"})
BTREE_AM = "btree"
HEAP_AM = "heap"

SYNC_SECONDS = 2.0  # how often the data directory is rescanned for relation files


def page_type_name(page_type: int) -> str:
    """A PostgreSQL page type number as the page_type dimension shows it."""
    return PAGE_TYPES.get(page_type, f"type_{page_type}")


def is_level_page(page_type: int) -> bool:
    """Pages with a btree level."""
    return page_type in LEVEL_PAGE_TYPES


def split_index_id(index_id: int) -> tuple[int, int]:
    """(relfilenode, segment) from a page key's index_id (segment << 32 | relfilenode)."""
    return index_id & 0xFFFFFFFF, index_id >> 32


def engine_of(kind: str | None, am: str | None) -> abi.PageEngine | None:
    """How a relation's main fork is classified, from its kind and access method (None: it is
    not registered, the relation being unknown)."""
    if kind is None:
        return None
    if kind in HEAP_KINDS and am in (HEAP_AM, None):
        return PE.PG_HEAP
    if kind == "index" and am == BTREE_AM:
        return PE.PG_BTREE
    return PE.PG_OTHER


@dataclass
class RelationPageFile:
    """A registered relation main-fork file."""

    path: str
    dev: int
    ino: int
    rel: RelationFile
    engine: abi.PageEngine
    deleted: bool = False


def relation_main_files(datadir: str, cache: dict[str, tuple[int, list]] | None = None,
                        ) -> Iterable[tuple[str, RelationFile, int, int]]:
    """(path, relation file, kernel dev, inode) of every main-fork segment under the data
    directory: base/<db>/, global/ and the tablespaces (pg_tblspc/<oid>/PG_*/<db>/).
    Temporary relations (t<backend>_<node>) are left out: they live in backend-local buffers.
    No file is stat'ed: the inode is the directory entry's, the device the directory's. `cache`
    (directory -> (its mtime, its files)) skips listing a directory that did not change since
    (no file created, removed or renamed in it), so a rescan of an idle cluster costs a stat
    per database directory."""
    dirs: list[str] = [os.path.join(datadir, "global")]
    for top in (os.path.join(datadir, "base"),):
        try:
            dirs += [e.path for e in os.scandir(top) if e.is_dir() and e.name.isdigit()]
        except OSError:
            pass
    try:
        for spc in os.scandir(os.path.join(datadir, "pg_tblspc")):
            for ver in os.scandir(spc.path):
                if ver.name.startswith("PG_"):
                    dirs += [e.path for e in os.scandir(ver.path) if e.is_dir() and e.name.isdigit()]
    except OSError:
        pass
    for d in dirs:
        try:
            st = os.stat(d)
        except OSError:
            continue
        known = cache.get(d) if cache is not None else None
        # a directory changed within the last second is listed again: its mtime has the
        # filesystem's coarse clock, so a file created in the tick of the last change and of
        # the last listing would not move it
        if known is not None and known[0] == st.st_mtime_ns and time.time_ns() - st.st_mtime_ns > 1_000_000_000:
            yield from known[1]
            continue
        dev = abi.kernel_dev_of_stat(st.st_dev)
        found = []
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if not e.name[0].isdigit():
                continue
            rel = parse_relation_path(e.path)
            if rel is None or rel.fork != "main" or rel.temp_backend is not None:
                continue
            found.append((e.path, rel, dev, e.inode()))
        if cache is not None:
            cache[d] = (st.st_mtime_ns, found)
        yield from found


class RelationPageFiles:
    """Keeps the BPF map page_files' PostgreSQL entries equal to one cluster's relation
    main forks whose kind the catalogs say (fd None: nothing installed, e.g. --no-pages).

    Files are found by scanning the data directory (at the start, after every catalog read and
    every SYNC_SECONDS when sync() is called), so a backend's first read of a file is classified
    whenever the file existed at the last scan. A deleted file's registration is removed (its
    inode may come back as another relation's file); what it was stays known by key, so rows
    drained later still name it."""

    def __init__(self, map_fd: int | None, datadir: str | None) -> None:
        self.fd = map_fd
        self.datadir = datadir
        self.installed: dict[tuple[int, int], RelationPageFile] = {}   # (dev, ino) -> file
        # (database oid, relfilenode, segment) -> {tablespace key: file}, what page rows carry
        self.by_key: dict[tuple[int, int, int], dict[int, RelationPageFile]] = {}
        self._next = 0.0
        self.unknown = 0  # relation files the last scan found whose relation the catalogs lacked
        self._dirs: dict[str, tuple[int, list]] = {}  # relation_main_files' cache

    def sync(self, kind_of: Callable[[RelationFile], tuple[str | None, str | None]],
             force: bool = False) -> int:
        """Rescan (at most every SYNC_SECONDS unless forced); kind_of(rel) -> (relkind name,
        access method) from the catalogs. Returns how many files were (re)registered."""
        now = time.monotonic()
        if self.datadir is None or (not force and now < self._next):
            return 0
        self._next = now + SYNC_SECONDS
        seen: set[tuple[int, int]] = set()
        changed = 0
        self.unknown = 0
        for path, rel, dev, ino in relation_main_files(self.datadir, self._dirs):
            kind, am = kind_of(rel)
            engine = engine_of(kind, am)
            if engine is None:
                self.unknown += 1
                continue
            seen.add((dev, ino))
            known = self.installed.get((dev, ino))
            if known is not None and known.rel == rel and known.engine == engine:
                known.path = path
                continue
            pf = RelationPageFile(path, dev, ino, rel, engine)
            self.installed[(dev, ino)] = pf
            self.by_key.setdefault((rel.database, rel.relfilenode, rel.segment), {})[rel.tablespace or 0] = pf
            self._install(pf)
            changed += 1
        for dev_ino in [k for k in self.installed if k not in seen]:
            pf = self.installed.pop(dev_ino)
            pf.deleted = True
            if self.fd is not None:
                libbpf.map_delete(self.fd, abi.InodeKey(dev=pf.dev, ino=pf.ino))
        return changed

    def _install(self, pf: RelationPageFile) -> None:
        if self.fd is None:
            return
        val = abi.InnodbFile(space_id=pf.rel.database, page_shift=BLCKSZ.bit_length() - 1,
                             file_class=int(abi.FileClass.RELATION), encrypted=0, engine=int(pf.engine),
                             dblwr_lo=0, dblwr_hi=0, object_id=pf.rel.relfilenode, segment=pf.rel.segment)
        libbpf.map_update(self.fd, abi.InodeKey(dev=pf.dev, ino=pf.ino), val)

    def file_of(self, database: int, index_id: int) -> RelationPageFile | None:
        """The registered file a page row's (space_id = database oid, index_id) came from. The
        key has no tablespace: one relfilenode in two tablespaces of one database (possible,
        rare) is ambiguous, and then unknown."""
        node, seg = split_index_id(index_id)
        found = self.by_key.get((database, node, seg)) or {}
        return next(iter(found.values())) if len(found) == 1 else None

    def close(self) -> None:
        """Remove this cluster's registrations (the map outlives a cluster that exited)."""
        if self.fd is not None:
            for pf in self.installed.values():
                libbpf.map_delete(self.fd, abi.InodeKey(dev=pf.dev, ino=pf.ino))
        self.installed.clear()

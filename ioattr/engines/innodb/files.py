"""InnoDB's files of a running server: what each one is, and its page geometry
(the InnoDB adapter's "files"; the BPF map `page_files` is fed from here).

Every file the server has open (/proc/PID/fd) gets a file_class from its
name; page files (tablespaces, the system tablespace, undo and temporary
tablespaces) also get their space id and page size from page 0 and, for
the system tablespace, the doublewrite area from the TRX_SYS page. Page
files are registered in the BPF map `page_files`, which is what turns
page classification on for them. Re-synced as files come and go (CREATE,
DROP and ALTER TABLE all change inodes).
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass

from ioattr.collectors import abi, libbpf
from ioattr.collectors.engine import EngineError
from ioattr.collectors.namespaces import in_root, root_of
from ioattr.collectors.targets import open_fds
from ioattr.engines.innodb.pages import FIL_PAGE_TYPE_FSP_HDR

FC = abi.FileClass
# files made of InnoDB pages (registered for page classification). Not the definition of
# storage reads: that is ioattr/model/storage.py's STORAGE_FILE_CLASSES, which includes these
PAGE_FILE_CLASSES = (FC.TABLESPACE, FC.SYSTEM_TABLESPACE, FC.UNDO, FC.TMP)

_BINLOG_RE = re.compile(r".*-bin\.\d{6}$|.*/binlog\.\d{6}$")
_RELAY_RE = re.compile(r".*relay-bin\.\d{6}$|.*relay-log\.\d{6}$")
_UNDO_RE = re.compile(r".*/undo\d{3}$")
_SYSTEM_RE = re.compile(r".*/ibdata\d+$")
_REDO_RE = re.compile(r".*/(ib_logfile\d+|#ib_redo\d+)$")
_TEMP_TS_RE = re.compile(r".*/ibtmp\d+$")
# collectors/names.py's label for an inode reused, within one interval, only by temporary files
_REUSED_TEMP_RE = re.compile(r".*/\[\d+ temporary files reusing one inode\]$")

TRX_SYS_PAGE = 5
DBLWR_MAGIC = 536853855


def classify_path(path: str) -> FC:
    """The file_class a server file has by its name (None-safe: unknown is 'other')."""
    if not path:
        return FC.OTHER
    p = path.removesuffix(" (deleted)")
    base = os.path.basename(p)
    if _REDO_RE.match(p):
        return FC.REDO_LOG
    if _SYSTEM_RE.match(p):
        return FC.SYSTEM_TABLESPACE
    if _UNDO_RE.match(p):
        return FC.UNDO
    if (_TEMP_TS_RE.match(p) or base.startswith("#sql") or path.startswith("[anonymous tmpfile")
            or _REUSED_TEMP_RE.match(p)):
        return FC.TMP
    if p.endswith(".ibd"):
        return FC.TABLESPACE
    if _RELAY_RE.match(p):
        return FC.RELAY_LOG
    if p.endswith(".ARZ"):  # the Archive engine's table data file (its table: the file's name)
        return FC.ARCHIVE
    if _BINLOG_RE.match(p):
        return FC.BINLOG
    return FC.OTHER


def page_size_from_flags(flags: int) -> int:
    """Physical page size from FSP_SPACE_FLAGS (MariaDB full_crc32 or the classic layout)."""
    if flags & 0x10:  # full_crc32 marker: page ssize in the low 4 bits
        ssize = flags & 0xF
    else:
        zip_ssize = (flags >> 1) & 0xF
        if zip_ssize:  # ROW_FORMAT=COMPRESSED: the physical page is the zip size
            return 512 << zip_ssize
        ssize = (flags >> 6) & 0xF
    return 512 << ssize if ssize else 16384


@dataclass
class PageFile:
    path: str
    dev: int
    ino: int
    file_class: FC
    space_id: int
    page_size: int
    dblwr: tuple[int, int] = (0, 0)
    encrypted: bool = False
    # where the server's paths are reachable from here ("" or /proc/PID/root: a server in
    # its own mount namespace, collectors/namespaces.py); path stays the server's own
    root: str = ""


def _no_readahead(f) -> None:
    """We read a few header bytes: don't let the kernel read ahead on the server's file."""
    try:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
    except (OSError, AttributeError):
        pass


def read_page_geometry(path: str) -> tuple[int, int] | None:
    """(space id, page size) from page 0's FSP header, or None if unreadable or not yet
    written: a tablespace just created may still have a page 0 of zeros (InnoDB writes it
    lazily), and taking its "space id 0" would give the file the system tablespace's id, so
    its pages (and the system tablespace's) would be named after the wrong file. It is
    registered at a later sync, once page 0 is on disk."""
    try:
        with open(path, "rb", buffering=0) as f:
            _no_readahead(f)
            head = f.read(64)
    except OSError:
        return None
    if len(head) < 58:
        return None
    if struct.unpack_from(">H", head, 24)[0] != FIL_PAGE_TYPE_FSP_HDR:
        return None
    space_id = struct.unpack_from(">I", head, 38)[0]
    flags = struct.unpack_from(">I", head, 54)[0]
    return space_id, page_size_from_flags(flags)


def read_doublewrite_range(path: str, page_size: int) -> tuple[int, int]:
    """[first, end) page numbers of the doublewrite area in the system tablespace."""
    try:
        with open(path, "rb", buffering=0) as f:
            _no_readahead(f)
            f.seek(TRX_SYS_PAGE * page_size)
            page = f.read(page_size)
    except OSError:
        return 0, 0
    if len(page) < page_size:
        return 0, 0
    base = page_size - 200  # TRX_SYS_DOUBLEWRITE
    magic, block1, block2 = struct.unpack_from(">III", page, base + 10)
    if magic != DBLWR_MAGIC or not block1 or not block2:
        return 0, 0
    extent = max(1, (1 << 20) // page_size) if page_size <= 16384 else 64
    return min(block1, block2), max(block1, block2) + extent


def datadir_files(directories: list[str], depth: int = 2, root: str = "") -> list[tuple[str, int, int]]:
    """(path, kernel dev, inode) of the page files under the server's directories,
    open or not yet: InnoDB opens tablespaces lazily, and their first reads must
    already be classified. root: where the server's paths are reachable from here (its
    /proc/PID/root when it is in another mount namespace); the paths returned are the server's."""
    out = []
    seen: set[str] = set()

    def walk(d: str, level: int) -> None:
        if d in seen:
            return
        seen.add(d)
        try:
            entries = list(os.scandir(d))
        except OSError:
            return
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if level < depth:
                        walk(e.path, level + 1)
                elif e.is_file() and classify_path(e.path) in PAGE_FILE_CLASSES:
                    st = e.stat()
                    out.append((e.path[len(root):], abi.kernel_dev_of_stat(st.st_dev), st.st_ino))
            except OSError:
                continue

    for d in directories:
        if d:
            # a server's symlinks resolve in its own root: followed there, not in ours
            walk(root + os.path.normpath(d) if root else os.path.realpath(d), 0)
    return out


def open_files(pid: int) -> list[tuple[str, int, int]]:
    """(path, kernel dev, inode) of every regular file pid has open."""
    return [f for f in open_fds(pid) if f[0].startswith("/")]


#: MariaDB's dictionary of tablespaces (10.6+: FILENAME relative to the datadir, PAGE_SIZE the
#: physical page size: the zip size of a ROW_FORMAT=COMPRESSED table)
MARIADB_SPACES_QUERY = ("SELECT SPACE, PAGE_SIZE, FLAG, FILENAME, @@datadir "
                        "FROM INFORMATION_SCHEMA.INNODB_SYS_TABLESPACES")


class InnodbFileMap:
    """Keeps the BPF map page_files equal to the page files targets have open."""

    def __init__(self, map_fd: int | None) -> None:
        self.fd = map_fd
        self.files: dict[tuple[int, int], PageFile] = {}
        # (dev, ino) -> the servers whose sync found the file (open, or under their directories):
        # two servers on one host have the same space ids (their system tablespaces are both
        # space 0, their first tables the same ids), so a page row's file is looked up among
        # its own server's files only
        self.owners: dict[tuple[int, int], set[int]] = {}
        # per server pid (None: a connection that named no server): the spaces it reports
        # encrypted; per server for the same reason as owners
        self.encrypted_spaces: dict[int | None, set[int]] = {}
        # files dropped from the map since the last end_interval(), with their owners: the page
        # rows of the interval being drained still name them (a table rebuilt by ALTER is read
        # into its copy, and its file deleted, within one interval; a sync before the drain
        # names the rows must not leave those reads without a file, which is what joins them
        # to their io rows)
        self._retired: list[tuple[PageFile, frozenset[int]]] = []
        # connected servers whose dictionary gives the geometry of a tablespace whose page 0 is
        # not on disk yet (use_dictionary); their answer, by real path, read once per sync
        self._dictionaries: list = []
        self._dict_spaces: dict[str, tuple[int, int]] | None = None

    def use_dictionary(self, conn) -> None:
        """Also ask this server (a collectors.engine.EngineConnection of a MariaDB 10.6+ server)
        for the space id and page size of a tablespace whose page 0 is not written yet.

        InnoDB creates a tablespace (CREATE TABLE, ADD PARTITION, a table rebuild) with a page 0
        of zeros and writes the real one when the page cleaner first flushes it -- in a bulk
        load often together with thousands of the table's pages, so waiting for it leaves a new
        table's first writes (and a KEY_BLOCK_SIZE table's, whose page size differs from the
        server's) unclassified. The dictionary has both from the CREATE on."""
        if getattr(conn, "flavor", "mariadb") == "mariadb" and conn not in self._dictionaries:
            self._dictionaries.append(conn)

    def _dictionary_geometry(self, path: str) -> tuple[int, int] | None:
        """(space id, physical page size) of the tablespace at path from a connected server's
        dictionary, None if no server lists it (or none is connected)."""
        if not self._dictionaries:
            return None
        if self._dict_spaces is None:
            spaces: dict[str, tuple[int, int]] = {}
            for conn in list(self._dictionaries):
                try:
                    rows = conn.query(MARIADB_SPACES_QUERY)
                except EngineError:
                    self._dictionaries.remove(conn)  # gone or too old (no FILENAME): disk only
                    continue
                for space, page_size, flags, filename, datadir in rows:
                    if space is None or not filename:
                        continue
                    full = os.path.normpath(os.path.join(str(datadir or ""), str(filename)))
                    size = int(page_size) if page_size else page_size_from_flags(int(flags or 0))
                    spaces[os.path.realpath(full)] = (int(space), size)
            self._dict_spaces = spaces
        return self._dict_spaces.get(os.path.realpath(path))

    def _geometry(self, path: str, root: str = "") -> tuple[int, int] | None:
        """(space id, page size): page 0 on disk, else the server's dictionary."""
        p = path.removesuffix(" (deleted)")
        return read_page_geometry(in_root(root, p)) or self._dictionary_geometry(p)

    def sync(self, pid: int, directories: list[str] | None = None) -> list[PageFile]:
        """Register new page files pid has open or has under its directories.

        A filesystem reuses a deleted file's inode at once (ext4 does), so a table dropped
        and created again, or rebuilt by ALTER TABLE, can sit on an inode registered for the
        old tablespace: the files pid has open are checked again (page 0's space id, 64
        bytes each, only when a sync runs: at a page file's open and every few seconds), and
        a registration whose space changed or whose page 0 is not written yet is replaced or
        dropped, so no page is classified against another tablespace's id. `pending` says a
        page file was seen whose page 0 is not written yet (sync again soon)."""
        added = []
        self.pending = False
        self._dict_spaces = None  # the dictionary is read again (at most once) by this sync
        root = root_of(pid)
        opened = open_files(pid)
        candidates = opened + datadir_files(directories or [], root=root)
        recheck = {(dev, ino) for _, dev, ino in opened}
        for path, dev, ino in candidates:
            known = self.files.get((dev, ino))
            if known is not None and ((dev, ino) not in recheck or path == "" or known.path == path
                                      and not self._stale(known)):
                continue
            fc = classify_path(path)
            if fc not in PAGE_FILE_CLASSES:
                continue
            geo = self._geometry(path, root)
            if geo is None:
                if known is not None:
                    self._forget(known)
                self.pending = True
                continue
            space_id, page_size = geo
            if known is not None and known.space_id == space_id and known.page_size == page_size:
                known.path = path  # renamed (ALTER TABLE's #sql-alter file becoming the table)
                continue
            dblwr = (read_doublewrite_range(in_root(root, path), page_size) if fc == FC.SYSTEM_TABLESPACE
                     else (0, 0))
            pf = PageFile(path, dev, ino, fc, space_id, page_size, dblwr,
                          encrypted=any(space_id in self.encrypted_spaces.get(k, ()) for k in (pid, None)), root=root)
            self.files[(dev, ino)] = pf
            self._install(pf)
            added.append(pf)
        for _, dev, ino in candidates:
            if (dev, ino) in self.files:
                self.owners.setdefault((dev, ino), set()).add(pid)
        return added

    pending: bool = False

    def _stale(self, pf: PageFile) -> bool:
        """The registered file's page 0 (or, while that is not written, the server's
        dictionary) no longer says its space: the inode holds another tablespace now, or one
        whose page 0 is not written yet and that no dictionary lists."""
        geo = self._geometry(pf.path, pf.root)
        return geo is None or geo != (pf.space_id, pf.page_size)

    def _forget(self, pf: PageFile) -> None:
        self.files.pop((pf.dev, pf.ino), None)
        self._retired.append((pf, frozenset(self.owners.pop((pf.dev, pf.ino), ()))))
        if self.fd is not None:
            libbpf.map_delete(self.fd, abi.InodeKey(dev=pf.dev, ino=pf.ino))

    def mark_encrypted(self, space_ids: set[int], pid: int | None = None) -> None:
        """Spaces server pid reports encrypted: the pages of its files of those spaces are
        counted as encrypted (not another server's files of the same space ids; pid None: every
        registered file's, for a connection that names no server)."""
        self.encrypted_spaces[pid] = set(space_ids)
        for pf in self._of(pid, retired=False):
            if pf.space_id in space_ids and not pf.encrypted:
                pf.encrypted = True
                self._install(pf)

    def _install(self, pf: PageFile) -> None:
        if self.fd is None:
            return
        key = abi.InodeKey(dev=pf.dev, ino=pf.ino)
        val = abi.InnodbFile(space_id=pf.space_id, page_shift=pf.page_size.bit_length() - 1,
                             file_class=int(pf.file_class), encrypted=int(pf.encrypted),
                             dblwr_lo=pf.dblwr[0], dblwr_hi=pf.dblwr[1])
        libbpf.map_update(self.fd, key, val)

    def end_interval(self) -> None:
        self._retired.clear()

    def _of(self, pid: int | None, retired: bool = True) -> list[PageFile]:
        """The page files of server pid (every server's when pid is None): with `retired`, those
        dropped from the map since the last end_interval() first, then the registered ones
        (which win for a space id both have)."""
        old = [pf for pf, owners in self._retired if pid is None or pid in owners] if retired else []
        if pid is None:
            return old + list(self.files.values())
        return old + [pf for key, pf in self.files.items() if pid in self.owners.get(key, ())]

    def space_files(self, pid: int | None = None) -> dict[int, PageFile]:
        """space id -> server pid's page file registered with it (the latest one registered,
        if a space id was ever seen on two inodes), for giving page rows their file's inode."""
        return {pf.space_id: pf for pf in self._of(pid)}

    def system_file(self, pid: int | None = None) -> PageFile | None:
        """Server pid's system tablespace (where doublewrite copies go), if registered."""
        for pf in reversed(self._of(pid)):  # the registered one first
            if pf.file_class == FC.SYSTEM_TABLESPACE and pf.space_id == 0:
                return pf
        return None


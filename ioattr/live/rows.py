"""Turn drained BPF deltas into recording rows, naming what can be named.

IoRows serves the io table (file-level), PageRows the pages table (InnoDB
page classes). Both share the name caches of one recording: files,
devices, threads, roles, statement digests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ioattr.collectors import abi
from ioattr.collectors.cgroups import CgroupNames
from ioattr.collectors.drain import Deltas
from ioattr.collectors.mysqld import ServerContext
from ioattr.collectors.names import DeviceNames, FileNames, TaskNames
from ioattr.collectors.thread_roles import role_of_comm
from ioattr.engines import registry as engines
from ioattr.format.schema import HIST_COLUMNS, Columns
from ioattr.model import storage
from ioattr.model.labels import (API_NAMES, KIND_FILE_LABELS, KIND_NAMES, LAYER_NAMES, NOT_A_TARGET, OP_NAMES,
                                 STAGE_NAMES)
from ioattr.model.labels import FILE_CLASS_NAMES as FC_NAMES

ANON_TMPFILE = "[anonymous tmpfile"  # collectors/names.py label_link
PAGE_ENGINE = engines.page_engine()  # the engine whose page kinds the BPF classifier counts (page_stats)
# file classes whose page rows are another engine's (PostgreSQL's relation files), named by it
NATIVE_PAGE_CLASSES = frozenset(c for e in engines.ENGINES for c in e.page_file_classes)

# digests below 256 that are labels, not command numbers (bpf/ioattr.h IOA_DIGEST_*)
DIGEST_LABELS = {abi.DIGEST_INTERNAL: storage.INTERNAL_QUERY_LABEL,
                 abi.DIGEST_PREPARED_BEFORE: storage.PREPARED_BEFORE_LABEL,
                 abi.DIGEST_PREPARED_LOST: storage.PREPARED_LOST_LABEL}
PREPARED_DIGESTS = frozenset((abi.DIGEST_PREPARED_BEFORE, abi.DIGEST_PREPARED_LOST))
IN_STATEMENT = frozenset(int(s) for s in (abi.Stage.PARSE, abi.Stage.OPTIMIZE, abi.Stage.EXECUTE,
                                          abi.Stage.COMMIT, abi.Stage.STATEMENT, abi.Stage.ESTIMATE))


def _temporary_file(path: str) -> bool:
    """Whether the engines class a file tmp (for labelling inodes temporary files reuse)."""
    return engines.file_class_name(path) == "tmp"


@dataclass
class Naming:
    files: FileNames = field(default_factory=lambda: FileNames(temporary=_temporary_file))
    devices: DeviceNames = field(default_factory=DeviceNames)
    tasks: TaskNames = field(default_factory=TaskNames)
    cgroups: CgroupNames = field(default_factory=CgroupNames)
    servers: dict[int, ServerContext] = field(default_factory=dict)
    queries: dict[int, str] = field(default_factory=dict)  # digest -> normalized text
    stage_probes: bool = False
    stages: str | None = None  # the stage probes' mode, "statement" or "full" (None: not attached)

    connection_tids: set[int] = field(default_factory=set)
    # roles of whole processes, for servers whose processes have one job each (PostgreSQL's
    # backends and auxiliary processes: the session's engine server contexts answer, from the
    # process titles); None when no such server is traced
    process_role: Callable[[int], str | None] | None = None
    # page rows of such servers' relation files (PostgreSQL): (pid, space_id, index_id) -> (the
    # registered file: .path .dev .ino .rel, the relation's name); None when none is traced
    native_page: Callable[[int, int, int], tuple[Any, str | None] | None] | None = None

    def role(self, pid: int, tid: int, stage: int = 0) -> str | None:
        if not tid:
            return None
        if stage == abi.Stage.PURGE:
            return "purge"  # seen inside InnoDB's purge task (thd_attach_thd .. thd_detach_thd)
        if stage in IN_STATEMENT:
            # the stage probes saw this thread run a client statement: it serves a
            # connection, even where performance_schema has no OS id for it (MariaDB
            # leaves THREAD_OS_ID NULL for threads reused from the thread cache)
            self.connection_tids.add(tid)
        ctx = self.servers.get(pid)
        comm = self.tasks.thread(pid, tid)
        # outside a MySQL/MariaDB server: the thread's name, as the kernel's and the engines' say
        role = ctx.role(tid, comm) if ctx is not None else (role_of_comm(comm) or engines.role_of_comm(comm))
        if role is None and ctx is None and self.process_role is not None:
            role = self.process_role(pid)
        if role is None and tid in self.connection_tids:
            return "connection"
        return role

    def stage(self, value: int) -> str | None:
        if value == abi.Stage.UNKNOWN:
            return "background" if self.stage_probes else None
        return STAGE_NAMES.get(value)

    def query(self, digest: int) -> str | None:
        label = DIGEST_LABELS.get(digest)
        if label is not None:
            return label
        return self.queries.get(digest) if digest else None


def _opt_ints(values: np.ndarray) -> list[int | None]:
    return [v or None for v in values.tolist()]


def _by_value(fn: Callable[..., Any], keys: list) -> list:
    """[fn(k) for k in keys], calling fn once per distinct key (in order of first appearance).

    An interval has ~1000s of rows but few distinct threads, files, digests...: the names
    are computed per distinct value, then spread with one dict lookup per row."""
    uniq = dict.fromkeys(keys)  # distinct keys, in order of first appearance
    cache = {k: fn(*k) if isinstance(k, tuple) else fn(k) for k in uniq}
    return list(map(cache.__getitem__, keys))


def _as_their_syscalls(values: list, layers: list[int], pids: list[int], tids: list[int], inos: list[int],
                       ops: list[int], keep_own: bool) -> list:
    """Give block-layer rows the value (role, stage) their syscalls had, where that is one value.

    The block programs do not see the stage uprobes' state, so a thread's block IO would be
    named by the thread alone (innodb_worker, no stage) while its syscalls in InnoDB's purge
    task are role purge, or a connection's in stage execute: the same bytes under two names.
    A block row of a thread that, in the same interval, did syscall IO of the same op on the
    same inode under exactly one value gets that value. Otherwise the row keeps its own value
    (`keep_own`: a role, which the thread alone names) or gets None (a stage, which the block
    layer cannot know: null, never a guess)."""
    by_io: dict[tuple, set] = {}
    for lay, p, t, i, o, v in zip(layers, pids, tids, inos, ops, values):
        if lay == abi.Layer.SYSCALL and t:
            by_io.setdefault((p, t, i, o), set()).add(v)
    out = list(values)
    for j, (lay, p, t, i, o) in enumerate(zip(layers, pids, tids, inos, ops)):
        if lay != abi.Layer.BLOCK:
            continue
        seen = by_io.get((p, t, i, o)) if t else None
        if seen is not None and len(seen) == 1:
            out[j] = next(iter(seen))
        elif not keep_own:
            out[j] = None
    return out


class TableRows:
    """Turns one drained map's deltas into one table's columns (columns()), naming ids through
    the session's Naming; one subclass per table (io, statements, pages)."""

    def __init__(self, naming: Naming) -> None:
        self.n = naming

    def columns(self, d: Deltas, ts_start: float, ts_end: float, phase: str) -> Columns:
        """The interval's columns (every table's first three), then the table's own."""
        rows = len(d)
        return {"ts_start": [ts_start] * rows, "ts_end": [ts_end] * rows, "phase": [phase] * rows,
                **self.own_columns(d)}

    def own_columns(self, d: Deltas) -> Columns:
        raise NotImplementedError


class IoRows(TableRows):
    def own_columns(self, d: Deltas) -> Columns:
        n = self.n
        n.tasks.new_interval()
        n.cgroups.new_interval()
        k = d.keys
        rows = len(d)
        pids = k["tgid"].astype(np.int64)
        tids = k["tid"].astype(np.int64)
        pid_l, tid_l, stage_l = pids.tolist(), tids.tolist(), k["stage"].tolist()
        dev_l, kind_l = k["dev"].tolist(), k["kind"].tolist()

        def file_of(kind: int, dev: int, ino: int, pid: int, syscall: bool) -> str | None:
            if kind in KIND_FILE_LABELS:
                return KIND_FILE_LABELS[kind]
            # a reused inode's rows: an earlier file that can have done no IO through the
            # targets' files in this interval is not in its syscall rows (names.py)
            return n.files.lookup(dev, ino, pid, fd_io=syscall)

        layer_l = k["layer"].tolist()
        files = _by_value(file_of, list(zip(kind_l, dev_l, k["ino"].tolist(), pid_l,
                                             (lay == abi.Layer.SYSCALL for lay in layer_l))))
        pid_tid = list(zip(pid_l, tid_l))
        # threads seen running a statement this interval serve connections: known before any
        # row's role is named, so every row of a thread gets the same role whatever the row order
        n.connection_tids.update(t for t, s in set(zip(tid_l, stage_l)) if t and s in IN_STATEMENT)
        digest_l = k["digest"].astype(np.uint64).tolist()
        ino_l, op_l = k["ino"].tolist(), k["op"].tolist()
        cols: Columns = {
            "layer": _by_value(LAYER_NAMES.__getitem__, layer_l),
            "op": _by_value(OP_NAMES.__getitem__, k["op"].tolist()),
            "api": _by_value(lambda x: API_NAMES.get(x, "other"), k["api"].tolist()),
            "kind": _by_value(lambda x: KIND_NAMES.get(x, "unknown"), kind_l),
            "pid": [v or None for v in pid_l],
            "tid": [v or None for v in tid_l],
            # no pid: writeback of pages no target dirtied (kind others_dirty) is nobody's
            "process": _by_value(lambda p, kd: n.tasks.process(p) if p else
                                 NOT_A_TARGET if kd == abi.Kind.OTHERS_DIRTY else None, list(zip(pid_l, kind_l))),
            "thread": _by_value(lambda p, t: n.tasks.thread(p, t) if t else None, pid_tid),
            "role": _as_their_syscalls(_by_value(n.role, list(zip(pid_l, tid_l, stage_l))), layer_l,
                                       pid_l, tid_l, ino_l, op_l, keep_own=True),
            "stage": _as_their_syscalls(_by_value(lambda s, t: n.stage(s) if t else None,
                                                  list(zip(stage_l, tid_l))), layer_l,
                                        pid_l, tid_l, ino_l, op_l, keep_own=False),
            "digest": [x or None for x in digest_l],
            "query": _by_value(n.query, digest_l),
            # pseudo-files have no class; an O_TMPFILE file ("[anonymous tmpfile in DIR]": an index
            # build's merge-sort runs, filesort's chunks) is a temporary file of the server: tmp
            "file_class": _by_value(lambda f: engines.file_class_name(f) if f and (
                not f.startswith("[") or f.startswith(ANON_TMPFILE)) else None, files),
            "dev": _by_value(lambda x: "%d:%d" % abi.dev_major_minor(x), dev_l),
            "device": _by_value(n.devices.lookup, dev_l),
            "ino": _opt_ints(k["ino"]),
            "file": files,
            "cgroup": _by_value(n.cgroups.lookup, pid_l),
            "count": d.count.astype(np.int64),
            "bytes": d.bytes.astype(np.int64),
            "lat_sum_ns": d.lat_sum_ns.astype(np.int64),
        }
        # one contiguous column per slot (a strided view would be copied again by pyarrow)
        hist = np.ascontiguousarray(d.hist.astype(np.int64).T) if rows else None
        for i, name in enumerate(HIST_COLUMNS):
            cols[name] = hist[i] if rows else np.empty(0, dtype=np.int64)
        return cols


def statement_kind(command: str, query: str | None) -> str:
    """What sort of statement: the SQL verb for COM_QUERY, else the protocol command."""
    if command != "query":
        return command
    if not query:
        return "query"
    words = query.lstrip("( ").split(None, 2)
    verb = words[0].lower() if words else "query"
    if verb in ("create", "alter", "drop") and len(words) > 1:
        return f"{verb}_{words[1].lower()}"
    return verb


class StatementRows(TableRows):
    def own_columns(self, d: Deltas) -> Columns:
        n = self.n
        k = d.keys
        pids = k["tgid"].astype(np.int64)
        commands, kinds, queries = [], [], []
        for dg in k["digest"]:
            dg = int(dg)
            # digest 0: index estimates of a statement with no digest (not COM_QUERY, e.g. a
            # prepared statement's execution, counted under its command): command unknown
            if dg in PREPARED_DIGESTS:  # an execution of a prepared statement whose text is not known
                cmd, q = "stmt_execute", n.query(dg)
            else:
                cmd = None if dg == 0 else abi.COMMANDS.get(dg, f"command_{dg}") if dg < 256 else "query"
                q = n.query(dg) if dg >= 256 else None
            commands.append(cmd)
            queries.append(q)
            kinds.append(statement_kind(cmd, q))
        return {
            "pid": _opt_ints(pids),
            "process": [n.tasks.process(int(p)) if p else None for p in pids],
            "digest": [int(x) for x in k["digest"]],
            "command": commands,
            "kind": kinds,
            "query": queries,
            "count": d.values["count"].astype(np.int64),
            # index range estimates (estimate-stage entries) the optimizer made for these statements
            "estimates": d.values["estimates"].astype(np.int64),
        }


def page_flags_label(flags: int) -> str | None:
    if flags & abi.PAGE_F_ENCRYPTED:
        return "encrypted"
    if flags & abi.PAGE_F_UNREADABLE:
        return "unreadable"
    if flags & abi.PAGE_F_MISMATCH:
        return "mismatch"
    return None


def _page_file(ctx: ServerContext | None, file_class: int, space_id: int, flags: int,
               spaces: dict[int, dict]):
    """The page file (path, dev, inode) a page row's IO went to, or None when not known.

    A doublewrite copy went to the system tablespace, whatever page it carries. Otherwise
    the space id names the file -- but only when the header agreed with the file the IO
    was on (no mismatch flag): a page of zeros (never written) says space 0, which is not
    the file it was read from. Page rows carry this file's inode so that a report can
    join them to the io rows of the same IO (ioattr/analysis/grouping.py), not a name guessed from a header."""
    if ctx is None:
        return None
    if file_class == abi.FileClass.DOUBLEWRITE:
        return ctx.files.system_file(ctx.pid)
    if flags & abi.PAGE_F_MISMATCH:
        return None
    by_space = spaces.get(ctx.pid)
    if by_space is None:
        by_space = spaces[ctx.pid] = ctx.files.space_files(ctx.pid)
    return by_space.get(space_id)


class PageRows(TableRows):
    def own_columns(self, d: Deltas) -> Columns:
        n = self.n
        k = d.keys
        rows = len(d)
        pids = k["tgid"].astype(np.int64)
        tids = k["tid"].astype(np.int64)
        page_types: list[str | None] = []
        index_names: list[str | None] = []
        index_ids: list[int | None] = []
        levels: list[int | None] = []
        file_col: list[str | None] = []
        dev_col: list[str | None] = []
        ino_col: list[int | None] = []
        spaces: dict[int, dict] = {}  # per server: space id -> its page file, built once a drain
        for i in range(rows):
            ctx = n.servers.get(int(pids[i]))
            flavor = ctx.flavor if ctx else "mariadb"
            flags = int(k["flags"][i])
            label = page_flags_label(flags)
            pt = int(k["page_type"][i])
            fc = int(k["file_class"][i])
            eng = engines.page_engine_for(fc) if fc in NATIVE_PAGE_CLASSES else None
            if eng is not None:
                # a PostgreSQL relation page (bpf/pg_page.h): the relation and its file are known
                # from the file's registration, whatever the page held
                found = (n.native_page(int(pids[i]), int(k["space_id"][i]), int(k["index_id"][i]))
                         if n.native_page is not None else None)
                pf, relname = found if found is not None else (None, None)
                page_types.append(label if label == "unreadable" else eng.page_type_name(pt))
                index_ids.append(eng.page_object_id(int(k["index_id"][i])))
                index_names.append(relname)
                lvl = int(k["level"][i])
                levels.append(lvl if eng.is_index_page(pt) and lvl != abi.LEVEL_NONE else None)
                file_col.append(pf.path if pf else None)
                dev_col.append("%d:%d" % abi.dev_major_minor(pf.dev) if pf else None)
                ino_col.append(pf.ino if pf else None)
                continue
            if label in ("encrypted", "unreadable"):
                page_types.append(label)
                index_ids.append(None)
                index_names.append(None)
                levels.append(None)
            else:
                page_types.append(PAGE_ENGINE.page_type_name(pt, flavor))
                is_index = PAGE_ENGINE.is_index_page(pt, flavor)
                iid = int(k["index_id"][i]) if is_index else None
                index_ids.append(iid)
                name = ctx.names.lookup(iid) if (ctx and iid is not None) else None
                if (ctx is not None and iid is None and not flags
                        and int(k["file_class"][i]) != abi.FileClass.DOUBLEWRITE):
                    # a page whose index id is not in its header as written (MariaDB's
                    # PAGE_COMPRESSED pages): the engine may charge it to its space's table (not
                    # a doublewrite copy: whose page it carries is not known then)
                    name = PAGE_ENGINE.space_page_name(pt, int(k["space_id"][i]), ctx.names, flavor)
                index_names.append(name)
                lvl = int(k["level"][i])
                levels.append(lvl if is_index and lvl != abi.LEVEL_NONE else None)
            pf = _page_file(ctx, int(k["file_class"][i]), int(k["space_id"][i]), flags, spaces)
            file_col.append(pf.path if pf else None)
            dev_col.append("%d:%d" % abi.dev_major_minor(pf.dev) if pf else None)
            ino_col.append(pf.ino if pf else None)
        digests = k["digest"].astype(np.uint64)
        return {
            "op": [OP_NAMES[int(x)] for x in k["op"]],
            "api": [API_NAMES.get(int(x), "other") for x in k["api"]],
            "pid": _opt_ints(pids),
            "tid": _opt_ints(tids),
            "process": [n.tasks.process(int(p)) if p else None for p in pids],
            "thread": [n.tasks.thread(int(p), int(t)) if t else None for p, t in zip(pids, tids)],
            "role": [n.role(int(p), int(t), int(s)) for p, t, s in zip(pids, tids, k["stage"])],
            "stage": [n.stage(int(s)) for s in k["stage"]],
            "digest": [int(x) if x else None for x in digests],
            "query": [n.query(int(x)) for x in digests],
            "space_id": [int(x) for x in k["space_id"]],
            "file": file_col,
            "dev": dev_col,
            "ino": ino_col,
            "file_class": [FC_NAMES[abi.FileClass(int(x))] if int(x) in abi.FileClass._value2member_map_
                           else "other" for x in k["file_class"]],
            "index_id": index_ids,
            "index": index_names,
            "level": levels,
            "page_type": page_types,
            "flags": [page_flags_label(int(f)) for f in k["flags"]],
            "pages": d.values["pages"].astype(np.int64),
            "bytes": d.values["bytes"].astype(np.int64),
        }

"""PostgreSQL's files: which class each one is, and which relation, fork and segment a data
file holds (the PostgreSQL adapter's "files").

Layout (PostgreSQL 15, the same since 10): a relation's data lives in
`base/<database oid>/<relfilenode>[_fsm|_vm|_init][.<segment>]` (1 GiB segments; shared catalogs
in `global/`, other tablespaces in `pg_tblspc/<tablespace oid>/PG_<version>_<catversion>/<database
oid>/`; a temporary table's files are `t<backend id>_<relfilenode>`), WAL segments in `pg_wal/`,
temp files (sorts, hashes) in `pgsql_tmp/` of a tablespace, SLRU caches (commit status,
multixacts, ...) in their own directories. Classified by the path alone: no file is read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ioattr.collectors import abi

FC = abi.FileClass

#: the tablespace oids PostgreSQL gives its two built-in tablespaces
DEFAULT_TABLESPACE = 1663  # pg_default: base/
GLOBAL_TABLESPACE = 1664   # pg_global: global/

FORK_CLASSES = {"main": FC.RELATION, "fsm": FC.FSM, "vm": FC.VM, "init": FC.INIT_FORK}

_REL_TAIL = r"(?P<temp>t(?P<backend>\d+)_)?(?P<node>\d+)(?:_(?P<fork>fsm|vm|init))?(?:\.(?P<seg>\d+))?$"
_BASE_RE = re.compile(r"(?:^|/)base/(?P<db>\d+)/" + _REL_TAIL)
_GLOBAL_RE = re.compile(r"(?:^|/)global/" + _REL_TAIL)
# a tablespace's directory as pg_tblspc/<oid>/ names it, or as /proc shows it (the symlink
# resolved: the tablespace oid is not in the path, only PG_<version>_<catversion>/)
_TBLSPC_RE = re.compile(r"(?:^|/)(?:pg_tblspc/(?P<spc>\d+)/)?PG_\d+_\d+/(?P<db>\d+)/" + _REL_TAIL)
_WAL_RE = re.compile(r"(?:^|/)pg_(?:wal|xlog)/(?:[0-9A-F]{24}(?:\.partial)?|[0-9A-F]{8}\.history)$")
_TMP_RE = re.compile(r"(?:^|/)pgsql_tmp/")
_SLRU_RE = re.compile(r"(?:^|/)(?:pg_xact|pg_clog|pg_subtrans|pg_commit_ts|pg_serial|pg_notify|"
                      r"pg_multixact/(?:offsets|members))/[0-9A-F]+$")


@dataclass(frozen=True)
class RelationFile:
    """One data file of a relation, as its path says: the catalog key (tablespace, database,
    relfilenode) and which fork and segment of the relation it holds."""

    tablespace: int | None  # pg_tablespace oid (pg_default, pg_global, pg_tblspc/<oid>; None:
                            # a tablespace's resolved path, which does not say its oid)
    database: int        # pg_database oid, 0 for shared catalogs (global/)
    relfilenode: int
    fork: str = "main"   # main, fsm, vm, init
    segment: int = 0     # 1 GiB segment number (the .N suffix)
    temp_backend: int | None = None  # a temporary relation's owning backend id

    @property
    def file_class(self) -> abi.FileClass:
        return FORK_CLASSES[self.fork]


def _strip(path: str) -> str:
    return path.removesuffix(" (deleted)")


def parse_relation_path(path: str) -> RelationFile | None:
    """The relation file a path names, None if it is not one."""
    if not path:
        return None
    p = _strip(path)
    for rx, spc in ((_BASE_RE, DEFAULT_TABLESPACE), (_GLOBAL_RE, GLOBAL_TABLESPACE), (_TBLSPC_RE, None)):
        m = rx.search(p)
        if m is None:
            continue
        d = m.groupdict()
        return RelationFile(
            tablespace=spc if spc is not None else int(d["spc"]) if d.get("spc") else None,
            database=int(d.get("db") or 0),
            relfilenode=int(d["node"]),
            fork=d["fork"] or "main",
            segment=int(d["seg"] or 0),
            temp_backend=int(d["backend"]) if d["backend"] is not None else None)
    return None


def classify_path(path: str) -> abi.FileClass | None:
    """The file_class of a PostgreSQL file, None when the path is not one of PostgreSQL's
    data, WAL, temp or SLRU files (the rest -- pg_control, configuration, logs, pg_stat --
    is 'other', the registry's default)."""
    if not path or path.startswith("["):
        return None
    p = _strip(path)
    if _TMP_RE.search(p):
        return FC.TMP
    rel = parse_relation_path(p)
    if rel is not None:
        return rel.file_class
    if _WAL_RE.search(p):
        return FC.WAL
    if _SLRU_RE.search(p):
        return FC.SLRU
    return None

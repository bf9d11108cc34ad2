"""The file classes (the report dimension file_class), declared once.

A file class names what a file is to its engine (an InnoDB tablespace, a RocksDB SST, a
PostgreSQL relation fork...). Everything that speaks of file classes derives from FILE_CLASSES:
collectors/abi.FileClass (the numbers the BPF programs use; bpf/ioattr.h's enum
ioattr_file_class is checked against it by tests/unit/test_abi.py), the report's names
(model/labels.FILE_CLASS_NAMES), which IO is storage IO (model/storage.STORAGE_FILE_CLASSES,
and the dashboards' regex built from it), top's short names and the file_class dimension's
help, and the BPF programs' enum ioattr_file_class: bpf/file_classes.h is generated from this
table (`python3 collectors/file_classes.py > bpf/file_classes.h`; bpf/Makefile does it when this
file changes, tests/unit/test_file_classes.py fails when the two differ). A new class is one row
here.

Imports nothing of ioattr: abi.py, below everything, builds on it, and bpf/Makefile runs it as
a script.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileClassInfo:
    name: str       # as reports show it; FileClass.<NAME.upper()>
    number: int     # bpf/file_classes.h IOA_FC_<NAME>: stored in io_stats keys and recordings, never reused
    storage: bool   # the engine's storage IO (model/storage.py), or files beside it (logs, metadata)
    short: str      # at most 6 characters, for an 80-column screen (top)
    engine: str     # who writes such files: a group of the dimension's help
    help: str       # what such a file is


#: in the order reports and the dashboards' storage regex list them (numbers are not in order)
FILE_CLASSES: tuple[FileClassInfo, ...] = (
    FileClassInfo("other", 0, False, "other", "", "any other file (Aria system tables, error log, ...)"),
    FileClassInfo("tablespace", 1, True, "table", "InnoDB", "a file-per-table tablespace (.ibd)"),
    FileClassInfo("system_tablespace", 2, True, "system", "InnoDB", "the system tablespace (ibdata*)"),
    FileClassInfo("undo", 3, True, "undo", "InnoDB", "an undo tablespace"),
    FileClassInfo("doublewrite", 7, True, "dblwr", "InnoDB",
                  "the doublewrite area (of the system tablespace, or its own file)"),
    FileClassInfo("tmp", 8, True, "tmp", "any engine's temporary files",
                  "temporary tablespace, temporary tables, PostgreSQL's pgsql_tmp"),
    FileClassInfo("redo_log", 4, True, "redo", "InnoDB", "the redo log (ib_logfile*)"),
    FileClassInfo("binlog", 5, True, "binlog", "the server's logs", "a binary log file"),
    FileClassInfo("relay_log", 6, True, "relay", "the server's logs", "a relay log file"),
    FileClassInfo("sst", 9, True, "sst", "MyRocks", "a RocksDB table file NNNNNN.sst"),
    FileClassInfo("wal", 10, True, "wal", "MyRocks", "a write-ahead log: RocksDB's NNNNNN.log, PostgreSQL's pg_wal/"),
    FileClassInfo("manifest", 11, True, "manif", "MyRocks",
                  "the LSM's own metadata: MANIFEST-NNNNNN, CURRENT, IDENTITY, LOCK"),
    FileClassInfo("options", 12, False, "opts", "MyRocks", "OPTIONS-NNNNNN (written once at open)"),
    FileClassInfo("info_log", 13, False, "log", "MyRocks", "RocksDB's text log LOG, LOG.old.*"),
    FileClassInfo("trash", 14, False, "trash", "MyRocks", "*.trash: deleted SSTs the delete scheduler removes later"),
    FileClassInfo("relation", 15, True, "rel", "PostgreSQL",
                  "a relation's main fork: base/<db>/<relfilenode>[.<seg>], global/"),
    FileClassInfo("fsm", 16, True, "fsm", "PostgreSQL", "a free space map fork <relfilenode>_fsm"),
    FileClassInfo("vm", 17, True, "vm", "PostgreSQL", "a visibility map fork <relfilenode>_vm"),
    FileClassInfo("init_fork", 18, True, "init", "PostgreSQL", "the init fork of an unlogged relation"),
    FileClassInfo("slru", 19, True, "slru", "PostgreSQL",
                  "pg_xact, pg_multixact, pg_subtrans, pg_commit_ts, pg_serial, pg_notify"),
    FileClassInfo("archive", 20, True, "arch", "the Archive engine", "an Archive table's data file <table>.ARZ"),
)


def dimension_help() -> str:
    """The file_class dimension's help: every name, grouped by engine, `other` last."""
    groups: dict[str, list[str]] = {}
    for c in FILE_CLASSES:
        if c.engine:
            groups.setdefault(c.engine, []).append(c.name)
    parts = [f"{', '.join(names)} ({engine})" for engine, names in groups.items()]
    return "; ".join(parts) + "; wal is PostgreSQL's WAL too; other"


def c_header() -> str:
    """bpf/file_classes.h: enum ioattr_file_class, IOA_FC_<NAME> = number, in number order."""
    lines = ["/* SPDX-License-Identifier: GPL-2.0 */",
             "/* Generated from collectors/file_classes.py (FILE_CLASSES), the one table of file",
             " * classes: do not edit. python3 collectors/file_classes.py > bpf/file_classes.h",
             " * (bpf/Makefile redoes it when the table changes). */",
             "#ifndef IOATTR_FILE_CLASSES_H", "#define IOATTR_FILE_CLASSES_H", "",
             "/* File classes of every engine (report dimension file_class). */",
             "enum ioattr_file_class {"]
    for c in sorted(FILE_CLASSES, key=lambda c: c.number):
        who = f"{c.engine}: " if c.engine else ""
        lines.append(f"\tIOA_FC_{c.name.upper()} = {c.number}, /* {who}{c.help.replace('*/', '* /')} */")
    lines += ["};", "", "#endif", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(c_header(), end="")

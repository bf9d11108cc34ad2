"""The file classes (the report dimension file_class), declared once.

A file class names what a file is to its engine (an InnoDB tablespace, a RocksDB SST, a
PostgreSQL relation fork...). FILE_CLASSES is the classes no engine owns (SHARED_CLASSES, here)
and each engine's own, declared in its folder: ioattr/engines/<engine>/file_classes.toml. A new
engine's class is one [[class]] there.

Everything that speaks of file classes derives from FILE_CLASSES: collectors/abi.FileClass,
the report's names (model/labels.FILE_CLASS_NAMES), which IO is storage IO
(model/storage.STORAGE_FILE_CLASSES, and the exporter's storage="yes"/"no" label built from it), top's short
names, the file_class dimension's help, and the BPF programs' enum ioattr_file_class:
bpf/file_classes.h is generated from this table (`python3 collectors/file_classes.py >
bpf/file_classes.h`; bpf/Makefile does it when the table changes, tests/unit/test_file_classes.py
fails when the two differ).

An engine plugged in with $IOATTR_ENGINES (ioattr/engines/registry.py) declares its classes in
its own folder's file_classes.toml too, without numbers: its classes get numbers from
PLUGIN_NUMBERS when this module is imported (in $IOATTR_ENGINES' order, then the file's), so they
are in FILE_CLASSES, abi.FileClass and everything derived like anyone's. The numbers never leave
the process (recordings and metrics carry class names; BPF only carries back the number userspace
registered for a page file, and no plugged-in engine has a BPF page classifier), so they need not
be stable from run to run; bpf/file_classes.h has the built-in classes only.

Imports nothing of ioattr but ioattr.environment (abi.py, below everything, builds on it); it
reads the engines' folders as data. bpf/Makefile runs it as a script (without ioattr on the
path): the header needs the built-in classes only, and no plugged-in engine is read then.
"""
from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

if __name__ != "__main__":  # a script (bpf/Makefile): no ioattr on the path, no plugged-in engine
    from ioattr import environment

HERE = Path(__file__).resolve().parent
#: the numbers of engines plugged in at run time ($IOATTR_ENGINES), assigned at load; an engine
#: folder of ioattr's own numbers its classes below them (bpf/ioattr.h: file_class is a __u8)
PLUGIN_NUMBERS = range(128, 256)


@dataclass(frozen=True)
class FileClassInfo:
    name: str       # as reports show it; FileClass.<NAME.upper()>
    number: int     # bpf/file_classes.h IOA_FC_<NAME>: stored in io_stats keys and recordings, never reused
    storage: bool   # the engine's storage IO (model/storage.py), or files beside it (logs, metadata)
    short: str      # at most 6 characters, for an 80-column screen (top)
    engine: str     # who writes such files: a group of the dimension's help
    help: str       # what such a file is
    #: a page row of such a file names the file, not an index: its index_id is the file's own
    #: number, and its index the one the engine's catalog lists for the file (meta.json "files"),
    #: where the catalog lists one only (an LSM's table files: MyRocks' SSTs)
    one_index_per_file: bool = False
    #: a page row's level is the file's LSM level (shown L0, L1, ...), not a B-tree level
    lsm_levels: bool = False


#: the classes no one engine owns: `other`, and the server's logs, temporary files and engines
#: without an adapter (ioattr/engines/), whatever engine the server runs
SHARED_CLASSES: tuple[FileClassInfo, ...] = (
    FileClassInfo("other", 0, False, "other", "", "any other file (Aria system tables, error log, ...)"),
    FileClassInfo("tmp", 8, True, "tmp", "any engine's temporary files",
                  "temporary tablespace, temporary tables, PostgreSQL's pgsql_tmp"),
    FileClassInfo("binlog", 5, True, "binlog", "the server's logs", "a binary log file"),
    FileClassInfo("relay_log", 6, True, "relay", "the server's logs", "a relay log file"),
    FileClassInfo("archive", 20, True, "arch", "the Archive engine", "an Archive table's data file <table>.ARZ"),
)

#: the engine adapters' folders: ioattr/engines beside collectors/ in the installed package
#: (ioattr/collectors), under ioattr/ in the checkout (collectors/ is mapped to ioattr.collectors)
def _engines_dir() -> Path:
    for d in (HERE.parent / "engines", HERE.parent / "ioattr" / "engines"):
        if d.is_dir():
            return d
    raise FileNotFoundError(f"no ioattr/engines/ beside {HERE}: the package is incomplete")


ENGINES_DIR = _engines_dir()


def engine_classes(engines_dir: Path = ENGINES_DIR) -> tuple[FileClassInfo, ...]:
    """Each engine folder's own classes (<engine>/file_classes.toml), folders in name order: an
    engine declares its file classes in its folder only. Data, not a module: this file sits below
    the engines and imports none of them."""
    rows: list[FileClassInfo] = []
    for f in sorted(engines_dir.glob("*/file_classes.toml")):
        rows.extend(engine_classes_of(f, numbered=True))
    return tuple(rows)


def engine_classes_of(toml: Path, numbered: bool) -> tuple[FileClassInfo, ...]:
    """One engine folder's file_classes.toml. numbered: ioattr's own engines number their
    classes (below PLUGIN_NUMBERS); a plugged-in engine's get theirs at load (number 0 here)."""
    data = tomllib.loads(toml.read_text())
    rows = []
    for r in data["class"]:
        if numbered and not 0 < r.get("number", 0) < PLUGIN_NUMBERS.start:
            raise ValueError(f"{toml}: class {r['name']!r}: its number ({r.get('number')}) must be in "
                             f"1..{PLUGIN_NUMBERS.start - 1}")
        if not numbered and "number" in r:
            raise ValueError(f"{toml}: class {r['name']!r}: a plugged-in engine's classes get their numbers at "
                             f"load ({PLUGIN_NUMBERS.start}..{PLUGIN_NUMBERS.stop - 1}): give none")
        rows.append(FileClassInfo(r["name"], r["number"] if numbered else 0, r["storage"], r["short"],
                                  data["engine"], r["help"], r.get("one_index_per_file", False),
                                  r.get("lsm_levels", False)))
    return tuple(rows)


def plugin_dirs(spec: str) -> tuple[Path, ...]:
    """The folders of the engines $IOATTR_ENGINES names (module:Class, comma-separated): a
    package's own directory, a module's parent, looked up on sys.path without importing anything
    (its packages may import ioattr, which is importing this). A module not found there is left to
    the registry to report when it imports it."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        parts = item.partition(":")[0].split(".")
        for base in sys.path:
            d = Path(base or ".").joinpath(*parts)
            if (d / "__init__.py").is_file():
                out.append(d.resolve())
                break
            if d.with_suffix(".py").is_file():
                out.append(d.parent.resolve())
                break
    return tuple(dict.fromkeys(out))


def plugin_classes(dirs: tuple[Path, ...], numbers: range = PLUGIN_NUMBERS) -> tuple[FileClassInfo, ...]:
    """The classes of plugged-in engines' folders (their file_classes.toml, if any), numbered from
    `numbers` in order. A class that gives its own number is refused (ValueError): a number is
    ioattr's to give, and a built-in class's could clash with the next release's."""
    rows: list[FileClassInfo] = []
    for d in dirs:
        toml = d / "file_classes.toml"
        if not toml.is_file():
            continue
        for c in engine_classes_of(toml, numbered=False):
            if len(rows) == len(numbers):
                raise ValueError(f"more than {len(numbers)} file classes of plugged-in engines")
            rows.append(replace(c, number=numbers[len(rows)]))
    return tuple(rows)


def checked(classes: tuple[FileClassInfo, ...]) -> tuple[FileClassInfo, ...]:
    """The table, refused (ValueError naming the clash) when two classes share a name, a number
    or a short name, or a short name is longer than top's 6 characters."""
    for field in ("name", "number", "short"):
        seen: dict[object, str] = {}
        for c in classes:
            v = getattr(c, field)
            if v in seen:
                raise ValueError(f"file classes {seen[v]!r} and {c.name!r} have the same {field} {v!r}")
            seen[v] = c.name
    long = [c.name for c in classes if len(c.short) > 6]
    if long:
        raise ValueError(f"file classes with a short name over 6 characters: {long}")
    return classes


#: ioattr's own classes: `other`, each engine folder's (in its folder's order), then the shared
#: ones (what bpf/file_classes.h has)
BUILTIN_CLASSES: tuple[FileClassInfo, ...] = checked(SHARED_CLASSES[:1] + engine_classes() + SHARED_CLASSES[1:])
#: every class: the built-in ones, then those of the engines plugged in with $IOATTR_ENGINES. This
#: order is the reports' (numbers are not in order)
FILE_CLASSES: tuple[FileClassInfo, ...] = checked(
    BUILTIN_CLASSES + (plugin_classes(plugin_dirs(environment.get("IOATTR_ENGINES"))) if __name__ != "__main__" else ()))


#: the classes whose page rows name a file, not an index (FileClassInfo.one_index_per_file)
ONE_INDEX_PER_FILE: frozenset[str] = frozenset(c.name for c in FILE_CLASSES if c.one_index_per_file)
#: the classes whose page rows' level is an LSM level (FileClassInfo.lsm_levels)
LSM_LEVELS: frozenset[str] = frozenset(c.name for c in FILE_CLASSES if c.lsm_levels)


def sql_in(column: str, names: frozenset[str]) -> str:
    """SQL: whether `column` is one of these class names (FALSE for none)."""
    return f"{column} IN ({', '.join(repr(n) for n in sorted(names))})" if names else "FALSE"


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
    for c in sorted(BUILTIN_CLASSES, key=lambda c: c.number):
        who = f"{c.engine}: " if c.engine else ""
        lines.append(f"\tIOA_FC_{c.name.upper()} = {c.number}, /* {who}{c.help.replace('*/', '* /')} */")
    lines += ["};", "", "#endif", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(c_header(), end="")

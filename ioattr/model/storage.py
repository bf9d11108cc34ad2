"""One definition of each number ioattr puts next to a benchmark's: storage reads and writes,
queries, rows inserted, and the per-query / per-insert terms built from them.

Every consumer (report --by phase, explain, top, the HTML report, the exporter's storage label)
imports these instead of keeping its own list, so the same interval gives the same number
everywhere.

Storage reads (writes): IO operations at the syscall layer, op read (write), on the server's
storage files, that is the files whose file_class is in STORAGE_FILE_CLASSES: InnoDB's page
files (tablespaces, the system tablespace with its doublewrite area, undo, temporary
tablespace and temporary tables), its redo log, and binary and relay logs; the Archive
engine's table files (.ARZ); MyRocks' SST files, WAL and MANIFEST; PostgreSQL's relation
files, SLRU files and WAL. Files of class
`other` (Aria system tables, error log, ...), NOT_STORAGE_FILE_CLASSES and pseudo-files are not
storage IO of the engine. The unit is IO operations: InnoDB reads one page per read, so its
reads equal its page reads; a doublewrite batch is one write of up to 64 pages; MyRocks reads
one SST block (or, with direct reads, one aligned block range) per read.
"""
from __future__ import annotations

from typing import Any

from ioattr.collectors.file_classes import FILE_CLASSES
from ioattr.model import per as units  # storage.per() below is the ratio

#: the classes whose IO is storage IO (collectors/file_classes.py, column `storage`), in the
#: table's order: InnoDB's page files and logs, the server's binary and relay logs, temporary
#: files, MyRocks' SSTs (a block-cache miss is an SST read), WAL and MANIFEST, PostgreSQL's
#: relation forks and SLRU files, the Archive engine's .ARZ files
STORAGE_FILE_CLASSES: tuple[str, ...] = tuple(c.name for c in FILE_CLASSES if c.storage)
#: engine files that are not storage IO: RocksDB's text log (like an error log), its OPTIONS
#: files (written once at open) and SSTs waiting for deletion; with `other`, every class is one
#: or the other
NOT_STORAGE_FILE_CLASSES: tuple[str, ...] = tuple(c.name for c in FILE_CLASSES if not c.storage and c.number)
# the exporter labels its series storage="yes"/"no" from STORAGE_FILE_CLASSES (prometheus/exporter.py):
# dashboards select storage IO by that label and list no classes (tests/unit/test_storage.py)


#: the digest of ioattr's own statements on the server (bpf/ioattr.h IOA_DIGEST_INTERNAL,
#: collectors/abi.DIGEST_INTERNAL; tests/unit/test_storage.py keeps them equal). Their IO -- the
#: temporary tables INFORMATION_SCHEMA reads and SHOW ENGINE INNODB STATUS make, which a small
#: tmp_table_size puts on disk -- is ioattr's, not the workload's: never storage IO.
INTERNAL_DIGEST = 255
#: the query label their rows carry (ioattr/live/rows.py), for consumers of report rows, which
#: have the label and not the digest
INTERNAL_QUERY_LABEL = "[ioattr's own statements]"
#: the labels of a prepared statement's execution whose text is not known (bpf/ioattr.h
#: IOA_DIGEST_PREPARED_BEFORE, IOA_DIGEST_PREPARED_LOST): prepared before the recording
#: started, or prepared during it but its statement id evicted from the BPF map (counted as
#: drop reason prepared_lost)
PREPARED_BEFORE_LABEL = "[prepared before the recording]"
PREPARED_LOST_LABEL = "[prepared statement, id not kept]"


def is_storage(layer: str | None, file_class: str | None, digest: int | None = None) -> bool:
    """Whether an io row's IO counts as storage IO (digest: the row's, when it has one)."""
    return layer == "syscall" and file_class in STORAGE_FILE_CLASSES and digest != INTERNAL_DIGEST


def storage_sql(table: str = "io") -> str:
    """SQL predicate over io rows: storage IO (any op; add op = 'read' / 'write')."""
    classes = ", ".join(f"'{c}'" for c in STORAGE_FILE_CLASSES)
    return (f"({table}.layer = 'syscall' AND {table}.file_class IN ({classes}) "
            f"AND coalesce({table}.digest, 0) <> {INTERNAL_DIGEST})")


# -- counters: "source:name" keys as the counters table has them (collectors/counters.py) --
QUERIES = units.SELECTS            # the workload's queries are its SELECTs (ioattr/model/per.py)
OWN_QUERIES = units.OWN_SELECTS    # ioattr's own SELECTs on the server, taken off
# rows inserted, first available: the storage engine's own row counter (EngineAdapter.rows_inserted),
# else the MySQL/MariaDB server's: Handler_write, MariaDB's count of rows written through the
# storage-engine API (internal temporary tables are Handler_tmp_write, so not in it). The source
# used is reported next to the number ("ips_source"). The whole list, engines' and server's, is
# ioattr.engines.registry.rows_inserted_keys().
SERVER_ROWS_INSERTED = ("status:Handler_write",)
# INSERT (and REPLACE) statements, of either form
INSERT_STATEMENTS = ("status:Com_insert", "status:Com_insert_select", "status:Com_replace",
                     "status:Com_replace_select")


def queries(counters: dict[str, float], statement_counts: dict[str, float] | None = None) -> float | None:
    """The workload's queries, that is its SELECTs (ioattr/model/per.py: per query = per SELECT):
    Com_select less ioattr's own, else SELECTs seen by the stage probes."""
    return units.selects(counters, statement_counts)


def rows_inserted(counters: dict[str, float], keys: tuple[str, ...]) -> tuple[float | None, str | None]:
    """(rows inserted, the counter it came from): the first of `keys` (registry.rows_inserted_keys())
    that was recorded, or (None, None) without such counters."""
    for key in keys:
        if key in counters:
            return counters[key], key.split(":", 1)[1]
    return None, None


def insert_statements(counters: dict[str, float], statement_counts: dict[str, float] | None = None) -> float | None:
    """INSERT/REPLACE statements: the server's Com_ counters, else the stage probes' count."""
    have = [counters[k] for k in INSERT_STATEMENTS if k in counters]
    if have:
        return sum(have)
    if statement_counts:
        return statement_counts.get("insert", 0.0) + statement_counts.get("replace", 0.0)
    return None


def per(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None when either is unknown or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def sig(v: float | None, digits: int = 3) -> float | None:
    """v to `digits` significant digits (0.3601 -> 0.36, 54117.3 -> 54100.0): per-operation terms
    are ratios whose size varies by orders of magnitude, so a fixed number of decimals either
    hides them (0.0004 -> 0.0) or pretends precision."""
    if v is None:
        return None
    if v == 0:
        return 0.0
    return float(f"{v:.{digits}g}")


def fmt_sig(v: Any, digits: int = 3) -> str:
    """Text for a ratio with `digits` significant digits ("0.360", "1.20", "54,100")."""
    if v is None:
        return "-"
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 10 ** (digits - 1):
        return f"{round(v):,}"
    return f"{v:#.{digits}g}"

"""The recording's tables: their Arrow schemas, the format name meta.json carries, and the
DuckDB type of each column.

Apart from the writer (recording.py) so that everything that only needs the columns -- the
reader, compaction, rows, top, the exporter, reports -- imports these and not the writer, and
compaction (which the writer starts) does not import the writer back.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ioattr.collectors.abi import HIST_SLOTS

FORMAT = "ioattr-recording/1"
HIST_COLUMNS = [f"h{i:02d}" for i in range(HIST_SLOTS)]
#: one interval's rows of a table, column-wise, as the live session names them (ioattr/live/rows.py)
#: and the recorder, top and the exporter take them: column name -> a list (labels, values that may
#: be None) or a numpy array (counts, bytes, histogram slots), one entry per row
Columns = dict[str, list | np.ndarray]

# every row of io and pages: the interval and its phase ...
WHEN = [("ts_start", pa.float64()), ("ts_end", pa.float64()), ("phase", pa.string())]
# ... and who did the IO: process, thread, its role, and the statement and stage it was in
WHO = [("pid", pa.int32()), ("tid", pa.int32()), ("process", pa.string()), ("thread", pa.string()),
       ("role", pa.string()), ("stage", pa.string()), ("digest", pa.uint64()), ("query", pa.string())]

IO_SCHEMA = pa.schema(
    WHEN
    + [("layer", pa.string()), ("op", pa.string()), ("api", pa.string()), ("kind", pa.string())]
    + WHO
    + [
        ("file_class", pa.string()),
        ("dev", pa.string()),
        ("device", pa.string()),
        ("ino", pa.uint64()),
        ("file", pa.string()),
        # the process's cgroup path (collectors/cgroups.py); null in recordings made before it
        ("cgroup", pa.string()),
        ("count", pa.int64()),
        ("bytes", pa.int64()),
        ("lat_sum_ns", pa.int64()),
    ]
    + [(c, pa.int64()) for c in HIST_COLUMNS]
)


PAGES_SCHEMA = pa.schema(
    WHEN
    + [("op", pa.string()), ("api", pa.string())]
    + WHO
    + [
        ("space_id", pa.int64()),
        ("file", pa.string()),
        # the inode the pages' IO went to (as in io), for joining pages to their io rows
        ("dev", pa.string()),
        ("ino", pa.uint64()),
        ("file_class", pa.string()),
        ("index_id", pa.uint64()),
        ("index", pa.string()),
        ("level", pa.int32()),
        ("page_type", pa.string()),
        ("flags", pa.string()),
        ("pages", pa.int64()),
        ("bytes", pa.int64()),
    ]
)

STATEMENTS_SCHEMA = pa.schema(
    [
        ("ts_start", pa.float64()),
        ("ts_end", pa.float64()),
        ("phase", pa.string()),
        ("pid", pa.int32()),
        ("process", pa.string()),
        ("digest", pa.uint64()),
        ("command", pa.string()),
        ("kind", pa.string()),
        ("query", pa.string()),
        ("count", pa.int64()),
        ("estimates", pa.int64()),  # index range estimates (stage estimate entries); null before it was counted
    ]
)

# -- engine and host counters (collectors/counters.py has the sources and names) --
COUNTERS_SCHEMA = pa.schema(
    [
        ("ts", pa.float64()),       # unix time the value was read
        ("phase", pa.string()),
        ("pid", pa.int32()),        # server (or traced process for 'proc'); NULL for 'host'
        ("source", pa.string()),    # status|innodb_metrics|innodb_status|ps_file|ps_table|host|proc
        ("name", pa.string()),
        ("value", pa.float64()),    # as read: cumulative counters cumulative, gauges as gauges
        ("text", pa.string()),      # NULL except for non-numeric values
    ]
)
# -- end engine and host counters --

# columns added after recordings were made without them, read as NULL where absent (the
# reader adds them): code that needs to tell "not recorded" from NULL checks the others itself
NULL_WHEN_ABSENT = {"io": ("cgroup",)}

TABLES = {"io": IO_SCHEMA, "pages": PAGES_SCHEMA, "statements": STATEMENTS_SCHEMA, "counters": COUNTERS_SCHEMA}


def duck_type(t) -> str:
    """The DuckDB type of a column of Arrow type t (an empty view of a table, a NULL in a rollup)."""
    if t is None:
        return "VARCHAR"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_string(t):
        return "VARCHAR"
    if t == pa.uint64():
        return "UBIGINT"
    if t == pa.int32():
        return "INTEGER"
    return "BIGINT"

"""`ioattr compact REC`: merge a recording's chunks into segments now (see ioattr.format.compact).

The recorder compacts as it records, in a child process that runs this same command with
--background; by hand it is for a recording whose recorder was killed or that was copied
from elsewhere. Safe on a recording still being written. The one front door of compaction."""
from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import time
from pathlib import Path

from ioattr.cli.definition import command_parser
from ioattr.errors import RuntimeFailure, UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "compact")
    p.add_argument("recording", help="the recording directory")
    p.add_argument("--wait", action="store_true", help="wait for a compaction already running instead of failing")
    # the recorder's child (format/compact.py BackgroundCompactor): low priority, quiet, exit 75 when busy
    p.add_argument("--background", action="store_true", help=argparse.SUPPRESS)


def _disk_full(e: OSError) -> bool:
    return e.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left on device" in str(e)


def _background(args: argparse.Namespace) -> int:
    """The recorder's compaction: no DuckDB reader is opened (only meta.json and the DuckDB
    limits are checked), nothing is said unless it failed, and another compactor at work is
    exit EXIT_BUSY, which the recorder does not count as a failure."""
    from ioattr.format import duck  # lazy: start-up time
    from ioattr.format.compact import EXIT_BUSY, Busy, compact

    rec = Path(args.recording)
    if not (rec / "meta.json").exists():
        raise UsageError(f"not an ioattr recording: {rec}")
    duck.limits()       # a bad IOATTR_DUCKDB_* is one line before anything is done
    with contextlib.suppress(OSError):
        os.nice(10)
    try:
        compact(rec, wait=args.wait)
    except Busy:
        return EXIT_BUSY
    except OSError as e:
        why = "disk full" if _disk_full(e) else (e.strerror or str(e))
        raise RuntimeFailure(f"cannot compact {rec}: {why}; the recording stays readable in chunks") from None
    return 0


def run(args: argparse.Namespace) -> int:
    if args.background:
        return _background(args)
    # lazy: start-up time (`ioattr --help` loads no pyarrow or duckdb)
    from ioattr.format.compact import Busy, compact
    from ioattr.format.reader import Recording

    rec = Recording(args.recording, warn=lambda m: None)  # the same checks and messages as report
    rec.con.close()
    t0 = time.perf_counter()
    try:
        merges = compact(rec.path, wait=args.wait)
    except Busy as e:
        raise RuntimeFailure(f"{e}; try again later or give --wait") from None
    except PermissionError as e:
        raise RuntimeFailure(f"cannot compact {rec.path}: {e.filename or rec.path}: permission denied") from None
    except OSError as e:  # disk full included: the segment's .tmp is gone, the chunks untouched
        why = "disk full" if _disk_full(e) else (e.strerror or str(e))
        raise RuntimeFailure(f"cannot compact {rec.path}: {why}; the recording stays readable in chunks") from None
    print(f"ioattr compact: {rec.path}: {len(merges)} merges in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    return 0

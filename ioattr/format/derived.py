"""Tables derived from a recording, kept beside it for the next command.

A day-long recording holds ~40M io rows, but one row per key and second: summed over time
(every column but the interval's timestamps) the io table of the synthetic day is a few
thousand rows, and every report, explain and compare groups those sums, never the seconds.
So the sums are computed once (one scan, as a report did), written to `REC/.derived/` and
read back by later commands instead of the 40M rows. Likewise the per-phase counter sums
(ioattr/analysis/phase_sums.py) instead of 74M counter rows.

A derived file is named by a hash of the query that made it and of the parts it was made
from (each file's table, name, size and mtime): a recording that gains a chunk, a compaction
that replaces parts or a new ioattr whose query differs makes a new name, and the old file
is removed when the new one is written. The name ends in a hash of the file's own bytes,
checked when it is read: a damaged derived file (a flipped bit can leave valid Parquet of
other sums) is made again, not reported. Only the recording's owner writes or reads them
(a directory and files of its own, 0700/0600, like the recording itself; never followed
through a symlink): another user reading the recording (root, say) computes the sums
itself and writes nothing into a directory that is not its own. A derived file that can't
be written or read is no derived file: the command computes the sums as before.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from ioattr.format.schema import HIST_COLUMNS

DIR = ".derived"
VERSION = 1     # of what the files hold; part of every name

# columns summed over time, per table; every other column but the timestamps is a key
MEASURES = {"io": ("count", "bytes", "lat_sum_ns", *HIST_COLUMNS), "pages": ("pages", "bytes")}
TIMES = ("ts_start", "ts_end")


def totals_sql(table: str, columns: list[str]) -> str:
    """`table`'s rows summed over time: one row per distinct key (phase included). `columns`
    are the table's as the recording has them (an older one lacks some): every one but the
    timestamps is kept, the measures summed."""
    measures = [c for c in columns if c in MEASURES[table]]
    keys = [c for c in columns if c not in MEASURES[table] and c not in TIMES]
    sums = ", ".join(f'sum("{m}")::BIGINT AS "{m}"' for m in measures)
    return f"SELECT {', '.join(f'{chr(34)}{k}{chr(34)}' for k in keys)}, {sums} FROM {table} GROUP BY ALL"


def key(sql: str, parts: list[Path]) -> str | None:
    """The name a derived file of `sql` over these parts has; None when a part is gone."""
    h = hashlib.sha256(f"{VERSION}\0{sql}\0".encode())
    try:
        for p in parts:
            st = p.stat()
            h.update(f"{p.parent.name}/{p.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    except OSError:
        return None
    return h.hexdigest()[:32]


def _own(st: os.stat_result, kind) -> bool:
    return kind(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def directory(rec: Path, create: bool) -> Path | None:
    """REC/.derived if it is ours alone (made when `create` and the recording is ours), else None."""
    d = rec / DIR
    try:
        return d if _own(os.lstat(d), stat.S_ISDIR) else None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    if not create:
        return None
    try:
        if os.lstat(rec).st_uid != os.geteuid():
            return None
        os.mkdir(d, 0o700)
        return d if _own(os.lstat(d), stat.S_ISDIR) else None
    except OSError:
        return None


def _digest(f: Path) -> str | None:
    """The first 16 hex digits of the sha256 of the file's bytes (never through a symlink)."""
    h = hashlib.sha256()
    try:
        fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()[:16]


def lookup(rec: Path, name: str, k: str) -> Path | None:
    """The derived file `name` with key `k`, if there is one of ours whose bytes are the ones
    written: its name ends in their hash. A bit flipped in it can leave a valid Parquet file
    of other sums, which nothing else would notice (and every later command would report)."""
    d = directory(rec, create=False)
    if d is None:
        return None
    prefix = f"{name}-{k}-"
    try:
        names = [e.name for e in os.scandir(d) if e.name.startswith(prefix) and e.name.endswith(".parquet")]
    except OSError:
        return None
    for n in names:
        f = d / n
        try:
            if not _own(os.lstat(f), stat.S_ISREG):
                continue
        except OSError:
            continue
        if _digest(f) == n[len(prefix):-len(".parquet")]:
            return f
    return None


def store(con, rec: Path, name: str, k: str, relation: str) -> None:
    """Write `relation` as the derived file `name` with key `k` (atomically: a reader sees the
    whole file or none) and remove that name's older files. Failing to is not an error."""
    d = directory(rec, create=True)
    if d is None:
        return
    tmp = d / f".{name}-{k}.{os.getpid()}.tmp"
    try:
        quoted = str(tmp).replace("'", "''")
        con.execute(f"COPY (SELECT * FROM {relation}) TO '{quoted}' (FORMAT parquet)")
        os.chmod(tmp, 0o600)
        digest = _digest(tmp)
        if digest is None:
            raise OSError(f"can't read {tmp}")
        target = d / f"{name}-{k}-{digest}.parquet"
        os.replace(tmp, target)
        for old in d.iterdir():
            if old.name.startswith(f"{name}-") and old.name.endswith(".parquet") and old != target:
                old.unlink(missing_ok=True)
    except Exception:       # noqa: BLE001 - a derived file is an optimisation: never the command's failure
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


# -- parts already checked ----------------------------------------------------------------
# Every part is checked (partcheck.py: its footer and every page header, ~0.3 s CPU for a
# compacted day) before DuckDB reads it. Parts are immutable, so a part that passed stays
# good while its name, size, mtime and inode are the same: CHECKED lists those, and a later
# command skips the check for them.
CHECKED = "checked.json"


def _identity(p: Path) -> list[int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def checked_parts(rec: Path) -> dict[str, list[int]]:
    """"table/name" -> identity of the parts a command of this user found good."""
    d = directory(rec, create=False)
    if d is None:
        return {}
    f = d / CHECKED
    try:
        if not _own(os.lstat(f), stat.S_ISREG):
            return {}
        got = json.loads(f.read_text())
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def known_good(p: Path, checked: dict[str, list[int]]) -> bool:
    """Whether part `p` is listed as checked, unchanged since."""
    want = checked.get(f"{p.parent.name}/{p.name}")
    return want is not None and want == _identity(p)


def remember_checked(rec: Path, parts: list[Path], checked: dict[str, list[int]]) -> None:
    """List `parts` (all found good) as checked, when that changes the list; never an error."""
    now = {}
    for p in parts:
        ident = _identity(p)
        if ident is not None:
            now[f"{p.parent.name}/{p.name}"] = ident
    if now == checked:
        return
    d = directory(rec, create=True)
    if d is None:
        return
    tmp = d / f".{CHECKED}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(now, out)
        os.replace(tmp, d / CHECKED)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass

"""Whether a recording is whole: complete, still being written, stopped by an error, or left
behind by a recorder that was killed or crashed.

Every report (table, JSON, CSV, HTML) and `explain` says so at the top when it is not
complete, so that an empty or short table is never mistaken for "no IO". meta.json's status
is "complete" once the recorder closed it, "incomplete" when an error stopped it, and stays
"recording" while it runs -- and after a kill -9 or a crash, which the run files in
/run/ioattr (ioattr/format/control.py: pid and start time of each live recorder) tell apart.
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from ioattr.format.control import active_recordings
from ioattr.format.reader import Recording


def _when(ts: Any) -> str:
    try:
        return datetime.datetime.fromtimestamp(float(ts), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


def _live(path: Path) -> bool:
    try:
        me = path.resolve()
        return any(Path(str(a.get("recording"))).resolve() == me for a in active_recordings())
    except OSError:
        return False


def recording_state(rec: Recording) -> dict[str, Any] | None:
    """None for a complete recording, else {"status", "message"}: status is "recording" (still
    being written), "incomplete" (an error stopped it) or "crashed" (its recorder is gone
    without closing it)."""
    status = rec.meta.get("status")
    if status in (None, "complete"):
        return None
    chunks = sum(rec.chunk_counts.get(t, 0) for t in ("io", "pages", "statements", "counters"))
    last = last_data_time(rec)
    upto = (f"data up to {_when(last)}" if last is not None else
            "no data at all (it stopped before writing its first chunk)")
    if status == "incomplete":
        err = rec.meta.get("error")
        return {"status": "incomplete", "chunks": chunks,
                "message": f"incomplete recording: stopped by an error{f' ({err})' if err else ''}; it holds {upto}"}
    if status == "recording" and _live(rec.path):
        return {"status": "recording", "chunks": chunks,
                "message": f"recording still being written: {upto} so far; the last phase is open "
                           "and rated by its elapsed time up to the last data"}
    return {"status": "crashed", "chunks": chunks,
            "message": f"crashed or killed recording: its recorder ended without closing it; it holds {upto}; "
                       "what was not yet written is lost (run `ioattr compact` if a merge was interrupted)"}


def last_data_time(rec: Recording, phase: str | None = None) -> float | None:
    """The end of the last interval recorded (in `phase`, if given): how far an open phase got."""
    parts = []
    for table, col in (("io", "ts_end"), ("pages", "ts_end"), ("statements", "ts_end"), ("counters", "ts")):
        if rec.has_table(table):
            parts.append(f"SELECT max({col}) AS t FROM {table}" + (" WHERE phase = ?" if phase is not None else ""))
    if not parts:
        return None
    params = [phase] * len(parts) if phase is not None else []
    v = rec.query(f"SELECT max(t) FROM ({' UNION ALL '.join(parts)})", params)[0][0]
    return None if v is None else float(v)

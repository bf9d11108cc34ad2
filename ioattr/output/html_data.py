"""The numbers behind the HTML report's plots, read from a recording with DuckDB.

Time series are per recording interval when there are few enough of them
(≤ MAX_POINTS), else per equal-width bin, so a 24-hour recording still
plots ~MAX_POINTS points and reads each table once per plot. Values are
rates (per second of the interval or bin), so bins of different length
compare.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ioattr.format.reader import Recording
from ioattr.format.schema import HIST_COLUMNS
from ioattr.model.hist import percentile_ns

MAX_POINTS = 240
TOP_SERIES = 8
OTHER = "(other)"


def _f(v: Any, default: float | None = None) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


@dataclass
class TimeAxis:
    t0: float                   # epoch seconds of x = 0
    end: float                  # seconds from t0 where the recording ends
    key_sql: str                # SQL expression giving a row's slot key
    keys: list[Any]
    xs: list[float]             # slot midpoints, seconds from t0
    durations: list[float]
    binned: bool
    index: dict[Any, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {k: i for i, k in enumerate(self.keys)}

    def empty(self) -> list[float]:
        return [0.0] * len(self.keys)


def time_axis(rec: Recording) -> TimeAxis:
    spans = rec.query("SELECT ts_start, max(ts_end) FROM ("
                      "SELECT ts_start, ts_end FROM io UNION ALL SELECT ts_start, ts_end FROM pages) "
                      "WHERE ts_start IS NOT NULL AND ts_end IS NOT NULL GROUP BY ts_start ORDER BY ts_start")
    first = spans[0][0] if spans else None
    t0 = _f(rec.meta.get("started"), first) or _f(first, 0.0) or 0.0
    if first is not None:
        t0 = min(t0, float(first))
    last = max((float(e) for _, e in spans), default=t0)
    ended = _f(rec.meta.get("ended"), None)
    end = max(last, ended if ended is not None else last) - t0
    if len(spans) <= MAX_POINTS:
        keys = [s for s, _ in spans]
        xs = [(float(s) + float(e)) / 2 - t0 for s, e in spans]
        durs = [max(float(e) - float(s), 1e-3) for s, e in spans]
        return TimeAxis(t0, end, "ts_start", keys, xs, durs, False)
    width = max((last - t0) / MAX_POINTS, 1e-3)
    key = (f"least(greatest(CAST(floor((ts_start - {t0!r}) / {width!r}) AS BIGINT), 0), {MAX_POINTS - 1})")
    keys = list(range(MAX_POINTS))
    return TimeAxis(t0, end, key, keys, [(k + 0.5) * width for k in keys], [width] * MAX_POINTS, True)


def stacked(ax: TimeAxis, rows: list[tuple], top: int = TOP_SERIES) -> tuple[list[str], dict[str, list[float]],
                                                                             dict[str, float]]:
    """(slot key, series name, value) rows -> the top series by total plus OTHER, as rates."""
    totals: dict[str, float] = {}
    for _, name, v in rows:
        totals[name] = totals.get(name, 0.0) + float(v or 0)
    names = [n for n, t in sorted(totals.items(), key=lambda x: -x[1]) if t > 0]
    shown = names[:top]
    if len(names) > top:
        shown.append(OTHER)
    data = {n: ax.empty() for n in shown}
    for k, name, v in rows:
        i = ax.index.get(k)
        if i is None:
            continue
        n = name if name in data and name != OTHER else OTHER
        if n not in data:
            continue
        data[n][i] += float(v or 0)
    rates = {n: [v / ax.durations[i] for i, v in enumerate(vals)] for n, vals in data.items()}
    if OTHER in shown:
        totals[OTHER] = sum(t for n, t in totals.items() if n not in shown)
    return shown, rates, {n: totals.get(n, 0.0) for n in shown}


def _index_name() -> str:
    return ("coalesce(index, CASE WHEN page_type = 'index' THEN '[index of unknown name]' "
            "ELSE '[' || coalesce(page_type, 'unknown page type') || ']' END)")


def pages_over_time(rec: Recording, ax: TimeAxis, op: str):
    rows = rec.query(f"SELECT {ax.key_sql} AS k, {_index_name()} AS name, sum(pages) FROM pages "
                     "WHERE op = ? GROUP BY ALL", [op])
    return stacked(ax, rows)


def bytes_over_time(rec: Recording, ax: TimeAxis, op: str):
    rows = rec.query(f"SELECT {ax.key_sql} AS k, coalesce(file_class, 'unclassified') AS name, sum(bytes) FROM io "
                     "WHERE layer = 'syscall' AND op = ? GROUP BY ALL", [op])
    return stacked(ax, rows)


def latency_over_time(rec: Recording, ax: TimeAxis) -> dict[str, list[float | None]]:
    """'read p50', 'read p99', 'write p50', 'write p99' per slot in µs (None where no IO)."""
    sums = ", ".join(f"sum({c})::BIGINT" for c in HIST_COLUMNS)
    out = {f"{op} {q}": [None] * len(ax.keys) for op in ("read", "write") for q in ("p50", "p99")}
    for row in rec.query(f"SELECT {ax.key_sql} AS k, op, {sums} FROM io WHERE layer = 'syscall' "
                         "AND op IN ('read', 'write') GROUP BY ALL"):
        i = ax.index.get(row[0])
        if i is None:
            continue
        hist = [int(x or 0) for x in row[2:]]
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            v = percentile_ns(hist, q)
            out[f"{row[1]} {name}"][i] = None if v is None else v / 1000.0
    return out


def index_by_phase(rec: Recording, op: str, phases: list[str], top: int = 15) -> list[tuple[str, list[float]]]:
    rows = rec.query(f"SELECT {_index_name()} AS name, phase, sum(pages) FROM pages WHERE op = ? GROUP BY ALL", [op])
    per: dict[str, dict[str, float]] = {}
    for name, phase, n in rows:
        per.setdefault(name, {})[phase] = float(n or 0)
    ranked = sorted(per.items(), key=lambda x: -sum(x[1].values()))[:top]
    return [(name, [d.get(p, 0.0) for p in phases]) for name, d in ranked]

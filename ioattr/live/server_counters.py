"""The traced servers' own counters (SHOW GLOBAL STATUS), for `top` and the exporter.

Read once per interval through each server's EngineConnection (the one the
session already holds for names and roles). The server counts our own
statement too (one SHOW per interval), which is noise below one query per
second. A server without a connection simply has no counters: reads per
query are then unknown, never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ioattr.collectors.engine import EngineError
from ioattr.engines import registry
from ioattr.engines.base import SERVER_COUNTERS

# SHOW GLOBAL STATUS name -> our short names: the server's statement counts, then what each engine
# answers the engine-neutral counters with (base.SERVER_COUNTERS: cache_misses, cache_requests).
# One variable may count towards several (MyRocks' block-cache misses are misses and requests).
STATUS_VARS: dict[str, tuple[str, ...]] = {"Questions": ("questions",), "Com_select": ("selects",)}
for _name in SERVER_COUNTERS:
    for _c in registry.status_counters(_name):
        for _v in _c.variables:
            STATUS_VARS[_v] = STATUS_VARS.get(_v, ()) + (_name,)
_SQL = ("SHOW GLOBAL STATUS WHERE Variable_name IN ("
        + ", ".join(f"'{name}'" for name in STATUS_VARS) + ")")


def read_status(engine, status_rows=None) -> dict[str, int]:
    """The counters above from one server connection ({} when it can't answer); counters of
    several engines that answer one short name are added up. status_rows(): an engine's own
    server's (name, value) rows instead of SHOW GLOBAL STATUS (PostgreSQL's pg_stat_database)."""
    try:
        rows = status_rows() if status_rows is not None else engine.query(_SQL)
    except EngineError:
        return {}
    out: dict[str, int] = {}
    for name, value in rows:
        shorts = STATUS_VARS.get(str(name)) or STATUS_VARS.get(str(name).capitalize())
        if shorts is None:
            continue
        try:
            v = int(value)
        except (TypeError, ValueError):
            continue
        for short in shorts:
            out[short] = out.get(short, 0) + v
    return out


@dataclass
class ServerCounters:
    """Cumulative status counters per server pid, and their change since the last read."""

    current: dict[int, dict[str, int]] = field(default_factory=dict)
    delta: dict[str, int] | None = None  # summed over servers; None when no server answered twice

    def read(self, servers: dict) -> None:
        """servers: pid -> ServerContext (session.counter_servers(): engines' own servers too)."""
        now: dict[int, dict[str, int]] = {}
        for pid, ctx in list(servers.items()):
            if getattr(ctx, "engine", None) is None:
                continue
            values = read_status(ctx.engine, getattr(ctx, "status_rows", None))
            if values:
                now[pid] = values
        delta: dict[str, int] | None = None
        for pid, values in now.items():
            before = self.current.get(pid)
            if before is None:
                continue
            for name, v in values.items():
                d = v - before.get(name, v)
                if d < 0:  # the server restarted under the same pid: unknown for this interval
                    continue
                delta = delta or {}
                delta[name] = delta.get(name, 0) + d
        self.current = now
        self.delta = delta

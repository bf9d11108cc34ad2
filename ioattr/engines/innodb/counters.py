"""InnoDB's counter sources: INFORMATION_SCHEMA.INNODB_METRICS and SHOW ENGINE INNODB STATUS
(the InnoDB adapter's "counters"; collectors/counters.py reads them next to the server's own).

innodb_metrics  COUNT of every enabled counter, by NAME. When a server is first seen these
                modules are enabled if they are not (SET GLOBAL innodb_monitor_enable, needs
                SUPER): module_buffer_page (buffer_page_read_* / buffer_page_written_* by page
                type and level), module_ibuf_system (ibuf_merges*, change buffer size),
                module_purge (purge_*), module_index (index_page_splits/merges/reorgs/discards),
                and the one counter log_checkpoints (each checkpoint is one write of a
                checkpoint block of the redo log, which Innodb_log_writes does not count:
                docs/cost.md "Long and wide runs"). They are left on afterwards (see collectors/counters.py for why); a note says
                what was switched on and how to undo it. Also adds to the server's settings
                change_buffer_size_pages (ibuf_size when first seen) and buffer_pool_pages.
innodb_status   SHOW ENGINE INNODB STATUS parsed by status.py. Needs PROCESS.
"""
from __future__ import annotations

from typing import Any, Callable

from ioattr.collectors.counters import setting_value
from ioattr.collectors.engine import EngineError
from ioattr.engines.base import Connection, CounterRow, CounterSource
from ioattr.engines.innodb.status import parse_innodb_status

# INNODB_METRICS module -> its SUBSYSTEM
MONITOR_MODULES = {"module_buffer_page": "buffer_page_io", "module_ibuf_system": "change_buffer",
                   "module_purge": "purge", "module_index": "index"}
# single INNODB_METRICS counters switched on by name (their module's others are not needed)
MONITOR_COUNTERS = ("log_checkpoints",)


def _flavor(conn: Connection) -> str:
    return getattr(conn, "flavor", "mariadb")


class InnodbMetrics(CounterSource):
    """INFORMATION_SCHEMA.INNODB_METRICS, with the modules ioattr's findings need switched on."""

    source = "innodb_metrics"

    def __init__(self) -> None:
        self.enabled_by_us: list[str] = []  # INNODB_METRICS modules this source switched on

    def first_sight(self, conn: Connection, settings: dict[str, Any] | None,
                    note: Callable[..., None]) -> None:
        self._enable_monitors(conn, note)
        if settings is not None:
            self._sizes_in_pages(conn, settings, note)

    def _sizes_in_pages(self, conn: Connection, snap: dict[str, Any], note: Callable[..., None]) -> None:
        """The change buffer's size in pages (INNODB_METRICS ibuf_size, a gauge: the value when
        the server was first seen; its course per phase is in the counters) and the pool's."""
        try:
            for name, count in conn.query("SELECT NAME, COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS "
                                          "WHERE NAME = 'ibuf_size'"):
                snap["change_buffer_size_pages"] = setting_value(count)
        except EngineError as e:
            note(("ibuf_size",), f"change-buffer size unknown ({e})")
        pool, page = snap.get("innodb_buffer_pool_size"), snap.get("innodb_page_size")
        if isinstance(pool, int) and isinstance(page, int) and page > 0:
            snap["buffer_pool_pages"] = pool // page

    def _enable_monitors(self, conn: Connection, note: Callable[..., None]) -> None:
        subsystems = ", ".join(f"'{s}'" for s in MONITOR_MODULES.values())
        on = "ENABLED" if _flavor(conn) == "mariadb" else "STATUS = 'enabled'"
        try:
            rows = conn.query(f"SELECT NAME, SUBSYSTEM, {on} FROM INFORMATION_SCHEMA.INNODB_METRICS "
                              f"WHERE SUBSYSTEM IN ({subsystems})")
        except EngineError as e:
            note(("monitors",), f"INNODB_METRICS unreadable ({e})")
            return
        off = {subsystem for _, subsystem, enabled in rows if not int(enabled or 0)}
        try:
            names = ", ".join(f"'{n}'" for n in MONITOR_COUNTERS)
            off_names = [n for n, enabled in conn.query(f"SELECT NAME, {on} FROM INFORMATION_SCHEMA.INNODB_METRICS "
                                                         f"WHERE NAME IN ({names})") if not int(enabled or 0)]
        except EngineError:
            off_names = []
        wanted = [(m, s) for m, s in MONITOR_MODULES.items() if s in off] + [(n, n) for n in off_names]
        for module, subsystem in wanted:
            try:
                conn.query(f"SET GLOBAL innodb_monitor_enable = '{module}'")
            except EngineError as e:
                note(("monitor", module), f"cannot enable INNODB_METRICS {module} ({e}); "
                                          f"its counters ({subsystem}) are missing")
                continue
            self.enabled_by_us.append(module)
        if self.enabled_by_us:
            # one short line on the terminal at every start; how to undo it in the recording's notes
            undo = "; ".join(f"SET GLOBAL innodb_monitor_disable = '{m}'" for m in self.enabled_by_us)
            short = ", ".join(m.removeprefix("module_") for m in self.enabled_by_us)
            note(("monitors_on",), f"switched on INNODB_METRICS {short} (left on; undo: meta.json notes)",
                 detail=f"to undo: {undo}")

    def read(self, conn: Connection) -> list[CounterRow]:
        on = "ENABLED = 1" if _flavor(conn) == "mariadb" else "STATUS = 'enabled'"
        return [(str(n), float(c), None)
                for n, c in conn.query(f"SELECT NAME, COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS WHERE {on}")
                if c is not None]


class InnodbStatus(CounterSource):
    """SHOW ENGINE INNODB STATUS, parsed into named numbers."""

    source = "innodb_status"

    def read(self, conn: Connection) -> list[CounterRow]:
        rows = conn.query("SHOW ENGINE INNODB STATUS")
        if not rows:
            raise EngineError("SHOW ENGINE INNODB STATUS returned nothing")
        text = rows[0][-1]
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        return parse_innodb_status(str(text or ""))

"""`ioattr top`'s loop: a LiveSession drained every interval, shown in a terminal or printed.

Interactive: the screen is redrawn after every interval and at once after a
key (views and sorting work on the interval already held). Batch
(`--batch`): one plain-text snapshot per interval on stdout, like `top -b`,
for `--iterations N` intervals or until stopped.
"""
from __future__ import annotations

import dataclasses
import errno
import json
import shutil
import signal
import sys
import time
from dataclasses import dataclass

from ioattr.errors import UsageError
from ioattr.live.server_counters import ServerCounters
from ioattr.live.session import LiveSession, SessionOptions
from ioattr.model.self_cost import SelfCostSample, status_cost
from ioattr.model.labels import LAYERS
from ioattr.topview.top import BY_TO_VIEW, VIEWS, Column, Header, Snapshot, View, find_column, sort_rows
from ioattr.topview.top_render import ViewState, help_screen, render_screen
from ioattr.topview.top_term import Terminal

POLL_SECONDS = 0.1
MIN_COLUMNS, MIN_LINES = 60, 10


@dataclass(kw_only=True)
class TopOptions(SessionOptions):
    """`ioattr top`: the live session's options (targets, probes, connection) and these."""

    by: str = "file"              # a view, or (batch) several, comma-separated: file,index
    interval: float = 1.0
    batch: bool = False
    iterations: int | None = None
    sort: str | None = None
    reverse: bool = False
    layer: str = "syscall"
    rows: int | None = None       # batch: rows per snapshot (None: all)
    width: int | None = None      # batch: line width (default: the terminal's, else 160)
    format: str = "text"          # batch: text (top -b's screens) or json (one object a line)


class TopApp:
    def __init__(self, opts: TopOptions) -> None:
        by = [b.strip() for b in opts.by.split(",") if b.strip()]
        for b in by or [""]:
            if b not in BY_TO_VIEW:
                raise UsageError(f"unknown --by {b!r}; choose one of {', '.join(BY_TO_VIEW)}")
        if opts.format != "text" and not opts.batch:
            raise UsageError(f"--format {opts.format} is for --batch (the screen is text)")
        if len(by) > 1 and not opts.batch:
            raise UsageError("several --by views are for --batch; on screen, switch views with keys")
        self.batch_views = [VIEWS[BY_TO_VIEW[b]] for b in dict.fromkeys(by)]
        if opts.layer not in LAYERS:
            raise UsageError(f"unknown --layer {opts.layer!r}; choose one of {', '.join(LAYERS)}")
        self.opts = opts
        self.view: View = self.batch_views[0]
        self.layer = opts.layer
        self.sorts: dict[str, tuple[Column, bool]] = {}
        if opts.sort:
            col = find_column(self.view, opts.sort)
            missing = [v.name for v in self.batch_views if find_column(v, opts.sort) is None]
            if col is None or missing:
                names = ", ".join(c.header for c in self.view.columns)
                view = missing[0] if missing else self.view.name
                names = ", ".join(c.header for c in VIEWS[view].columns)
                raise UsageError(f"--sort {opts.sort!r} is not a column of the {view} view "
                                 f"(columns: {names})")
            self.sorts[self.view.name] = (col, opts.reverse)
            # the same column in the other views, where they have it
            for v in self.batch_views[1:] + list(VIEWS.values()):
                other = find_column(v, opts.sort)
                if other is not None and v.name not in self.sorts:
                    self.sorts[v.name] = (other, opts.reverse)
        self.header = Header(interval=opts.interval)
        self.counters = ServerCounters()
        self.snapshot: Snapshot | None = None
        self.messages: list[str] = []
        self._cost: SelfCostSample | None = None  # the last self_cost sample (the status line's)
        self.stop_requested = False
        self.resized = False
        self.show_help = False  # the `?` screen is up

    # -- state -----------------------------------------------------------------------
    def view_state(self) -> ViewState:
        col, rev = self.sorts.get(self.view.name, (None, False))
        if col is None:
            col = next(c for c in self.view.columns if c.key == self.view.default_sort)
        return ViewState(self.view, self.layer, col, rev)

    def on_key(self, key: str) -> str | None:
        """Apply a key; returns 'quit', 'refresh' (drain now) or 'redraw' (or None: ignored).

        Keys as top(1) users expect them: q quits, ? (or h) shows the keys; on that screen any
        key but Ctrl-C/Ctrl-D only returns to the view (top(1)'s help does the same)."""
        if key in ("eof", "\x03", "\x04"):
            return "quit"
        if self.show_help:
            self.show_help = False
            return "redraw"
        if key in ("q", "Q", "esc"):
            return "quit"
        if key in ("?", "h"):
            self.show_help = True
            return "redraw"
        views = {"f": "files", "i": "indexes", "s": "queries", "d": "devices", "c": "cgroups"}
        if key in views:
            self.view = VIEWS[views[key]]
            return "redraw"
        if key == "t":
            self.view = VIEWS["roles" if self.view.name == "threads" else "threads"]
            return "redraw"
        vs = self.view_state()
        cols = self.view.columns
        if key in ("<", ">", "left", "right", ",", "."):
            i = next(j for j, c in enumerate(cols) if c.key == vs.sort.key)
            step = -1 if key in ("<", "left", ",") else 1
            self.sorts[self.view.name] = (cols[(i + step) % len(cols)], False)
            return "redraw"
        if key in ("r", "R"):
            self.sorts[self.view.name] = (vs.sort, not vs.reverse)
            return "redraw"
        if key in ("l", "L"):
            self.layer = LAYERS[(LAYERS.index(self.layer) + 1) % len(LAYERS)]
            return "redraw"
        if key == " ":
            return "refresh"
        return None

    def screen(self, width: int, height: int | None, *, color: bool, footer: bool = True,
               max_rows: int | None = None, header: bool = True) -> str:
        ellipsis = "…" if (sys.stdout.encoding or "").lower().replace("-", "") == "utf8" else "~"
        if self.show_help and height is not None:
            return help_screen(width, height)
        return render_screen(self.snapshot, self.header, self.view_state(), width=width, height=height,
                             color=color, footer=footer, max_rows=max_rows, ellipsis=ellipsis,
                             header=header)

    # -- the session ------------------------------------------------------------------
    def _log(self, msg: str) -> None:
        if self.opts.batch:
            print(f"ioattr: {msg}", file=sys.stderr, flush=True)
        else:
            self.messages.append(msg)

    def _describe(self, s: LiveSession) -> None:
        h = self.header
        h.targets = [f"{s.naming.tasks.process(pid) or '?'}[{pid}]" for pid in sorted(s.tracker.current)]
        h.degraded = sorted(s.degraded)
        try:  # our own cost since the last refresh (ioattr/live/self_cost.py)
            cost = s.self_cost()
            h.cost = status_cost(self._cost, cost) or h.cost
            self._cost = cost
        except Exception:  # noqa: BLE001 - a header detail must not stop the view
            pass
        try:
            h.drops = s.drops()
            h.dropped = sum(h.drops.values())
        except Exception:  # noqa: BLE001 - a header detail must not stop the view
            pass

    @staticmethod
    def _datadirs(s: LiveSession) -> list[str]:
        dirs = {d.rstrip("/") + "/" for ctx in s.naming.servers.values() for d in ctx.directories if d}
        return sorted(dirs, key=len, reverse=True)

    @staticmethod
    def _relations(s: LiveSession) -> dict[str, dict]:
        """The traced clusters' relation files, named as a recording's meta.json names them
        (re-read, throttled, when a file is new); {} when none or unreadable."""
        try:
            return s.relation_files()
        except Exception:  # noqa: BLE001 - names are a detail: the view shows the paths then
            return {}

    def tick(self, s: LiveSession) -> Snapshot:
        iv = s.tick()
        markers = s.take_phase_markers()
        if markers:
            s.phase = self.header.phase = markers[-1][1]
        self.counters.read(s.counter_servers())
        snap = Snapshot(iv.start, iv.end, iv.io, iv.pages, statements=getattr(iv, "statements", None),
                        status_delta=self.counters.delta,
                        datadirs=self._datadirs(s), relations=self._relations(s))
        s.refresh_targets()
        self._describe(s)
        self.snapshot = snap
        return snap

    def _on_signal(self, signum: int, _frame: object) -> None:
        if signum == signal.SIGWINCH:
            self.resized = True
        else:
            self.stop_requested = True

    def run(self) -> int:
        o = self.opts
        if not o.batch and not Terminal.usable():
            raise UsageError("top needs a terminal (stdin and stdout); use --batch for scripts")
        session = LiveSession(dataclasses.replace(o, log=self._log))
        handled = [signal.SIGTERM, signal.SIGHUP] + ([] if o.batch else [signal.SIGWINCH])
        prev = {sig: signal.signal(sig, self._on_signal) for sig in handled}
        try:
            with session:
                session.start()
                self._describe(session)
                self.counters.read(session.counter_servers())
                if o.batch:
                    self._batch(session)
                else:
                    with Terminal() as term:
                        self._interactive(session, term)
        except KeyboardInterrupt:
            pass
        except OSError as e:
            # the terminal went away (SIGHUP, a closed SSH session): that is a stop
            if not self.stop_requested and e.errno not in (errno.EIO, errno.EPIPE, errno.ENXIO):
                raise
        finally:
            for sig, h in prev.items():
                signal.signal(sig, h)
            for msg in self.messages:
                print(f"ioattr: {msg}", file=sys.stderr)
        return 0

    def _wait(self, s: LiveSession, until: float) -> None:
        while not self.stop_requested:
            left = until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(POLL_SECONDS, left))
            s.poll()

    def _batch(self, s: LiveSession) -> None:
        o = self.opts
        width = o.width
        if width is None:
            # $COLUMNS first (as report and compare), then the terminal's, 160 when piped
            # (shutil reads them in that order)
            width = max(shutil.get_terminal_size((160, 24)).columns, MIN_COLUMNS)
        next_tick = time.monotonic() + o.interval
        done = 0
        while not self.stop_requested and (o.iterations is None or done < o.iterations):
            self._wait(s, next_tick)
            if self.stop_requested:
                break
            self.tick(s)
            done += 1
            next_tick = max(next_tick + o.interval, time.monotonic() + 0.01)
            if o.format == "json":
                sys.stdout.write(json.dumps(self.snapshot_json(o.rows)) + "\n")
                sys.stdout.flush()
                continue
            parts = []
            for i, view in enumerate(self.batch_views):
                self.view = view
                parts.append(self.screen(width, None, color=False, footer=False, max_rows=o.rows,
                                         header=i == 0))
            sys.stdout.write("\n\n".join(parts) + "\n\n")
            sys.stdout.flush()

    def snapshot_json(self, max_rows: int | None = None) -> dict:
        """The last snapshot as `top --batch --format json` prints it: the interval (epoch
        seconds), the server's rates and per-SELECT figures, and per view its rows, sorted as
        on screen, with each column's value (rates per second, latency in ns, null: unknown) and,
        in the queries view, `executions` (the count behind EXEC/s)."""
        snap = self.snapshot
        assert snap is not None
        out: dict = {"start": snap.start, "end": snap.end, "seconds": round(snap.seconds, 6),
                     "phase": self.header.phase, "layer": self.layer, "per_query": snap.per_query(),
                     "dropped": self.header.dropped, "views": {}}
        for view in self.batch_views:
            self.view = view
            vs = self.view_state()
            rows = sort_rows(snap.rows(view, self.layer), vs.sort, vs.reverse)[:max_rows]
            out["views"][view.name] = [
                {"name": r.full or r.name, **({view.extra.key: r.extra} if view.extra else {}),
                 **({"relation": r.relation} if view.name == "files" and snap.relations else {}), **r.values}
                for r in rows]
        return out

    def _interactive(self, s: LiveSession, term: Terminal) -> None:
        o = self.opts
        next_tick = time.monotonic() + o.interval
        done = 0
        redraw = True
        while not self.stop_requested:
            if redraw or self.resized:
                self.resized = False
                width, height = term.size()
                if width < MIN_COLUMNS or height < MIN_LINES:
                    term.draw(f"terminal too small: {MIN_COLUMNS}x{MIN_LINES} at least (q quits)"[:max(width, 1)])
                else:
                    term.draw(self.screen(width, height, color=True))
                redraw = False
            if o.iterations is not None and done >= o.iterations:
                return
            refresh = False
            for key in term.read_keys(min(POLL_SECONDS, max(0.0, next_tick - time.monotonic()))):
                act = self.on_key(key)
                if act == "quit":
                    return
                if act == "refresh":
                    refresh = True
                redraw = redraw or act is not None
            s.poll()
            now = time.monotonic()
            if refresh or now >= next_tick:
                self.tick(s)
                done += 1
                redraw = True
                next_tick = now + o.interval if refresh else max(next_tick + o.interval, now + 0.01)

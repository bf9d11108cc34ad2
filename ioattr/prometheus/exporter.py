"""`ioattr exporter`: the live attribution as Prometheus metrics.

A LiveSession is drained every `--interval`; each interval's deltas are
added to cumulative counters (ioattr.prometheus.metrics_state: bounded label
cardinality, counters that never go down). One custom collector turns those
counters into metric families (not thousands of Counter objects): a scrape
sees the state after the last drain, rendered in the text exposition format
once per drain (ioattr.prometheus.metrics_text: a scrape of 10,000 series stays well
under 100 ms) and served by a small threaded HTTP server (ioattr.prometheus.metrics_http)
to every scrape until the next drain. The process_* metrics come from
prometheus_client's ProcessCollector at each scrape; `collect()` gives the
same families to any prometheus_client registry.

Metrics (every counter since the exporter started):

  ioattr_read_bytes_total{layer,file,file_class,device,role,cgroup,storage}
  ioattr_write_bytes_total{layer,file,file_class,device,role,cgroup,storage}
  ioattr_ops_total{layer,op,file,file_class,device,role,cgroup,storage}    op: read|write|fsync
  ioattr_io_time_seconds_total{layer,op,file,file_class,device,role,cgroup,storage}  summed latency
  ioattr_io_latency_seconds{layer,op,file_class,role,storage}      histogram (power-of-two buckets)
  ioattr_pages_total{op,index,level,page_type,file_class,role,storage}  every engine's pages
  ioattr_server_questions_total{pid}, ioattr_server_selects_total{pid},
  ioattr_server_buffer_pool_reads_total{pid}                     the server's own counters (the last: its
                                                                 engines' cache misses, base.SERVER_COUNTERS)
  self: ioattr_probe_run_seconds_total{program}, ioattr_probe_runs_total{program},
  ioattr_drops_total{reason,map}, ioattr_drain_duration_seconds (histogram),
  ioattr_map_entries{map}, ioattr_map_max_entries{map}, ioattr_series{table},
  ioattr_label_evictions_total{label}, ioattr_targets, ioattr_probe_set_up{set},
  ioattr_build_info{version}, ioattr_last_drain_timestamp_seconds, ioattr_phase_info{phase}
  and prometheus_client's process_* metrics of the exporter itself.

`storage` ("yes"/"no") is whether the file class is storage IO (model/storage.py, the file-class
table's column): a function of file_class, so it adds no series; dashboards select storage IO by
it, not by listing classes.
`file` is a file's path, or on a PostgreSQL cluster the relation a relation's file holds
("db.schema.name", the fork in parentheses when not the main one: "db.schema.name (vm)"), as
report --by file and top name it (ioattr.model.labels.file_label): a relation's segments are one
value. `file` and `index` are bounded to the `--top-n` most active values; the
rest is counted under `other` (see ioattr.prometheus.metrics_state for why counters
stay monotonic when values move in and out). `cgroup` (the process's cgroup v2 path, empty
when unknown) keeps the first 32 cgroups seen; any later one is counted under `[other]`.
"""
from __future__ import annotations

import dataclasses
import gzip
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from ioattr import __version__
from ioattr.collectors.targets import TargetSpec, pid_alive
from ioattr.engines import registry
from ioattr.errors import UsageError
from ioattr.live.server_counters import ServerCounters
from ioattr.model.labels import DROP_MAPS, drops_line  # which map each drop reason is about
from ioattr.model.storage import STORAGE_FILE_CLASSES
from ioattr.prometheus.metrics_bpf import all_prog_stats
from ioattr.prometheus.metrics_http import MetricsServer
from ioattr.prometheus.metrics_state import BUCKET_LAST_SLOT, BUCKET_LE_SECONDS, HIST_LABELS, IO_LABELS, PAGE_LABELS, \
    ExporterState
from ioattr.format.schema import HIST_COLUMNS
from ioattr.live.session import Interval, LiveSession, SessionOptions
from ioattr.prometheus.metrics_text import LabelCache, TextWriter

DEFAULT_PORT = 9474
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"
POLL_SECONDS = 0.1
DRAIN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_LE = [floatToGoString(v) for v in BUCKET_LE_SECONDS]
_STORAGE = frozenset(STORAGE_FILE_CLASSES)


def with_storage(names: tuple[str, ...], key: tuple) -> tuple[tuple[str, ...], tuple]:
    """A series' label names and values with `storage` added: "yes" when its file_class is storage IO."""
    return names + ("storage",), key + ("yes" if key[names.index("file_class")] in _STORAGE else "no",)


def parse_listen(spec: str) -> tuple[str, int]:
    """HOST:PORT, [V6]:PORT, :PORT (all interfaces) or PORT (loopback).

    Port 0 asks the kernel for any free port; the one bound is printed in the
    "exporting ... on http://HOST:PORT/metrics" line. Tests use that instead of
    picking a port themselves, which races with anything else binding one."""
    s = spec.strip()
    host, port = "127.0.0.1", s
    if s.startswith("["):
        end = s.find("]")
        if end < 0 or not s[end + 1:].startswith(":"):
            raise UsageError(f"--listen {spec!r}: expected [ADDRESS]:PORT")
        host, port = s[1:end], s[end + 2:]
    elif ":" in s:
        host, port = s.rsplit(":", 1)
        host = host or "0.0.0.0"
    try:
        p = int(port)
    except ValueError:
        raise UsageError(f"--listen {spec!r}: the port must be a number") from None
    if not 0 <= p < 65536:
        raise UsageError(f"--listen {spec!r}: the port must be between 1 and 65535, or 0 for any free port")
    return host, p


class WaitingTargets(TargetSpec):
    """Targets for a long-running exporter: a server not running yet is waited for, not an error."""

    def validate(self) -> None:  # noqa: D401 - same contract, fewer reasons to refuse
        for pid in self.pids:
            if pid <= 0 or not pid_alive(pid):
                raise UsageError(f"no such process: {pid}")


@dataclass
class SelfStats:
    """The exporter's own health, refreshed after each drain."""

    drain_hist: np.ndarray = field(default_factory=lambda: np.zeros(len(DRAIN_BUCKETS) + 1, dtype=np.int64))
    drain_sum: float = 0.0
    drain_count: int = 0
    last_drain: float = 0.0
    drops: dict[str, int] = field(default_factory=dict)
    map_entries: dict[str, tuple[int, int]] = field(default_factory=dict)  # map -> (entries, max)
    progs: dict[str, tuple[int, int]] = field(default_factory=dict)        # program -> (ns, runs)
    probe_sets: dict[str, int] = field(default_factory=dict)
    targets: int = 0
    servers: dict[int, dict[str, int]] = field(default_factory=dict)
    phase: str | None = None
    probe_stats: bool = False

    def add_drain(self, seconds: float) -> None:
        i = int(np.searchsorted(np.asarray(DRAIN_BUCKETS), seconds, side="left"))
        self.drain_hist[i] += 1
        self.drain_sum += seconds
        self.drain_count += 1


class IoattrCollector(Collector):
    """Every ioattr metric, rendered from an ExporterState once per drain.

    `body()` is what /metrics serves: the text exposition (and its gzip),
    built at the first scrape after a drain and reused until the next one.
    `collect()` yields the same families as prometheus_client metric objects
    (parsed from that text), for use in any registry."""

    def __init__(self, state: ExporterState, stats: SelfStats, lock: threading.Lock,
                 process: CollectorRegistry | None = None) -> None:
        self.state = state
        self.stats = stats
        self.lock = lock
        self.process = process
        self.labels = LabelCache()
        self._text: str | None = None
        self._gzip: bytes | None = None
        self._version = -1

    def describe(self) -> list:
        return []  # nothing to check for clashes: a registry holds this and process_* at most

    def text(self) -> str:
        with self.lock:
            if self._text is None or self._version != self.state.version:
                self._text = self.render()
                self._gzip = None
                self._version = self.state.version
            return self._text

    def body(self, want_gzip: bool = False) -> tuple[bytes, bytes]:
        """(plain, gzip) bytes for one scrape: ours (cached per drain) plus process_* (fresh)."""
        text = self.text()
        extra = generate_latest(self.process) if self.process is not None else b""
        plain = text.encode() + extra
        gz = b""
        if want_gzip:
            with self.lock:
                if self._gzip is None or self._text is not text:
                    self._gzip = gzip.compress(text.encode(), compresslevel=1)
                cached = self._gzip
            gz = cached + (gzip.compress(extra, compresslevel=1) if extra else b"")
        return plain, gz

    def collect(self) -> Iterator[Metric]:
        yield from text_string_to_metric_families(self.text())

    def render(self) -> str:
        st, s, L = self.state, self.stats, self.labels
        w = TextWriter()
        io_wo_op = tuple(k for k in IO_LABELS if k != "op")
        rows = list(st.io.series.items())
        for op, name, what in (("read", "ioattr_read_bytes_total", "read"),
                               ("write", "ioattr_write_bytes_total", "written")):
            w.family(name, "counter", f"Bytes {what}, by layer and file (since the exporter started); file is "
                     "bounded to the --top-n busiest, the rest is file=\"other\"")
            for key, v in rows:
                if key[1] == op:
                    w.sample(name, L.fragment(*with_storage(io_wo_op, key[:1] + key[2:])), v[1])
        w.family("ioattr_ops_total", "counter", "IO operations (read, write, fsync), by layer and file")
        frags = [L.fragment(*with_storage(IO_LABELS, key)) for key, _ in rows]
        for frag, (_, v) in zip(frags, rows):
            w.sample("ioattr_ops_total", frag, v[0])
        w.family("ioattr_io_time_seconds_total", "counter",
                 "Summed latency of the IO operations (divide by ioattr_ops_total for the mean)")
        for frag, (_, v) in zip(frags, rows):
            w.sample("ioattr_io_time_seconds_total", frag, float(v[2]) / 1e9)

        w.family("ioattr_io_latency_seconds", "histogram", "Latency of IO operations: every power of two from "
                 "~1us to ~17s (exact sums of ioattr's log-linear slots)")
        nslots = len(HIST_COLUMNS)
        for key, v in st.hist.series.items():
            cum = np.cumsum(v[:nslots])[list(BUCKET_LAST_SLOT)]
            buckets = list(zip(_LE, cum.tolist())) + [("+Inf", int(v[nslots]))]
            w.histogram("ioattr_io_latency_seconds", L.fragment(*with_storage(HIST_LABELS, key)), buckets, int(v[nslots]),
                        float(v[nslots + 1]) / 1e9)

        w.family("ioattr_pages_total", "counter", "Pages read and written (every engine's: InnoDB and PostgreSQL "
                 "pages, MyRocks SST blocks), by index (the --top-n busiest, the rest index=\"other\"; empty for "
                 "pages of no index), level and page type")
        for key, v in st.pages.series.items():
            w.sample("ioattr_pages_total", L.fragment(*with_storage(PAGE_LABELS, key)), v[0])

        # the metric keeps its name; what answers it is each engine's (base.SERVER_COUNTERS)
        misses = registry.status_counters("cache_misses")
        # ioattr/model/per.py: Questions are statements (sysbench's queries), a query is a SELECT
        for name, short, doc in (("ioattr_server_questions_total", "questions", "The server's Questions counter "
                                  "(statements: divide by it for per statement)"),
                                 ("ioattr_server_selects_total", "selects", "The server's Com_select counter "
                                  "(divide by it for per query, as ioattr report's r/q)"),
                                 ("ioattr_server_buffer_pool_reads_total", "cache_misses",
                                  f"The server's {' + '.join(v for c in misses for v in c.variables)} counter "
                                  f"({'; '.join(c.meaning for c in misses)})")):
            w.family(name, "counter", doc)
            for pid, values in sorted(s.servers.items()):
                if short in values:
                    w.sample(name, L.fragment(("pid",), (str(pid),)), values[short])

        w.family("ioattr_probe_run_seconds_total", "counter", "CPU time spent in each of ioattr's BPF programs "
                 "(kernel run-time statistics; they count only while statistics are on)")
        for prog, (ns, _) in sorted(s.progs.items()):
            w.sample("ioattr_probe_run_seconds_total", L.fragment(("program",), (prog,)), ns / 1e9)
        w.family("ioattr_probe_runs_total", "counter", "Runs of each of ioattr's BPF programs (while run-time "
                 "statistics are on)")
        for prog, (_, cnt) in sorted(s.progs.items()):
            w.sample("ioattr_probe_runs_total", L.fragment(("program",), (prog,)), cnt)
        w.family("ioattr_probe_stats_enabled", "gauge", "1 when kernel BPF run-time statistics are on")
        w.sample("ioattr_probe_stats_enabled", "", int(s.probe_stats))
        w.family("ioattr_drops_total", "counter", "IO or events not counted because a BPF map or the ring buffer "
                 "was full, or the kernel skipped a probe run (reason), per map")
        for reason, n in sorted(s.drops.items()):
            w.sample("ioattr_drops_total", L.fragment(("map", "reason"), (DROP_MAPS.get(reason, ""), reason)), n)
        w.family("ioattr_drain_duration_seconds", "histogram", "Time to read the BPF maps and name one interval's "
                 "rows")
        cum = np.cumsum(s.drain_hist).tolist()
        w.histogram("ioattr_drain_duration_seconds", "",
                    [(floatToGoString(b), c) for b, c in zip(DRAIN_BUCKETS, cum[:-1])] + [("+Inf", cum[-1])],
                    cum[-1], s.drain_sum)
        w.family("ioattr_map_entries", "gauge", "Entries in ioattr's aggregation maps")
        for m, (n, _) in sorted(s.map_entries.items()):
            w.sample("ioattr_map_entries", L.fragment(("map",), (m,)), n)
        w.family("ioattr_map_max_entries", "gauge", "Capacity of ioattr's aggregation maps")
        for m, (_, cap) in sorted(s.map_entries.items()):
            w.sample("ioattr_map_max_entries", L.fragment(("map",), (m,)), cap)
        w.family("ioattr_series", "gauge", "Series exported per table (io, latency, pages)")
        for t, n in st.series_count().items():
            w.sample("ioattr_series", L.fragment(("table",), (t,)), n)
        w.family("ioattr_label_evictions_total", "counter", "Values that left the top N of a bounded label (their "
                 "later IO counts under \"other\"; cgroup: cgroups past the first 32, under \"[other]\")")
        w.sample("ioattr_label_evictions_total", 'label="file"', st.io.topn.evictions if st.io.topn else 0)
        w.sample("ioattr_label_evictions_total", 'label="index"', st.pages.topn.evictions if st.pages.topn else 0)
        w.sample("ioattr_label_evictions_total", 'label="cgroup"', st.cgroups.folded)
        w.family("ioattr_probe_set_up", "gauge", "1 for each probe set attached, 0 for one this host cannot run "
                 "(degraded)")
        for name, up in sorted(s.probe_sets.items()):
            w.sample("ioattr_probe_set_up", L.fragment(("set",), (name,)), up)
        w.family("ioattr_build_info", "gauge", "ioattr's version")
        w.sample("ioattr_build_info", L.fragment(("version",), (__version__,)), 1)
        w.family("ioattr_targets", "gauge", "Processes traced now")
        w.sample("ioattr_targets", "", s.targets)
        w.family("ioattr_last_drain_timestamp_seconds", "gauge", "When the counters were last updated (Unix time)")
        w.sample("ioattr_last_drain_timestamp_seconds", "", float(s.last_drain))
        if s.phase:
            w.family("ioattr_phase_info", "gauge", "The benchmark phase last marked with an ioattr:phase=NAME "
                     "statement")
            w.sample("ioattr_phase_info", L.fragment(("phase",), (s.phase,)), 1)
        L.trim(len(st.io) + len(st.hist) + len(st.pages))
        return w.text()


@dataclass(kw_only=True)
class ExporterOptions(SessionOptions):
    """`ioattr exporter`: the live session's options (targets, probes, connection) and these."""

    listen: str = DEFAULT_LISTEN
    interval: float = 1.0
    top_n: int = 50
    retention: float = 600.0
    probe_stats: bool = True
    duration: float | None = None


class Exporter:
    def __init__(self, opts: ExporterOptions) -> None:
        self.opts = opts
        self.host, self.port = parse_listen(opts.listen)
        self.lock = threading.Lock()
        self.state = ExporterState(top_n=opts.top_n, retention=opts.retention)
        self.stats = SelfStats()
        self.process = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.process)
        self.collector = IoattrCollector(self.state, self.stats, self.lock, process=self.process)
        self.counters = ServerCounters()
        self.stop_reason: str | None = None
        #: the last relation map read: a failed read names files as before, not by their paths
        self._relation_names: dict[str, dict] = {}

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_reason = signal.Signals(signum).name

    @staticmethod
    def log(msg: str) -> None:
        print(f"ioattr: {msg}", file=sys.stderr, flush=True)

    def _serve(self) -> MetricsServer:
        try:
            return MetricsServer(self.host, self.port, self.collector.body).start()
        except OSError as e:
            raise UsageError(f"cannot listen on {self.host}:{self.port}: {e.strerror or e}") from e

    def run(self) -> int:
        o = self.opts
        server = self._serve()
        prev = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            session = LiveSession(dataclasses.replace(o, log=self.log, run_time_stats=o.probe_stats))
            with session:
                session.start()
                self.counters.read(session.counter_servers())
                with self.lock:
                    self._update_self(session, None)
                    runtime = session.cost.stats  # the session holds the statistics on (self_cost.py)
                    self.stats.probe_stats = runtime is not None and runtime.enabled
                    self.state.version += 1
                if o.probe_stats and not self.stats.probe_stats:
                    self.log("probe run-time statistics unavailable: "
                             f"{runtime.error if runtime is not None else 'not opened'}")
                if o.targets.comms and not session.tracker.current:
                    self.log(f"no process named {', '.join(o.targets.comms)} yet; waiting for one")
                self.log(f"exporting {', '.join(o.targets.describe())} on "
                         f"http://{self.host}:{server.port}/metrics "
                         f"(interval {o.interval:g}s; Ctrl-C to stop)")
                self._loop(session)
        finally:
            server.stop()
            for sig, h in prev.items():
                signal.signal(sig, h)
        return 0

    def _loop(self, s: LiveSession) -> None:
        o = self.opts
        start = time.monotonic()
        next_tick = start + o.interval
        while self.stop_reason is None:
            time.sleep(max(0.0, min(POLL_SECONDS, next_tick - time.monotonic())))
            s.poll()
            now = time.monotonic()
            if o.duration is not None and now - start >= o.duration:
                self.stop_reason = "duration reached"
            if now < next_tick and self.stop_reason is None:
                continue
            self.tick(s)
            next_tick = max(next_tick + o.interval, now + 0.01)
        self.log(f"stopping: {self.stop_reason}")

    def tick(self, s: LiveSession) -> Interval:
        iv = s.tick()
        markers = s.take_phase_markers()
        if markers:
            s.phase = markers[-1][1]
        self.counters.read(s.counter_servers())
        with self.lock:
            self.state.ingest(iv.io, iv.pages, time.monotonic(), self._relations(s))
            self.stats.add_drain(iv.drain_seconds)
            self._update_self(s, iv)
            if markers:
                self.stats.phase = s.phase
            self.state.version += 1
        s.refresh_targets()
        return iv

    def _relations(self, s: LiveSession) -> dict[str, dict]:
        """The traced clusters' relation files (path -> relation; re-read, throttled, when a file
        is new), which name the `file` label of a relation's file; {} when none. A read that
        fails (the server busy, a connection lost) keeps the last map: an interval exported
        under a relation's path would stay there, the counter never moving to its name."""
        try:
            self._relation_names = s.relation_files() or self._relation_names
        except Exception:  # noqa: BLE001 - names are a detail: the last ones stand meanwhile
            pass
        return self._relation_names

    def _update_self(self, s: LiveSession, iv: Interval | None) -> None:
        st = self.stats
        st.last_drain = time.time()
        try:
            before = sum(st.drops.values())
            st.drops = s.drops()
            if sum(st.drops.values()) and not before:
                # said once on stderr; ioattr_drops_total{map,reason} keeps counting
                self.log(drops_line(st.drops, {"io_stats": self.opts.max_stats}) or "drops")
        except Exception:  # noqa: BLE001 - health numbers must not stop the export
            pass
        if s.probes is not None:
            st.progs = {name: (p.run_time_ns, p.run_cnt)
                        for name, p in all_prog_stats(s.probes.program_fds()).items()}
            cap = s.probes.max_stats
            if iv is not None:
                st.map_entries["io_stats"] = (iv.map_entries, cap)
            else:
                st.map_entries.setdefault("io_stats", (0, cap))
            pd = getattr(s, "page_drain", None)
            if pd is not None:
                st.map_entries["page_stats"] = (len(getattr(pd, "_prev_keys", ())), int(pd.max_entries))
        st.probe_sets = {name: 1 for name in s.active_sets}
        st.probe_sets.update({name: 0 for name in s.degraded})
        st.targets = len(s.tracker.current) if hasattr(s, "tracker") else 0
        st.servers = dict(self.counters.current)

"""How long does a scrape of `ioattr exporter` take with 10,000 series? (target: <= 100 ms)

The exporter's real pieces, without BPF: an ExporterState fed synthetic
intervals (files x roles x layers x ops, indexes x levels x ops) until it
holds the series asked for, its IoattrCollector (with prometheus_client's
process collector appended, as in the exporter), served by the exporter's
HTTP endpoint (ioattr.prometheus.metrics_http) on a loopback port, scraped over HTTP
like Prometheus does.

Two kinds of scrape are timed (wall time at the client, HTTP included):
  cold  the first scrape after a drain: the exposition is rendered again
  warm  a later scrape before the next drain (rendered text cached)
then the exporter's own CPU to render one (process time, no HTTP), and the
drain-side cost of adding one interval of rows to the counters.

    .venv/bin/python benchmarks/bench_exporter.py                  # 10,000 series, 30 scrapes each
    .venv/bin/python benchmarks/bench_exporter.py --series 50000 --scrapes 10 --json out.json

No root needed.
"""
from __future__ import annotations

import gzip
import platform
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from prometheus_client import CollectorRegistry, ProcessCollector  # noqa: E402

from ioattr.format.schema import HIST_COLUMNS  # noqa: E402
from ioattr.prometheus.exporter import IoattrCollector, SelfStats  # noqa: E402
from ioattr.prometheus.metrics_http import MetricsServer  # noqa: E402
from ioattr.prometheus.metrics_state import ExporterState  # noqa: E402
from verdict import bench_parser, finish  # noqa: E402

ROLES = ("connection", "page_cleaner", "io", "purge", "log_writer")
LAYERS = ("syscall", "block")
OPS = ("read", "write", "fsync")
CLASSES = ("tablespace", "redo_log", "undo", "system_tablespace")


def io_interval(n_files: int, rng: np.random.Generator) -> dict:
    rows = [(f"/var/lib/mysql/db{f % 40}/t{f}.ibd", CLASSES[f % 4], role, layer, op)
            for f in range(n_files) for role in ROLES[: 1 + f % 2] for layer in LAYERS for op in OPS[: 2 + f % 2]]
    n = len(rows)
    count = rng.integers(1, 500, n)
    hist = np.zeros((n, len(HIST_COLUMNS)), dtype=np.int64)
    hist[np.arange(n), rng.integers(10, 40, n)] = count
    cols = {"file": [r[0] for r in rows], "file_class": [r[1] for r in rows], "role": [r[2] for r in rows],
            "layer": [r[3] for r in rows], "op": [r[4] for r in rows], "device": ["nvme0n1"] * n,
            "count": count, "bytes": count * 16384, "lat_sum_ns": count * 150_000}
    for i, c in enumerate(HIST_COLUMNS):
        cols[c] = hist[:, i]
    return cols


def page_interval(n_indexes: int, rng: np.random.Generator) -> dict:
    rows = [(f"db{i % 40}.t{i}.{('PRIMARY', 'k')[i % 2]}", lvl, op, role)
            for i in range(n_indexes) for lvl in (0, 1) for op in ("read", "write") for role in ROLES[:2]]
    n = len(rows)
    pages = rng.integers(1, 300, n)
    return {"index": [r[0] for r in rows], "level": [r[1] for r in rows], "op": [r[2] for r in rows],
            "role": [r[3] for r in rows], "page_type": ["index"] * n, "file_class": ["tablespace"] * n,
            "index_id": list(range(n)), "pages": pages, "bytes": pages * 16384}


def count_series(text: str) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def scrape(url: str, gzip_ok: bool) -> tuple[float, int, str]:
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gzip_ok else {})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
        enc = r.headers.get("Content-Encoding")
    dt = time.perf_counter() - t0
    text = (gzip.decompress(body) if enc == "gzip" else body).decode()
    return dt, len(body), text


def main() -> int:
    ap = bench_parser(__doc__, raw=True)
    ap.add_argument("--series", type=int, default=10000, help="series to export (approximately, at least)")
    ap.add_argument("--scrapes", type=int, default=30, help="scrapes of each kind")
    ap.add_argument("--gzip", action="store_true", help="ask for gzip, as Prometheus does")
    args = ap.parse_args()

    rng = np.random.default_rng(1)
    lock = threading.Lock()
    state = ExporterState(top_n=1_000_000)
    stats = SelfStats()
    process = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=process)
    collector = IoattrCollector(state, stats, lock, process=process)
    # size the label sets: ~21 series per file (read/write bytes, ops, time), ~8 per index
    n_files = max(1, int(args.series * 0.8 / 21))
    n_indexes = max(1, int(args.series * 0.2 / 8))
    io, pages = io_interval(n_files, rng), page_interval(n_indexes, rng)
    ingest = []
    for i in range(5):
        t0 = time.perf_counter()
        with lock:
            state.ingest(io, pages, float(i))
        ingest.append(time.perf_counter() - t0)

    server = MetricsServer("127.0.0.1", 0, collector.body).start()  # the exporter's own endpoint
    url = f"http://127.0.0.1:{server.port}/metrics"
    try:
        _, size, text = scrape(url, args.gzip)
        series = count_series(text)
        cold, warm = [], []
        for i in range(args.scrapes):
            with lock:
                state.ingest(io, pages, 10.0 + i)  # a drain: the next scrape rebuilds the families
            dt, size, _ = scrape(url, args.gzip)
            cold.append(dt)
            dt, _, _ = scrape(url, args.gzip)
            warm.append(dt)
    finally:
        server.stop()
    render_cpu = []
    for i in range(args.scrapes):
        with lock:
            state.ingest(io, pages, 100.0 + i)
        t0 = time.process_time()
        collector.body(args.gzip)
        render_cpu.append(time.process_time() - t0)

    def summary(xs: list[float]) -> dict:
        xs = sorted(xs)
        return {"median_ms": round(1e3 * statistics.median(xs), 2), "p90_ms": round(1e3 * xs[int(0.9 * (len(xs) - 1))], 2),
                "max_ms": round(1e3 * xs[-1], 2)}

    rows_per_interval = len(io["count"]) + len(pages["pages"])
    res = {
        "series": series, "bytes_per_scrape": size, "gzip": args.gzip,
        "scrape_cold": summary(cold), "scrape_warm": summary(warm),
        "render_cpu_ms_median": round(1e3 * statistics.median(render_cpu), 2),
        "ingest_interval_rows": rows_per_interval, "ingest_ms_median": round(1e3 * statistics.median(ingest), 2),
        "target_ms": 100, "python": platform.python_version(), "host": platform.node(),
        "date": time.strftime("%Y-%m-%d"),
    }
    print(f"series exported:        {series:,}  ({size / 1024:.0f} KiB per scrape{', gzip' if args.gzip else ''})")
    print(f"scrape after a drain:   median {res['scrape_cold']['median_ms']} ms, p90 {res['scrape_cold']['p90_ms']} ms, "
          f"max {res['scrape_cold']['max_ms']} ms")
    print(f"scrape, families cached: median {res['scrape_warm']['median_ms']} ms, p90 {res['scrape_warm']['p90_ms']} ms, "
          f"max {res['scrape_warm']['max_ms']} ms")
    print(f"exporter CPU to render a scrape after a drain (no HTTP): median {res['render_cpu_ms_median']} ms")
    print(f"adding one interval ({rows_per_interval:,} rows) to the counters: {res['ingest_ms_median']} ms")
    ok = res["scrape_cold"]["p90_ms"] <= 100
    return finish(res, ok, "<= 100 ms per scrape", args.json)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What a private MariaDB's start costs, from scratch against from a cached datadir.

The test suite starts ~70 servers (ioattr/host/sandbox.py PrivateMariaDB), and sets
IOATTR_DATADIR_CACHE so that each kind of datadir is installed once and copied after
(ioattr/host/datadir_cache.py). This times start() + stop() of the same server both ways,
interleaved round by round (the order alternates), so a busy VM slows both alike, and
reports each way's median and the per-round ratio (cached / from scratch).

    sudo .venv/bin/python benchmarks/bench_server_start.py --rounds 10 [--json PATH]
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ioattr.host import datadir_cache  # noqa: E402
from ioattr.host.sandbox import PrivateMariaDB  # noqa: E402
from verdict import bench_parser  # noqa: E402


def one_start(cache_root: str | None) -> float:
    """Seconds from start() to a server that answers, then stopped (not timed)."""
    if cache_root is None:
        os.environ.pop(datadir_cache.ENV, None)
    else:
        os.environ[datadir_cache.ENV] = cache_root
    db = PrivateMariaDB()
    t0 = time.monotonic()
    try:
        db.start()
        took = time.monotonic() - t0
        assert db.query("SELECT COUNT(*) FROM mysql.user")[0][0] > 0
    finally:
        db.stop()
    return took


def main() -> int:
    ap = bench_parser(__doc__.splitlines()[0], rounds=10, json_help='write the samples and medians here')
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="ioattr-bench-datadir-cache-")
    try:
        one_start(root)  # fills the cache: the suite pays this once per kind of server
        scratch: list[float] = []
        cached: list[float] = []
        for r in range(args.rounds):
            order = (None, root) if r % 2 == 0 else (root, None)
            for way in order:
                (scratch if way is None else cached).append(one_start(way))
        ratios = [c / s for s, c in zip(scratch, cached)]
        out = {
            "rounds": args.rounds,
            "scratch_s": scratch, "cached_s": cached,
            "scratch_median_s": statistics.median(scratch), "cached_median_s": statistics.median(cached),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
        }
        print(f"start from scratch {out['scratch_median_s']:.2f} s, from the cache {out['cached_median_s']:.2f} s "
              f"(medians of {args.rounds}); cached/scratch {out['ratio_median']:.2f} "
              f"({out['ratio_min']:.2f}-{out['ratio_max']:.2f})")
        if args.json:
            args.json.write_text(json.dumps(out, indent=1) + "\n")
    finally:
        os.environ.pop(datadir_cache.ENV, None)
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# the seed report's memory sweep: sysbench oltp_read_write on InnoDB and on
# MyRocks at three cache sizes each (InnoDB's buffer pool; MyRocks' block cache, direct reads),
# the same data at every size (prepared once per engine; the server restarted cold with the
# next size): six recordings OUT/<engine>-<size>, phases `warm` (a 1 s run) and `rw` (the
# measured run), then one `ioattr compare ... --phase rw` (table, OUT/compare.json,
# OUT/compare.html): reads per query and writes per transaction per engine and size, and the
# same split by index for the smallest and largest caches.
#
#   examples/memory_sweep.sh [--size tiny|small] [--out DIR]
#
# tiny: 2 tables x 30K rows (~28 MiB in InnoDB), caches 6M/16M/64M, 2 s runs, ~1.5 min;
# small: 4 x 100K rows, 8M/32M/128M, 15 s runs, 2 threads (tiny: 1). sysbench runs with --db-ps-mode=disable
# (ioattr digests COM_QUERY text). Run as root.
# Exit status: 0 ok, 1 a step failed, 2 bad usage or an unusable host.
set -euo pipefail

prog=memory_sweep
# shellcheck source=examples/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
command -v sysbench >/dev/null || die 2 "sysbench is not installed (apt-get install sysbench)"
seed_recordings sweep "$@"
runs=("${RUNS[@]}")   # innodb then myrocks, each by cache size ascending
[ ${#runs[@]} -eq 6 ] || die 1 "expected 6 recordings in $OUT, found ${#runs[@]}"

echo "--- ioattr compare (6 runs) --phase rw"
"$IOATTR" compare "${runs[@]}" --phase rw --html "$OUT/compare.html" || die 1 "ioattr compare failed"
"$IOATTR" compare "${runs[@]}" --phase rw --format json -o "$OUT/compare.json" \
    || die 1 "ioattr compare --format json failed"
echo
echo "--- ioattr compare --phase rw --by index --top 3 (smallest and largest cache per engine)"
"$IOATTR" compare "${runs[0]}" "${runs[2]}" "${runs[3]}" "${runs[5]}" --phase rw --by index --top 3 \
    || die 1 "ioattr compare --by index failed"
echo
say "compare: $OUT/compare.json, $OUT/compare.html"

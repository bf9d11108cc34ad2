#!/usr/bin/env bash
# the seed report's IO-bound full scans: the same table in InnoDB and in MyRocks
# (private servers; a buffer pool / block cache much smaller than the table; MyRocks with
# direct reads), phases
#   load        INSERT ... SELECT of the rows (MyRocks: then flushed and compacted into one SST)
#   scan.fresh  a full table scan right after the load
#   update      random updates (a transaction of 200 rows each) that make a quarter of the
#               rows longer: InnoDB splits pages, MyRocks writes the new versions to a new L0 SST
#   scan.frag   the same scan again
# one recording per engine (OUT/innodb, OUT/myrocks), then
#   ioattr compare (table, OUT/compare.json, OUT/compare.html),
#   ioattr report --by phase,file_class,role,op per engine (reads, bytes and so the mean
#   read size, latency), and ioattr explain scan.fresh -> scan.frag per engine.
#
#   examples/engine_scans.sh [--size tiny|small] [--out DIR]
#
# tiny: 40K rows (~7 MiB in InnoDB), 6M pool, 4M block cache, ~1 min; small: 400K rows,
# 16M pool, 8M block cache. Each scan is 40 consecutive primary-key ranges (explain wants >= 30
# queries per phase to judge a change).
# Run as root. Exit status: 0 ok, 1 a step failed, 2 bad usage or an unusable host.
set -euo pipefail

prog=engine_scans
# shellcheck source=examples/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
seed_recordings scans "$@"
runs=("${RUNS[@]}")   # innodb, myrocks
phases=scan.fresh,update,scan.frag

echo "--- ioattr compare innodb myrocks --phase $phases"
"$IOATTR" compare "${runs[@]}" --phase "$phases" --html "$OUT/compare.html" || die 1 "ioattr compare failed"
"$IOATTR" compare "${runs[@]}" --phase "$phases" --format json -o "$OUT/compare.json" \
    || die 1 "ioattr compare --format json failed"
for rec in "${runs[@]}"; do
    name=$(basename "$rec")
    echo
    echo "--- $name: ioattr report --by phase,file_class,role,op --layer syscall (mean read size = bytes / count)"
    "$IOATTR" report "$rec" --by phase,file_class,role,op --layer syscall --top 16 || die 1 "ioattr report failed on $rec"
    echo
    echo "--- $name: ioattr explain --baseline scan.fresh --target scan.frag"
    "$IOATTR" explain "$rec" --baseline scan.fresh --target scan.frag || die 1 "ioattr explain failed on $rec"
done
echo
say "compare: $OUT/compare.json, $OUT/compare.html"

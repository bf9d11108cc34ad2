#!/usr/bin/env bash
# the seed report's bulk loads: LOAD DATA of one generated file (id, two ints, an
# 80-byte string) into InnoDB, compressed InnoDB (ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8),
# Archive and MyRocks, one private server (16M pool, 8M block cache) and one recording per engine
# (OUT/innodb, OUT/innodb_kbs8, OUT/archive, OUT/myrocks) with the same phases:
#   load       LOAD DATA into a table with its primary key only (Archive: no key at all)
#   add_index  ALTER TABLE ... ADD INDEX ix_a (a), ADD INDEX ix_c_a (c, a) on the loaded table
#   load_ix    LOAD DATA of the same file into a fresh table that has those indexes already
#   flush      (MyRocks only) the memtable flushed into SSTs
# Archive has no secondary indexes: its run has `load` only. Then `ioattr compare` over the
# four runs (rows/s, KB written per row, reads per row; table, OUT/compare.json,
# OUT/compare.html), `--by file_class` for the index build's temp files, and `report --by
# phase` per run (the bulk line: rows by statement kind, and each table's size on disk from
# its files).
#
#   examples/bulk_load.sh [--size tiny|small] [--out DIR]
#
# tiny: 40K rows (~4 MiB file), small: 300K rows. Run as root.
# Exit status: 0 ok, 1 a step failed, 2 bad usage or an unusable host.
set -euo pipefail

prog=bulk_load
# shellcheck source=examples/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
seed_recordings bulk "$@"
runs=("${RUNS[@]}")   # innodb, innodb_kbs8, archive, myrocks

echo "--- ioattr compare (4 runs) --phase load,add_index,load_ix"
"$IOATTR" compare "${runs[@]}" --phase load,add_index,load_ix --html "$OUT/compare.html" \
    || die 1 "ioattr compare failed"
"$IOATTR" compare "${runs[@]}" --phase load,add_index,load_ix --format json -o "$OUT/compare.json" \
    || die 1 "ioattr compare --format json failed"
echo
echo "--- ioattr compare --phase add_index --by file_class --top 4 (the index builds)"
"$IOATTR" compare "${runs[@]}" --phase add_index --by file_class --top 4 || die 1 "ioattr compare --by failed"
for rec in "${runs[@]}"; do
    echo
    echo "--- $(basename "$rec"): ioattr report --by phase (bulk terms, sizes on disk)"
    "$IOATTR" report "$rec" --by phase || die 1 "ioattr report failed on $rec"
done
echo
say "compare: $OUT/compare.json, $OUT/compare.html"

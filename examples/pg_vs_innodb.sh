#!/usr/bin/env bash
# the seed case's other half: the miniature insert benchmark's shape
# (examples/insert_benchmark.py: one table, auto-increment key, three covering secondary
# indexes) on InnoDB (8M buffer pool, O_DIRECT) and on PostgreSQL 15 (8MB shared_buffers,
# buffered IO), each on a private server, one recording each (OUT/innodb, OUT/postgres),
# phases l.i0 (load, 1000-row INSERTs), l.x (CREATE INDEX x3), l.i1 (100-row INSERTs) and q
# (10-row INSERTs, each followed by ten covering range queries on a random secondary index).
# Then `ioattr compare` (table, OUT/compare.json, OUT/compare.html) and `--phase q --by index`.
#
#   examples/pg_vs_innodb.sh [--size tiny|small] [--out DIR]
#
# tiny: 20K + 5K rows, q for 3 s; small: 200K + 20K rows, q for 15 s. Run as root.
# Exit status: 0 ok, 1 a step failed, 2 bad usage or an unusable host.
set -euo pipefail

prog=pg_vs_innodb
# shellcheck source=examples/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ -x /usr/lib/postgresql/15/bin/postgres ] || die 2 "PostgreSQL 15 is not installed (apt-get install postgresql-15)"
seed_recordings pg "$@"
runs=("${RUNS[@]}")   # innodb, postgres

echo "--- ioattr compare innodb postgres --phase l.i0,l.x,l.i1,q"
"$IOATTR" compare "${runs[@]}" --phase l.i0,l.x,l.i1,q --html "$OUT/compare.html" || die 1 "ioattr compare failed"
"$IOATTR" compare "${runs[@]}" --phase l.i0,l.x,l.i1,q --format json -o "$OUT/compare.json" \
    || die 1 "ioattr compare --format json failed"
echo
echo "--- ioattr compare --phase q --by index --top 5"
"$IOATTR" compare "${runs[@]}" --phase q --by index --top 5 || die 1 "ioattr compare --by index failed"
echo
say "compare: $OUT/compare.json, $OUT/compare.html"

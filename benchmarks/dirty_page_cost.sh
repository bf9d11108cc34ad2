#!/bin/bash
# What charging writeback to its dirtier costs (bpf/block.bpf.c: ioattr_dirty_folio per folio
# dirtied, the page walk in ioattr_rq_issue per page written back): BPF run-time statistics
# of the block set while (1) a target and (2) a process that is not one dirty 64 MiB in 4 KiB
# writes and sync. Root; leaves kernel.bpf_stats_enabled at 0.
#   sudo benchmarks/dirty_page_cost.sh .venv/bin/ioattr /tmp/dirty-cost
set -e
IOATTR=$1; OUT=$2
rm -rf "$OUT"; mkdir -p "$OUT"
W='import sys, os
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
for i in range(16384): os.write(fd, b"x" * 4096)
os.close(fd)'
last_id() { bpftool -j prog show | python3 -c 'import json, sys; print(max([p["id"] for p in json.load(sys.stdin)] + [0]))'; }
stats() {  # $1: the last program id before the recorder started (other ioattr may run on the host)
    bpftool -j prog show | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    n = p.get("name", "")
    if n in ("ioattr_dirty_folio", "ioattr_rq_issue") and p["id"] > int(sys.argv[1]):
        c, t = p.get("run_cnt", 0), p.get("run_time_ns", 0)
        print(f"  {n:20s} run_cnt {c:7d} run_time_ns {t:10d} ns/run {t / c if c else 0:6.0f}")' "$1"
}
trap 'sysctl -qw kernel.bpf_stats_enabled=0' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
echo "a target dirties 64 MiB (4 KiB writes), then sync:"
before=$(last_id)
"$IOATTR" record -o "$OUT/rec1" --interval 1 -- sh -c "python3 -c '$W' $OUT/t; sync; sleep 3" >/dev/null 2>&1 &
rec=$!; sleep 3.5; stats $before; wait $rec
sleep 20 & idle=$!
echo "not a target dirties 64 MiB (4 KiB writes), then sync:"
before=$(last_id)
"$IOATTR" record -o "$OUT/rec2" --interval 1 --pid $idle >/dev/null 2>&1 &
rec=$!; sleep 3; python3 -c "$W" "$OUT/o"; sync; stats $before
kill -INT $rec; wait $rec || true; kill $idle

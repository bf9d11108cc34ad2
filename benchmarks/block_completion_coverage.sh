#!/usr/bin/env bash
# How many of a disk's request completions a BPF program on block_rq_complete sees,
# against the device's own counters, while tests/workloads/ioflood saturates the disk.
#   benchmarks/block_completion_coverage.sh [SECONDS] [DEVICE]   (root; default 8 s, vda)
# Prints the device's completions (reads + writes + discards + flushes, /sys/block/DEV/stat),
# the BPF program's count for the same device and window, and the programs' share.
# docs/block.md says what the difference is and how ioattr still counts every request.
set -euo pipefail
secs=${1:-8}
dev=${2:-vda}
here=$(cd "$(dirname "$0")/.." && pwd)
flood="$here/tests/workloads/ioflood"
[ -x "$flood" ] || make -s -C "$here/tests/workloads"
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
read -r major minor < <(stat -L -c '%t %T' "/dev/$dev" | awk '{printf "%d %d\n", strtonum("0x"$1), strtonum("0x"$2)}')
kdev=$(( (major << 20) | minor ))  # the tracepoint's dev_t encoding
completions() { awk '{print $1 + $5 + $12 + $16}' "/sys/block/$dev/stat"; }

bpftrace -e "tracepoint:block:block_rq_complete /args->dev == $kdev/ { @seen = count(); }" \
	> "$work/bt.out" 2>/dev/null &
bt=$!
until grep -q Attaching "$work/bt.out"; do sleep 0.2; done
sleep 1
before=$(completions)
for i in 1 2; do
	"$flood" "$work/flood$i" 64 256 > /dev/null &
	pids+=($!)
done
sleep "$secs"
kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
pids=()
sleep 1  # the last completions
after=$(completions)
kill -INT "$bt"; wait "$bt" || true
seen=$(awk '/@seen/ {print $2}' "$work/bt.out")
device=$((after - before))
echo "device completions: $device"
echo "seen by BPF:        $seen"
awk -v s="$seen" -v d="$device" 'BEGIN { printf "share seen:         %.4f%%\n", 100 * s / d }'

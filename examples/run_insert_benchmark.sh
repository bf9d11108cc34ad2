#!/usr/bin/env bash
# The miniature insert benchmark (examples/insert_benchmark.py) under ioattr, at two table
# sizes, each on its own private MariaDB with a 16M buffer pool; then the per-phase
# reports and, where `ioattr explain` is available, why storage reads per query changed:
# between q100 and q1000 of each run, and between the small and the large run.
#
#   examples/run_insert_benchmark.sh [OUTDIR]
#
# Run as root (BPF). OUTDIR (default /tmp/ioattr-insert-benchmark-<time>) receives
#   small/, large/          the recordings (report/explain them again at any time)
#   small.json, large.json  the benchmark's own per-phase numbers
# Environment:
#   SIZES="small"   only the small size (default "small large")
#   MODE=private    the one-liner form instead: `ioattr record -- insert_benchmark.py --private`,
#                   the benchmark starting its own server (see examples/README.md); ioattr
#                   then also traces every other mysqld/mariadbd on the host
#   IOATTR, PYTHON  the programs (default: the checkout's .venv)
# Exit status: 0 ok, 1 a run failed, 2 bad usage or an unusable host.
set -euo pipefail

prog=run_insert_benchmark
# shellcheck source=examples/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"   # here, root, say, die, IOATTR, PYTHON; root only
[ $# -le 1 ] || die 2 "usage: $0 [OUTDIR]"
mode=${MODE:-server}
case $mode in server|private) ;; *) die 2 "MODE: unknown mode '$mode' (server, private)";; esac

out=${1:-/tmp/ioattr-insert-benchmark-$(date +%Y%m%d-%H%M%S)}
sizes=${SIZES:-small large}
for size in $sizes; do
    case $size in small|large) ;; *) die 2 "SIZES: unknown size '$size' (small, large)";; esac
    [ ! -e "$out/$size" ] || die 2 "$out/$size already exists: give another OUTDIR"
done
mkdir -p "$out"

trap stop_server EXIT
trap 'exit 1' INT TERM

have_explain() { "$IOATTR" explain --help >/dev/null 2>&1; }

for size in $sizes; do
    rec=$out/$size
    echo "=== insert benchmark, size $size -> $rec"
    # The benchmark marks each phase with a statement containing ioattr:phase=NAME, which
    # the recorder sees through its probes on mariadbd. --stages full: explain's story needs the
    # optimize/execute stages (they cost QPS; the default `statement` gives digests only).
    start=$(date +%s)
    if [ "$mode" = server ]; then
        start_server 16M
        say "private MariaDB pid $PID (buffer pool 16M)"
        "$IOATTR" record -o "$rec" --pid "$PID" --stages full --mysql-defaults-file "$CLIENT_CNF" -- \
            "$PYTHON" "$here/insert_benchmark.py" --socket "$SOCKET" --size "$size" \
            --json "$out/$size.json" || die 1 "the $size run failed (recording, if any, in $rec)"
        stop_server
    else
        # It also prints "== phase NAME"; --phase-pattern turns those lines into the same
        # phases should the recorder not see the statements.
        "$IOATTR" record -o "$rec" --stages full --phase-pattern '^== phase (\S+)$' -- \
            "$PYTHON" "$here/insert_benchmark.py" --private --size "$size" \
            --json "$out/$size.json" || die 1 "the $size run failed (recording, if any, in $rec)"
    fi
    echo "=== $size: $(( $(date +%s) - start ))s"
    echo
    echo "--- ioattr report $rec --by phase"
    "$IOATTR" report "$rec" --by phase
    echo
    echo "--- ioattr report $rec --by phase,index --layer syscall --top 25"
    "$IOATTR" report "$rec" --by phase,index --layer syscall --top 25
    if have_explain; then
        echo
        echo "--- ioattr explain $rec --baseline q100 --target q1000"
        "$IOATTR" explain "$rec" --baseline q100 --target q1000 || say "explain failed"
    fi
    echo
done

if have_explain && [ -d "$out/small" ] && [ -d "$out/large" ]; then
    echo "--- ioattr explain $out/small --against $out/large --baseline q1000"
    "$IOATTR" explain "$out/small" --against "$out/large" --baseline q1000 || say "explain failed"
elif ! have_explain; then
    echo "($prog: this ioattr has no 'explain' yet; the reports above are the whole story)"
fi
echo
echo "recordings: $out (ioattr report/explain them again at any time)"

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

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
prog=run_insert_benchmark

say() { echo "$prog: $*" >&2; }
die() { echo "$prog: error: $2" >&2; exit "$1"; }

if [ -z "${IOATTR:-}" ]; then
    if [ -x "$root/.venv/bin/ioattr" ]; then IOATTR=$root/.venv/bin/ioattr
    else IOATTR=$(command -v ioattr || true); fi
fi
[ -n "$IOATTR" ] || die 2 "ioattr not found: run 'make build' or set IOATTR"
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$root/.venv/bin/python" ]; then PYTHON=$root/.venv/bin/python; else PYTHON=python3; fi
fi
[ "$(id -u)" -eq 0 ] || die 2 "needs root (ioattr loads BPF programs)"
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

srv_pid=""
stop_server() {
    # closing the helper's stdin makes it shut its server down (by pid) and remove its directory
    if [ -n "$srv_pid" ]; then
        local fd=${SRV[1]:-} i
        if [ -n "$fd" ]; then exec {fd}>&-; fi
        for i in $(seq 600); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
        kill -TERM "$srv_pid" 2>/dev/null || true   # still there after 60 s: ask it by its pid
        wait "$srv_pid" 2>/dev/null || true
        srv_pid=""
    fi
}
trap stop_server EXIT
trap 'exit 1' INT TERM

start_server() {
    coproc SRV { exec "$PYTHON" "$here/private_server.py" --buffer-pool 16M \
                      --option innodb_lru_scan_depth=100; }
    srv_pid=$SRV_PID
    PID="" SOCKET="" CLIENT_CNF="" READY=""
    while IFS= read -r -t 120 line <&"${SRV[0]}"; do
        case $line in
            PID=*|SOCKET=*|CLIENT_CNF=*|BASEDIR=*|READY=*) eval "${line%%=*}=\${line#*=}" ;;
        esac
        [ "$READY" = 1 ] && break
    done
    [ "$READY" = 1 ] || die 1 "the private MariaDB did not start"
}

have_explain() { "$IOATTR" explain --help >/dev/null 2>&1; }

for size in $sizes; do
    rec=$out/$size
    echo "=== insert benchmark, size $size -> $rec"
    # The benchmark marks each phase with a statement containing ioattr:phase=NAME, which
    # the recorder sees through its probes on mariadbd. --stages full: explain's story needs the
    # optimize/execute stages (they cost QPS; the default `statement` gives digests only).
    start=$(date +%s)
    if [ "$mode" = server ]; then
        start_server
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

# Sourced by the example scripts (after `set -euo pipefail` and prog=NAME): where the
# checkout is, one-line messages and exits, the programs to run, and the root check.
# Sets: here, root, IOATTR, PYTHON; defines say and die (die STATUS MESSAGE).

here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(dirname "$here")

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

# A private MariaDB (examples/private_server.py) with buffer pool $1, alive as long as the
# helper's stdin stays open: sets PID, SOCKET, CLIENT_CNF (and srv_pid, the helper's pid).
srv_pid=""
start_server() {
    coproc SRV { exec "$PYTHON" "$here/private_server.py" --buffer-pool "$1" \
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

# Closing the helper's stdin makes it shut its server down (by pid) and remove its directory.
stop_server() {
    if [ -n "$srv_pid" ]; then
        local fd=${SRV[1]:-} i
        if [ -n "$fd" ]; then exec {fd}>&-; fi
        for i in $(seq 600); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
        kill -TERM "$srv_pid" 2>/dev/null || true   # still there after 60 s: ask it by its pid
        wait "$srv_pid" 2>/dev/null || true
        srv_pid=""
    fi
}

# The seed-comparison scripts' options: --size tiny|small (default small), --out DIR (default
# /tmp/ioattr-$1-<time>, must not exist). Sets SIZE and OUT; bad usage exits 2 with one line.
parse_size_out() {
    local name=$1; shift
    SIZE=small OUT=""
    while [ $# -gt 0 ]; do
        case $1 in
            --size) [ $# -ge 2 ] || die 2 "--size wants tiny or small"; SIZE=$2; shift 2 ;;
            --size=*) SIZE=${1#--size=}; shift ;;
            --out) [ $# -ge 2 ] || die 2 "--out wants a directory"; OUT=$2; shift 2 ;;
            --out=*) OUT=${1#--out=}; shift ;;
            -h|--help) echo "usage: $0 [--size tiny|small] [--out DIR]"; exit 0 ;;
            *) die 2 "unknown argument '$1' (usage: $0 [--size tiny|small] [--out DIR])" ;;
        esac
    done
    case $SIZE in tiny|small) ;; *) die 2 "--size must be tiny or small, not '$SIZE'" ;; esac
    OUT=${OUT:-/tmp/ioattr-$name-$(date +%Y%m%d-%H%M%S)}
    [ ! -e "$OUT" ] || die 2 "$OUT already exists: give another --out"
    [ -d "$(dirname "$OUT")" ] || die 2 "no such directory: $(dirname "$OUT")"
}

# A seed-comparison script's start: its options (parse_size_out SCENARIO "$@"), then
# examples/seed_runs.py SCENARIO's recordings made in $OUT (seed_runs: sets RUNS).
seed_recordings() {
    local scenario=$1; shift
    parse_size_out "$scenario" "$@"
    say "recordings in $OUT (size $SIZE)"
    seed_runs "$scenario"
}

# Run examples/seed_runs.py SCENARIO into $OUT; sets RUNS to the recordings it wrote, in its
# order. On failure its own one-line error is the script's (exit 1).
seed_runs() {
    local listing line
    listing=$("$PYTHON" "$here/seed_runs.py" "$1" --size "$SIZE" --out "$OUT") || exit 1
    RUNS=()
    while IFS= read -r line; do
        case $line in RUN=*) RUNS+=("$OUT/${line#RUN=}") ;; esac
    done <<< "$listing"
    [ ${#RUNS[@]} -gt 0 ] || die 1 "seed_runs.py $1 wrote no recording"
}

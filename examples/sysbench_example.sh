#!/usr/bin/env bash
# sysbench under ioattr, one phase per workload: a private MariaDB (never the host's
# service), sysbench prepare, then oltp_read_only and oltp_write_only, each announced
# to the running recorder with `ioattr mark`; then the reports.
#
#   examples/sysbench_example.sh [OUTDIR]
#
# Run as root (BPF). OUTDIR (default /tmp/ioattr-sysbench-<time>) receives the recording.
# Environment (defaults): TABLES=4 TABLE_SIZE=50000 THREADS=2 RUN_SECONDS=15
# BUFFER_POOL=32M (4 x 50000 rows is about 45 MiB: more than the pool, so reads reach
# storage); IOATTR, PYTHON choose the programs (default: the checkout's .venv).
#
# sysbench runs with its defaults, server-side prepared statements included: ioattr digests
# each COM_STMT_PREPARE's text and charges every execution to it (docs/queries.md).
#
# Instead of `ioattr mark` you can let a regular expression over a wrapped command's
# output start the phases:
#   ioattr record -o REC --pid "$PID" --phase-pattern '^PHASE (\S+)' -- sh -c \
#     'echo PHASE read_only; sysbench oltp_read_only ... run; echo PHASE write_only; sysbench ...'
#
# Exit status: 0 ok, 1 a step failed, 2 bad usage or an unusable host.
set -euo pipefail

prog=sysbench_example
# shellcheck source=examples/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"   # here, root, say, die, IOATTR, PYTHON; root only
command -v sysbench >/dev/null || die 2 "sysbench is not installed (apt-get install sysbench)"
[ $# -le 1 ] || die 2 "usage: $0 [OUTDIR]"

TABLES=${TABLES:-4}
TABLE_SIZE=${TABLE_SIZE:-50000}
THREADS=${THREADS:-2}
RUN_SECONDS=${RUN_SECONDS:-15}
BUFFER_POOL=${BUFFER_POOL:-32M}
rec=${1:-/tmp/ioattr-sysbench-$(date +%Y%m%d-%H%M%S)}
[ ! -e "$rec" ] || die 2 "$rec already exists: give another OUTDIR"

rec_pid=""
cleanup() {
    # the recorder first (it writes its last interval), then the server; both by pid
    if [ -n "$rec_pid" ] && kill -0 "$rec_pid" 2>/dev/null; then
        kill -INT "$rec_pid" 2>/dev/null || true
        wait "$rec_pid" 2>/dev/null || true
    fi
    stop_server
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# 1. A private MariaDB, alive as long as the helper's stdin stays open.
say "starting a private MariaDB (buffer pool $BUFFER_POOL)"
start_server "$BUFFER_POOL"
say "mariadbd pid $PID, socket $SOCKET"

sb() {
    local test=$1; shift
    sysbench "$test" --db-driver=mysql --mysql-socket="$SOCKET" --mysql-user=root --mysql-db=sbtest \
        --tables="$TABLES" --table-size="$TABLE_SIZE" --threads="$THREADS" "$@"
}

# 2. The recorder, attached to that server (never a password on the command line: the
#    client option file has the socket and user). Its first phase is "prepare".
"$IOATTR" record -o "$rec" --pid "$PID" --mysql-defaults-file "$CLIENT_CNF" --phase prepare &
rec_pid=$!
for _ in $(seq 600); do
    [ -d "$rec/control" ] && break   # registered: marks are accepted from now on
    kill -0 "$rec_pid" 2>/dev/null || { wait "$rec_pid" || true; rec_pid=""; die 1 "ioattr record failed"; }
    sleep 0.1
done
[ -d "$rec/control" ] || die 1 "ioattr record did not start within 60s"

# 3. The workloads, one phase each.
mariadb --defaults-file="$CLIENT_CNF" -e "CREATE DATABASE IF NOT EXISTS sbtest"
say "prepare: $TABLES tables x $TABLE_SIZE rows"
sb oltp_read_only prepare >/dev/null

for phase in read_only write_only; do
    "$IOATTR" mark "$phase" --recording "$rec"
    sleep 0.3   # the recorder looks for marks every 100 ms
    say "$phase: ${RUN_SECONDS}s"
    sb "oltp_$phase" --time="$RUN_SECONDS" --report-interval=0 run | grep -E "queries:|transactions:|95th" || true
done

"$IOATTR" mark --stop --recording "$rec"
wait "$rec_pid" || die 1 "ioattr record exited with an error"
rec_pid=""

# 4. The reports.
echo
echo "--- ioattr report $rec --by phase"
"$IOATTR" report "$rec" --by phase
echo
echo "--- ioattr report $rec --by phase,file_class,op --layer syscall"
"$IOATTR" report "$rec" --by phase,file_class,op --layer syscall
echo
echo "--- ioattr report $rec --by phase,index --layer syscall --top 15"
"$IOATTR" report "$rec" --by phase,index --layer syscall --top 15
echo
echo "--- ioattr report $rec --by phase,query --layer syscall --top 10"
"$IOATTR" report "$rec" --by phase,query --layer syscall --top 10
if "$IOATTR" explain --help >/dev/null 2>&1; then
    echo
    echo "--- ioattr explain $rec --baseline read_only --target write_only"
    "$IOATTR" explain "$rec" --baseline read_only --target write_only || say "explain failed"
fi
echo
echo "recording: $rec"

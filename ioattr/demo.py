"""`ioattr demo`: the whole story on a private MariaDB, with no set-up.

Starts a throwaway MariaDB (its own datadir, socket and port under a temp
dir; never the host's service) with a small buffer pool, records the
miniature insert benchmark (examples/insert_benchmark.py: load, index
build, inserts, then rate-limited inserts with range queries) with its
phases marked by the benchmark itself, and prints the per-phase summary,
where the IO went, and the explanation of how the last phase differs from
the first query phase. Without the examples directory (an installed copy),
it records a short sysbench run instead. The recording is kept.
"""
from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ioattr.collectors import features
from ioattr.collectors.targets import TargetSpec
from ioattr.errors import RuntimeFailure
from ioattr.explain import explain
from ioattr.explain_text import render_text
from ioattr.reader import Recording
from ioattr.recorder import RecordOptions, Recorder
from ioattr.render import render_table
from ioattr.report import ReportRequest, build_report

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "insert_benchmark.py"


@dataclass
class DemoOptions:
    output: Path
    seconds: int = 10
    table_size: int = 50000
    buffer_pool: str = "6M"  # smaller than the small benchmark's table: the query phases must read


def say(msg: str) -> None:
    print(f"ioattr demo: {msg}", file=sys.stderr, flush=True)


def _workload(db, opts: DemoOptions) -> tuple[list[str], str, str | None]:
    """(command, first phase, explain baseline) for the demo's workload."""
    if EXAMPLE.exists():
        cmd = [sys.executable, str(EXAMPLE), "--socket", str(db.socket), "--size", "small",
               "--phase-seconds", str(max(3, opts.seconds // 2))]
        return cmd, "setup", "q100"
    if shutil.which("sysbench") is None:
        raise RuntimeFailure("neither examples/insert_benchmark.py nor sysbench is available for the demo")
    db.sysbench("oltp_read_write", "prepare", tables=2, table_size=opts.table_size)
    db.restart()
    cmd = ["sysbench", "oltp_read_write", "--db-driver=mysql", f"--mysql-socket={db.socket}",
           "--mysql-user=root", "--mysql-db=sbtest", "--tables=2", f"--table-size={opts.table_size}",
           "--threads=2", f"--time={opts.seconds}", "--report-interval=0", "--db-ps-mode=disable", "run"]
    return cmd, "oltp_read_write", None


def run_demo(opts: DemoOptions) -> int:
    from ioattr.sandbox import PrivateMariaDB, SandboxError

    features.require_tracing_host()
    say(f"starting a private MariaDB with a {opts.buffer_pool} buffer pool "
        "(temp datadir, socket and port; not the host's service)")
    try:
        db = PrivateMariaDB(buffer_pool=opts.buffer_pool)
        db.start()
    except SandboxError as e:
        raise RuntimeFailure(f"could not start a private MariaDB: {e}") from e
    try:
        cmd, first_phase, baseline = _workload(db, opts)
        say("recording: " + " ".join(Path(c).name if i < 2 else c for i, c in enumerate(cmd)))
        spec = TargetSpec(pids=[db.pid], command=cmd)
        # the whole story: stages too (their uprobes cost QPS, not a concern in a demo)
        rec_opts = RecordOptions(output=opts.output, targets=spec, interval=1.0, phase=first_phase,
                                 log=say, discard_command_output=True, stages="full")
        code = Recorder(rec_opts).run()
        if code != 0:
            raise RuntimeFailure("the demo's workload failed; the recording is kept at " + str(opts.output))
    finally:
        db.stop()
    rec = Recording(opts.output)
    print("\nPer phase, in the insert benchmark's terms")
    print(render_table(build_report(rec, ReportRequest(by=["phase"], layer="syscall", top=12)), ["phase"]),
          end="")
    for title, by in (("Where the reads and writes went, by phase and index", ["phase", "index"]),
                      ("Who did the IO, by role and stage", ["role", "stage"])):
        print(f"\n{title}")
        print(render_table(build_report(rec, ReportRequest(by=by, top=12)), by), end="")
    names = rec.phase_names()
    if len(names) >= 2:
        base = baseline if baseline in names else names[0]
        target = names[-1]
        if base != target:
            print(f"\nWhy did the IO change from {base} to {target}?")
            print(render_text(explain(rec, baseline=base, target=target)), end="")
    print(f"\nrecording kept at {opts.output}: try `ioattr report {opts.output} --by phase,index` or "
          f"`ioattr explain {opts.output} --format html -o explain.html`")
    return 0


def default_output() -> Path:
    return Path(time.strftime("ioattr-demo-%Y%m%d-%H%M%S"))

"""`ioattr demo`: the whole story on a private MariaDB, with no set-up.

Starts a throwaway MariaDB (its own datadir, socket and port under a temp
dir; never the host's service), loads a small sysbench dataset, restarts
it so the buffer pool is cold, records it under a short read/write run,
and prints where the IO went. The recording is kept for `ioattr report`.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ioattr.collectors import features
from ioattr.collectors.targets import TargetSpec
from ioattr.errors import RuntimeFailure
from ioattr.reader import Recording
from ioattr.recorder import RecordOptions, Recorder
from ioattr.render import render_table
from ioattr.report import ReportRequest, build_report


@dataclass
class DemoOptions:
    output: Path
    seconds: int = 10
    tables: int = 2
    table_size: int = 50000
    buffer_pool: str = "16M"


def say(msg: str) -> None:
    print(f"ioattr demo: {msg}", file=sys.stderr, flush=True)


def run_demo(opts: DemoOptions) -> int:
    from ioattr.sandbox import PrivateMariaDB, SandboxError

    features.require_tracing_host()
    say("starting a private MariaDB (temp datadir, socket and port; not the host's service)")
    try:
        db = PrivateMariaDB(buffer_pool=opts.buffer_pool)
        db.start()
    except SandboxError as e:
        raise RuntimeFailure(f"could not start a private MariaDB: {e}") from e
    try:
        say(f"loading sysbench data: {opts.tables} tables x {opts.table_size} rows")
        db.sysbench("oltp_read_write", "prepare", tables=opts.tables, table_size=opts.table_size)
        db.restart()
        say(f"buffer pool is cold ({opts.buffer_pool}); recording a {opts.seconds}s read/write run")
        sysbench = ["sysbench", "oltp_read_write", "--db-driver=mysql", f"--mysql-socket={db.socket}",
                    "--mysql-user=root", "--mysql-db=sbtest", f"--tables={opts.tables}",
                    f"--table-size={opts.table_size}", "--threads=2", f"--time={opts.seconds}",
                    "--report-interval=0", "--db-ps-mode=disable", "run"]
        spec = TargetSpec(pids=[db.pid], command=sysbench)
        rec_opts = RecordOptions(output=opts.output, targets=spec, interval=1.0, phase="oltp_read_write",
                                 log=say, discard_command_output=True)
        code = Recorder(rec_opts).run()
        if code != 0:
            raise RuntimeFailure("sysbench failed during the demo run")
    finally:
        db.stop()
    rec = Recording(opts.output)
    for title, by, layer in (("Where mariadbd's IO went, by file (syscall layer)", ["file"], "syscall"),
                             ("How it was issued, by thread and API", ["thread", "api"], "syscall"),
                             ("What reached the disk, by file", ["file"], "block")):
        print(f"\n{title}")
        report = build_report(rec, ReportRequest(by=by, layer=layer, top=12))
        print(render_table(report, by), end="")
    print(f"\nrecording kept at {opts.output}: try `ioattr report {opts.output} --by file,thread,op`")
    return 0


def default_output() -> Path:
    return Path(time.strftime("ioattr-demo-%Y%m%d-%H%M%S"))

"""`ioattr demo`: the whole story on a private MariaDB, with no set-up.

Starts a throwaway MariaDB (its own datadir, socket and port under a temp
dir; never the host's service) with a small buffer pool, records the
miniature insert benchmark (examples/insert_benchmark.py, shipped in the
package as ioattr/examples: load, index build, inserts, then rate-limited
inserts with range queries) with its phases marked by the benchmark itself,
and prints the per-phase summary, where the IO went, and the explanation of
how the last phase differs from the first query phase.

The recording is kept outside any source checkout (a user data directory by
default, see default_output), so a demo never leaves files in the tree.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import ioattr
from ioattr.collectors import features
from ioattr.collectors.targets import TargetSpec
from ioattr.errors import RuntimeFailure
from ioattr.explain import explain
from ioattr.explain_text import render_text
from ioattr.reader import Recording
from ioattr.recorder import RecordOptions, Recorder
from ioattr.render import render_table
from ioattr.report import ReportRequest, build_report

#: the benchmark as installed (package data) and in a source checkout (editable installs)
EXAMPLE_CANDIDATES = (
    Path(ioattr.__file__).resolve().parent / "examples" / "insert_benchmark.py",
    Path(__file__).resolve().parent.parent / "examples" / "insert_benchmark.py",
)
#: the benchmark's "small" preset: rows loaded in l.i0
DEFAULT_TABLE_SIZE = 30_000
DEFAULT_PHASE_SECONDS = 5


@dataclass
class DemoOptions:
    output: Path
    seconds: int = DEFAULT_PHASE_SECONDS  # per query phase (q100, q500, q1000)
    table_size: int = DEFAULT_TABLE_SIZE  # rows after l.i0
    buffer_pool: str = "6M"  # smaller than the small benchmark's table: the query phases must read


def say(msg: str) -> None:
    print(f"ioattr demo: {msg}", file=sys.stderr, flush=True)


def insert_benchmark() -> Path:
    """Path of examples/insert_benchmark.py, installed or in the checkout."""
    for path in EXAMPLE_CANDIDATES:
        if path.is_file():
            return path
    raise RuntimeFailure("the demo's workload (examples/insert_benchmark.py) is missing from this "
                         f"installation (looked in {EXAMPLE_CANDIDATES[0].parent}); reinstall ioattr")


def _workload(db, opts: DemoOptions) -> tuple[list[str], str, str]:
    """(command, first phase, explain baseline) for the demo's workload."""
    # l.i1 inserts a third of the load again, as the benchmark's presets do
    cmd = [sys.executable, str(insert_benchmark()), "--socket", str(db.socket),
           "--rows", str(opts.table_size), "--rows-l-i1", str(max(1, opts.table_size // 3)),
           "--phase-seconds", str(opts.seconds)]
    return cmd, "setup", "q100"


def run_demo(opts: DemoOptions) -> int:
    from ioattr.sandbox import PrivateMariaDB, SandboxError

    features.require_tracing_host()
    say(f"the recording goes to {opts.output}")
    say(f"starting a private MariaDB with a {opts.buffer_pool} buffer pool "
        "(temp datadir, socket and port; not the host's service)")
    try:
        db = PrivateMariaDB(buffer_pool=opts.buffer_pool)
        db.start()
    except SandboxError as e:
        raise RuntimeFailure(f"could not start a private MariaDB: {e}") from e
    try:
        cmd, first_phase, baseline = _workload(db, opts)
        say("recording the miniature insert benchmark: "
            + " ".join(Path(c).name if i < 2 else c for i, c in enumerate(cmd)))
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
    # by phase: the per-phase summary (qps, ips, rpq, ...) and then the phase rows
    print(render_table(build_report(rec, ReportRequest(by=["phase"], layer="syscall", top=12)), ["phase"]),
          end="")
    print("qps: queries/s; ips: rows inserted/s; rpq: storage reads per query; KB r/q: KB read per query; "
          "KB w/i: KB written per insert; CPU µs/q, cs/q: the server's CPU time and context switches per query")
    # one layer per table: the block layer repeats the same IO without index or stage
    for title, by in (("Where the reads and writes went, by phase and index (syscalls)", ["phase", "index"]),
                      ("Who did the IO, by role and stage (syscalls)", ["role", "stage"])):
        print(f"\n{title}")
        report = build_report(rec, ReportRequest(by=by, layer="syscall", top=12))
        report.pop("summary", None)  # the per-phase summary is printed once, above
        print(render_table(report, by), end="")
    names = rec.phase_names()
    if len(names) >= 2:
        base = baseline if baseline in names else names[0]
        target = names[-1]
        if base != target:
            print(f"\nWhy did the IO change from {base} to {target}?")
            print(render_text(explain(rec, baseline=base, target=target)), end="")
    print(f"\nrecording kept at {opts.output}\n"
          f"  ioattr report {opts.output} --by phase,index\n"
          f"  ioattr explain {opts.output} --format html -o explain.html")
    return 0


def data_dir() -> Path:
    """Where demo recordings are kept: $XDG_DATA_HOME/ioattr, else ~/.local/share/ioattr.

    A user data directory, not the current directory: `make demo` runs in
    the source checkout, and a recording there would land in the tree.
    """
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the XDG spec ignores relative paths
        return Path(xdg) / "ioattr"
    return Path.home() / ".local" / "share" / "ioattr"


def default_output() -> Path:
    """A new, not yet existing directory for the demo's recording.

    demo-TIME under data_dir(); where that cannot be created (no home, a
    read-only home) ioattr-demo-TIME under /var/tmp, which survives reboots
    unlike /tmp.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        base = data_dir()
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"demo-{stamp}"
        if not os.access(base, os.W_OK):
            raise PermissionError(str(base))
    except (OSError, RuntimeError):  # RuntimeError: Path.home() without HOME or a passwd entry
        base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path(tempfile.gettempdir())
        name = f"ioattr-demo-{stamp}"
    out, n = base / name, 1
    while out.exists():  # two demos started within the same second
        n += 1
        out = base / f"{name}-{n}"
    return out

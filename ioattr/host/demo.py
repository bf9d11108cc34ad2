"""`ioattr demo`: the whole story on a private MariaDB, with no set-up.

The seed case of ioattr (../shared/DESIGN.md): the same insert benchmark at two
table sizes, and storage reads per query jump from ~0 to several. The demo runs
the miniature insert benchmark (examples/insert_benchmark.py, shipped in the
package as ioattr/examples: l.i0 load, l.x index build, l.i1 inserts, then the
query phases q100, q500, q1000) twice, each time on a fresh throwaway MariaDB
(its own datadir, socket and port under a temp dir; never the host's service)
with the same small buffer pool: once with a table that fits in it, once with
one several times larger. Each run is recorded with `ioattr record`'s defaults,
as a benchmarker would record a run that takes days. Then it prints the
per-phase table of both runs once, where the large run's IO went in its last query phase,
and the exact `ioattr explain SMALL --against LARGE` command it runs, with its answer.

The recordings are kept outside any source checkout (a user data directory by
default, see default_output), so a demo never leaves files in the tree.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rich.console import Console

import ioattr
from ioattr.analysis.report import ReportRequest, build_report
from ioattr.collectors import features
from ioattr.collectors.targets import TargetSpec
from ioattr import environment
from ioattr.errors import RuntimeFailure
from ioattr.format.reader import Recording
from ioattr.host.sandbox import PrivateMariaDB, SandboxError
from ioattr.live.recorder import RecordOptions, Recorder
from ioattr.output.fit import shell_lines, stderr_width, terminal_width, wrap_words
from ioattr.output.render import render_table, summary_tables

#: the benchmark as installed (package data) and in a source checkout (editable installs)
EXAMPLE_CANDIDATES = (
    Path(ioattr.__file__).resolve().parent / "examples" / "insert_benchmark.py",
    Path(__file__).resolve().parent.parent.parent / "examples" / "insert_benchmark.py",
)
#: rows loaded in l.i0 by the small run: ~8 MiB of data and indexes, half the buffer pool
DEFAULT_TABLE_SIZE = 30_000
#: rows loaded in l.i0 by the large run: ~55 MiB, more than 3x the buffer pool
DEFAULT_LARGE_TABLE_SIZE = 200_000
DEFAULT_PHASE_SECONDS = 3
DEFAULT_BUFFER_POOL = "16M"
#: the page cleaner keeps innodb_lru_scan_depth pages free; its default (1536) is more than a
#: 16M pool holds, which would keep even the small table from staying cached (as the benchmark's
#: own --private server does, examples/insert_benchmark.py PRIVATE_OPTIONS)
SERVER_OPTIONS = {"innodb_lru_scan_depth": "100"}
RUNS = ("small", "large")


@dataclass
class DemoOptions:
    output: Path                 # a directory: the two recordings go to OUTPUT/small and OUTPUT/large
    seconds: int = DEFAULT_PHASE_SECONDS  # per query phase (q100, q500, q1000)
    table_size: int = DEFAULT_TABLE_SIZE  # rows after l.i0, small run
    large_table_size: int = DEFAULT_LARGE_TABLE_SIZE  # rows after l.i0, large run
    buffer_pool: str = DEFAULT_BUFFER_POOL  # the same for both runs


def say(msg: str) -> None:
    """A progress line on stderr, wrapped to the terminal's width (stderr_width)."""
    lines = wrap_words(f"ioattr demo: {msg}", stderr_width())
    print("\n".join(lines), file=sys.stderr, flush=True)


def insert_benchmark() -> Path:
    """Path of examples/insert_benchmark.py, installed or in the checkout."""
    for path in EXAMPLE_CANDIDATES:
        if path.is_file():
            return path
    raise RuntimeFailure("the demo's workload (examples/insert_benchmark.py) is missing from this "
                         f"installation (looked in {EXAMPLE_CANDIDATES[0].parent}); reinstall ioattr")


#: rows inserted in l.i1 at most: with the indexes in place and a table larger than the buffer
#: pool every row costs reads (the benchmark's large preset inserts a tenth of the load)
MAX_ROWS_L_I1 = 10_000


def rows_l_i1(rows: int) -> int:
    """l.i1 inserts a third of the load again, as the small preset does, up to MAX_ROWS_L_I1."""
    return max(1, min(rows // 3, MAX_ROWS_L_I1))


def workload(socket: Path | str, rows: int, seconds: int, *extra: str) -> list[str]:
    """The benchmark's command line for one run of the demo (extra: more benchmark options)."""
    return [sys.executable, str(insert_benchmark()), "--socket", str(socket), "--rows", str(rows),
            "--rows-l-i1", str(rows_l_i1(rows)), "--phase-seconds", str(seconds), *extra]


def record_run(out: Path, rows: int, opts: DemoOptions) -> None:
    """One run: a fresh private MariaDB, the benchmark under a default recording, the server stopped."""
    try:
        db = PrivateMariaDB(buffer_pool=opts.buffer_pool, extra_options=SERVER_OPTIONS)
        db.start()
    except SandboxError as e:
        raise RuntimeFailure(f"could not start a private MariaDB: {e}") from e
    try:
        cmd = workload(db.socket, rows, opts.seconds)
        say(f"{out.name}: recording the miniature insert benchmark, {rows:,} rows, "
            + " ".join(Path(c).name if i < 2 else c for i, c in enumerate(cmd)))
        spec = TargetSpec(pids=[db.pid], command=cmd)
        # `ioattr record`'s defaults (probes, stages, interval): what a benchmarker records
        rec_opts = RecordOptions(output=out, targets=spec, phase="setup", log=say, discard_command_output=True)
        code = Recorder(rec_opts).run()
        if code != 0:
            raise RuntimeFailure(f"the demo's workload failed; the recording is kept at {out}")
    finally:
        db.stop()


def explain_argv(small: Path, large: Path) -> list[str]:
    """The explain command the demo runs, as a user would type it: baseline first, like diff."""
    return ["explain", str(small), "--against", str(large)]


def run_demo(opts: DemoOptions, run_cli: Callable[[list[str]], int]) -> int:
    """Record both runs, print their tables and run `ioattr explain` on them through
    run_cli (the CLI's main, passed in by cli/demo.py: nothing below cli/ imports it)."""
    features.require_tracing_host()
    runs = {name: opts.output / name for name in RUNS}
    say(f"the recordings go to {opts.output}")
    say(f"two runs of the same workload, each on a fresh private MariaDB with a {opts.buffer_pool} buffer pool "
        "(temp datadir, socket and port; not the host's service): small fits in it, large does not")
    for name, rows in zip(RUNS, (opts.table_size, opts.large_table_size)):
        record_run(runs[name], rows, opts)
    return show(opts, runs, run_cli)


def show(opts: DemoOptions, runs: dict[str, Path], run_cli: Callable[[list[str]], int]) -> int:
    """What the demo prints once both runs are recorded, laid out for the terminal's width."""
    recs = {name: Recording(path) for name, path in runs.items()}
    console = Console(file=sys.stdout, width=terminal_width(), force_terminal=False, color_system=None)
    console.print("\nPer phase, in the insert benchmark's terms "
                  f"(small: {opts.table_size:,} rows, large: {opts.large_table_size:,} rows, "
                  f"{opts.buffer_pool} buffer pool)", markup=False)
    rows = []
    for name, rec in recs.items():
        for row in build_report(rec, ReportRequest(by=["phase"], layer="syscall")).get("summary") or []:
            rows.append({**row, "phase": f"{name} {row['phase']}"})
    for table in summary_tables(rows, console.width):
        console.print(table)
    console.print("qps: queries/s; ips: rows inserted/s; rpq: storage reads per query (rpq engine: the server's "
                  "Innodb_data_reads per query); KB r/q: KB read per query; KB w/i: KB written per insert; "
                  "CPU µs/q, cs/q: the server's CPU time and context switches per query")

    # the phase explain compares: where its IO went in the large run
    last = recs["large"].phase_names()[-1]
    print(f"\nWhere the large run's IO went in {last}, by index (syscalls)")
    report = build_report(recs["large"], ReportRequest(by=["index"], phase=last, layer="syscall", top=10))
    report.pop("summary", None)  # the per-phase summary is printed once, above
    print(render_table(report, ["index"]), end="")

    argv = explain_argv(runs["small"], runs["large"])
    print("\nWhy do the queries read more in the large run?")
    # the commands shown as a shell takes them pasted, folded at spaces with a trailing backslash
    width = console.width
    print("\n".join(shell_lines(["ioattr", *argv], width, prefix="$ ")), flush=True)
    code = run_cli(argv)
    sys.stdout.flush()
    print("\n" + "\n".join(wrap_words(f"recordings kept at {opts.output}", width)))
    for cmd in (["ioattr", "report", str(runs["large"]), "--by", "phase,index"],
                ["ioattr", *argv, "--format", "html", "-o", "explain.html"]):
        print("\n".join(shell_lines(cmd, width, prefix="  ", indent=6)))
    return 0 if code == 0 else 1  # explain failing on the demo's own runs is a runtime failure


def data_dir() -> Path:
    """Where demo recordings are kept: $XDG_DATA_HOME/ioattr, else ~/.local/share/ioattr.

    A user data directory, not the current directory: `make demo` runs in
    the source checkout, and a recording there would land in the tree.
    """
    xdg = environment.get("XDG_DATA_HOME")
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

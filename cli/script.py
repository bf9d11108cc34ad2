"""`ioattr script [NAME [ARG...]]`: run one of the shipped bpftrace scripts by name.

The scripts (bpf/*.bt) answer one ad-hoc question each with tracepoints only, the way bcc's
tools do; this finds them wherever ioattr is installed, so a user types `ioattr script
io_latency` instead of a path into the package. Without NAME it lists them with the first
line of each script's own header. bpftrace's stdout, Ctrl-C and exit status reach the user
unchanged; its stderr passes through a filter that drops the one line that is noise on this
kernel (see harmless_bpftrace_line), so ioattr stays in between (a SIGINT or SIGTERM sent to
it goes on to bpftrace). Where nothing would be filtered, bpftrace replaces this process (exec).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from ioattr.cli.definition import command_parser
from ioattr.errors import HostError, UsageError

SUFFIX = ".bt"


def scripts_dir() -> Path:
    """The installed bpf/ folder (or $IOATTR_BPF_DIR), where the .bt files ship."""
    from ioattr.collectors.probes import bpf_object_dir  # lazy: start-up time

    return bpf_object_dir()


def shipped() -> dict[str, Path]:
    """Every shipped script by name (file name without .bt)."""
    return {p.name[:-len(SUFFIX)]: p for p in sorted(scripts_dir().glob(f"*{SUFFIX}"))}


def summary(path: Path) -> str:
    """The script's purpose: its header's first paragraph after "NAME.bt - ", on one line."""
    words: list[str] = []
    for line in path.read_text(errors="replace").splitlines()[:20]:
        text = line.strip().lstrip("/*").strip()
        if words:
            if not text:
                break
            words.append(text)
        elif f"{SUFFIX} - " in text:
            words.append(text.split(f"{SUFFIX} - ", 1)[1])
    return " ".join(words)


# bpftrace (0.17 here) raises RLIMIT_MEMLOCK at start and prints this when it cannot (a
# container without CAP_SYS_RESOURCE); since Linux 5.11 BPF memory is charged to the memory
# cgroup and the limit does not apply, so the line warns of nothing
RLIMIT_LINE = "couldn't set RLIMIT_MEMLOCK"
MEMCG_ACCOUNTING = (5, 11)


def kernel_version(release: str | None = None) -> tuple[int, int]:
    """(major, minor) of the running kernel (or of `release`, uname -r's form)."""
    m = re.match(r"(\d+)\.(\d+)", release if release is not None else os.uname().release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def harmless_bpftrace_line(line: str, kernel: tuple[int, int]) -> bool:
    """Whether a line of bpftrace's stderr is noise here: the RLIMIT_MEMLOCK error on a kernel
    that charges BPF memory to the memory cgroup (the limit is not used)."""
    return RLIMIT_LINE in line and kernel >= MEMCG_ACCOUNTING


def _term_with_parent() -> None:
    """preexec_fn: bpftrace gets SIGTERM (prints its maps, detaches) when ioattr dies. Killed
    with SIGKILL, ioattr cannot forward anything: its orphaned bpftrace kept tracing every
    process's pread64 for hours (a test's cleanup killed ioattr)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def run_filtered(bpftrace: str, argv: list[str]) -> int:
    """bpftrace as a child, its stderr without the harmless lines; its exit status (128+N for a
    signal, like a shell). A SIGINT/SIGTERM/SIGHUP sent to ioattr goes on to bpftrace, which
    prints its maps and exits (Ctrl-C in a terminal reaches both: bpftrace takes it once)."""
    kernel = kernel_version()
    proc = subprocess.Popen(argv, executable=bpftrace, stderr=subprocess.PIPE, preexec_fn=_term_with_parent)

    def forward(signum: int, _frame: object) -> None:
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        assert proc.stderr is not None
        for raw in iter(proc.stderr.readline, b""):
            if not harmless_bpftrace_line(raw.decode(errors="replace"), kernel):
                sys.stderr.buffer.write(raw)
                sys.stderr.flush()
        code = proc.wait()
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
    return 128 - code if code < 0 else code


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command_parser(sub, "script")
    p.add_argument("name", nargs="?", metavar="NAME", help="the script (without .bt); none: list them")
    p.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARG",
                   help="the script's own arguments ($1, $2, ...: see its header)")
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print the bpftrace command instead of running it (an option before NAME: what follows NAME goes to the script)")


def run(args: argparse.Namespace) -> int:
    found = shipped()
    if not args.name:
        width = max((len(n) for n in found), default=0)
        for name, path in found.items():
            print(f"{name:<{width}}  {summary(path)}")
        return 0
    if args.name not in found:
        raise UsageError(f"no script named {args.name!r} (one of: {', '.join(found) or 'none shipped'})")
    argv = ["bpftrace", str(found[args.name]), *args.script_args]
    if args.print_only:
        print(" ".join(argv))
        return 0
    bpftrace = shutil.which("bpftrace")
    if not bpftrace:
        raise HostError("bpftrace is not installed (apt install bpftrace)")
    sys.stdout.flush()
    if kernel_version() >= MEMCG_ACCOUNTING:
        return run_filtered(bpftrace, argv)
    os.execv(bpftrace, argv)  # an older kernel: nothing to filter, every line may matter
    return 1  # not reached: exec replaced this process

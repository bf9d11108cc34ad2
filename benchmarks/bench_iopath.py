#!/usr/bin/env python3
"""BPF ns per run of the IO-path programs on InnoDB-like page reads, without a server.

Why: the per-program figures of bench_sysbench_qps.py come from a shared,
busy machine and from host-wide runs (other processes' syscalls and bios
run the same programs), so a change worth 10-40 ns per run drowns there.
Here one process (benchmarks/innodb_page_loop.c) does N pread64() (or, with
--read, lseek() + read(); with --aio, io_submit() + io_getevents(); with
--preadv or --aiov, two adjacent pages a call into two iovecs by preadv() or one
IOCB_CMD_PREADV; --aiovw writes them back, the same bytes, with IOCB_CMD_PWRITEV; with
--iovecs K, K adjacent pages a call into K iovecs by preadv()) of 16 KiB
from a file whose pages carry InnoDB index-page headers, registered in
page_files like a tablespace, so every read runs the whole sync path the
server's page reads run: pread enter (fd -> inode), exit (accounting + page
classification, one bpf_probe_read_user of the header) and, with O_DIRECT,
bio_queue / rq_issue / rq_complete. Variants (NAME=DIR of built BPF objects,
'' = this tree's bpf/) run interleaved, a fresh loop process per run, and
every run is checked exact: the loop's io_stats count and classified pages
equal N, each page under the index id and level its header says.

    sudo .venv/bin/python benchmarks/bench_iopath.py --variant before=/tmp/bpf_before --variant tree=
    sudo .venv/bin/python benchmarks/bench_iopath.py --untraced ...   # the loop is not a target
    sudo .venv/bin/python benchmarks/bench_iopath.py --wire query ...  # the statement reader
    sudo .venv/bin/python benchmarks/bench_iopath.py --preadv --variant before=DIR --unclassified before ...

With --wire query|range|long|prepared the loop is benchmarks/wire_loop.c instead: a
connection thread reading MySQL command packets from a socketpair the way
MariaDB does (4-byte header read, payload read right after it, EAGAIN + poll
when the next statement is not there yet), with a client process answering
each OK; the stage set's wire reader (ioattr_wire_recv) runs on every
recvfrom of both, and each run is checked exact: wire_stmts and stmt_stats
count N statements of the server (COM_QUERY, `query` a 36-byte point select or
`range` the insert benchmark's ~105-byte q100 range query, `long` a ~4 KiB `INSERT ...; COMMIT`
counted as two: all under one digest).

Figures include the BPF statistics' own two clock reads per run (~65-70 ns
here). Other processes' syscalls and bios still run the programs while the
loop runs (their runs leave early and are counted in runs/N): read ns/run
next to runs.
"""
from __future__ import annotations

import datetime
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from ioattr.collectors import abi, libbpf  # noqa: E402
from ioattr.collectors.drain import io_stats_drainer, page_stats_drainer, statement_drainer  # noqa: E402
from ioattr.collectors.probes import ProbeSession  # noqa: E402
from ioattr.collectors.stage_probes import StageProbes  # noqa: E402
from ioattr.collectors.targets import TargetMap  # noqa: E402
from verdict import bench_parser  # noqa: E402

PAGE = 16384
PAGES = 1024
SPACE_ID = 7
PROGRAMS = ("ioattr_wire_recv", "ioattr_wire_sys", "ioattr_wire_send", "ioattr_wire_send_sys", "ioattr_tp_ent4",
            "ioattr_tp_ent3", "ioattr_tp_exit", "ioattr_bio_queue", "ioattr_rq_issue", "ioattr_rq_complete")
NO_SUCH_PID = 0x7FFFFFF0


def index_id_of(page: int) -> int:
    return 40 + page % 4


def level_of(page: int) -> int:
    return 1 if page % 3 == 0 else 0


def make_file(path: Path) -> None:
    """PAGES pages whose FIL header and index page header are what InnoDB writes."""
    with open(path, "wb") as f:
        for p in range(PAGES):
            page = bytearray(PAGE)
            struct.pack_into(">I", page, 4, p)            # FIL_PAGE_OFFSET
            struct.pack_into(">H", page, 24, 17855)       # FIL_PAGE_TYPE = FIL_PAGE_INDEX
            struct.pack_into(">I", page, 34, SPACE_ID)    # FIL_PAGE_SPACE_ID
            struct.pack_into(">H", page, 64, level_of(p))  # PAGE_LEVEL
            struct.pack_into(">Q", page, 66, index_id_of(p))  # PAGE_INDEX_ID
            f.write(page)
        f.flush()
        os.fsync(f.fileno())


def fdinfo(fd: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/self/fdinfo/{fd}") as f:
        for line in f:
            k, _, v = line.partition(":")
            if v.strip().isdigit():
                out[k.strip()] = int(v.strip())
    return out


VECTORED = ("preadv", "aiov", "aiovw", "uringv")  # two adjacent pages a call, one iovec each (innodb_page_loop.c)
#: io_uring's READV: only the first iovec's buffer is known at completion (bpf/uring.bpf.c), so
#: only its page is classified; the second is counted as IO, never classified from the wrong memory
FIRST_IOV_ONLY = ("uringv",)


def pages_a_call(mode: str) -> int:
    """Adjacent pages one call of the loop reads, one iovec each: "preadvK" K (--iovecs K)."""
    if mode.startswith("preadv") and mode[6:].isdigit():
        return int(mode[6:])
    return 2 if mode in VECTORED else 1


def expected_pages(n: int, mode: str = "pread") -> dict[tuple[int, int], int]:
    want: dict[tuple[int, int], int] = {}
    span = pages_a_call(mode)
    for i in range(n):
        first = (i * 7919) % (PAGES - span + 1)
        for p in range(first, first + span) if mode not in FIRST_IOV_ONLY else (first,):
            want[(index_id_of(p), level_of(p))] = want.get((index_id_of(p), level_of(p)), 0) + 1
    return want


def one_run(exe: Path, data: Path, bpf_dir: str, sets: tuple[str, ...], n: int, direct: bool,
            untraced: bool, mode: str = "pread", wire: str = "", classified: bool = True) -> dict[str, object]:
    """One loop process under one variant: per-program ns/run and runs, checked exact.
    bpf_dir "-": nothing loaded (the detached baseline of the wall time). classified False: the
    variant classifies none of the loop's pages (objects from before vectored reads were)."""
    if bpf_dir == "-":
        return detached_run(exe, data, n, direct, mode, wire)
    env_before = os.environ.get("IOATTR_BPF_DIR")
    if bpf_dir:
        os.environ["IOATTR_BPF_DIR"] = bpf_dir
    else:
        os.environ.pop("IOATTR_BPF_DIR", None)
    argv = ([str(exe), str(n), *wire.split(":")] if wire else
            [str(exe), str(data), str(n), str(PAGES), "1" if direct else "0", mode])
    loop = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert loop.stdout is not None and loop.stdin is not None
        pid = int(loop.stdout.readline().split()[1])
        session = ProbeSession(sets, pages=True)
        session.open()
        try:
            TargetMap(session.map_fd("targets"), session.shared_fds.get("target_slots")).add(
                NO_SUCH_PID if untraced else pid)
            if not wire:
                st = os.stat(data)
                libbpf.map_update(session.map_fd("page_files"),
                                  abi.InodeKey(dev=abi.kernel_dev_of_stat(st.st_dev), ino=st.st_ino),
                                  abi.InnodbFile(space_id=SPACE_ID, page_shift=14, file_class=1))
            if wire:
                stages = StageProbes(session, "wire")
                why = stages._attach_wire()
                if why:
                    raise RuntimeError(why)
            fds = {k: v for k, v in session.program_fds().items() if v >= 0 and k in PROGRAMS}
            before = {k: fdinfo(v) for k, v in fds.items()}
            loop.stdin.write("g")
            loop.stdin.flush()
            out: dict[str, object] = {"wall_ns_per_call": loop_done(loop) / n}
            for k, v in fds.items():
                a = fdinfo(v)
                runs = a["run_cnt"] - before[k]["run_cnt"]
                out[k] = {"ns_per_run": (a["run_time_ns"] - before[k]["run_time_ns"]) / max(runs, 1),
                          "runs": runs}
            out["error"] = (check_wire(session, stages, pid, n, untraced, wire) if wire
                            else check(session, pid, n, untraced, mode, classified))
            return out
        finally:
            session.close()
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()
        if env_before is None:
            os.environ.pop("IOATTR_BPF_DIR", None)
        else:
            os.environ["IOATTR_BPF_DIR"] = env_before


def loop_done(loop: subprocess.Popen) -> float:
    """Wait for the loop's "done [wall ns]" (wire_loop.c prints its wall time; 0 if none)."""
    assert loop.stdout is not None
    words = loop.stdout.readline().split()
    if not words or words[0] != "done" or loop.wait() != 0:
        raise RuntimeError("the loop process failed")
    return float(words[1]) if len(words) > 1 else 0.0


def detached_run(exe: Path, data: Path, n: int, direct: bool, mode: str, wire: str) -> dict[str, object]:
    """The loop with nothing of ioattr loaded: its wall time is the baseline of the others'."""
    argv = ([str(exe), str(n), *wire.split(":")] if wire else
            [str(exe), str(data), str(n), str(PAGES), "1" if direct else "0", mode])
    loop = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert loop.stdout is not None and loop.stdin is not None
        loop.stdout.readline()
        loop.stdin.write("g")
        loop.stdin.flush()
        return {"wall_ns_per_call": loop_done(loop) / n, "error": None}
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()


def check(session: ProbeSession, pid: int, n: int, untraced: bool, mode: str = "pread",
          classified: bool = True) -> str | None:
    """The loop's reads in io_stats and page_stats, exactly (none when untraced)."""
    raw, vals = io_stats_drainer(session.map_fd("io_stats"), 65536).read()
    keys = raw.view(abi.IO_KEY_DTYPE)
    mine = (keys["tgid"] == pid) & (keys["layer"] == 0)
    count = int(vals["count"][mine].sum())
    if count != (0 if untraced else n):
        return f"io_stats counted {count} syscall reads, expected {0 if untraced else n}"
    praw, pvals = page_stats_drainer(session.map_fd("page_stats")).read()
    pkeys = praw.view(abi.PAGE_KEY_DTYPE)
    got: dict[tuple[int, int], int] = {}
    for k, v in zip(pkeys, pvals):
        if int(k["tgid"]) != pid:
            continue
        if int(k["flags"]) or int(k["space_id"]) != SPACE_ID or int(k["page_type"]) != 17855:
            return f"a page classified with flags {int(k['flags'])}, space {int(k['space_id'])}"
        idx = (int(k["index_id"]), int(k["level"]))
        got[idx] = got.get(idx, 0) + int(v["pages"])
    want = {} if untraced or not classified else expected_pages(n, mode)
    if got != want:
        return f"page_stats {got}, expected {want}"
    return None


def check_wire(session: ProbeSession, stages: StageProbes, pid: int, n: int, untraced: bool,
               wire: str) -> str | None:
    """The server's N statements in wire_stmts and stmt_stats (with stmt_slots), exactly (none when
    untraced)."""
    want = 0 if untraced else n
    # "long" sends two statements a packet (INSERT ...; COMMIT), one digest
    want_wire = want * (2 if wire.split(":")[0] == "long" else 1)
    if stages.wire_count(pid) != want_wire:
        return f"wire_stmts counted {stages.wire_count(pid)} statements, expected {want_wire}"
    maps = {m.name: m.fd for m in session.loaded_set("stage").obj.maps()}
    # the hash and, where the objects have it, the array in front of it (stmt_slots)
    raw, vals = statement_drainer(maps["stmt_stats"], maps.get("stmt_slots"), 16384).read()
    keys = raw.view(abi.STMT_KEY_DTYPE)
    mine = keys["tgid"] == pid
    got = {int(d): int(c) for d, c in zip(keys["digest"][mine], vals["count"][mine])}
    if sum(got.values()) != want:
        return f"stmt_stats counted {sum(got.values())} statements, expected {want}"
    prepared = wire.split(":")[0] == "prepared"
    # the loop executes statement id 1 without preparing it: counted under the label of a
    # statement prepared before tracing (objects from before prepared statements were digested:
    # under the command, 0x17)
    labels = {0x17, abi.DIGEST_PREPARED_BEFORE}
    if want and (len(got) != 1 or prepared != bool(labels & set(got))):
        return f"stmt_stats digests {got}: expected one ({'0x17 or 253' if prepared else 'a text digest'})"
    return None


def main() -> int:
    ap = bench_parser(__doc__.split("\n")[0], rounds=5)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=DIR",
                    help="BPF objects to measure (DIR empty: this tree's bpf/; '-': nothing loaded, "
                         "the wall time's baseline); at least one")
    ap.add_argument("--calls", type=int, default=50_000)
    ap.add_argument("--buffered", action="store_true", help="page-cache reads (no O_DIRECT, no block IO)")
    ap.add_argument("--untraced", action="store_true", help="the loop is not a target (the early exits)")
    ap.add_argument("--read", action="store_const", const="read", dest="mode", default="pread",
                    help="lseek()+read() instead of pread64() (tp_ent3; the offset comes from f_pos)")
    ap.add_argument("--aio", action="store_const", const="aio", dest="mode",
                    help="io_submit() of one read + io_getevents() (libaio's path: tp_ent3 both)")
    ap.add_argument("--preadv", action="store_const", const="preadv", dest="mode",
                    help="preadv() of two adjacent pages into two iovecs (tp_ent4; the vectored path)")
    ap.add_argument("--iovecs", type=int, metavar="K",
                    help="preadv() of K adjacent pages into K iovecs (3-16; PostgreSQL 18's combined "
                         "reads are of up to 16 blocks by default)")
    ap.add_argument("--aiov", action="store_const", const="aiov", dest="mode",
                    help="io_submit() of one IOCB_CMD_PREADV of two pages in two iovecs + io_getevents()")
    ap.add_argument("--uringv", action="store_const", const="uringv", dest="mode",
                    help="one io_uring READV of two pages in two iovecs (needs the uring set: --sets "
                         "syscalls,targets,block,uring); only the first iovec's page is classified")
    ap.add_argument("--aiovw", action="store_const", const="aiovw", dest="mode",
                    help="as --aiov, IOCB_CMD_PWRITEV of the same pages (their pages classified at submission)")
    ap.add_argument("--unclassified", action="append", default=[], metavar="NAME",
                    help="variant NAME classifies none of the loop's pages: checked as none "
                         "(objects from before --preadv/--aiov pages were classified)")
    ap.add_argument("--wire", choices=("query", "range", "long", "prepared"), default="",
                    help="the statement reader on a socketpair connection (benchmarks/wire_loop.c) "
                         "instead of page reads; --sets defaults to targets,stage")
    ap.add_argument("--solo", action="store_true",
                    help="with --wire: one process writes each packet to itself and reads it back "
                         "(wire_loop.c solo): its wall time a statement is CPU time, no ping-pong")
    ap.add_argument("--sets", default="")
    args = ap.parse_args()
    if not args.variant:
        ap.error("give at least one --variant NAME=DIR")
    if args.iovecs is not None:
        if not 3 <= args.iovecs <= 16 or args.mode != "pread" or args.wire:
            ap.error("--iovecs K: K of 3-16, alone (it is its own read path)")
        args.mode = f"preadv{args.iovecs}"
    variants = []
    for spec in args.variant:
        name, sep, d = spec.partition("=")
        if not name or not sep or (d and d != "-" and not Path(d).is_dir()):
            ap.error(f"--variant {spec!r}: want NAME=DIR of built BPF objects (DIR may be empty)")
        variants.append((name, d))
    if os.geteuid() != 0:
        print("bench_iopath: needs root", file=sys.stderr)
        return 2
    stats_fd = libbpf.enable_run_time_stats()
    if stats_fd is None:
        print("bench_iopath: cannot turn on BPF run-time statistics", file=sys.stderr)
        return 1
    sets = tuple((args.sets or ("targets,stage" if args.wire else "syscalls,targets,block")).split(","))
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="ioattr-iopath-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        exe = work / "innodb_page_loop"
        src = "wire_loop.c" if args.wire else "innodb_page_loop.c"
        subprocess.run(["cc", "-O2", "-Wall", "-o", str(exe), str(HERE / src), "-luring"], check=True)
        data = work / "fake.ibd"
        if not args.wire:
            make_file(data)
        for r in range(args.rounds):
            for name, d in (variants if r % 2 == 0 else variants[::-1]):
                o = one_run(exe, data, d, sets, args.calls, not args.buffered, args.untraced, args.mode,
                            args.wire + (":solo" if args.solo and args.wire else ""),
                            classified=name not in args.unclassified)
                if o["error"]:
                    print(f"bench_iopath: {name} round {r + 1}: {o['error']}", file=sys.stderr)
                    return 1
                runs.append({"variant": name, "round": r, **o})
    os.close(stats_fd)
    summary: dict[str, dict[str, object]] = {}
    for name, _ in variants:
        mine = [x for x in runs if x["variant"] == name]
        summary[name] = {}
        for prog in PROGRAMS:
            vals = [x[prog]["ns_per_run"] for x in mine if prog in x]  # type: ignore[index]
            rns = [x[prog]["runs"] / args.calls for x in mine if prog in x]  # type: ignore[index]
            # ns per loop call (per statement with --wire): every run of the program, the
            # untraced client's early exits included
            per_call = [x[prog]["ns_per_run"] * x[prog]["runs"] / args.calls  # type: ignore[index]
                        for x in mine if prog in x]
            if vals:
                summary[name][prog] = {"ns_per_run_median": statistics.median(vals), "min": min(vals),
                                       "max": max(vals), "runs_per_call_median": statistics.median(rns),
                                       "ns_per_call_median": statistics.median(per_call)}
        walls = [x["wall_ns_per_call"] for x in mine if x.get("wall_ns_per_call")]
        if walls:  # the loop's own wall time a call (wire_loop.c): dispatch included
            summary[name]["wall"] = {"ns_per_call_median": statistics.median(walls), "min": min(walls),
                                     "max": max(walls)}
        print(name + ": " + ", ".join(
            f"{p.removeprefix('ioattr_')} {v['ns_per_run_median']:.0f} ({v['min']:.0f}-{v['max']:.0f}),"
            f" {v['runs_per_call_median']:.2f} runs/call = {v['ns_per_call_median']:.0f} ns/call"
            for p, v in summary[name].items() if p != "wall")
            + (f"; wall {walls and statistics.median(walls):.0f} ns/call "
               f"({min(walls):.0f}-{max(walls):.0f})" if walls else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "benchmark": "bench_iopath", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "command": sys.argv, "params": vars(args), "summary": summary, "runs": runs}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

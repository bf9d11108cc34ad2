"""Helpers shared by the suite: run the installed `ioattr`, watch BPF state."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterator, Self, TypeVar

from ioattr.collectors.targets import socket_inodes

ROOT = Path(__file__).resolve().parent.parent
IOATTR = str(Path(sys.executable).parent / "ioattr")
IOGEN = ROOT / "tests" / "workloads" / "iogen"
T = TypeVar("T")


def ioattr(*args: str, timeout: float = 120, check: bool = False, exe: str = IOATTR,
           **kw) -> subprocess.CompletedProcess:
    """Run `ioattr ARGS` to completion, capturing text output (`exe`: another installation's)."""
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"ioattr {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r


def cli_in_process(args: list[str]) -> tuple[int, str, str]:
    """`ioattr ARGS` in this process (no interpreter start-up per run): (exit code, stdout, stderr)."""
    import contextlib
    import io

    from ioattr.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(args))
        except SystemExit as e:           # argparse
            rc = e.code if isinstance(e.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


def varint(n: int) -> bytes:
    """`n` as an unsigned LEB128 varint (RocksDB's varint32/64, Parquet's ULEB128): 7 bits a
    byte, low first, the top bit set on every byte but the last."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def build_bpf_harness(d: Path, source: str) -> Path:
    """Compile `source`, a C program including bpf/ headers, with the host's clang into D/h
    (-Wall -Werror, as plain C: no BPF target); the executable's path."""
    clang = shutil.which("clang")
    assert clang, "clang is installed by `make` (it builds the BPF objects)"
    (d / "h.c").write_text(source)
    r = subprocess.run([clang, "-O1", "-Wall", "-Werror", f"-I{ROOT / 'bpf'}", str(d / "h.c"), "-o", str(d / "h")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return d / "h"


def synthetic_writer(path: Path, phase: str, start: float, targets: list[str], probe_sets: list[str]):
    """A RecordingWriter for a hand-written recording in `path`: its first phase `phase` starts at
    `start`, and no parts are merged behind the test's back (close it with finish_synthetic)."""
    from ioattr.format.recording import RecordingWriter

    w = RecordingWriter.create(path, targets=targets, interval=1.0, phase=phase, probe_sets=probe_sets,
                               degraded={})
    w.auto_compact = False
    w.meta["phases"][0]["start"] = start
    return w


def finish_synthetic(w, path: Path, counters: list[tuple], end: float) -> Path:
    """Write `counters` (ts, phase, pid, source, name, value, text) to the counters table, close
    the writer and end the last phase at `end` in meta.json; `path`."""
    cols = ("ts", "phase", "pid", "source", "name", "value", "text")
    w.add_columns({c: [r[i] for r in counters] for i, c in enumerate(cols)}, table="counters")
    w.close()
    meta = json.loads((path / "meta.json").read_text())
    meta["phases"][-1]["end"] = end
    (path / "meta.json").write_text(json.dumps(meta))
    return path


def fake_map_calls(monkeypatch, fake: T) -> T:
    """Route collectors/libbpf's map calls a drainer makes (lookup_batch, map_lookup_and_delete,
    map_delete) to `fake`'s methods of those names, for the test; `fake`."""
    from ioattr.collectors import libbpf

    for name in ("lookup_batch", "map_lookup_and_delete", "map_delete"):
        monkeypatch.setattr(libbpf, name, getattr(fake, name))
    return fake


def proc_read_bytes(pid: int) -> int:
    """The kernel's count of bytes process `pid` (all its threads) submitted for block reads
    (/proc/PID/io read_bytes)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    raise AssertionError(f"no read_bytes in /proc/{pid}/io")


PS_LOST_OPS = 2  # file operations performance_schema may have lost per file (assert_ps_lower_bound)


def assert_ps_lower_bound(ours: int, ps: int, per_op: int, what: object = None) -> None:
    """`ours` (a count, or bytes of `per_op`-byte operations) is what performance_schema counted
    for a file, or up to PS_LOST_OPS operations more.

    performance_schema adds each file operation to the file's summary with plain increments
    (the count `m_count++`, the bytes `m_sum += n`, no atomics), from whichever thread did the
    IO, so two threads doing IO on one file at once can lose an increment, and the count and
    the byte sum lose theirs independently. Seen: COUNT_READ 4932 with 4931 pages of bytes,
    4864 with 4862, 4901 with 4902, where ioattr's views all had the larger number plus at most
    one. A single-threaded writer's numbers are exact: compare those with ==."""
    assert 0 <= ours - ps <= PS_LOST_OPS * per_op, (what, ours, ps)


def explain_json_and_text(*args: str) -> tuple[dict, str]:
    """`ioattr explain ARGS` twice, as JSON and as text, each exiting 0: (the JSON, the text)."""
    r = ioattr("explain", *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    t = ioattr("explain", *args)
    assert t.returncode == 0, t.stderr
    return json.loads(r.stdout), t.stdout


def innodb_metrics(db, prefix: str) -> dict[str, int]:
    """INFORMATION_SCHEMA.INNODB_METRICS counters whose names start with `prefix`, by the rest
    of their name."""
    rows = db.query("SELECT NAME, COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS WHERE NAME LIKE %s",
                    (prefix + "%",))
    return {name[len(prefix):]: int(count) for name, count in rows}


def fake_tracefs(root: Path, events: list[str]) -> Path:
    """A tracefs with only these events (category:name), for the missing-tracepoint paths."""
    for ev in events:
        (root / "events" / ev.replace(":", "/")).mkdir(parents=True)
    return root


def report_json(rec: Path, *args: str) -> dict:
    r = ioattr("report", str(rec), "--format", "json", *args, check=True)
    return json.loads(r.stdout)


def loaded_ioattr_programs() -> list[str]:
    """Names of loaded BPF programs that belong to ioattr (prefix ioattr_)."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True)
    return [p.get("name", "") for p in json.loads(out.stdout or "[]")
            if p.get("name", "").startswith(("ioattr_", "doctor_"))]


def _prog_ids_held_by_processes(skip_pid: int | None = None, bpf_fds_only: bool = False) -> set[int]:
    """Ids of BPF programs some live process holds (directly or through a link), from fdinfo;
    skip_pid: not that process's; bpf_fds_only: only program and link fds (what a tracer holds)."""
    held: set[int] = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == skip_pid:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fdinfo")
        except OSError:
            continue
        for fd in fds:
            try:
                if bpf_fds_only and os.readlink(f"/proc/{pid}/fd/{fd}") not in ("anon_inode:bpf-prog",
                                                                                "anon_inode:bpf_link"):
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    for line in f:
                        if line.startswith("prog_id:"):
                            held.add(int(line.split()[1]))
            except (OSError, ValueError):
                continue
    return held


def leaked_ioattr_programs() -> list[str]:
    """ioattr programs still loaded although no process holds them: a leak.

    Programs of other ioattr processes running at the same time (another test
    session, a developer's recording) are held by those processes and are not
    counted, so two ioattr runs at once can't fail each other's checks."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True)
    progs = [(p["id"], p.get("name", "")) for p in json.loads(out.stdout or "[]")
             if p.get("name", "").startswith(("ioattr_", "doctor_"))]
    if not progs:
        return []
    held = _prog_ids_held_by_processes()
    return [name for pid, name in progs if pid not in held]


def wait_until(cond: Callable[[], T], timeout: float, what: str | Callable[[], str],
               interval: float = 0.05) -> T:
    """Poll `cond` until it returns something truthy and return that; fail clearly
    after `timeout` seconds. Tests wait for the event they need with this, never
    for a fixed time: the timeout is a safety net against hangs (make it generous),
    not a claim about speed, so a slow machine only makes the test slower. `what` may be
    a callable, to describe the state at the time of failure."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g} s waiting for {said}")
        time.sleep(interval)


def assert_rate(rate: float | None, count: float, seconds: float, what: object = None) -> None:
    """A rate the report printed is count over the phase's span; the span it prints beside it
    is rounded to the millisecond (and the rate to 2 decimals), so the rate lies between count
    over the span's two bounds: a 0.2 s phase is 0.25% either way, more than any fixed rel."""
    assert rate is not None and seconds > 0.0005, (rate, seconds, what)
    lo, hi = count / (seconds + 0.0005), count / (seconds - 0.0005)
    assert lo - 0.006 <= rate <= hi + 0.006, (rate, lo, hi, what)


def recording_phases(rec: Path) -> list[str]:
    """Names of the phases a (possibly still running) recording's meta.json lists so far."""
    try:
        meta = json.loads((rec / "meta.json").read_text())
    except (OSError, ValueError):  # not written yet
        return []
    return [p["name"] for p in meta.get("phases", [])]


def wait_phase(rec: Path, name: str, timeout: float = 60) -> None:
    """Wait until a running recorder has started phase `name` (meta.json lists it last).

    The recorder writes meta.json after it has drained the previous phase and taken its
    counters snapshot, so once this returns nothing done afterwards is counted there."""
    wait_until(lambda: recording_phases(rec)[-1:] == [name], timeout,
               lambda: f"the recorder to start phase {name!r} (phases so far: {recording_phases(rec)})")


def exporter_port(bg: "Background", timeout: float = 60) -> int:
    """The port a background `ioattr exporter --listen HOST:0` bound (the kernel picked a free
    one), read from its "exporting ... on http://HOST:PORT/metrics" line. Letting the server
    pick leaves no window in which another process can take the port (a bind, close and
    hand-out "free port" has one)."""
    bg.wait_for("exporting ", timeout)
    m = re.search(r"exporting .* on http://\S*:(\d+)/metrics", bg.stderr)
    assert m, f"no port in the exporter's start line: {bg.stderr}"
    port = int(m.group(1))
    assert port > 0, bg.stderr
    return port


def listening_tcp_ports(pid: int) -> set[int]:
    """TCP ports process `pid` listens on, from its socket fds and /proc/PID/net/tcp{,6}: how
    to find the port of a server told to listen on port 0 that does not print it."""
    inodes = {str(i) for i in socket_inodes(pid)}
    return {port for _, _, port, inode in tcp_listeners(f"/proc/{pid}/net") if inode in inodes}


def tcp_listeners(net: str = "/proc/net") -> list[tuple[str, str, int, str]]:
    """(table, local address hex, port, socket inode) of every LISTEN socket in NET/tcp{,6}."""
    found = []
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"{net}/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A":  # state LISTEN
                addr, port_hex = f[1].rsplit(":", 1)
                found.append((table, addr, int(port_hex, 16), f[9]))
    return found


def bpf_fds() -> list[str]:
    """This process's fds on BPF objects and perf events (programs, maps, links): what an
    in-process BPF session must give back when it closes, whatever the kernel's names."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(("anon_inode:bpf", "anon_inode:[perf_event]")):
            out.append(target)
    return sorted(out)


def setup_distribution():
    """setup.py's Distribution as `pip install .` sees it (packages, package_dir, package_data),
    read without building: run_setup runs setup.py in the checkout and stops after setup()'s
    arguments are parsed."""
    import setuptools  # noqa: F401 - first: it provides `distutils` on Python 3.12+
    from distutils.core import run_setup

    with contextlib.chdir(ROOT):  # package_dir's folders are relative to the current directory
        return run_setup(str(ROOT / "setup.py"), stop_after="init")


def synthetic_generator() -> ModuleType:
    """benchmarks/synthetic_recording.py as a module: it is a script, not part of a package,
    so it is loaded from its path (its generate() writes a recording of known content)."""
    spec = importlib.util.spec_from_file_location("synthetic_recording",
                                                  ROOT / "benchmarks" / "synthetic_recording.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@contextmanager
def recording(pid: int, rec: Path, *args: str) -> Iterator[Background]:
    """`ioattr record` of process `pid` into `rec` (0.3 s intervals; ARGS: more of its options)
    for the body of a `with`: attached before the body runs, stopped after it, and it must exit 0
    when the body completes; stopped in any case, so no recorder outlives a failing test."""
    recorder = Background("record", "-o", str(rec), "--pid", str(pid), "--interval", "0.3", *args)
    try:
        recorder.wait_recording()
        yield recorder
        code, err = recorder.stop()
        assert code == 0, err
    finally:
        recorder.stop()


def assert_no_ioattr_programs(timeout: float = 5.0) -> None:
    """Programs go away when their last fd closes; allow the kernel a moment."""
    deadline = time.monotonic() + timeout
    while True:
        progs = leaked_ioattr_programs()
        if not progs or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert progs == [], f"BPF programs still loaded with no process holding them: {progs}"


class Background:
    """`ioattr ARGS` running in the background until stopped; stderr collected by a thread.
    `exe`: another installation's `ioattr`; `cwd`: the directory it runs in."""

    def __init__(self, *args: str, exe: str = IOATTR, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True, cwd=cwd)
        self.stderr_lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def wait_for(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr:
                return
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise AssertionError(f"ioattr exited {self.proc.returncode}: {self.stderr}")
            time.sleep(0.05)
        raise AssertionError(f"ioattr did not say {text!r}: {self.stderr}")

    def wait_recording(self, timeout: float = 30) -> None:
        """Block until the recorder says it is attached and recording."""
        self.wait_for("recording ", timeout)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        return self.proc.returncode, self.stderr


class Prompted:
    """A Python child process driven line by line: it prints "ready" once set up (its files
    open, so nothing it does before then can reach a tracer attached afterwards), then for
    each line sent it does one step and prints "done". Ground-truth workloads use it: what
    they did is known exactly, and finished, before the test looks."""

    def __init__(self, *args: str, ready: str | None = "ready") -> None:
        """Start `python ARGS` and wait for its `ready` line (None: it prints none)."""
        self.proc = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        if ready is not None:
            assert self._line() == ready

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def step(self, line: str = "", answer: str = "done") -> None:
        """Send `line` and return when the child says the step is done (its line `answer`)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{line}\n")
        self.proc.stdin.flush()
        assert self._line() == answer

    def close(self) -> None:
        """Kill the child, whatever step it is at, and reap it."""
        self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def record_marked_phases(db, rec: Path, phases: list, *record_args: str, measure=None,
                         with_conn: bool = False, exe: str = IOATTR, cwd: Path | None = None) -> dict:
    """Record `db` (ioattr record -o REC --pid PID RECORD_ARGS) while each (name, work) of
    `phases` runs as a phase started by an SQL marker on one connection: work(cursor), or
    work(connection) with `with_conn`. Each phase's work starts only once the recorder has named
    the phase (the previous one is drained), so what follows is all this phase's. measure(),
    if given, is taken right before and right after each work: {name: (before, after)}, the
    ground truth the test compares with. The recorder is stopped (a final drain) and must exit 0.
    `exe` and `cwd`: another installation's `ioattr`, run in that directory."""
    bg = Background("record", "-o", str(rec), "--pid", str(db.pid), *record_args, exe=exe, cwd=cwd)
    truth: dict = {}
    try:
        bg.wait_recording()
        conn = db.connect()
        with conn.cursor() as cur:
            for name, work in phases:
                cur.execute(f"SELECT 'ioattr:phase={name}'")
                wait_phase(rec, name)
                before = measure() if measure else None
                work(conn if with_conn else cur)
                truth[name] = (before, measure() if measure else None)
        conn.close()
    except AssertionError as e:  # a phase that never came: what the recorder said
        raise AssertionError(f"{e}\nrecorder: {bg.stderr[-3000:]}") from None
    finally:  # stopping drains once more: nothing is lost by stopping right away
        code, err = bg.stop()
    assert code == 0, err
    return truth


def rocksdb_idle(db) -> bool:
    """A MyRocks server with no flush pending and no manual compaction running (the tests turn
    automatic compactions off: a compaction RocksDB finds due, COMPACTION_PENDING, never starts)."""
    pending = db.query("SELECT SUM(VALUE) FROM INFORMATION_SCHEMA.ROCKSDB_CFSTATS "
                       "WHERE STAT_TYPE IN ('MEM_TABLE_FLUSH_PENDING', 'NUM_IMMUTABLE_MEM_TABLE')")[0][0]
    running = db.query("SHOW GLOBAL STATUS LIKE 'Rocksdb_manual_compactions_running'")[0][1]
    return int(pending or 0) == 0 and int(running) == 0


def phased_iogen_command(rec: Path, data: Path, phases: tuple[str, ...], size: int) -> list[str]:
    """A command that runs iogen's odirect scenario (size bytes of 4 KiB O_DIRECT pwrites,
    then as many preads, in DATA/PHASE/odirect; its truth in DATA/PHASE.json) once in each
    of `phases`, for `ioattr record --phase-pattern 'PHASE=(\\w+)' --only-command -o REC`.

    It names each phase on stdout and then waits until the recorder has started that phase
    (meta.json lists it: start_phase writes it after draining the old phase and before
    anything of the new one is drained), so every phase's IO is certainly in that phase,
    whatever the timing."""
    steps = []
    for phase in phases:
        run = (f"{shlex.quote(str(IOGEN))} --dir {shlex.quote(str(data / phase))} --scenario odirect "
               f"--size {size} --json {shlex.quote(str(data / (phase + '.json')))}")
        if phase != phases[0]:
            steps.append(f"echo PHASE={phase}; wait_phase {phase}")
        steps.append(run)
    script = (f"set -e; meta={shlex.quote(str(rec / 'meta.json'))}; "
              r'wait_phase() { until grep -qF "\"name\": \"$1\"" "$meta" 2>/dev/null; do sleep 0.05; done; }; '
              + "; ".join(steps))
    return ["sh", "-c", script]

"""Exit code 2 and one line, everywhere: every subcommand under bad input, wrong server
credentials for the three live commands, and `ioattr compact`.

The sweep runs each subcommand with unknown options, bad numbers, unknown names,
missing paths, a file where a directory is expected, a directory that is no recording
and one whose meta.json is damaged: each must exit 2 with exactly one non-empty line on stderr that names
the subcommand, and never a traceback. Nothing in it loads a BPF program for long (bad
input is refused before attaching) and no case may run a real session."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import need, need_root
from tests.helpers import IOATTR, IOGEN, Background, assert_no_ioattr_programs, ioattr, phased_iogen_command, report_json

COMMANDS = ("compact", "compare", "demo", "doctor", "explain", "exporter", "mark", "record", "report", "script",
            "top")


PHASES = ("main", "load", "read")
IOGEN_SIZE = 64 * 1024        # odirect: 16 pwrite64 + 16 pread64 of 4 KiB per phase


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, str]:
    """A three-phase recording whose every phase has known IO, and a set of things that are not one.

    The cases below must fail on their arguments, never on what the recording happened to
    capture, so the fixture checks the recording it made: each phase holds exactly the
    O_DIRECT reads and writes iogen did in it (and `explain` has IO to explain in each)."""
    need_root()
    need(IOGEN.exists(), "tests/workloads/iogen is not built (make -C tests/workloads)")
    tmp = tmp_path_factory.mktemp("exit-codes")
    rec, data = tmp / "rec", tmp / "data"
    for phase in PHASES:
        # made before recording: iogen opens them O_TRUNC, keeping these inodes, so none can
        # be one the recorder's replaced meta.json (read by the wait loop) just freed -- an
        # inode with two paths in one interval is labelled "[2 files reusing one inode]"
        (data / phase).mkdir(parents=True)
        (data / phase / "odirect").touch()
    r = ioattr("record", "-o", str(rec), "--only-command", "--interval", "0.2", "--phase-pattern", r"PHASE=(\w+)",
               "--", *phased_iogen_command(rec, data, PHASES, IOGEN_SIZE))
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert [p["name"] for p in json.loads((rec / "meta.json").read_text())["phases"]] == list(PHASES)
    rows = report_json(rec, "--by", "phase,file,op", "--layer", "syscall")["rows"]
    for phase in PHASES:
        truth = json.loads((data / f"{phase}.json").read_text())["files"]
        (path, t), = truth.items()
        assert t["reads"] == t["writes"] == IOGEN_SIZE // 4096 and t["read_bytes"] == IOGEN_SIZE, t
        for op, count, nbytes in (("read", t["reads"], t["read_bytes"]), ("write", t["writes"], t["write_bytes"])):
            got = [(x["phase"], x["count"], x["bytes"]) for x in rows if x["file"] == path and x["op"] == op]
            assert got == [(phase, count, nbytes)], (path, op, got)
    (tmp / "afile").write_text("not a recording\n")
    (tmp / "emptydir").mkdir()
    (tmp / "nonempty").mkdir()
    (tmp / "nonempty" / "x").write_text("x")
    (tmp / "badmeta").mkdir()
    (tmp / "badmeta" / "meta.json").write_text('{"phases": [{"name": 1}]}')
    (tmp / "notjson").mkdir()
    (tmp / "notjson" / "meta.json").write_text("{not json")
    return {"rec": str(rec), "file": str(tmp / "afile"), "dir": str(tmp / "emptydir"),
            "nonempty": str(tmp / "nonempty"), "badmeta": str(tmp / "badmeta"), "notjson": str(tmp / "notjson"),
            "missing": str(tmp / "no-such-path"), "tmp": str(tmp)}


def _unreadable_recording(command: str) -> list[tuple[str, list[str], str]]:
    """A command that reads a recording, given none or one it can't read."""
    return [(command, [], "required: recording"), (command, ["{missing}"], "no such recording"),
            (command, ["{file}"], "not a directory"), (command, ["{dir}"], "no meta.json"),
            (command, ["{badmeta}"], "bad meta.json"), (command, ["{notjson}"], "unreadable recording metadata")]


def _unusable_output(command: str) -> list[tuple[str, list[str], str]]:
    """A command that writes a recording, given an -o it must refuse."""
    return [(command, ["-o", "{file}"], "not a directory"), (command, ["-o", "{rec}"], "already holds a recording"),
            (command, ["-o", "{nonempty}"], "not empty")]


def _output_options(command: str) -> list[tuple[str, list[str], str]]:
    """A command reading a recording, its options of add_output_arguments (cli/definition.py)
    refused: an unknown format, a --top not a positive number, an -o it cannot write."""
    return [(command, ["{rec}", "--format", "xml"], "unknown format 'xml'"),
            (command, ["{rec}", "--top", "0"], "--top"), (command, ["{rec}", "--top", "abc"], "invalid int value"),
            (command, ["{rec}", "-o", "{dir}"], "cannot write")]


def _live_options(command: str, *before: str) -> list[tuple[str, list[str], str]]:
    """A live command (ARGS start with `before`), its options of add_interval_argument and
    add_live_arguments (cli/definition.py) refused, before any probe is loaded."""
    return [(command, [*before, *args], needle) for args, needle in (
        (["--interval", "-1"], "--interval"), (["--interval", "0"], "--interval"),
        (["--interval", "abc"], "invalid float value"), (["--max-entries", "0"], "--max-entries"),
        (["--mysql-socket", "{missing}"], "--mysql-socket"),
        (["--mysql-defaults-file", "{dir}"], "cannot read option file"))]


# (command, arguments, a piece of the message); {name} is a path from the fixture
CASES: list[tuple[str, list[str], str]] = [
    # every subcommand: an unknown option
    *[(c, ["--no-such-option"], "unrecognized arguments: --no-such-option") for c in COMMANDS
      if c not in ("compact", "compare", "explain", "report")],
    *[(c, ["{rec}", "--no-such-option"], "unrecognized arguments") for c in ("compact", "compare", "explain",
                                                                           "report")],
    # compact
    *_unreadable_recording("compact")[:-1],
    # compare
    ("compare", [], "required: REC"),
    *[c for c in _unreadable_recording("compare")[1:]],
    ("compare", ["{rec}", "{missing}"], "no such recording"),
    ("compare", ["{rec}", "--phase", "nosuch"], "unknown phase 'nosuch'"),
    *_output_options("compare"),
    ("compare", ["{rec}", "--by", "colour"], "invalid choice: 'colour'"),
    ("compare", ["{rec}", "{rec}", "--label", "one"], "--label given 1 times for 2 recordings"),
    ("compare", ["{rec}", "--html", "{missing}/out.html"], "cannot write"),
    # demo (refused before any server starts)
    ("demo", ["--seconds", "0"], "--seconds"),
    ("demo", ["--seconds", "abc"], "invalid int value"),
    ("demo", ["--table-size", "1"], "--table-size"),
    *_unusable_output("demo"),
    # doctor
    ("doctor", ["extra"], "unrecognized arguments: extra"),
    # explain
    *_unreadable_recording("explain"),
    ("explain", ["{rec}", "--baseline", "nosuch"], "unknown phase 'nosuch'"),
    ("explain", ["{rec}", "--target", "nosuch"], "main, load, read"),
    *_output_options("explain"),
    ("explain", ["{rec}", "--metric", "nosuch"], "unknown metric 'nosuch'"),
    ("explain", ["{rec}", "--against", "{missing}"], "no such recording"),
    ("explain", ["{rec}", "--against", "{dir}"], "no meta.json"),
    # exporter (refused before listening or loading probes)
    ("exporter", ["--listen", "nonsense"], "--listen"),
    ("exporter", ["--listen", "127.0.0.1:-1"], "between 1 and 65535"),  # 0 is fine: any free port
    ("exporter", ["--listen", "127.0.0.1:70000"], "between 1 and 65535"),
    *_live_options("exporter"),
    ("exporter", ["--duration", "0"], "--duration"),
    ("exporter", ["--top-n", "0"], "--top-n"),
    ("exporter", ["--retention", "-1"], "--retention"),
    ("exporter", ["--max-entries", "1"], "--max-entries"),
    ("exporter", ["--stages", "nosuch"], "invalid choice"),
    ("exporter", ["--mysql-socket", "{file}"], "not a unix socket"),
    ("exporter", ["--mysql-defaults-file", "{missing}"], "cannot read option file"),
    ("exporter", ["--mysql-port", "0"], "--mysql-port"),
    ("exporter", ["--pid", "999999999"], "no such process"),
    # mark (always with --recording: never disturb a recording someone else is running)
    ("mark", [], "PHASE"),
    ("script", ["no_such_script"], "no script named 'no_such_script'"),
    ("mark", ["bad name!", "--recording", "{rec}"], "bad phase name"),
    ("mark", ["x", "--recording", "{missing}"], "not an ioattr recording"),
    ("mark", ["x", "--recording", "{file}"], "not an ioattr recording"),
    ("mark", ["x", "--recording", "{dir}"], "not an ioattr recording"),
    ("mark", ["x", "--recording", "{rec}"], "not being recorded now"),
    # record (refused before any probe is loaded)
    *_live_options("record"),
    ("record", ["--duration", "0"], "--duration"),
    ("record", ["--duration", "-1"], "--duration"),
    ("record", ["--chunk-seconds", "0.1"], "--chunk-seconds"),
    ("record", ["--phase", "a b"], "bad phase name"),
    ("record", ["--probes", "nosuch"], "unknown probe set 'nosuch'"),
    ("record", ["--max-entries", "abc"], "invalid int value"),
    ("record", ["--pid", "abc"], "invalid int value"),
    ("record", ["--pid", "999999999", "-o", "{tmp}/r-nosuchpid"], "no such process: 999999999"),
    ("record", ["--comm", "no-such-proc-x", "-o", "{tmp}/r-nosuchcomm"], "no running process named"),
    *_unusable_output("record"),
    ("record", ["--mysql-port", "70000"], "--mysql-port"),
    ("record", ["--phase-pattern", "(", "--", "true"], "not a valid regular expression"),
    ("record", ["--phase-pattern", "x"], "give -- CMD"),
    ("record", ["--only-command"], "needs a command"),
    # report
    *_unreadable_recording("report"),
    ("report", ["{rec}", "--phase", "nosuch"], "unknown phase 'nosuch'; this recording has: main, load, read"),
    *_output_options("report"),
    ("report", ["{rec}", "--layer", "foo"], "unknown layer 'foo'"),
    ("report", ["{rec}", "--by", "file,colour"], "unknown dimension 'colour'"),
    ("report", ["{rec}", "--by", ""], "dimension"),
    ("report", ["{rec}", "--top", "-1"], "--top"),
    ("report", ["{rec}", "-o", "{missing}/out.json"], "cannot write"),
    # top
    ("top", ["--batch", "--by", "foo"], "unknown --by 'foo'"),
    ("top", ["--batch", "--by", "file,foo"], "unknown --by 'foo'"),
    *_live_options("top", "--batch"),
    ("top", ["--batch", "-n", "0"], "--iterations"),
    ("top", ["--batch", "-n", "abc"], "invalid int value"),
    ("top", ["--batch", "--layer", "foo"], "invalid choice: 'foo'"),
    ("top", ["--batch", "--format", "xml"], "unknown format 'xml'"),
    ("top", ["--batch", "--rows", "-1"], "--rows"),
    ("top", ["--batch", "--width", "10"], "--width"),
    ("top", ["--batch", "--sort", "nope"], "not a column"),
    ("top", ["--batch", "--pid", "999999999"], "no such process"),
    ("top", [], "needs a terminal"),  # stdin/stdout are not a terminal here
]


def _fill(args: list[str], paths: dict[str, str]) -> list[str]:
    return [a.format(**paths) for a in args]


def assert_one_line(r: subprocess.CompletedProcess, command: str, needle: str = "") -> str:
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"ioattr {command}: "), lines[0]
    assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.mark.parametrize("command, args, needle", CASES,
                         ids=[f"{c}:{' '.join(a) or '-'}" for c, a, _ in CASES])
def test_bad_input_exits_2_with_one_line(paths, command: str, args: list[str], needle: str) -> None:
    r = ioattr(command, *_fill(args, paths), timeout=60, stdin=subprocess.DEVNULL)
    assert_one_line(r, command, needle)


def test_every_subcommand_is_in_the_sweep() -> None:
    from ioattr.cli.definition import COMMANDS as DECLARED

    assert set(DECLARED) == set(COMMANDS)
    assert {c for c, _, _ in CASES} == set(COMMANDS)


def test_sweep_left_nothing_behind(paths) -> None:
    """No case started a recording or left BPF programs."""
    tmp = Path(paths["tmp"])
    assert not (tmp / "r-nosuchpid").exists() and not (tmp / "r-nosuchcomm").exists()
    assert sorted(os.listdir(paths["nonempty"])) == ["x"] and os.listdir(paths["dir"]) == []
    assert_no_ioattr_programs()


def test_no_command_prints_usage_and_exits_2() -> None:
    r = ioattr()
    assert r.returncode == 2 and "usage: ioattr" in r.stderr and "Traceback" not in r.stderr


def test_mark_without_a_running_recording(tmp_path: Path) -> None:
    """With no recorder registered, `mark` says so (a private run directory: a recording that
    another test runs meanwhile is not ours to mark)."""
    env = dict(os.environ, IOATTR_RUN_DIR=str(tmp_path / "run"))
    r = ioattr("mark", "warmup", env=env)
    assert "no recording is running" in assert_one_line(r, "mark")


@pytest.mark.parametrize("command", ["report", "explain", "compact"])
def test_a_recording_the_user_cannot_read(paths, tmp_path: Path, command: str) -> None:
    """Recordings are private to their owner (0700/0600): another user gets one line, exit 2."""
    need(shutil.which("setpriv") is not None, "setpriv (util-linux) is missing")
    os.chmod(tmp_path, 0o755)
    rec = tmp_path / "rec"
    shutil.copytree(paths["rec"], rec)
    os.chmod(rec, 0o755)  # the directory can be listed; meta.json and the chunks stay 0600
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", IOATTR, command, str(rec)],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert "permission denied" in assert_one_line(r, command)


# -- wrong server credentials: record, top and exporter behave alike -----------------------------------
#
# What the user named and does not exist (a socket path, an option file) is bad usage: exit 2
# at once, from all three (in the sweep above). A server that refuses the login (wrong
# password, unknown user) is a runtime condition: one line says so, file-level attribution
# goes on without index names, roles and engine counters, and the exit code is 0 -- as
# tests/test_innodb_degraded.py established for record. The password is never echoed.

SECRET = "wrong-s3cret-pw-4711"


def _wrong_password_file(db, tmp_path: Path) -> Path:
    db.query("CREATE USER IF NOT EXISTS 'ioattr_pw'@'localhost' IDENTIFIED BY 'the-right-one'")
    opt = tmp_path / "client.cnf"
    opt.write_text(f"[client]\nuser=ioattr_pw\npassword={SECRET}\nsocket={db.socket}\n")
    opt.chmod(0o600)
    return opt


def _credentials(kind: str, db, tmp_path: Path) -> list[str]:
    if kind == "password":
        return ["--mysql-defaults-file", str(_wrong_password_file(db, tmp_path))]
    return ["--mysql-user", "ioattr_nobody_here", "--mysql-socket", str(db.socket)]


def _assert_refused_login_line(err: str, user: str) -> None:
    assert "Traceback" not in err
    assert SECRET not in err
    lines = [ln for ln in err.splitlines() if "cannot connect" in ln]
    assert len(lines) == 1, err
    assert user in lines[0] and "Access denied" in lines[0] and "file-level attribution continues" in lines[0]


@pytest.mark.parametrize("kind", ["password", "user"])
def test_record_with_a_refused_login_goes_on(mariadb, tmp_path: Path, kind: str) -> None:
    creds = _credentials(kind, mariadb, tmp_path)
    rec = tmp_path / "rec"
    bg = Background("record", "-o", str(rec), "--pid", str(mariadb.pid), "--interval", "0.3", *creds)
    try:
        bg.wait_recording()
        mariadb.query("SELECT 1")
        bg.wait_for("cannot connect")  # the refusal has been met and said: no need to wait longer
    finally:
        code, err = bg.stop()
    assert code == 0, err
    _assert_refused_login_line(err, "ioattr_pw" if kind == "password" else "ioattr_nobody_here")
    meta = json.loads((rec / "meta.json").read_text())
    assert meta["servers"][0]["connected"] is False
    for f in rec.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    assert report_json(rec)["recording"] == str(rec)
    assert_no_ioattr_programs()


@pytest.mark.parametrize("kind", ["password", "user"])
def test_top_with_a_refused_login_goes_on(mariadb, tmp_path: Path, kind: str) -> None:
    creds = _credentials(kind, mariadb, tmp_path)
    r = ioattr("top", "--batch", "--pid", str(mariadb.pid), "-n", "2", "--interval", "0.3", *creds, timeout=60)
    assert r.returncode == 0, r.stderr
    _assert_refused_login_line(r.stderr, "ioattr_pw" if kind == "password" else "ioattr_nobody_here")
    assert SECRET not in r.stdout
    assert "no server counters" in r.stdout  # the header says what is missing
    assert_no_ioattr_programs()


@pytest.mark.parametrize("kind", ["password", "user"])
def test_exporter_with_a_refused_login_goes_on(mariadb, tmp_path: Path, kind: str) -> None:
    from tests.helpers import exporter_port

    creds = _credentials(kind, mariadb, tmp_path)
    bg = Background("exporter", "--pid", str(mariadb.pid), "--listen", "127.0.0.1:0", "--interval", "0.3",
                    "--no-probe-stats", *creds)
    try:
        port = exporter_port(bg)  # the kernel picked a free one: no race for it
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    finally:
        code, err = bg.stop()
    assert code == 0, err
    _assert_refused_login_line(err, "ioattr_pw" if kind == "password" else "ioattr_nobody_here")
    assert SECRET not in text and "ioattr_targets 1" in text
    assert_no_ioattr_programs()


@pytest.mark.parametrize("command", ["record", "top", "exporter"])
def test_a_socket_that_is_not_there_is_bad_usage(mariadb, tmp_path: Path, command: str) -> None:
    extra = ["-o", str(tmp_path / "r")] if command == "record" else (["--batch"] if command == "top" else [])
    r = ioattr(command, "--pid", str(mariadb.pid), "--mysql-socket", str(tmp_path / "nosuch.sock"), *extra)
    assert "No such file or directory" in assert_one_line(r, command)
    assert not (tmp_path / "r").exists()


# -- ioattr compact ------------------------------------------------------------------------------------

def test_compact_merges_chunks_and_keeps_the_numbers(paths, tmp_path: Path) -> None:
    """A recording whose recorder died before compacting (here: 31 chunks made by hand)
    reports the same numbers after `ioattr compact`, from one segment and one chunk."""
    rec = tmp_path / "rec"
    shutil.copytree(paths["rec"], rec)
    for table in ("io", "pages", "statements", "counters"):
        chunks = sorted((rec / table).glob("chunk-*.parquet"))
        if not chunks:
            continue
        src = chunks[0].read_bytes()
        for f in chunks:
            f.unlink()
        for n in range(1, 32):
            (rec / table / f"chunk-{n:06d}.parquet").write_bytes(src)
    meta = json.loads((rec / "meta.json").read_text())
    meta["chunks"] = 31
    (rec / "meta.json").write_text(json.dumps(meta))
    before = report_json(rec, "--by", "file,phase")
    r = ioattr("compact", str(rec), check=True)
    assert "merges" in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in (rec / "io").iterdir() if p.suffix == ".parquet") == \
        ["chunk-000031.parquet", "seg1-000001-000030.parquet"]
    after = report_json(rec, "--by", "file,phase")
    assert after["rows"] == before["rows"]
    # again: nothing to do, same numbers
    ioattr("compact", str(rec), check=True)
    assert report_json(rec, "--by", "file,phase")["rows"] == before["rows"]


# -- -o: where the output went ---------------------------------------------------------------------

@pytest.mark.parametrize("command, args", [
    ("report", ["{rec}", "--by", "phase", "-o", "{out}"]),
    ("report", ["{rec}", "--format", "html", "-o", "{out}"]),
    ("explain", ["{rec}", "-o", "{out}"]),
    ("compare", ["{rec}", "{rec}", "-o", "{out}"]),
    ("compare", ["{rec}", "{rec}", "--html", "{out}"]),
], ids=["report", "report-html", "explain", "compare", "compare-html"])
def test_output_file_is_said_in_one_line(paths, tmp_path: Path, command: str, args: list[str]) -> None:
    """A successful -o (or compare --html) says where it wrote, in one line on stderr; nothing on
    stdout except what compare prints besides its --html page."""
    out = tmp_path / "out.file"
    r = ioattr(command, *_fill(args, {**paths, "out": str(out)}), timeout=60)
    assert r.returncode == 0, r.stderr
    size = out.stat().st_size
    assert size > 100
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"ioattr {command}: wrote {out} ("), r.stderr
    if "-o" in args:
        assert r.stdout == ""


@pytest.mark.parametrize("command, args", [
    ("record", ["-p", "1", "-o", "{tmp}/r-nocaps"]),
    ("top", ["--batch", "-p", "1", "-n", "1"]),
    ("exporter", ["-p", "1", "--listen", "127.0.0.1:0"]),
])
def test_missing_capabilities_are_named(paths, command: str, args: list[str]) -> None:
    """Root without CAP_BPF/CAP_PERFMON (a container, setpriv): one line naming what is missing and
    how to get it, before any BPF object is tried (not libbpf's 'Operation not permitted')."""
    need(shutil.which("setpriv") is not None, "setpriv (util-linux) is missing")
    r = subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", IOATTR, command,
                        *_fill(args, paths)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    line = assert_one_line(r, command)
    assert line == (f"ioattr {command}: missing capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) to load "
                    "BPF programs (root, but without them): start ioattr with them (a container: --cap-add BPF "
                    "--cap-add PERFMON, or --privileged)"), line
    assert not Path(paths["tmp"], "r-nocaps").exists()

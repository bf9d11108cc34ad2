"""Fuzzing what reads untrusted bytes: the InnoDB page classifier and the recording reader.

Classifier: tests/fuzz/classify_fuzz.c runs the probes' own header decoder
(bpf/innodb_page.h) as plain C under ASan/UBSan on >= 1M random, synthesized
and mutated 16 KiB pages (plus other page sizes, partial reads, short
headers), checks every output's domain, and writes every 50th classification
for tests/fuzz/reference.py, an independent decoder, to agree with. The
seed is fixed so the suite is repeatable; IOATTR_FUZZ_SEED=N picks another,
IOATTR_FUZZ_SEED=random a fresh one per run (for fuzzing sessions); a failure
names the seed.

Recording reader: seeded mutations (IOATTR_FUZZ_MUTATIONS, default 100 per
run) of a small real recording (chunks, compacted segments, meta.json, junk
files, table directories) through `ioattr report` and `ioattr explain`
(the CLI's main, in this process, under an address-space limit): exit 0
with a warning naming the damaged file and every undamaged file's rows
reported exactly, or exit 2 with one clear line (meta.json only); never a
traceback, never exit 1. What a seed damages depends on the recording too (its
files' bytes and sizes differ run to run): a failure names the seed and the
recording, keeps the damaged copy, and IOATTR_FUZZ_SEED=N IOATTR_FUZZ_RECORDING=DIR
replays that seed on a copy of that recording. A million 16 KiB files through the whole reader
would take hours; instead a few thousand random and mutated buffers go
through the reader's per-file checks (partcheck.py's sizes, then DuckDB's
Parquet reader) in a child process under RLIMIT_AS, once with the fixed seed
and once with a fresh one (named on failure), mutating parts of recordings of
several shapes built deterministically (tests/fuzz/corpus.py) plus one real
recording's. A damaged length that makes a reader allocate what it says then
fails the test instead of taking the machine (issue 10: 24 GB). Then
`report`/`explain`/`compact` on recordings holding such files, each a child
under the same limit, must skip them with a warning and stay under 1 GiB RSS;
then one named test per kind of damage.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ioattr.engines.innodb.files import read_doublewrite_range
from tests.conftest import need, need_root, need_tool
from tests.fuzz import corpus
from tests.fuzz import reference as ref
from tests.helpers import ROOT, cli_in_process, ioattr, varint

FUZZ_DIR = ROOT / "tests" / "fuzz"
HARNESS = FUZZ_DIR / "classify_fuzz"
PAGES = 1_000_000
SAMPLE_EVERY = 50


DEFAULT_SEED = 20261122


def _seed() -> int:
    env = os.environ.get("IOATTR_FUZZ_SEED", "")
    if env == "random":
        return random.SystemRandom().randrange(1, 2**63)
    return int(env, 0) if env else DEFAULT_SEED


def _harness() -> Path:
    need_tool("cc")
    r = subprocess.run(["make", "-s", "-C", str(FUZZ_DIR)], capture_output=True, text=True, timeout=120)
    need(r.returncode == 0 or "sanitize" not in r.stderr, f"no ASan/UBSan runtime: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    return HARNESS


def run_harness(tmp: Path, seed: int, iterations: int, corpus: Path | None = None) -> tuple[dict, Path]:
    samples = tmp / f"samples-{seed}.txt"
    args = [str(_harness()), "--seed", str(seed), "--iterations", str(iterations),
            "--sample-every", str(SAMPLE_EVERY), "--sample-out", str(samples)]
    if corpus is not None:
        args += ["--corpus", str(corpus)]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, f"classify_fuzz failed (reproduce: {' '.join(args)}):\n{r.stderr[-4000:]}"
    assert "runtime error" not in r.stderr, r.stderr[-4000:]   # UBSan, should it not halt
    m = re.match(r"ok (.*)", r.stdout.strip())
    assert m, r.stdout
    stats = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    return stats, samples


def compare_samples(samples: Path, seed: int) -> int:
    """Every sampled classification agrees with the reference decoder; returns how many."""
    from ioattr.engines.innodb.pages import page_type_name

    checked = 0
    for line in samples.read_text().splitlines():
        f = line.split()
        if f[0] == "N":
            nbytes, shift, n, cut = map(int, f[1:])
            assert (n, bool(cut)) == ref.pages_in_io(nbytes, shift), (seed, line)
            continue
        space, fc, enc, lo, hi, page_no, length = map(int, f[1:8])
        hdr = b"" if f[8] == "-" else bytes.fromhex(f[8])
        assert len(hdr) == min(length, 80), (seed, line)
        got = dict(zip(("page_type", "space_id", "level", "index_id", "flags", "file_class"), map(int, f[9:15])))
        want = ref.decode(hdr, page_no, space, fc, bool(enc), (lo, hi))
        assert got == want, f"seed {seed}: {line}\n classifier {got}\n reference  {want}"
        # the name the report shows: one of MariaDB's types, or type_N for one it does not have
        if not got["flags"] & (ref.F_UNREADABLE | ref.F_ENCRYPTED):
            name = page_type_name(got["page_type"], "mariadb")
            assert name == ref.type_name(got["page_type"]) or (
                ref.type_name(got["page_type"]) == "other" and name == f"type_{got['page_type']}"), (seed, line)
        checked += 1
    return checked


def test_classifier_fuzz_a_million_pages(tmp_path: Path) -> None:
    seed = _seed()
    t0 = time.monotonic()
    stats, samples = run_harness(tmp_path, seed, iterations=1_200_000)
    assert stats["pages_16k"] >= PAGES, stats
    checked = compare_samples(samples, seed)
    assert checked >= stats["classified"] // SAMPLE_EVERY - 1 and checked > 10_000, (checked, stats)
    print(f"classifier fuzz: seed {seed}, {stats}, {checked} checked against the reference, "
          f"{time.monotonic() - t0:.1f} s")


def _datadir_pages(datadir: Path, limit: int = 3000) -> tuple[bytes, list[tuple[str, int, bytes]]]:
    """Up to `limit` real 16 KiB pages from the server's tablespaces (read as files)."""
    files = sorted(p for p in datadir.rglob("*") if p.is_file() and
                   (p.suffix == ".ibd" or p.name == "ibdata1" or re.fullmatch(r"undo\d+", p.name)))
    out: list[tuple[str, int, bytes]] = []
    for p in files:
        with open(p, "rb") as fh:
            for i in range(256):
                page = fh.read(16384)
                if len(page) < 16384:
                    break
                out.append((p.name, i, page))
                if len(out) >= limit:
                    return b"".join(pg for _, _, pg in out), out
    return b"".join(pg for _, _, pg in out), out


def test_classifier_fuzz_real_pages(mariadb, tmp_path: Path) -> None:
    """Real pages of a MariaDB datadir decode to what the server says they are, and seed
    the harness's mutations."""
    blob, pages = _datadir_pages(Path(mariadb.datadir))
    assert len(pages) > 50, [p[0] for p in pages]
    known = {int(r[0]) for r in mariadb.query("SELECT INDEX_ID FROM INFORMATION_SCHEMA.INNODB_SYS_INDEXES")}
    # ibdata1 is the system tablespace: pages in its doublewrite area are copies of other
    # pages (their headers say where those live) once the server has flushed through it,
    # which bootstraps with smaller pools do; the classifier is given the area, as here
    dblwr = read_doublewrite_range(str(Path(mariadb.datadir) / "ibdata1"), 16384)
    index_pages = 0
    for name, page_no, page in pages:
        space = int.from_bytes(page[34:38], "big")
        in_ibdata1 = name == "ibdata1"
        got = ref.decode(page[:ref.HEADER], page_no, 0 if in_ibdata1 else space,
                         ref.FC_SYSTEM if in_ibdata1 else 1, False, dblwr if in_ibdata1 else (0, 0))
        if got["page_type"] == 0 and not any(page[:38]):
            continue                                        # never-written page
        assert got["flags"] == 0, (name, page_no, got)       # the header says where it is
        assert ref.type_name(got["page_type"]) != "other", (name, page_no, got)
        if got["page_type"] in ref.INDEX_TYPES:
            index_pages += 1
            assert got["level"] < 10, (name, page_no, got)
            # the data dictionary's own indexes (SYS_TABLES, SYS_COLUMNS, ...) have small fixed ids
            system = name == "ibdata1" and (got["index_id"] < 11 or got["index_id"] == 0xFFFFFFFF00000000)
            assert got["index_id"] in known or system, (name, page_no, got)
    assert index_pages > 10
    corpus = tmp_path / "corpus.bin"
    corpus.write_bytes(blob)
    seed = _seed()
    stats, samples = run_harness(tmp_path, seed, iterations=150_000, corpus=corpus)
    assert stats["corpus"] == len(pages)
    assert compare_samples(samples, seed) > 1000


# -- the recording reader -------------------------------------------------------------

MUTATIONS = int(os.environ.get("IOATTR_FUZZ_MUTATIONS", "100"))
BUFFERS = int(os.environ.get("IOATTR_FUZZ_BUFFERS", "2000"))     # per seed
# A child's address space: Python + pyarrow + DuckDB map ~0.8 GiB, DuckDB's memory_limit
# (duck.py) is 512 MB; what a damaged length asks for (GiBs) fails against this limit.
AS_LIMIT = int(2.5 * 2**30)
MAX_RSS = 2**30                   # report/explain/compact on a damaged recording: < 1 GiB


def _limit_address_space() -> None:
    """preexec_fn: the child can't map more than AS_LIMIT, so a blow-up fails there."""
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


@contextlib.contextmanager
def _address_space_limit(extra: int = 2 * 2**30):
    """This process (in-process CLI runs) limited to what it maps now plus `extra`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = int(re.search(r"VmSize:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) * 1024
    new = vm + extra if hard == resource.RLIM_INFINITY else min(vm + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (new, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
REPORT_ARGS = ("--format", "json", "--by", "file,phase,process")


def cli(*args: str) -> tuple[int, str, str]:
    """`ioattr ARGS` in this process: (exit code, stdout, stderr)."""
    return cli_in_process(list(args))


def report_rows(rec: Path) -> tuple[int, dict | None, str]:
    rc, out, err = cli("report", str(rec), *REPORT_ARGS)
    return rc, (json.loads(out) if rc == 0 else None), err


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """A real recording with two phases and five chunks per table; IOATTR_FUZZ_RECORDING=DIR:
    a copy of that one instead (the one a failed run names, to replay its seed on it)."""
    d = tmp_path_factory.mktemp("fuzz-rec")
    rec = d / "rec"
    if os.environ.get("IOATTR_FUZZ_RECORDING"):
        shutil.copytree(os.environ["IOATTR_FUZZ_RECORDING"], rec, symlinks=True)
        return rec
    need_root()
    script = (f"echo PHASE one; for i in 1 2 3; do dd if=/dev/zero of={d}/f1 bs=4096 count=20 status=none; "
              f"sleep 0.3; done; echo PHASE two; for i in 1 2 3 4; do dd if=/dev/zero of={d}/f2 bs=8192 "
              f"count=40 status=none conv=fsync; cat {d}/f1 > /dev/null; sleep 0.3; done")
    r = ioattr("record", "-o", str(rec), "--only-command", "--interval", "0.2", "--chunk-seconds", "0.4",
               "--phase-pattern", r"PHASE (\w+)", "--", "sh", "-c", script)
    assert r.returncode == 0, r.stderr
    assert len(list((rec / "io").glob("chunk-*.parquet"))) >= 3
    return rec


@pytest.fixture(scope="module")
def shapes(recording: Path, tmp_path_factory) -> dict[str, Path]:
    """Recordings of several shapes: synthetic ones of known content (corpus.py) and the real one."""
    return {**corpus.build(tmp_path_factory.mktemp("fuzz-shapes")), "real": recording}


@pytest.fixture(scope="module")
def compacted(recording: Path, tmp_path_factory) -> Path:
    """The same recording with most chunks merged into level-1 segments."""
    from ioattr.format.compact import compact

    rec = tmp_path_factory.mktemp("fuzz-compacted") / "rec"
    shutil.copytree(recording, rec)
    assert compact(rec, fanout=(2,), warn=lambda m: None)
    assert list((rec / "io").glob("seg1-*.parquet"))
    return rec


def _flip(data: bytes, rng: random.Random, n: int, lo: int = 0) -> bytes:
    b = bytearray(data)
    for _ in range(n):
        i = rng.randrange(lo, len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def _random16k(rng: random.Random, framed: bool) -> bytes:
    b = rng.randbytes(16384)
    return b"PAR1" + b[4:-4] + b"PAR1" if framed else b


def _damage_part(rng: random.Random, path: Path, rec: Path) -> str:
    """Damage one recorded Parquet file in place; returns what was done."""
    data = path.read_bytes()
    how = rng.choice(["flip", "flip", "flip_footer", "flip_body", "zero", "truncate", "truncate", "empty",
                      "random16k", "random16k_framed", "dir", "foreign", "loop"])
    if how == "flip":
        path.write_bytes(_flip(data, rng, rng.randint(1, 8)))
    elif how == "flip_footer":
        path.write_bytes(_flip(data, rng, rng.randint(1, 4), lo=max(0, len(data) - 400)))
    elif how == "flip_body":
        path.write_bytes(_flip(data, rng, rng.randint(1, 16), lo=4))
    elif how == "zero":
        a = rng.randrange(len(data))
        n = rng.randint(1, 4096)
        path.write_bytes(data[:a] + bytes(min(n, len(data) - a)) + data[a + n:])
    elif how == "truncate":
        path.write_bytes(data[:rng.randrange(len(data))])
    elif how == "empty":
        path.write_bytes(b"")
    elif how.startswith("random16k"):
        path.write_bytes(_random16k(rng, how.endswith("framed")))
    elif how == "dir":
        path.unlink()
        path.mkdir()
        (path / "x").write_bytes(b"PAR1")
    elif how == "foreign":                  # another table's (valid) Parquet under this name
        others = [p for p in rec.glob("*/*.parquet") if p.parent != path.parent]
        path.write_bytes(rng.choice(others).read_bytes())
    elif how == "loop":
        path.unlink()
        path.symlink_to(path.name)
    return how


JUNK_NAMES = ["chunk-000077.parquet", "chunk-0000001.parquet", "chunk-abc.parquet", "chunk-.parquet",
              "chunk-99999999999999999999999.parquet", "seg1-000001-000099.parquet", "seg2-000000-999999.parquet",
              "seg1-000009-000003.parquet", "seg0-000001-000002.parquet", "seg1-000001-000002.parquet.tmp",
              "chunk-000003.parquet.tmp", "README", ".hidden.parquet", "seg9999999999-1-2.parquet"]


def _add_junk(rng: random.Random, rec: Path) -> tuple[str, str]:
    """Something that is not recorded data: a stray file or directory, never a valid part."""
    where = rng.choice(["io", "counters", ".", "io", "newtable"])
    d = rec / where
    d.mkdir(exist_ok=True)
    name = rng.choice(JUNK_NAMES)
    p = d / name
    if p.exists():
        name = "extra-" + name
        p = d / name
    content = rng.choice(["empty", "random", "framed", "dir", "text"])
    if content == "dir":
        p.mkdir()
    else:
        p.write_bytes({"empty": b"", "text": b"hello\n", "random": rng.randbytes(rng.randint(1, 16384)),
                       "framed": _random16k(rng, True)}[content])
    return f"junk {where}/{name} ({content})", f"{where}/{name}"


META_VALUES = [None, "x", 0, -1, 1.5, 10**30, [], {}, [1, 2], {"a": 1}, True, float("inf"), float("nan")]


def _damage_meta(rng: random.Random, rec: Path) -> str:
    path = rec / "meta.json"
    text = path.read_text()
    meta = json.loads(text)
    how = rng.choice(["truncate", "flip", "random", "empty", "scalar", "drop_key", "key_type", "key_type",
                      "phase_field", "phase_field", "phases_empty", "phases_dup", "version", "huge", "dir",
                      "missing"])
    if how == "truncate":
        path.write_text(text[:rng.randrange(len(text))])
    elif how == "flip":
        path.write_bytes(_flip(text.encode(), rng, rng.randint(1, 4)))
    elif how == "random":
        path.write_bytes(rng.randbytes(rng.randint(1, 4096)))
    elif how == "empty":
        path.write_text("")
    elif how == "scalar":
        path.write_text(rng.choice(["[]", "null", "1", '"meta"', "true"]))
    elif how == "drop_key":
        key = rng.choice(sorted(meta))
        del meta[key]
        how += f" {key}"
    elif how == "key_type":
        key = rng.choice(sorted(meta))
        meta[key] = rng.choice(META_VALUES)
        how += f" {key}={meta[key]!r}"
    elif how == "phase_field":
        ph = rng.choice(meta["phases"])
        key = rng.choice(["name", "start", "end", "source"])
        ph[key] = rng.choice(META_VALUES + ["main", "two"])
        how += f" {key}={ph[key]!r}"
    elif how == "phases_empty":
        meta["phases"] = []
    elif how == "phases_dup":
        meta["phases"].append(dict(meta["phases"][-1]))
    elif how == "version":
        meta["format"] = rng.choice(["ioattr-recording/99", "something-else/1", "", 2])
        how += f" {meta['format']!r}"
    elif how == "huge":
        meta["dropped"] = {"stats_full": 10**40}
        meta["started"] = 1e308
    elif how == "dir":
        path.unlink()
        path.mkdir()
    elif how == "missing":
        path.unlink()
    if how.split()[0] in ("drop_key", "key_type", "phase_field", "phases_empty", "phases_dup", "version", "huge"):
        path.write_text(json.dumps(meta))
    return "meta " + how


def _one_line(err: str) -> bool:
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("ioattr: warning: ")]
    return len(lines) == 1 and "Traceback" not in err


def _without(base: Path, rels: list[str], tmp: Path, cache: dict) -> dict:
    """The report of `base` with these files removed (what an undamaged reader must show)."""
    key = (base, tuple(sorted(rels)))
    if key not in cache:
        d = tmp / f"without-{len(cache)}"
        shutil.copytree(base, d, symlinks=True)
        for r in rels:
            p = d / r
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        rc, rep, err = report_rows(d)
        assert rc == 0, err
        cache[key] = rep
    return cache[key]


def _sums(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        k = tuple((a, b) for a, b in r.items() if a not in ("count", "bytes", "latency_us"))
        c, b = out.get(k, (0, 0))
        out[k] = (c + r["count"], b + r["bytes"])
    return out


def test_recording_reader_fuzz(recording: Path, compacted: Path, tmp_path: Path) -> None:
    with _address_space_limit():
        _recording_reader_fuzz(recording, compacted, tmp_path)


def _recording_reader_fuzz(recording: Path, compacted: Path, tmp_path: Path) -> None:
    seed = _seed()
    rng = random.Random(seed)
    print(f"reader fuzz: seed {seed} on {recording}")
    cache: dict = {}
    originals = {}
    for base in (recording, compacted):
        rc, rep, err = report_rows(base)
        assert rc == 0 and not err, err
        originals[base] = rep
    assert _sums(originals[recording]["rows"]) == _sums(originals[compacted]["rows"])
    outcomes: dict[str, int] = {}
    t0 = time.monotonic()
    for i in range(MUTATIONS):
        base = recording if i % 2 else compacted
        rec = tmp_path / f"m{i}"
        ctx = f"seed {seed}, mutation {i} on {base.parent.name}"
        try:
            shutil.copytree(base, rec)
            parts = sorted(str(p.relative_to(rec)) for p in rec.glob("*/*.parquet"))
            kind = rng.choice(["part", "part", "part", "part", "junk", "junk", "meta", "meta", "table"])
            damaged: str | None = None
            if kind == "part":
                damaged = rng.choice(parts)
                what = f"part {damaged} " + _damage_part(rng, rec / damaged, rec)
            elif kind == "junk":
                what, _ = _add_junk(rng, rec)
            elif kind == "meta":
                what = _damage_meta(rng, rec)
            else:
                table = rng.choice(["io", "counters"])
                shutil.rmtree(rec / table)
                (rec / table).write_bytes(rng.choice([b"", b"PAR1junkPAR1", rng.randbytes(100)]))
                what = f"table {table} is a file"
            ctx = f"seed {seed}, mutation {i} on {base.parent.name}: {what}"
            rc, rep, err = report_rows(rec)
            assert "Traceback" not in err and rc in (0, 2), f"{ctx}: exit {rc}: {err}"
            if rc == 2:
                assert kind == "meta", f"{ctx}: recorded data lost (exit 2): {err}"
                assert _one_line(err) and err.startswith("ioattr report: "), f"{ctx}: {err!r}"
                outcome = "refused"
            elif kind == "meta":
                assert rep["rows"] == originals[base]["rows"], ctx
                outcome = "meta ignored"
            elif kind == "junk":
                assert rep["rows"] == originals[base]["rows"], f"{ctx}: {err}"
                outcome = "junk ignored"
            elif kind == "table":
                table = what.split()[1]
                want = _without(base, [p for p in parts if p.startswith(table + "/")], tmp_path, cache)
                assert rep["rows"] == want["rows"] and table in err, f"{ctx}: {err}"
                outcome = "table skipped"
            else:
                assert damaged is not None
                name = Path(damaged).name
                if name in err:
                    want = _without(base, [damaged], tmp_path, cache)
                    assert rep["rows"] == want["rows"], f"{ctx}: the undamaged files' rows changed: {err}"
                    outcome = "part skipped"
                elif rep["rows"] == originals[base]["rows"]:
                    outcome = "harmless"
                else:
                    # damage no reader can see (a flipped value in a valid file): confined to that file
                    only = tmp_path / f"only-{i}"
                    (only / Path(damaged).parent).mkdir(parents=True)
                    shutil.copy(base / "meta.json", only / "meta.json")
                    shutil.copy(rec / damaged, only / damaged)
                    rc2, rep2, err2 = report_rows(only)
                    assert rc2 == 0, f"{ctx}: {err2}"
                    want = _sums(_without(base, [damaged], tmp_path, cache)["rows"])
                    for k, (c, b) in _sums(rep2["rows"]).items():
                        c0, b0 = want.get(k, (0, 0))
                        want[k] = (c0 + c, b0 + b)
                    assert _sums(rep["rows"]) == want, f"{ctx}: damage spread beyond {damaged}: {err}"
                    outcome = "silent (confined)"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if i % 4 == 0 or kind == "meta":
                rc, out, err = cli("explain", str(rec), "--format", "json")
                assert "Traceback" not in err and rc in (0, 2), f"{ctx}: explain exit {rc}: {err}"
                if rc == 0:
                    json.loads(out)
                else:   # refused on what is left (e.g. the damaged file held a phase's only IO)
                    assert _one_line(err) and err.splitlines()[-1].startswith("ioattr explain: "), \
                        f"{ctx}: explain: {err!r}"
                    assert kind in ("meta", "table") or damaged and Path(damaged).name in err, \
                        f"{ctx}: explain refused an undamaged recording: {err!r}"
        except BaseException as e:
            # the damage depends on the seed and on this run's recording (its chunks' bytes and
            # sizes): both are named, and the damaged copy and the recordings are left in place
            raise AssertionError(
                f"{ctx}: {type(e).__name__}: {e}\n"
                f"kept: the damaged copy {rec}; replay: IOATTR_FUZZ_SEED={seed} "
                f"IOATTR_FUZZ_RECORDING={recording} pytest tests/test_fuzz.py::test_recording_reader_fuzz") from e
        shutil.rmtree(rec)
    print(f"reader fuzz: seed {seed}, {MUTATIONS} mutations in {time.monotonic() - t0:.1f} s: {outcomes}")


@pytest.mark.parametrize("which", ["fixed_seed", "fresh_seed"])
def test_random_buffers_through_the_part_checks(which: str, shapes: dict[str, Path], tmp_path: Path) -> None:
    """Random and mutated buffers through the reader's per-file checks, in a child process
    under RLIMIT_AS (a crash inside DuckDB, or an allocation a damaged length asked for,
    fails this test, not the session or the machine): the fixed seed over the synthetic
    shapes only (byte-identical on every machine, so the outcome is the same everywhere),
    then a fresh seed over those and the real recording's parts."""
    if which == "fixed_seed":
        seed = _seed()
        recs = [rec for name, rec in shapes.items() if name != "real"]
    else:
        seed = random.SystemRandom().randrange(1, 2**63)
        recs = list(shapes.values())
    parts = [str(p) for rec in recs for p in corpus.parts(rec)]
    args = [sys.executable, "-m", "tests.fuzz.parquet_fuzz", str(seed), str(BUFFERS), "--save", str(tmp_path), *parts]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT,
                       preexec_fn=_limit_address_space)
    replay = (f"replay: IOATTR_FUZZ_SEED={seed} pytest 'tests/test_fuzz.py::"
              f"test_random_buffers_through_the_part_checks[fixed_seed]' (the synthetic shapes), or run "
              f"the reader on the buffer kept above (prlimit --as={AS_LIMIT} ioattr report DIR)")
    assert r.returncode == 0 and r.stdout.startswith("ok "), \
        f"seed {seed}: exit {r.returncode}: {r.stderr[-3000:]}\n{replay}"
    print(f"part checks: seed {seed}, {BUFFERS} buffers over {len(parts)} parts: {r.stdout.strip()}")


def footer_bomb() -> bytes:
    """A Parquet file whose footer's schema list says 2^31-1 elements in 4 KB: DuckDB's
    footer reader allocates them (measured: "Out of Memory Error" under RLIMIT_AS)."""
    footer = b"\x15\x02" + b"\x19\xfc" + varint(2**31 - 1) + bytes(4000)
    return b"PAR1" + footer + struct.pack("<I", len(footer)) + b"PAR1"


def page_header_bomb(part: bytes) -> bytes:
    """A recorded part whose first page header's statistics say a 2 GiB max value:
    DuckDB's page header reader allocates it (measured, as above)."""
    hdr = (b"\x15\x00\x15\x02\x15\x02" + b"\x2c" + b"\x15\x02\x15\x00\x15\x00\x15\x00"
           + b"\x1c" + b"\x18" + varint(2**31 - 1))
    b = bytearray(part)
    b[4:4 + len(hdr)] = hdr
    return bytes(b)


def test_damaged_recordings_stay_bounded(shapes: dict[str, Path], tmp_path: Path) -> None:
    """report, explain and compact on recordings of every shape holding files whose footer
    or page headers claim GiBs: each such file skipped with one warning naming it, the
    rest reported, under 1 GiB RSS (all commands in one child under RLIMIT_AS)."""
    bombs: dict[str, dict[Path, bytes]] = {}
    cmds: list[list[str]] = []
    for shape, base in shapes.items():
        rec = tmp_path / shape
        shutil.copytree(base, rec)
        io = rec / "io"
        victim = sorted(io.glob("*.parquet"))[0]        # a chunk, or a segment (its chunks are gone)
        bombs[shape] = {io / "chunk-900001.parquet": footer_bomb(), victim: page_header_bomb(victim.read_bytes())}
        for path, data in bombs[shape].items():
            path.write_bytes(data)
        cmds += [["report", str(rec), "--format", "json", "--by", "file,phase"],
                 ["explain", str(rec), "--format", "json"],
                 ["compact", str(rec)],
                 ["report", str(rec), "--format", "json"]]
    r = subprocess.run([sys.executable, "-m", "tests.fuzz.run_commands", json.dumps(cmds)], capture_output=True,
                       text=True, timeout=600, cwd=ROOT, preexec_fn=_limit_address_space)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
    results = json.loads(r.stdout)
    for res in results:
        cmd, rc, err = res["argv"][0], res["rc"], res["err"]
        rec = Path(res["argv"][1])
        ctx = f"{rec.name}: ioattr {' '.join(res['argv'][:1] + res['argv'][2:])}: exit {rc}: {err[-2000:]}"
        assert "Traceback" not in err and "internal error" not in err, ctx
        warnings = [ln for ln in err.splitlines() if ln.startswith("ioattr: warning: ")]
        if cmd == "compact":
            assert rc == 0, ctx
            for path, data in bombs[rec.name].items():
                assert path.read_bytes() == data, ctx     # damaged files stay for inspection, never merged
            continue
        if cmd == "explain" and rc != 0:    # may refuse what is left (one line), never fail
            assert rc == 2 and _one_line(err), ctx
            continue
        assert rc == 0, ctx
        json.loads(res["out"])
        for path in bombs[rec.name]:
            named = [w for w in warnings if str(path) in w]
            assert len(named) == 1 and "skipping damaged" in named[0], ctx
    peak = results[-1]["peak_rss"]
    assert peak < MAX_RSS, f"peak RSS {peak >> 20} MiB"
    print(f"{len(results)} commands on {len(shapes)} damaged recordings: peak RSS {peak >> 20} MiB")


def test_part_check_accepts_every_valid_layout(shapes: dict[str, Path], tmp_path: Path) -> None:
    """No false alarm: every part of every shape, and Parquet files of other layouts (v1/v2
    pages, each codec, with and without dictionaries, nested and null-heavy columns, many
    row groups, DuckDB's writer) pass the size checks; a damaged part must be damaged."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ioattr.format.partcheck import part_problem

    for rec in shapes.values():
        for part in corpus.parts(rec):
            assert part_problem(part) is None, part
    n = 50_000
    table = pa.table({"flag": [i % 3 == 0 for i in range(n)], "name": [f"/data/t{i % 17}.ibd" for i in range(n)],
                      "maybe": [None if i % 4 else i for i in range(n)], "f": [i / 7 for i in range(n)],
                      "lst": [[i, i + 1] if i % 5 else None for i in range(n)],
                      "st": [{"a": i, "b": str(i)} for i in range(n)]})
    for version in ("1.0", "2.0"):
        for codec in ("none", "snappy", "zstd", "gzip"):
            for dictionary in (True, False):
                path = tmp_path / f"t-{version}-{codec}-{dictionary}.parquet"
                pq.write_table(table, path, data_page_version=version, compression=codec,
                               use_dictionary=dictionary, row_group_size=7_000, data_page_size=4096)
                assert part_problem(path) is None, path
    path = tmp_path / "duck.parquet"
    duckdb.sql(f"COPY (SELECT range AS a, range::VARCHAR AS b, NULL::INT AS c, [range] AS d FROM range(300000)) "
               f"TO '{path}' (ROW_GROUP_SIZE 50000)")
    assert part_problem(path) is None
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2] + data[-8:])          # the middle gone, the footer kept
    assert part_problem(path) is not None


def test_duckdb_limits_are_set_and_overridable(monkeypatch: pytest.MonkeyPatch, recording: Path) -> None:
    """Every connection ioattr opens has its memory_limit and threads; the environment
    overrides them; a bad value is one line and exit 2 before anything is read."""
    from ioattr.errors import UsageError
    from ioattr.format import duck
    from ioattr.format.reader import Recording

    def settings(con) -> tuple:
        return con.execute("SELECT current_setting('memory_limit'), current_setting('threads')").fetchone()

    rec = Recording(recording, warn=lambda m: None)
    mem, threads = settings(rec.con)
    assert mem == "488.2 MiB" and threads == min(duck.MAX_DEFAULT_THREADS, os.cpu_count() or 1)
    assert settings(duck.connect(threads=1))[1] == 1            # the compactor's
    monkeypatch.setenv(duck.MEMORY_ENV, "1GiB")
    monkeypatch.setenv(duck.THREADS_ENV, "3")
    assert settings(Recording(recording, warn=lambda m: None).con) == ("1.0 GiB", 3)
    assert settings(duck.connect(threads=1))[1] == 3
    for var, bad, cmd in ((duck.MEMORY_ENV, "lots", ["report", str(recording)]),
                          (duck.THREADS_ENV, "0", ["compact", str(recording)])):
        r = ioattr(*cmd, env=dict(os.environ, **{var: bad}))
        assert r.returncode == 2 and _one_line(r.stderr) and var in r.stderr, (var, bad, cmd, r.stderr)
    for var, bad in ((duck.MEMORY_ENV, "1kB"), (duck.THREADS_ENV, "x"), (duck.THREADS_ENV, "999")):
        monkeypatch.setenv(var, bad)
        with pytest.raises(UsageError, match=var):
            Recording(recording, warn=lambda m: None)
        monkeypatch.delenv(var)
    r = subprocess.run([sys.executable, "-m", "ioattr.cli.main", "compact", str(recording)], capture_output=True,
                       text=True, env=dict(os.environ, **{duck.MEMORY_ENV: "12 parsecs"}), cwd=ROOT, timeout=60)
    assert r.returncode == 2 and duck.MEMORY_ENV in r.stderr and _one_line(r.stderr), r.stderr


# -- corrupted and truncated recording files, one by one --------------------------------


def _copy(rec: Path, tmp: Path, name: str = "copy") -> Path:
    dst = tmp / name
    shutil.copytree(rec, dst)
    return dst


def _report_ok(rec: Path) -> tuple[dict, str]:
    rc, rep, err = report_rows(rec)
    assert rc == 0 and rep is not None, err
    assert "Traceback" not in err
    return rep, err


def _refused(rec: Path, *extra: str) -> str:
    rc, out, err = cli("report", str(rec), *extra)
    assert rc == 2 and not out, (rc, out, err)
    assert _one_line(err) and err.startswith("ioattr report: "), err
    return err


def test_truncated_chunk(recording: Path, tmp_path: Path) -> None:
    rec = _copy(recording, tmp_path)
    chunk = rec / "io" / "chunk-000002.parquet"
    data = chunk.read_bytes()
    chunk.write_bytes(data[: len(data) * 2 // 3])
    rep, err = _report_ok(rec)
    assert "skipping damaged chunk" in err and chunk.name in err
    assert rep["rows"] == _without(recording, ["io/chunk-000002.parquet"], tmp_path, {})["rows"]


def test_zero_length_chunk(recording: Path, tmp_path: Path) -> None:
    rec = _copy(recording, tmp_path)
    (rec / "counters" / "chunk-000001.parquet").write_bytes(b"")
    (rec / "io" / "chunk-000004.parquet").write_bytes(b"")
    rep, err = _report_ok(rec)
    assert "counters/chunk-000001.parquet" in err and "io/chunk-000004.parquet" in err
    want = _without(recording, ["counters/chunk-000001.parquet", "io/chunk-000004.parquet"], tmp_path, {})
    assert rep["rows"] == want["rows"]
    rc, out, err = cli("explain", str(rec), "--format", "json")
    assert rc == 0 and json.loads(out)["findings"], err


def test_chunk_damaged_inside(recording: Path, tmp_path: Path) -> None:
    """Magic intact at both ends, a data page zeroed: DuckDB fails on it mid-query; the
    reader finds which file it was, leaves it out and answers from the others."""
    rec = _copy(recording, tmp_path)
    chunk = rec / "io" / "chunk-000003.parquet"
    data = bytearray(chunk.read_bytes())
    data[4:4 + len(data) // 2] = bytes(len(data) // 2)
    chunk.write_bytes(bytes(data))
    rep, err = _report_ok(rec)
    assert "skipping damaged chunk" in err and chunk.name in err, err
    assert rep["rows"] == _without(recording, ["io/chunk-000003.parquet"], tmp_path, {})["rows"]


def _rewrite(chunk: Path, select: str) -> None:
    """Write `chunk` anew as a valid Parquet file of other values: SELECT (with {src} for the
    chunk as it was) run by DuckDB's own writer."""
    import duckdb

    new = chunk.with_name(chunk.name + ".new")
    duckdb.sql(f"COPY ({select.format(src=f'read_parquet({str(chunk)!r})')}) TO '{new}' (FORMAT parquet)")
    new.replace(chunk)


@pytest.mark.parametrize("damage", ["bytes_no_sum_holds", "bytes_a_blob"])
def test_chunk_read_whole_but_its_values_break_the_query(damage: str, recording: Path, tmp_path: Path) -> None:
    """Seen in a fresh clone's fuzz run: a flipped bit left a valid file (every column reads
    whole) whose values break the report's query (a count near 2^63 overflows its sum; a
    column's type became BLOB). The reader finds that file by the query itself, leaves it
    out with a warning naming it, and reports the others' rows exactly (exit 0)."""
    rec = _copy(recording, tmp_path)
    chunk = rec / "io" / "chunk-000002.parquet"
    _rewrite(chunk, {"bytes_no_sum_holds": "SELECT * REPLACE (9223372036854775807 AS h00, 9223372036854775807 AS bytes) "
                                           "FROM {src} UNION ALL SELECT * REPLACE (9223372036854775807 AS h00, "
                                           "9223372036854775807 AS bytes) FROM {src}",
                     "bytes_a_blob": "SELECT * REPLACE (CAST(CAST(bytes AS VARCHAR) AS BLOB) AS bytes) FROM {src}"}[damage])
    rep, err = _report_ok(rec)
    assert f"skipping damaged chunk {chunk}: its values can't be used" in err, err
    assert rep["rows"] == _without(recording, ["io/chunk-000002.parquet"], tmp_path, {})["rows"]


def test_corrupted_meta_json(recording: Path, tmp_path: Path) -> None:
    rec = _copy(recording, tmp_path)
    meta = rec / "meta.json"
    text = meta.read_text()
    meta.write_text(text[: len(text) // 2])
    assert "unreadable recording metadata" in _refused(rec)
    meta.write_bytes(b"\xff\xfe" + os.urandom(64))
    assert "unreadable recording metadata" in _refused(rec)
    good = json.loads(text)
    meta.write_text(json.dumps(dict(good, phases="all of them")))
    assert "bad meta.json" in _refused(rec)
    # a wrong optional value is left out with a warning: the data is still reported
    meta.write_text(json.dumps(dict(good, servers=True, started="yesterday", max_entries=[1])))
    rep, err = _report_ok(rec)
    assert "servers" in err and "started" in err
    assert rep["rows"] == report_rows(recording)[1]["rows"]


def test_meta_json_missing(recording: Path, tmp_path: Path) -> None:
    rec = _copy(recording, tmp_path)
    (rec / "meta.json").unlink()
    err = _refused(rec)
    assert "no meta.json" in err and str(rec) in err
    # the chunks are untouched: putting meta.json back makes it whole again
    shutil.copy(recording / "meta.json", rec / "meta.json")
    assert _report_ok(rec)[0]["rows"] == report_rows(recording)[1]["rows"]


def test_truncated_compacted_segment(compacted: Path, recording: Path, tmp_path: Path) -> None:
    rec = _copy(compacted, tmp_path)
    seg = sorted((rec / "io").glob("seg1-*.parquet"))[0]
    data = seg.read_bytes()
    seg.write_bytes(data[: len(data) // 3])
    rep, err = _report_ok(rec)
    assert "skipping damaged segment" in err and seg.name in err
    assert rep["rows"] == _without(compacted, [f"io/{seg.name}"], tmp_path, {})["rows"]
    # the chunks it replaced, if still there (a crash before they were deleted), are read
    # instead of it: a damaged segment hides nothing
    for c in sorted((recording / "io").glob("chunk-*.parquet")):
        shutil.copy(c, rec / "io" / c.name)
    rep, err = _report_ok(rec)
    assert seg.name in err
    assert _sums(rep["rows"]) == _sums(report_rows(recording)[1]["rows"])
    # and compaction never deletes chunks on the word of a damaged segment
    from ioattr.format.compact import compact

    compact(rec, fanout=(2,), warn=lambda m: None)
    assert _sums(_report_ok(rec)[0]["rows"]) == _sums(report_rows(recording)[1]["rows"])


def test_junk_segment_name_hides_no_chunks(recording: Path, tmp_path: Path) -> None:
    """A file named like a segment covering every chunk, but not a Parquet file."""
    rec = _copy(recording, tmp_path)
    junk = rec / "io" / "seg3-000001-999999.parquet"
    junk.write_bytes(b"PAR1" + os.urandom(16376) + b"PAR1")
    rep, err = _report_ok(rec)
    assert junk.name in err
    assert rep["rows"] == report_rows(recording)[1]["rows"]
    from ioattr.format.compact import compact

    compact(rec, fanout=(2,), warn=lambda m: None)
    assert _sums(_report_ok(rec)[0]["rows"]) == _sums(report_rows(recording)[1]["rows"])


def test_killed_compactor_leaves_nothing_that_blocks_or_miscounts(recording: Path, tmp_path: Path) -> None:
    """A compactor killed mid-merge: its locks (flock on REC and on a table directory) die
    with it; it leaves a half-written segment .tmp, and a published segment whose chunks
    were not yet deleted. Reports count every chunk once; the next compaction finishes."""
    from ioattr.format.compact import compact

    rec = _copy(recording, tmp_path)
    # what a compactor killed after publishing seg1-000001-000002 but before retiring its chunks
    merged = _copy(recording, tmp_path, "merged")
    compact(merged, fanout=(2,), max_merges=1, warn=lambda m: None)
    seg = next((merged / "io").glob("seg1-*.parquet"))
    shutil.copy(seg, rec / "io" / seg.name)
    # ... and one killed while writing the next one, holding its locks
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"rec = {str(rec)!r}\n"
        "a = os.open(rec, os.O_RDONLY | os.O_DIRECTORY); fcntl.flock(a, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "b = os.open(rec + '/io', os.O_RDONLY | os.O_DIRECTORY); fcntl.flock(b, fcntl.LOCK_EX)\n"
        "fd = os.open(rec + '/io/seg1-000003-000004.parquet.tmp', os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "os.write(fd, b'PAR1' + os.urandom(5000))\n"
        "print('locked', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        holder.send_signal(signal.SIGKILL)
    finally:
        holder.wait(timeout=10)
    want = report_rows(recording)[1]["rows"]
    rep, err = _report_ok(rec)
    assert rep["rows"] == want, err        # the published segment counted, its chunks not twice
    r = subprocess.run([sys.executable, "-m", "ioattr.cli.main", "compact", str(rec)], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr     # not "being compacted by another process"
    assert not list((rec / "io").glob("*.tmp"))
    assert not (rec / "io" / "chunk-000001.parquet").exists()  # retired by the cleanup
    assert _sums(_report_ok(rec)[0]["rows"]) == _sums(want)


def test_meta_json_of_a_newer_or_foreign_format(recording: Path, tmp_path: Path) -> None:
    rec = _copy(recording, tmp_path)
    good = json.loads((rec / "meta.json").read_text())
    (rec / "meta.json").write_text(json.dumps(dict(good, format="ioattr-recording/99")))
    assert "newer than this ioattr reads" in _refused(rec)
    (rec / "meta.json").write_text(json.dumps(dict(good, format=7)))
    assert "not an ioattr recording" in _refused(rec)

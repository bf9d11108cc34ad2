"""Random and mutated Parquet buffers through the recording reader's per-file checks.

    python -m tests.fuzz.parquet_fuzz SEED N [--save DIR] PART [PART...]

Each buffer is written as a chunk file and goes through what the reader does
with a part: complete_parquet and partcheck.part_problem (compact.py's
part_damage: the magic at both ends, then every size in the footer and the
page headers checked before DuckDB is trusted with them), then, for those
that pass, damaged_part (reader.py: DuckDB decodes every value) and DuckDB's
footer reader (parquet_schema), on a connection made by ioattr.format.duck (its
memory_limit and threads). Buffers: random bytes; random bytes framed by
the Parquet magic (so the footer parsers see them); real parts (PART...)
with bytes flipped, zeroed or cut, padded or not; real parts with a huge
Thrift varint written into the footer or a page header (what makes a reader
allocate what a length says).

Every answer must be a verdict (a reason in one line, or None), never an
exception, and no buffer may make this process run out of memory: the test
runs it under an address-space limit (RLIMIT_AS), so an allocation a damaged
length asked for fails here (an "Out of Memory"/bad_alloc/MemoryError) instead
of eating the machine, and that is a failure too; so is a peak RSS of 1 GiB or
more. A failing buffer is written to --save DIR (default: the temp dir) and
named with the seed, so it can be replayed. Prints one summary line.
"""
from __future__ import annotations

import argparse
import random
import re
import resource
import sys
import tempfile
from pathlib import Path

from ioattr.format import duck
from ioattr.format.compact import part_damage, parse_part
from ioattr.format.reader import DUCKDB_ERRORS, _lit, damaged_part

SIZE = 16384
MAX_RSS_KB = 1 << 20       # 1 GiB
BLOWUP = re.compile(r"out of memory|bad_alloc|allocation failure|cannot allocate|MemoryError", re.I)
# varints a damaged length could have: 2^31-1, 2^32-1 (as zigzag i32 or a plain length), 2^63
HUGE_VARINTS = [b"\xfe\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f",
                b"\x80\x80\x80\x80\x04", b"\xff\xff\xff\x7f"]


def _footer_start(b: bytes) -> int:
    n = int.from_bytes(b[-8:-4], "little") if len(b) >= 12 else 0
    return max(4, len(b) - 8 - n) if 0 < n < len(b) - 12 else max(4, len(b) - 64)


def buffers(rng: random.Random, parts: list[bytes], n: int):
    for i in range(n):
        kind = i % 5
        if kind == 0:
            yield "random", rng.randbytes(SIZE)
        elif kind == 1:
            b = bytearray(rng.randbytes(SIZE))
            b[:4] = b[-4:] = b"PAR1"
            if rng.random() < 0.5:        # a footer length that fits the file
                b[-8:-4] = rng.randrange(1, SIZE - 12).to_bytes(4, "little")
            yield "framed", bytes(b)
        elif kind == 4:
            # a huge length where a reader reads one: in the footer, or a page header (the
            # first page starts at byte 4; the others somewhere in between)
            b = bytearray(rng.choice(parts))
            start = _footer_start(bytes(b))
            where = rng.choice(["footer", "footer", "first_page", "body"])
            if where == "footer":
                j = rng.randrange(start, max(start + 1, len(b) - 8))
            elif where == "first_page":
                j = rng.randrange(4, min(64, len(b) - 8))
            else:
                j = rng.randrange(4, max(5, start))
            v = rng.choice(HUGE_VARINTS)
            b[j:j + len(v)] = v
            yield "huge " + where, bytes(b)
        else:
            b = bytearray(rng.choice(parts))
            for _ in range(rng.randint(1, 12)):
                j = rng.randrange(len(b))
                if rng.random() < 0.2:
                    b[j:j + 64] = bytes(len(b[j:j + 64]))
                else:
                    b[j] ^= 1 << rng.randrange(8)
            if rng.random() < 0.3:
                b = b[:rng.randrange(len(b))]
            if rng.random() < 0.3 and len(b) < SIZE:
                b += rng.randbytes(SIZE - len(b))
            yield "mutated", bytes(b)


def check(con, path: Path) -> str | None:
    """The reader's verdict on one file: None (readable) or one line (why not)."""
    why = part_damage(parse_part(path))
    if why is None:
        why = damaged_part(con, path)
        try:
            con.execute(f"SELECT count(*) FROM parquet_schema({_lit(path)})").fetchall()
        except DUCKDB_ERRORS as e:
            if BLOWUP.search(str(e)):
                raise
    assert why is None or (isinstance(why, str) and why and "\n" not in why), repr(why)
    return why


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.parquet_fuzz")
    ap.add_argument("seed", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("parts", nargs="+")
    ap.add_argument("--save", default=tempfile.gettempdir(), help="where a failing buffer is written")
    a = ap.parse_args(argv)
    parts = [Path(p).read_bytes() for p in a.parts]
    rng = random.Random(a.seed)
    con = duck.connect()
    counts: dict[str, int] = {}
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None     # rewriting one file 10k times
    with tempfile.TemporaryDirectory(dir=shm) as d:
        for i, (kind, data) in enumerate(buffers(rng, parts, a.n)):
            path = Path(d) / f"chunk-{i + 1:06d}.parquet"       # a new name: no cached verdict
            path.write_bytes(data)
            try:
                why = check(con, path)
                if why is not None and BLOWUP.search(why):
                    raise MemoryError(why)
            except BaseException as e:
                keep = Path(a.save) / f"parquet-fuzz-{a.seed}-{i}.parquet"
                keep.write_bytes(data)
                print(f"seed {a.seed} buffer {i} ({kind}, {len(data)} bytes, kept as {keep}): "
                      f"{type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
                return 1
            finally:
                path.unlink()
            verdict = "readable" if why is None else "not parquet" if "complete Parquet" in why else "damaged"
            key = f"{kind.split()[0]} {verdict}"
            counts[key] = counts.get(key, 0) + 1
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if rss_kb >= MAX_RSS_KB:
        print(f"seed {a.seed}: peak RSS {rss_kb // 1024} MiB (limit {MAX_RSS_KB // 1024} MiB)", file=sys.stderr)
        return 1
    print(f"ok peak_rss_mib={rss_kb // 1024} " + " ".join(f"{k.replace(' ', '_')}={v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

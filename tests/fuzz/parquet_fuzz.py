"""Random and mutated 16 KiB buffers through the recording reader's per-file checks.

    python -m tests.fuzz.parquet_fuzz SEED N CHUNK [CHUNK...]

Each buffer is written as a chunk file and goes through what the reader does
with a part: complete_parquet (compact.py: the magic at both ends), then for
those that pass, damaged_part (reader.py: DuckDB decodes every value) and
DuckDB's footer reader (parquet_schema). Buffers: random bytes; random bytes
framed by the Parquet magic (so DuckDB's footer parser sees them); real
chunks (CHUNK...) with bytes flipped, zeroed or cut, padded to 16 KiB or not.
Every answer must be a verdict (True/False, None or one line), never an
exception. Run in its own process by tests/test_fuzz.py, so a crash inside
DuckDB fails the test instead of killing it. Prints one summary line.
"""
from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

import duckdb

from ioattr.compact import complete_parquet
from ioattr.reader import DUCKDB_ERRORS, _lit, damaged_part

SIZE = 16384


def buffers(rng: random.Random, chunks: list[bytes], n: int):
    for i in range(n):
        kind = i % 4
        if kind == 0:
            yield "random", rng.randbytes(SIZE)
        elif kind == 1:
            b = bytearray(rng.randbytes(SIZE))
            b[:4] = b[-4:] = b"PAR1"
            if rng.random() < 0.5:        # a footer length that fits the file
                b[-8:-4] = rng.randrange(1, SIZE - 12).to_bytes(4, "little")
            yield "framed", bytes(b)
        else:
            b = bytearray(rng.choice(chunks))
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


def main(argv: list[str]) -> int:
    seed, n = int(argv[0]), int(argv[1])
    chunks = [Path(p).read_bytes() for p in argv[2:]]
    rng = random.Random(seed)
    con = duckdb.connect(":memory:")
    counts: dict[str, int] = {}
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None     # rewriting one file 10k times
    with tempfile.TemporaryDirectory(dir=shm) as d:
        path = Path(d) / "chunk-000001.parquet"
        for kind, data in buffers(rng, chunks, n):
            path.write_bytes(data)
            if not complete_parquet(path):
                verdict = "not parquet"
            else:
                why = damaged_part(con, path)
                assert why is None or (isinstance(why, str) and why and "\n" not in why), why
                try:
                    con.execute(f"SELECT count(*) FROM parquet_schema({_lit(path)})").fetchall()
                except DUCKDB_ERRORS:
                    pass
                verdict = "readable" if why is None else "damaged"
            key = f"{kind} {verdict}"
            counts[key] = counts.get(key, 0) + 1
    print("ok " + "; ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

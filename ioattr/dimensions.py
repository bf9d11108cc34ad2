"""The report dimensions: what each is called and how it is computed from
the recording's columns. Unknowns stay NULL (JSON null), never a guess."""
from __future__ import annotations

from dataclasses import dataclass

from ioattr.errors import UsageError


@dataclass(frozen=True)
class Dimension:
    name: str
    sql: str
    help: str


_DIMS = [
    Dimension("file", "file", "file path; [journal]/[metadata]/... for block IO that is not file data"),
    Dimension("inode", "ino", "inode number"),
    Dimension("device", "device", "device (filesystem device at the syscall layer, disk at the block layer)"),
    Dimension("process", "CASE WHEN pid IS NULL THEN NULL ELSE coalesce(process, '?') || '[' || pid || ']' END",
              "process as name[pid]"),
    Dimension("thread", "CASE WHEN tid IS NULL THEN NULL ELSE coalesce(thread, '?') || '[' || tid || ']' END",
              "thread as name[tid]"),
    Dimension("op", "op", "read, write or fsync"),
    Dimension("layer", "layer", "syscall, block or pagecache"),
    Dimension("api", "api", "how the IO was issued: sync, vector, libaio, io_uring, direct, buffered, readahead"),
    Dimension("phase", "phase", "benchmark phase"),
]
DIMENSIONS: dict[str, Dimension] = {d.name: d for d in _DIMS}


def parse_dimensions(spec: list[str] | str | None) -> list[str]:
    """Split and check a --by value; unknown names are a usage error."""
    if spec is None:
        return ["file"]
    items = spec.split(",") if isinstance(spec, str) else [x for s in spec for x in s.split(",")]
    dims = [x.strip() for x in items if x.strip()]
    if not dims:
        raise UsageError("--by needs at least one dimension")
    for d in dims:
        if d not in DIMENSIONS:
            raise UsageError(f"unknown dimension {d!r}; known: {', '.join(DIMENSIONS)}")
    seen: list[str] = []
    for d in dims:
        if d not in seen:
            seen.append(d)
    return seen

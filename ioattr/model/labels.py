"""Names for the numbers in io_stats keys, as recordings and reports show them."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ioattr.collectors.abi import Api, FileClass, Kind, Layer, Op, Stage
from ioattr.collectors.file_classes import FILE_CLASSES

# the drop reason that is not a slot of the BPF drops map: collectors/prog_stats.py
PROG_SKIPPED = "prog_skipped"

LAYER_NAMES = {int(v): v.name.lower() for v in Layer}
LAYERS = tuple(LAYER_NAMES[int(v)] for v in Layer)  # syscall, block, pagecache: --layer's choices
OP_NAMES = {int(v): v.name.lower() for v in Op}
API_NAMES = {
    int(Api.SYNC): "sync",
    int(Api.VECTOR): "vector",
    int(Api.SYNCCALL): "sync",
    int(Api.LIBAIO): "libaio",
    int(Api.IO_URING): "io_uring",
    int(Api.DIRECT): "direct",
    int(Api.BUFFERED): "buffered",
    int(Api.READAHEAD): "readahead",
    int(Api.OTHER): "other",
    # PostgreSQL 18 (io_method=worker): an io worker did this IO for the backend it is charged to
    int(Api.IO_WORKER): "io_worker",
}
KIND_NAMES = {int(v): v.name.lower() for v in Kind}
# the stage dimension (bpf/ioattr.h enum ioattr_stage): purge is a role, its stage is background;
# inside a statement whose stage was not traced (--stages statement, or no THD layout) the digest
# is known and the stage is not, so it is null (never a guess)
STAGE_NAMES: dict[int, str | None] = {int(s): s.name.lower() for s in Stage}
STAGE_NAMES[int(Stage.PURGE)] = "background"
STAGE_NAMES[int(Stage.STATEMENT)] = None
# the file_class dimension (collectors/file_classes.py, bpf/ioattr.h enum ioattr_file_class): every
# engine's files are named in this one vocabulary (ioattr/engines/ decide which class a file has)
FILE_CLASS_NAMES = {FileClass(c.number): c.name for c in FILE_CLASSES}

# What the `file` column says for block IO that is not a tracked file's data.
KIND_FILE_LABELS = {
    int(Kind.JOURNAL): "[journal]",
    int(Kind.METADATA): "[metadata]",
    int(Kind.SWAP): "[swap]",
    int(Kind.UNKNOWN): "[unknown]",
    int(Kind.UNTRACKED): "[untracked files]",
    int(Kind.DISCARD): "[discard]",
    int(Kind.FLUSH): "[cache flush]",
}

# The `process` of block writes of a target's file whose pages no target dirtied while traced
# (kind others_dirty, no pid): a copy of a datadir written back under the server now using it,
# another process's writes, or pages dirty before the recording began (bpf/block.bpf.c).
NOT_A_TARGET = "[not a target: dirtied by another process or before the recording]"

# Which BPF map each drop reason (bpf/ioattr.h enum ioattr_drop, meta.json "dropped") is
# about.
# pages_cut is a classifier limit, and prog_skipped the kernel's (no map of ours).
DROP_MAPS = {"stats_full": "io_stats", "inflight_full": "inflight", "events_full": "events",
             "tracked_full": "tracked_inodes", "pages_full": "page_stats", "pages_cut": "",
             "prepared_lost": "prep_stmts", PROG_SKIPPED: ""}
DROP_WHAT = {
    "stats_full": "io_stats full: IO of new file/thread/query keys not counted",
    "inflight_full": "in-flight table full: async IO not timed or not counted",
    "events_full": "event ring buffer full: open/statement/thread-name events lost",
    "tracked_full": "tracked_inodes full: writeback of some targets' files not counted at the block layer",
    "pages_full": "page_stats full: pages of new index/page-type keys not classified",
    "pages_cut": "IO with more pages than one probe classifies: pages past the limit not classified",
    "prepared_lost": "prepared statements' executions whose statement id prep_stmts no longer held: "
                     "counted and their IO kept under [prepared statement, id not kept], not their text",
    PROG_SKIPPED: "probe runs the kernel skipped (one fired inside a BPF program already running on its "
                  "CPU; bpftool: recursion_misses): their IO or events not counted",
}


def drop_details(dropped: dict | None, capacities: dict | None = None) -> list[dict]:
    """The non-zero drops of a recording or session, one entry per reason, biggest first:
    {"map", "reason", "count", "what"} (+ "max_entries" when the map's capacity is known)."""
    out = []
    for reason, n in (dropped or {}).items():
        if not n:
            continue
        m = DROP_MAPS.get(reason, "")
        d = {"map": m or None, "reason": reason, "count": int(n), "what": DROP_WHAT.get(reason, reason)}
        if capacities and m in capacities:
            d["max_entries"] = int(capacities[m])
        out.append(d)
    return sorted(out, key=lambda d: (-d["count"], d["reason"]))


def drops_line(dropped: dict | None, capacities: dict | None = None) -> str | None:
    """One human line about drops, None when there were none."""
    details = drop_details(dropped, capacities)
    if not details:
        return None
    total = sum(d["count"] for d in details)
    parts = []
    for d in details:
        where = d["map"] or d["reason"]
        cap = f", capacity {d['max_entries']}" if "max_entries" in d else ""
        parts.append(f"{where} {d['count']:,}{cap}")
    hint = "; record with a larger --max-entries" if any(d["map"] == "io_stats" for d in details) else ""
    return f"WARNING: {total:,} IO/events dropped, the totals are low ({'; '.join(parts)}{hint})"


def shorten_path(path: str, prefixes: Sequence[str]) -> str:
    """A path relative to the server's datadir when it lies inside it (prefixes end in "/",
    longest first); absolute otherwise. `top` and `report` show files this way."""
    for p in prefixes:
        if p and path.startswith(p) and len(path) > len(p):
            return path[len(p):].lstrip("/")
    return path


def relation_label(relations: Mapping[str, Any] | None, path: str | None) -> str | None:
    """The relation a file holds, as every file view names it (report --by file's `relation`,
    top's files view, the HTML report's file tables, the exporter's `file` label: file_label):
    "db.schema.name", with the fork when it is not the main one
    ("db.schema.name (vm)"); None for a file that is no relation's or was never named.
    `relations` is meta.json "relations" (a PostgreSQL recording's; the live session's
    relation_files() is the same map: path -> {"relation", "fork", ...}); a file deleted since
    ("... (deleted)") keeps its name."""
    if not relations or not path:
        return None
    rel = relations.get(path.removesuffix(" (deleted)"))
    if not isinstance(rel, dict) or not rel.get("relation"):
        return None
    name, fork = rel["relation"], rel.get("fork")
    return name if fork in (None, "main") else f"{name} ({fork})"


def file_label(relations: Mapping[str, Any] | None, path: str | None, prefixes: Sequence[str] = ()) -> str | None:
    """A file as every file view names it: the relation it holds (relation_label) when it is a
    relation's, else its path, relative to a server's datadir when `prefixes` (datadirs ending
    in "/", longest first: shorten_path) hold it; None for no path."""
    if not path:
        return None
    return relation_label(relations, path) or shorten_path(path, prefixes)

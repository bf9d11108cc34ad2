"""Check a Parquet file's own sizes before DuckDB trusts them.

DuckDB's Parquet reader believes the counts and lengths in a file: a list
length in the footer, a string length in a page header's statistics, a
page's uncompressed size. In a damaged file (a flipped bit, random bytes
between two `PAR1` magics) these can say billions, and DuckDB then
allocates them, outside its memory_limit: a footer whose list says 83M
row groups made it ask for 36.7 GB, one saying 140M for 3.4 GB (strace,
under RLIMIT_AS), and a vector that size is constructed, i.e. touched; the
fuzz test once took a whole 24 GB machine that way (issue 10). So every
part of a recording goes through `part_problem` before DuckDB sees it:

1. the footer length fits the file;
2. the footer is decoded here, by a minimal Thrift compact-protocol reader
   that never allocates more than the bytes it has read (a list or map
   can't have more elements than there are bytes left, a string can't run
   past them), so a damaged footer is an error, not an allocation;
   (pyarrow's reader is not used: on some damaged statistics it throws a
   C++ exception through Cython and aborts the process);
3. every row group and column chunk lies inside the file, has sane sizes
   (non-negative; uncompressed at most MAX_CHUNK_BYTES, rows at most
   MAX_ROW_GROUP_ROWS), is not in another file, and for flat columns has as
   many values as its row group has rows;
4. every page header of every column chunk is decoded the same way: the
   pages tile the chunk exactly, each page fits in what is left of it, is
   at most MAX_PAGE_BYTES uncompressed and the data pages' values add up to
   the chunk's.

Whatever fails is one line saying why; the caller skips the file with a
warning naming it. What passes can still hold bad values inside its pages:
DuckDB finds those, under its memory_limit (duck.py). Reading costs the
footer plus the page headers (one read for a file up to WHOLE_FILE), no
decompression: ~3 ms for a recorded io chunk (87 columns), ~0.25 s for a
24-hour compacted recording's io and counters segments (30 + 122 row groups,
32 MB), on a loaded 2-core VM.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Callable

MAGIC = b"PAR1"
MAX_CHUNK_BYTES = 1 << 30        # one column chunk's uncompressed size; ioattr's are < 10 MB
MAX_PAGE_BYTES = 64 << 20        # one page; pyarrow writes ~1 MB pages (DuckDB takes its page buffers
                                 # under memory_limit, measured: this only stops absurd sizes early)
MAX_ROW_GROUP_ROWS = 1 << 27     # ioattr writes <= 32768 (segments) or one interval's rows
MAX_HEADER_BYTES = 16 << 20      # a page header (with its statistics)
FIRST_READ = 4096
WHOLE_FILE = 8 << 20             # a file up to this size is read at once (one read, not one per page)
MAX_DEPTH = 32

# Thrift compact protocol element types
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)
_INTS = (_I16, _I32, _I64)
# PageType
_DATA_PAGE, _INDEX_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = range(4)


class _Short(Exception):
    """The structure runs past the bytes there are."""


class _Bad(Exception):
    """The bytes can't be the structure."""


# A minimal Thrift compact-protocol reader: (buf, pos) in, (value, new pos) out. A
# length or count is compared with the bytes left before anything is done with it, so
# nothing here allocates more than the bytes it was given. IndexError (a read past the
# end) is turned into _Short by the callers.

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return b, pos
    result, shift = b & 0x7F, 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _Bad("varint too long")


def _zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    n, pos = _varint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def _field(buf: bytes, pos: int, last: int) -> tuple[int, int, int]:
    """(field id, type, new pos) of the next field header; type _STOP at a struct's end."""
    h = buf[pos]
    pos += 1
    ftype = h & 0x0F
    if ftype == _STOP:
        return 0, _STOP, pos
    delta = h >> 4
    if delta:
        return last + delta, ftype, pos
    fid, pos = _zigzag(buf, pos)
    return fid, ftype, pos


def _struct(buf: bytes, pos: int, read: Callable[[int, int, int], int | None], depth: int = 1) -> int:
    """Walk the fields of the struct whose first field header is at `pos`: read(field id,
    type, pos) reads a field it knows and returns the position after it, or None to have it
    skipped (_skip at `depth`). Returns the position after the struct's stop byte."""
    last = 0
    while True:
        fid, ft, pos = _field(buf, pos, last)
        if ft == _STOP:
            return pos
        last = fid
        after = read(fid, ft, pos)
        pos = _skip(buf, pos, ft, depth) if after is None else after


def _list_header(buf: bytes, pos: int) -> tuple[int, int, int]:
    """(element count, element type, new pos); every element takes at least one byte
    (bools in a list: exactly one), so a count beyond the bytes left is damage."""
    h = buf[pos]
    pos += 1
    n = h >> 4
    if n == 15:
        n, pos = _varint(buf, pos)
    if n > len(buf) - pos:
        raise _Bad(f"a list of {n} elements in {len(buf) - pos} bytes")
    return n, h & 0x0F, pos


def _skip(buf: bytes, pos: int, ftype: int, depth: int = 0) -> int:
    """The position after a value of type `ftype` at `pos`. Most of a footer is skipped
    (statistics, encodings, key/value metadata), so this is the hot path: scalars are
    stepped over inline, containers recurse at most MAX_DEPTH deep."""
    if ftype in _INTS:
        while buf[pos] > 0x7F:
            pos += 1
        return pos + 1
    if ftype == _BINARY:
        n, pos = _varint(buf, pos)
        pos += n
        if pos > len(buf):
            raise _Short
        return pos
    if ftype == _STRUCT:
        return _skip_struct(buf, pos, depth + 1)
    if ftype in (_TRUE, _FALSE):
        return pos
    if ftype == _BYTE:
        return pos + 1
    if ftype == _DOUBLE:
        return pos + 8
    if depth >= MAX_DEPTH:
        raise _Bad("nested too deep")
    if ftype in (_LIST, _SET):
        n, etype, pos = _list_header(buf, pos)
        if etype in (_TRUE, _FALSE, _BYTE):
            return pos + n
        if etype in _INTS:
            for _ in range(n):
                while buf[pos] > 0x7F:
                    pos += 1
                pos += 1
            return pos
        if etype == _STRUCT:
            for _ in range(n):
                pos = _skip_struct(buf, pos, depth + 1)
            return pos
        for _ in range(n):
            pos = _skip(buf, pos, etype, depth + 1)
        return pos
    if ftype == _MAP:
        n, pos = _varint(buf, pos)
        if n:
            if 2 * n > len(buf) - pos:
                raise _Bad(f"a map of {n} entries in {len(buf) - pos} bytes")
            kv = buf[pos]
            pos += 1
            for _ in range(n):
                pos = _skip(buf, pos, kv >> 4, depth + 1)
                pos = _skip(buf, pos, kv & 0x0F, depth + 1)
        return pos
    raise _Bad(f"unknown thrift type {ftype}")


def _skip_struct(buf: bytes, pos: int, depth: int) -> int:
    """The position after the struct whose first field header is at `pos`."""
    if depth > MAX_DEPTH:
        raise _Bad("nested too deep")
    while True:
        h = buf[pos]
        pos += 1
        t = h & 0x0F
        if t == _STOP:
            return pos
        if not h >> 4:                  # a long-form field id follows
            while buf[pos] > 0x7F:
                pos += 1
            pos += 1
        if t in _INTS:
            while buf[pos] > 0x7F:
                pos += 1
            pos += 1
        elif t == _BINARY:
            n, pos = _varint(buf, pos)
            pos += n
            if pos > len(buf):
                raise _Short
        elif t not in (_TRUE, _FALSE):
            pos = _skip(buf, pos, t, depth)


def _int(buf: bytes, pos: int, ftype: int) -> tuple[int, int]:
    if ftype not in _INTS:
        raise _Bad("field of the wrong type")
    return _zigzag(buf, pos)


def _i32(buf: bytes, pos: int, ftype: int) -> tuple[int, int]:
    v, pos = _int(buf, pos, ftype)
    if not -(1 << 31) <= v < (1 << 31):
        raise _Bad("i32 out of range")
    return v, pos


def _struct_list_header(buf: bytes, pos: int, ftype: int) -> tuple[int, int]:
    if ftype != _LIST:
        raise _Bad("field of the wrong type")
    n, etype, pos = _list_header(buf, pos)
    if etype != _STRUCT:
        raise _Bad("a list of the wrong type")
    return n, pos


# -- page headers ----------------------------------------------------------------------

def _num_values(buf: bytes, pos: int, ftype: int, v2: bool) -> tuple[int, int, int]:
    """(num_values (field 1), level bytes, new pos) of a data, dictionary or v2 data page
    header; level bytes: a v2 page's definition plus repetition level lengths (5, 6)."""
    if ftype != _STRUCT:
        raise _Bad("page header part of the wrong type")
    got = {"n": None, "levels": 0}

    def read(fid: int, ft: int, at: int) -> int | None:
        if fid == 1:
            got["n"], at = _i32(buf, at, ft)
            return at
        if v2 and fid in (5, 6):
            v, at = _i32(buf, at, ft)
            if v < 0:
                raise _Bad("negative level length")
            got["levels"] += v
            return at
        return None

    pos = _struct(buf, pos, read)
    n = got["n"]
    if n is None or n < 0:
        raise _Bad("page without a number of values")
    return n, got["levels"], pos


def page_header(buf: bytes) -> tuple[int, int, int, int, int]:
    """(header length, page type, uncompressed size, compressed size, num_values) of the
    PageHeader at the start of `buf`. _Short when buf ends inside it, _Bad if it is none."""
    got: dict[int, int | None] = {1: None, 2: None, 3: None}   # type, uncompressed, compressed size
    counts = [0, 0]                                             # num_values, level bytes

    def read(fid: int, ft: int, at: int) -> int | None:
        if fid in got:
            got[fid], at = _i32(buf, at, ft)
            return at
        if fid in (5, 7, 8):
            counts[0], counts[1], at = _num_values(buf, at, ft, fid == 8)
            return at
        return None

    try:
        pos = _struct(buf, 0, read, depth=0)
    except IndexError:
        raise _Short from None
    ptype, usize, csize = got[1], got[2], got[3]
    nvalues, levels = counts
    if pos > len(buf):
        raise _Short
    if ptype is None or usize is None or csize is None:
        raise _Bad("page header without type or sizes")
    if levels > min(csize, usize):
        raise _Bad(f"{levels} bytes of levels in a page of {min(csize, usize)}")
    return pos, ptype, usize, csize, nvalues


class _Source:
    """The file's bytes: all of a small file in memory, else read where asked."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.data = os.pread(fd, size, 0) if size <= WHOLE_FILE else None

    def read(self, n: int, at: int) -> bytes:
        if self.data is not None:
            return self.data[at:at + n]
        return os.pread(self.fd, n, at)


def _walk_pages(src: _Source, start: int, end: int, want_values: int, where: str) -> str | None:
    """Why the column chunk at [start, end) is not a sequence of sane pages, or None."""
    pos = start
    values = 0
    while pos < end:
        limit = min(end - pos, MAX_HEADER_BYTES)
        size = limit if src.data is not None else min(limit, FIRST_READ)
        while True:
            buf = src.read(size, pos)
            try:
                hlen, ptype, usize, csize, nvalues = page_header(buf)
                break
            except _Short:
                if size >= limit or len(buf) < size:
                    return f"{where}: page header at byte {pos} runs past its column chunk"
                size = min(limit, size * 8)
            except (_Bad, RecursionError) as e:
                return f"{where}: bad page header at byte {pos} ({e or 'undecodable'})"
        if ptype not in (_DATA_PAGE, _INDEX_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2):
            return f"{where}: page of unknown type {ptype} at byte {pos}"
        if csize < 0 or usize < 0:
            return f"{where}: page at byte {pos} has a negative size"
        if pos + hlen + csize > end:
            return f"{where}: page at byte {pos} ({csize} bytes) runs past its column chunk"
        if usize > MAX_PAGE_BYTES:
            return f"{where}: page at byte {pos} says it is {usize} bytes uncompressed"
        if ptype in (_DATA_PAGE, _DATA_PAGE_V2):
            values += nvalues
        elif ptype == _DICTIONARY_PAGE and nvalues > 8 * usize + 8:
            # a reader sizes the dictionary by num_values: each takes a bit at the very least
            return f"{where}: dictionary page at byte {pos} says {nvalues} values in {usize} bytes"
        pos += hlen + csize
    if values != want_values:
        return f"{where}: its pages hold {values} values, its footer says {want_values}"
    return None


# -- the footer -------------------------------------------------------------------------

_CHUNK_FIELDS = {5: "num_values", 6: "total_uncompressed_size", 7: "total_compressed_size",
                 9: "data_page_offset", 11: "dictionary_page_offset"}


def _column_meta(buf: bytes, pos: int) -> tuple[dict, int]:
    out: dict = {}

    def read(fid: int, ft: int, at: int) -> int | None:
        name = _CHUNK_FIELDS.get(fid)
        if name is None:
            return None
        out[name], at = _int(buf, at, ft)
        return at

    return out, _struct(buf, pos, read, depth=2)


def _column_chunk(buf: bytes, pos: int) -> tuple[dict | None, int]:
    meta: list[dict | None] = [None]

    def read(fid: int, ft: int, at: int) -> int | None:
        if fid == 1:
            raise _Bad("a column chunk in another file")       # DuckDB would open that path
        if fid != 3:
            return None
        if ft != _STRUCT:
            raise _Bad("field of the wrong type")
        meta[0], at = _column_meta(buf, at)
        return at

    pos = _struct(buf, pos, read)
    return meta[0], pos


def _row_group(buf: bytes, pos: int) -> tuple[tuple[list, int | None], int]:
    got: dict = {"columns": [], "rows": None}

    def read(fid: int, ft: int, at: int) -> int | None:
        if fid == 1:
            got["columns"], at = _struct_list(buf, at, ft, _column_chunk)
            return at
        if fid == 3:
            got["rows"], at = _int(buf, at, ft)
            return at
        return None

    pos = _struct(buf, pos, read)
    return (got["columns"], got["rows"]), pos


def _struct_list(buf: bytes, pos: int, ftype: int, read_one: Callable) -> tuple[list, int]:
    """A list of structs, each read by read_one(buf, pos) -> (item, new pos)."""
    n, pos = _struct_list_header(buf, pos, ftype)
    items = []
    for _ in range(n):
        item, pos = read_one(buf, pos)
        items.append(item)
    return items, pos


def _schema_element(buf: bytes, pos: int) -> tuple[tuple[int, int], int]:
    """((repetition type, number of children), new pos) of a SchemaElement (-1: not given)."""
    got = {3: -1, 5: -1}   # repetition type, number of children

    def read(fid: int, ft: int, at: int) -> int | None:
        if fid not in got:
            return None
        got[fid], at = _i32(buf, at, ft)
        return at

    pos = _struct(buf, pos, read)
    return (got[3], got[5]), pos


def _file_meta(buf: bytes) -> tuple[list[bool], list]:
    """(per leaf column: flat (no repeated ancestor), row groups) from a FileMetaData."""
    lists: dict[int, list] = {2: [], 4: []}   # schema, row groups

    def read(fid: int, ft: int, at: int) -> int | None:
        if fid not in lists:
            return None
        lists[fid], at = _struct_list(buf, at, ft, _schema_element if fid == 2 else _row_group)
        return at

    try:
        pos = _struct(buf, 0, read, depth=0)
    except IndexError:
        raise _Short from None
    schema, row_groups = lists[2], lists[4]
    if pos > len(buf):
        raise _Short
    if not schema:
        raise _Bad("no schema")
    # the schema is a tree in depth-first order: the root, then each node and its children
    flat: list[bool] = []
    stack: list[list] = [[max(schema[0][1], 0), False]]    # [children left, repeated] per open group
    for rep, children in schema[1:]:
        if not stack:
            raise _Bad("the schema has nodes outside its tree")
        stack[-1][0] -= 1
        repeated = stack[-1][1] or rep == 2
        if children > 0:
            stack.append([children, repeated])
        else:
            flat.append(not repeated)
        while stack and stack[-1][0] == 0:
            stack.pop()
    if stack:
        raise _Bad("the schema's tree is incomplete")
    return flat, row_groups


def part_problem(path: Path | str) -> str | None:
    """Why DuckDB must not be given this file (one line), or None: see the module's doc."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return f"cannot open: {e.strerror or e}"
    try:
        size = os.fstat(fd).st_size
        if size < 12:
            return "not a complete Parquet file"
        src = _Source(fd, size)
        head, tail = src.read(4, 0), src.read(8, size - 8)
        if head != MAGIC or tail[4:] != MAGIC:
            return "not a complete Parquet file"
        (footer_len,) = struct.unpack("<I", tail[:4])
        if footer_len == 0 or footer_len > size - 12:
            return f"its footer length ({footer_len} bytes) does not fit the file ({size} bytes)"
        data_end = size - 8 - footer_len
        try:
            flat, row_groups = _file_meta(src.read(footer_len, data_end))
        except _Short:
            return "bad footer (it runs past its length)"
        except (_Bad, RecursionError) as e:
            return f"bad footer ({e or 'undecodable'})"
        return _check_row_groups(src, flat, row_groups, data_end)
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
    finally:
        os.close(fd)


def _check_row_groups(src: _Source, flat: list[bool], row_groups: list, data_end: int) -> str | None:
    """Step 3 and 4 of the module's doc."""
    for r, (columns, rows) in enumerate(row_groups):
        if len(columns) != len(flat):
            return f"row group {r} has {len(columns)} columns, the schema {len(flat)}"
        if rows is None or not 0 <= rows <= MAX_ROW_GROUP_ROWS:
            return f"row group {r} says it has {rows} rows"
        for c, cc in enumerate(columns):
            where = f"row group {r} column {c}"
            if cc is None or not {"num_values", "total_uncompressed_size", "total_compressed_size",
                                  "data_page_offset"} <= cc.keys():
                return f"{where}: no column metadata"
            start = cc["data_page_offset"]
            dict_off = cc.get("dictionary_page_offset")
            if dict_off is not None and 0 < dict_off < start:
                start = dict_off
            length = cc["total_compressed_size"]
            if start < 4 or length <= 0 or start + length > data_end:
                return f"{where}: bytes {start}..{start + length} are not inside the file's data"
            if not 0 <= cc["total_uncompressed_size"] <= MAX_CHUNK_BYTES:
                return f"{where}: says it is {cc['total_uncompressed_size']} bytes uncompressed"
            nv = cc["num_values"]
            if nv < 0 or (flat[c] and nv != rows):
                return f"{where}: {nv} values in a row group of {rows} rows"
            why = _walk_pages(src, start, start + length, nv, where)
            if why:
                return why
    return None

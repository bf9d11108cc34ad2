"""ioattr/engines/myrocks/sst_blocks.py on a hand-made SST tail (footer, metaindex) and bad input."""
from __future__ import annotations

import struct

import pytest

from ioattr.engines.myrocks import sst_blocks as sb
from tests.helpers import varint as _v


def _block(entries: list[tuple[bytes, bytes]]) -> bytes:
    """A block as RocksDB writes it, with one restart point per entry (no shared prefixes)."""
    body, restarts = bytearray(), []
    for k, v in entries:
        restarts.append(len(body))
        body += _v(0) + _v(len(k)) + _v(len(v)) + k + v
    for r in restarts:
        body += struct.pack("<I", r)
    return bytes(body + struct.pack("<I", len(restarts)))


def _sst(version: int = 2, magic: int = sb.MAGIC) -> bytes:
    data = b"d" * 100
    filt = b"f" * 20 + b"\0" * 5
    index = b"i" * 30 + b"\0" * 5
    props = b"p" * 10 + b"\0" * 5
    meta = _block([(b"fullfilter.rocksdb.BuiltinBloomFilter", _v(100) + _v(20)),
                   (b"rocksdb.properties", _v(160) + _v(10))])
    mo = 100 + 25 + 35 + 15
    handles = _v(mo) + _v(len(meta)) + _v(125) + _v(30)
    footer = b"\x01" + handles + b"\0" * (40 - len(handles)) + struct.pack("<I", version) + struct.pack("<Q", magic)
    return data + filt + index + props + meta + b"\0" * 5 + footer


def _layout(buf: bytes) -> sb.SstLayout:
    return sb.layout_of(buf[-sb.FOOTER:], lambda off, n: buf[off:off + n], len(buf))


def test_layout_from_footer_and_metaindex() -> None:
    buf = _sst()
    lay = _layout(buf)
    assert (lay.format_version, lay.data_end, lay.index, lay.filter, lay.filter_kind) == (2, 100, (125, 35), (100, 25), "full")
    assert lay.meta["rocksdb.properties"] == (160, 15)
    assert [lay.kind(o) for o in (0, 99, 100, 124, 125, 159, 160, len(buf) - 1)] == \
        ["data", "data", "filter", "filter", "index", "index", "meta", "meta"]
    assert sb.block_kind(lay.as_dict(), 130) == "index" and sb.block_kind(None, 0) is None
    assert sb.block_kind({"data_end": 1}, 0) is None  # an incomplete entry is unknown, never guessed


def test_bad_tails_are_refused() -> None:
    with pytest.raises(sb.BadSst):
        _layout(_sst(magic=0x1234))
    with pytest.raises(sb.BadSst):
        _layout(_sst(version=6))
    with pytest.raises(sb.BadSst):
        sb.parse_block_entries(b"\x05\x00\x00\x00")  # 5 restarts in a 4-byte block
    with pytest.raises(sb.BadSst):
        sb.layout_of(b"short", lambda off, n: b"", 5)

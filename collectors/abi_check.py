"""Check collectors/abi.py against the structs the BPF objects were compiled with.

bpf/ioattr.h is compiled into every object, and clang writes each struct's layout
into the object's BTF. The Python side decodes the same bytes with its own
description (collectors/abi.py). If the two drift -- a field added in C only, a
padding change -- every row would decode into the wrong columns without an
error. So the loader compares, before loading, every struct the object's BTF
has and abi.py describes: its size, and each C field's offset and size against
the Python field of the same name. A mismatch is one line naming the struct and
the field, and the object is not loaded. The unit tier runs the same check over
the built objects (tests/unit/test_abi.py), so a drift fails in seconds.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Union

import numpy as np

from ioattr.collectors import abi, libbpf

Layout = Union[type, np.dtype]

# C struct name (bpf/ioattr.h) -> its Python description in collectors/abi.py
STRUCTS: dict[str, Layout] = {
    "io_key": abi.IO_KEY_DTYPE,
    "io_val": abi.IO_VAL_DTYPE,
    "page_key": abi.PAGE_KEY_DTYPE,
    "page_val": abi.PAGE_VAL_DTYPE,
    "stmt_key": abi.STMT_KEY_DTYPE,
    "stmt_val": abi.STMT_VAL_DTYPE,
    "stmt_slot": abi.STMT_SLOT_DTYPE,
    "inode_key": abi.InodeKey,
    "innodb_file": abi.InnodbFile,
    "open_event": abi.OpenEvent,
    "query_event": abi.QueryEvent,
    "task_event": abi.TaskEvent,
    "ioattr_config": abi.Config,
    "thd_layout": abi.ThdLayout,
    "thd_stage_key": abi.ThdStageKey,
    "rq_sweep_args": abi.RqSweepArgs,
}

# ctypes mirrors of the same layout as numpy dtypes: both must agree too
TWINS: tuple[tuple[str, type, np.dtype], ...] = (
    ("io_key", abi.IoKey, abi.IO_KEY_DTYPE),
    ("io_val", abi.IoVal, abi.IO_VAL_DTYPE),
)

BTF_KIND_STRUCT = 4


@dataclass(frozen=True)
class Field:
    offset: int  # bytes
    size: int    # bytes


class AbiMismatch(Exception):
    """collectors/abi.py and a BPF object disagree about a struct."""


def python_layout(layout: Layout) -> tuple[int, dict[str, Field]]:
    """(size, {field: Field}) of a ctypes Structure or a numpy structured dtype."""
    if isinstance(layout, np.dtype):
        assert layout.fields is not None
        return layout.itemsize, {name: Field(off, dt.itemsize) for name, (dt, off, *_) in layout.fields.items()}
    fields = {}
    for name, _ in layout._fields_:
        desc = getattr(layout, name)
        fields[name] = Field(desc.offset, desc.size)
    return ctypes.sizeof(layout), fields


class _BtfType(ctypes.Structure):
    _fields_ = [("name_off", ctypes.c_uint32), ("info", ctypes.c_uint32), ("size", ctypes.c_uint32)]


class _BtfMember(ctypes.Structure):
    _fields_ = [("name_off", ctypes.c_uint32), ("type", ctypes.c_uint32), ("offset", ctypes.c_uint32)]


def _btf_funcs() -> ctypes.CDLL:
    L = libbpf.lib()
    if not getattr(L, "_ioattr_btf_protos", False):
        L.bpf_object__btf.restype = ctypes.c_void_p
        L.bpf_object__btf.argtypes = [ctypes.c_void_p]
        L.btf__find_by_name_kind.restype = ctypes.c_int
        L.btf__find_by_name_kind.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32]
        L.btf__type_by_id.restype = ctypes.c_void_p
        L.btf__type_by_id.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        L.btf__name_by_offset.restype = ctypes.c_char_p
        L.btf__name_by_offset.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        L.btf__resolve_size.restype = ctypes.c_int64
        L.btf__resolve_size.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        L._ioattr_btf_protos = True
    return L


def btf_layout(obj: libbpf.Object, name: str) -> tuple[int, dict[str, Field]] | None:
    """(size, {field: Field}) of struct `name` in the object's BTF; None when the
    object does not use the struct (clang emits only the types an object uses)."""
    L = _btf_funcs()
    btf = L.bpf_object__btf(obj.ptr)
    if not btf:
        return None
    tid = L.btf__find_by_name_kind(btf, name.encode(), BTF_KIND_STRUCT)
    if tid < 0:
        return None
    t_addr = L.btf__type_by_id(btf, tid)
    t = _BtfType.from_address(t_addr)
    vlen, kind_flag = t.info & 0xFFFF, t.info >> 31
    fields: dict[str, Field] = {}
    base = t_addr + ctypes.sizeof(_BtfType)
    for i in range(vlen):
        m = _BtfMember.from_address(base + i * ctypes.sizeof(_BtfMember))
        bits = m.offset & 0xFFFFFF if kind_flag else m.offset
        member = (L.btf__name_by_offset(btf, m.name_off) or b"").decode()
        fields[member] = Field(bits // 8, int(L.btf__resolve_size(btf, m.type)))
    return t.size, fields


def compare(name: str, c: tuple[int, dict[str, Field]], py: tuple[int, dict[str, Field]],
            where: str = "collectors/abi.py") -> list[str]:
    """One line per disagreement between the C layout and the Python one."""
    (c_size, c_fields), (p_size, p_fields) = c, py
    out = []
    if c_size != p_size:
        out.append(f"struct {name} is {c_size} bytes in BPF, {p_size} in {where}")
    for field, cf in c_fields.items():
        pf = p_fields.get(field)
        if pf is None:
            out.append(f"struct {name} field {field} (offset {cf.offset}) is missing from {where}")
        elif pf != cf:
            out.append(f"struct {name} field {field} is at {cf.offset} ({cf.size} bytes) in BPF, "
                       f"at {pf.offset} ({pf.size} bytes) in {where}")
    return out


def check_object(obj: libbpf.Object) -> list[str]:
    """Disagreements between one opened object's BTF and collectors/abi.py."""
    out = []
    for name, layout in STRUCTS.items():
        c = btf_layout(obj, name)
        if c is not None:
            out += compare(name, c, python_layout(layout))
    return out


def check_twins() -> list[str]:
    """abi.py's ctypes and numpy descriptions of one struct agree."""
    out = []
    for name, ct, dt in TWINS:
        out += compare(name, python_layout(ct), python_layout(dt), "abi.py's numpy dtype")
    return out


def require(obj: libbpf.Object) -> None:
    """Raise AbiMismatch (one line) if the object and abi.py disagree."""
    bad = check_object(obj)
    if bad:
        extra = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise AbiMismatch(f"{obj.path}: {bad[0]}{extra}: rebuild the BPF objects (make -C bpf) "
                          "or update collectors/abi.py")

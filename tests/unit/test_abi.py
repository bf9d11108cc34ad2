"""collectors/abi.py describes bpf/ioattr.h exactly: struct layouts and enum values.

Two checks, neither needing root or a kernel: the host's clang compiles ioattr.h with a
static assertion per field of every struct abi.py describes (so the ring-buffer event structs,
which no map's BTF carries, are covered too), and the built objects' BTF is compared field by
field (what the loader does before every load). The enums are read from the header's text.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ioattr.collectors import abi, abi_check, libbpf, stage_probes

BPF = Path(__file__).resolve().parents[2] / "bpf"
HEADER = BPF / "ioattr.h"


def _static_asserts() -> str:
    lines = ["#include <linux/types.h>", "#include <stddef.h>", '#include "ioattr.h"']
    for name, layout in abi_check.STRUCTS.items():
        size, fields = abi_check.python_layout(layout)
        lines.append(f'_Static_assert(sizeof(struct {name}) == {size}, "sizeof {name}");')
        for field, f in fields.items():
            lines.append(f'_Static_assert(offsetof(struct {name}, {field}) == {f.offset}, "{name}.{field} offset");')
            lines.append(f'_Static_assert(sizeof(((struct {name} *)0)->{field}) == {f.size}, "{name}.{field} size");')
    return "\n".join(lines) + "\n"


def test_every_struct_matches_the_header_as_compiled(tmp_path: Path) -> None:
    clang = shutil.which("clang")
    assert clang, "clang is installed by `make` (it builds the BPF objects)"
    src = tmp_path / "abi.c"
    src.write_text(_static_asserts())
    r = subprocess.run([clang, "-fsyntax-only", f"-I{BPF}", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_built_objects_btf_matches_abi_py() -> None:
    objects = sorted(BPF.glob("*.bpf.o"))
    assert objects, "build the BPF objects first (make -C bpf)"
    seen: set[str] = set()
    for path in objects:
        obj = libbpf.Object(str(path))
        try:
            assert abi_check.check_object(obj) == [], path
            seen |= {n for n in abi_check.STRUCTS if abi_check.btf_layout(obj, n)}
        finally:
            obj.close()
    # every struct a map or the config carries was compared against a real object
    assert {"io_key", "io_val", "page_key", "page_val", "stmt_key", "stmt_val", "inode_key",
            "innodb_file", "ioattr_config"} <= seen, seen


def test_ctypes_and_numpy_descriptions_agree() -> None:
    assert abi_check.check_twins() == []


def test_a_drift_is_one_line_naming_the_field() -> None:
    c = (40, {"tgid": abi_check.Field(0, 4), "phase": abi_check.Field(34, 2)})
    py = (40, {"tgid": abi_check.Field(0, 4), "phase": abi_check.Field(36, 2)})
    assert abi_check.compare("io_key", c, py) == [
        "struct io_key field phase is at 34 (2 bytes) in BPF, at 36 (2 bytes) in collectors/abi.py"]
    assert abi_check.compare("io_key", (48, {}), (40, {})) == ["struct io_key is 48 bytes in BPF, 40 in collectors/abi.py"]


def _c_enum(name: str) -> dict[str, int]:
    text = HEADER.read_text() + (BPF / "file_classes.h").read_text()  # ioattr.h includes it
    m = re.search(r"enum\s+" + name + r"\s*\{(.*?)\};", text, re.S)
    assert m, name
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return {k: int(v, 0) for k, v in re.findall(r"(\w+)\s*=\s*(\w+)", body)}


# C enum -> (Python enum, C prefix, C names that Python spells out)
ENUMS = {
    "ioattr_layer": (abi.Layer, "IOA_LAYER_", {}),
    "ioattr_op": (abi.Op, "IOA_OP_", {}),
    "ioattr_api": (abi.Api, "IOA_API_", {}),
    "ioattr_kind": (abi.Kind, "IOA_KIND_", {}),
    "ioattr_drop": (abi.Drop, "IOA_DROP_", {}),
    "ioattr_stage": (abi.Stage, "IOA_STAGE_", {}),
    "ioattr_file_class": (abi.FileClass, "IOA_FC_", {}),
    "ioattr_page_engine": (abi.PageEngine, "IOA_ENGINE_", {}),
}


@pytest.mark.parametrize("c_name", sorted(ENUMS))
def test_enums_match_the_header(c_name: str) -> None:
    py, prefix, spelled = ENUMS[c_name]
    c = {spelled.get(k.removeprefix(prefix), k.removeprefix(prefix)): v for k, v in _c_enum(c_name).items()}
    if c_name == "ioattr_drop":
        assert c.pop("SLOTS") == abi.DROP_SLOTS == len(abi.Drop)
    assert c == {m.name: m.value for m in py}


def test_constants_match_the_header() -> None:
    text = HEADER.read_text()
    defines = {k: int(v, 0) for k, v in re.findall(r"#define\s+(IOA\w+)\s+(0x[0-9a-fA-F]+|\d+)", text)}
    assert defines["IOATTR_HIST_SLOTS"] == abi.HIST_SLOTS
    assert defines["IOATTR_HIST_MIN_SHIFT"] == abi.HIST_MIN_SHIFT
    assert defines["IOATTR_PATH_MAX"] == abi.PATH_MAX
    assert defines["IOATTR_QUERY_MAX"] == abi.QUERY_MAX
    assert defines["IOA_DIGEST_INTERNAL"] == abi.DIGEST_INTERNAL
    assert defines["IOA_LEVEL_NONE"] == abi.LEVEL_NONE
    assert defines["IOA_PHASE_NOW"] == abi.PHASE_NOW
    assert defines["IOA_TARGET_PG_WIRE"] == stage_probes.PG_WIRE_FLAG  # an adapter's target_flags
    assert {k: v for k, v in _c_enum("ioattr_event_type").items()} == {
        "IOA_EV_OPEN": abi.EV_OPEN, "IOA_EV_TASK": abi.EV_TASK, "IOA_EV_EXEC": abi.EV_EXEC, "IOA_EV_QUERY": abi.EV_QUERY}
    assert (defines["IOA_PAGE_F_MISMATCH"], defines["IOA_PAGE_F_UNREADABLE"], defines["IOA_PAGE_F_ENCRYPTED"]) == \
        (abi.PAGE_F_MISMATCH, abi.PAGE_F_UNREADABLE, abi.PAGE_F_ENCRYPTED)


def test_the_loader_refuses_a_drifted_object_in_one_line(monkeypatch) -> None:
    """What `record` prints (via HostError) when abi.py and an object disagree."""
    dt = abi.IO_KEY_DTYPE
    names = list(dt.names)
    offsets = [dt.fields[n][1] + (2 if n == "phase" else 0) for n in names]  # 'phase' two bytes late
    drifted = np.dtype({"names": names, "formats": [dt.fields[n][0] for n in names], "offsets": offsets,
                        "itemsize": dt.itemsize})
    monkeypatch.setitem(abi_check.STRUCTS, "io_key", drifted)
    obj = libbpf.Object(str(BPF / "block.bpf.o"))
    try:
        with pytest.raises(abi_check.AbiMismatch) as e:
            abi_check.require(obj)
    finally:
        obj.close()
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(BPF / "block.bpf.o") + ": struct io_key field phase is at 34")
    assert "rebuild the BPF objects" in msg

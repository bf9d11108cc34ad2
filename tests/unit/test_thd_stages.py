"""collectors/thd_stages.py: the THD stage facts read from a server binary's code, and the
fold of MariaDB's stage names into ioattr's stages (no root: the binary is only read)."""
from __future__ import annotations

import ctypes
import os
import shutil
import struct
from pathlib import Path

import pytest

from ioattr.collectors.abi import Stage
from ioattr.collectors.elf import PF_W, PF_X, PT_LOAD, ElfImage
from ioattr.collectors.thd_stages import (EM_X86_64, ServerStages, load_bias, read_binary, read_name, stage_field, stage_of,
                                          tls_slot)

# MariaDB 10.11.19 (Debian 12), objdump -d: `_current_thd` and the stores of set_thd_stage_info
CURRENT_THD = bytes.fromhex("55 4889e5 6666666448 8b042500000000 5d 488b8098ffffff c3".replace(" ", ""))
SET_STAGE_INFO = bytes.fromhex("418b3f 498b7708 488b83d83b0000 89bb08260000 4889b300260000".replace(" ", ""))


def test_thread_local_slot_after_a_thread_pointer_load() -> None:
    assert tls_slot(CURRENT_THD) == -0x68


def test_thread_local_slot_with_an_8_bit_displacement_and_another_register() -> None:
    # mov %fs:0,%rdx; mov -0x10(%rdx),%rax; ret
    code = bytes.fromhex("64488b142500000000" "488b42f0" "c3")
    assert tls_slot(code) == -0x10


def test_thread_local_slot_loaded_directly_from_fs() -> None:
    # mov %fs:-0x68,%rax
    assert tls_slot(b"\x64\x48\x8b\x04\x25" + struct.pack("<i", -0x68) + b"\xc3") == -0x68


def test_thread_local_slot_not_found() -> None:
    assert tls_slot(b"\x55\x48\x89\xe5\x5d\xc3") is None
    # the thread pointer loaded, then used by another register than the one it went into
    assert tls_slot(bytes.fromhex("64488b042500000000" "488b4af0" "c3")) is None


def test_stage_field_from_the_store_of_the_new_stage_name() -> None:
    assert stage_field(SET_STAGE_INFO) == 0x2600


def test_stage_field_with_other_registers() -> None:
    # mov 0x8(%rsi),%rax ... mov %rax,0x1238(%rdi)
    code = bytes.fromhex("488b4608" "8b0e" "48898738120000")
    assert stage_field(code) == 0x1238


def test_stage_field_not_found() -> None:
    # the name loaded but stored from another register
    assert stage_field(bytes.fromhex("498b7708" "48898300260000")) is None
    # an odd offset is no pointer field
    assert stage_field(bytes.fromhex("498b7708" "4889b301260000")) is None
    assert stage_field(b"") is None


@pytest.mark.parametrize("name,stage", [
    ("Statistics", Stage.OPTIMIZE), ("optimizing", Stage.OPTIMIZE), ("Preparing", Stage.OPTIMIZE),
    ("Sending data", Stage.EXECUTE), ("Updating", Stage.EXECUTE), ("Opening tables", Stage.EXECUTE),
    ("starting", Stage.EXECUTE),  # statements that name no stage run their execution in it
    ("Commit", Stage.COMMIT), ("Commit implicit", Stage.COMMIT), ("closing tables", Stage.COMMIT),
    ("Checking query cache for query", Stage.PARSE),
    ("login", Stage.BACKGROUND),
    ("Some stage of a newer server", Stage.EXECUTE),
])
def test_stage_names_fold_into_ioattr_stages(name: str, stage: Stage) -> None:
    assert stage_of(name) == stage


def _mariadbd() -> str:
    path = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    if not os.path.exists(path):
        if os.environ.get("CI") == "true":
            pytest.fail("mariadbd is not installed (make test installs it)")
        pytest.skip("mariadbd is not installed")
    return path


def test_the_installed_mariadbd() -> None:
    got = read_binary(_mariadbd())
    assert isinstance(got, ServerStages), got
    assert -4096 < got.tls_off < 0 and got.stage_off % 8 == 0, got
    names = set(got.names.values())
    assert len(names) >= 100 and {"Statistics", "Commit", "Sending data", "Opening tables"} <= names
    assert got.pie
    # "login" is set from a literal (no stage object): found by its bytes, so it is known from the start
    logins = [ptr for ptr, name in got.names.items() if name == "login"]
    assert logins and all(ElfImage(_mariadbd()).cstring(ptr) == "login" for ptr in logins), logins


PF_R = 4


def _elf(segments: list[tuple[int, int, bytes]]) -> bytes:
    """A minimal ELF64 (x86-64, no sections) whose PT_LOAD segments are (flags, vaddr, bytes)."""
    phoff, phentsize = 64, 56
    data_at = phoff + phentsize * len(segments)
    head = bytearray(b"\x7fELF\x02\x01\x01" + bytes(9))
    head += struct.pack("<HHIQQQIHHHHHH", 3, EM_X86_64, 1, 0, phoff, 0, 0, 64, phentsize, len(segments), 64, 0, 0)
    body, phdrs = b"", b""
    for flags, vaddr, blob in segments:
        phdrs += struct.pack("<IIQQQQQQ", PT_LOAD, flags, data_at + len(body), vaddr, vaddr, len(blob), len(blob), 0x1000)
        body += blob
    return bytes(head) + phdrs + body


def test_literal_names_are_found_in_read_only_data_only(tmp_path: Path) -> None:
    """An address reads as a literal when the literal and its NUL are there, also as the tail
    of a longer string; code and writable data are not where a string literal lives."""
    ro = b"\0connecting host\0login\0Xlogin\0loginx\0"
    f = tmp_path / "elf"
    f.write_bytes(_elf([(PF_R, 0x1000, ro), (PF_R | PF_X, 0x8000, b"\0login\0"), (PF_R | PF_W, 0x9000, b"login\0")]))
    img = ElfImage(str(f))
    assert img.rodata_strings("login") == [0x1000 + ro.index(b"login"), 0x1000 + ro.index(b"Xlogin") + 1]
    assert [img.cstring(a) for a in img.rodata_strings("login")] == ["login", "login"]
    assert img.rodata_strings("login", limit=1) == [0x1000 + ro.index(b"login")]
    assert img.rodata_strings("absent") == []


def test_binaries_without_the_facts_say_why(tmp_path: Path) -> None:
    assert read_binary("/bin/true") == "no _current_thd in the binary"
    (tmp_path / "x").write_bytes(b"#!/bin/sh\n")
    assert read_binary(str(tmp_path / "x")).startswith("cannot read ")
    assert read_binary(str(tmp_path / "missing")).startswith("cannot read ")


def test_load_bias_and_names_of_a_live_process() -> None:
    """This interpreter stands in for a server: its executable's mapping at offset 0, and a
    string read back from its memory."""
    exe = os.path.realpath("/proc/self/exe")
    ino = os.stat(exe).st_ino
    starts = [int(line.split()[0].split("-")[0], 16) for line in open("/proc/self/maps")
              if len(line.split()) >= 6 and int(line.split()[2], 16) == 0 and int(line.split()[4]) == ino]
    pie = ServerStages(tls_off=-8, stage_off=8, names={}, pie=True, first_vaddr=0)
    assert load_bias(os.getpid(), "/proc/self/exe", pie) == starts[0]
    assert load_bias(os.getpid(), "/proc/self/exe", ServerStages(-8, 8, {}, False, 0x400000)) == 0
    buf = ctypes.create_string_buffer(b"Sending data")
    assert read_name(os.getpid(), ctypes.addressof(buf)) == "Sending data"
    assert read_name(os.getpid(), 0) is None

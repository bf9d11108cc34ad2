"""Function file offsets from an ELF64 file's symbol tables, for uprobes.

No pyelftools: the section headers, the symbol tables (.dynsym, and .symtab
when present) and the PT_LOAD program headers are read with struct. A
uprobe wants the file offset of the function, so the symbol's virtual
address is mapped through the loadable segment that contains it.
"""
from __future__ import annotations

import os
import struct
from typing import Iterable

SHT_SYMTAB = 2
SHT_DYNSYM = 11
STT_FUNC, STT_GNU_IFUNC = 2, 10
PT_LOAD = 1


def symbol_offsets(path: str, symbols: Iterable[str]) -> dict[str, int]:
    """File offsets of the named functions found in path (absent names are left out).

    Raises ValueError when path is not a 64-bit ELF file.
    """
    wanted = {s.encode() for s in symbols}
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise ValueError(f"{path} is not ELF")
    if data[4] != 2:
        raise ValueError(f"{path} is not a 64-bit ELF")
    end = "<" if data[5] == 1 else ">"
    e_phoff, e_shoff = struct.unpack_from(end + "QQ", data, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from(end + "HHHH", data, 54)

    def section(i: int) -> tuple[int, int, int, int, int]:
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize
        f = struct.unpack_from(end + "IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
        return f[1], f[4], f[5], f[6], f[9]

    addrs: dict[bytes, int] = {}
    for i in range(e_shnum):
        sh_type, off, size, link, entsize = section(i)
        if sh_type not in (SHT_DYNSYM, SHT_SYMTAB):
            continue
        _, str_off, str_size, _, _ = section(link)
        for s in range(off, off + size, entsize or 24):
            # Elf64_Sym: st_name u32, st_info u8, st_other u8, st_shndx u16, st_value u64, st_size u64
            st_name, st_info, _, st_shndx, st_value, _ = struct.unpack_from(end + "IBBHQQ", data, s)
            if st_shndx == 0 or st_value == 0 or (st_info & 0xF) not in (STT_FUNC, STT_GNU_IFUNC):
                continue
            n0 = str_off + st_name
            n1 = data.find(b"\0", n0, str_off + str_size)
            name = data[n0:n1]
            if name in wanted and name not in addrs:
                addrs[name] = st_value
    out: dict[str, int] = {}
    for name, addr in addrs.items():
        for i in range(e_phnum):
            # Elf64_Phdr: p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
            p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from(
                end + "IIQQQQQQ", data, e_phoff + i * e_phentsize)
            if p_type == PT_LOAD and p_vaddr <= addr < p_vaddr + p_filesz:
                out[name.decode()] = addr - p_vaddr + p_offset
                break
    return out


def symbol_offset(path: str, symbol: str) -> int:
    """One function's file offset; ValueError when it is not there."""
    found = symbol_offsets(path, [symbol])
    if symbol not in found:
        raise ValueError(f"{symbol} not in {os.path.basename(path)}'s symbol tables")
    return found[symbol]

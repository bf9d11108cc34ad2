"""An ELF64 file's symbols, segments and bytes, for uprobes and for reading a server's layout.

No pyelftools: the section headers, the symbol tables (.dynsym, and .symtab
when present) and the program headers are read with struct. A uprobe wants
the file offset of a function, so the symbol's virtual address is mapped
through the loadable segment that contains it; collectors/thd_stages.py also
reads code and initialized data at virtual addresses (ElfImage.read) and the
thread-local segment's size (ElfImage.tls_size).
"""
from __future__ import annotations

import os
import struct
from typing import Iterable

SHT_SYMTAB = 2
SHT_DYNSYM = 11
STT_OBJECT, STT_FUNC, STT_GNU_IFUNC = 1, 2, 10
PT_LOAD, PT_TLS = 1, 7
PF_X, PF_W = 1, 2


class ElfImage:
    """One 64-bit ELF file read into memory; ValueError when it is not one."""

    def __init__(self, path: str) -> None:
        with open(path, "rb") as f:
            self.data = data = f.read()
        if data[:4] != b"\x7fELF":
            raise ValueError(f"{path} is not ELF")
        if data[4] != 2:
            raise ValueError(f"{path} is not a 64-bit ELF")
        self.path = path
        self.end = "<" if data[5] == 1 else ">"
        self.machine = struct.unpack_from(self.end + "H", data, 18)[0]
        e_phoff, self._shoff = struct.unpack_from(self.end + "QQ", data, 32)
        e_phentsize, e_phnum, self._shentsize, self._shnum = struct.unpack_from(self.end + "HHHH", data, 54)
        # Elf64_Phdr: p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
        self.segments = [struct.unpack_from(self.end + "IIQQQQQQ", data, e_phoff + i * e_phentsize)
                         for i in range(e_phnum)]

    def _section(self, i: int) -> tuple[int, int, int, int, int]:
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize
        f = struct.unpack_from(self.end + "IIQQQQIIQQ", self.data, self._shoff + i * self._shentsize)
        return f[1], f[4], f[5], f[6], f[9]

    def symbols(self, names: Iterable[str] | None = None, prefix: str | None = None,
                types: tuple[int, ...] = (STT_FUNC, STT_GNU_IFUNC)) -> dict[str, tuple[int, int]]:
        """name -> (virtual address, size) of the defined symbols of the given types that are
        in names, or start with prefix (the first table that has a name wins)."""
        wanted = {s.encode() for s in names} if names is not None else None
        pre = prefix.encode() if prefix is not None else None
        data, out = self.data, {}
        for i in range(self._shnum):
            sh_type, off, size, link, entsize = self._section(i)
            if sh_type not in (SHT_DYNSYM, SHT_SYMTAB):
                continue
            _, str_off, str_size, _, _ = self._section(link)
            for s in range(off, off + size, entsize or 24):
                # Elf64_Sym: st_name u32, st_info u8, st_other u8, st_shndx u16, st_value u64, st_size u64
                st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from(self.end + "IBBHQQ", data, s)
                if st_shndx == 0 or st_value == 0 or (st_info & 0xF) not in types:
                    continue
                n0 = str_off + st_name
                name = data[n0:data.find(b"\0", n0, str_off + str_size)]
                if (wanted is not None and name in wanted) or (pre is not None and name.startswith(pre)):
                    out.setdefault(name.decode(errors="replace"), (st_value, st_size))
        return out

    def file_offset(self, vaddr: int) -> int | None:
        """The file offset holding virtual address vaddr (None: not in a loaded segment's file bytes)."""
        for p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ in self.segments:
            if p_type == PT_LOAD and p_vaddr <= vaddr < p_vaddr + p_filesz:
                return vaddr - p_vaddr + p_offset
        return None

    def read(self, vaddr: int, n: int) -> bytes:
        """n bytes at virtual address vaddr as the file has them (b"" when not in the file)."""
        off = self.file_offset(vaddr)
        return b"" if off is None else self.data[off:off + n]

    def rodata_strings(self, text: str, limit: int = 16) -> list[int]:
        """Virtual addresses at which the NUL-terminated string `text` can be read in the
        read-only loaded segments (a match inside a longer string counts: a pointer to that
        tail reads as `text` too); at most `limit`, in file order."""
        needle, out = text.encode() + b"\0", []
        for p_type, p_flags, p_offset, p_vaddr, _, p_filesz, _, _ in self.segments:
            if p_type != PT_LOAD or p_flags & (PF_W | PF_X):
                continue
            at = self.data.find(needle, p_offset, p_offset + p_filesz)
            while at >= 0 and len(out) < limit:
                out.append(at - p_offset + p_vaddr)
                at = self.data.find(needle, at + 1, p_offset + p_filesz)
        return out

    def cstring(self, vaddr: int, limit: int = 256) -> str | None:
        """The NUL-terminated string at vaddr (None: not in the file, or not terminated within limit)."""
        b = self.read(vaddr, limit)
        end = b.find(b"\0")
        return b[:end].decode(errors="replace") if end >= 0 else None

    def u64(self, vaddr: int) -> int | None:
        b = self.read(vaddr, 8)
        return struct.unpack(self.end + "Q", b)[0] if len(b) == 8 else None

    def tls_size(self) -> tuple[int, int] | None:
        """(p_memsz, p_align) of the thread-local segment, None when there is none."""
        for p_type, _, _, _, _, _, p_memsz, p_align in self.segments:
            if p_type == PT_TLS:
                return p_memsz, p_align
        return None

    def first_load_vaddr(self) -> int:
        """The lowest PT_LOAD address: where a mapping at file offset 0 starts, before relocation."""
        return min((s[3] - s[2] for s in self.segments if s[0] == PT_LOAD), default=0)


def symbol_offsets(path: str, symbols: Iterable[str]) -> dict[str, int]:
    """File offsets of the named functions found in path (absent names are left out).

    Raises ValueError when path is not a 64-bit ELF file.
    """
    img = ElfImage(path)
    out: dict[str, int] = {}
    for name, (addr, _) in img.symbols(symbols).items():
        off = img.file_offset(addr)
        if off is not None:
            out[name] = off
    return out


def symbol_offset(path: str, symbol: str) -> int:
    """One function's file offset; ValueError when it is not there."""
    found = symbol_offsets(path, [symbol])
    if symbol not in found:
        raise ValueError(f"{symbol} not in {os.path.basename(path)}'s symbol tables")
    return found[symbol]

"""Where a MariaDB server thread is in its statement, read from the server itself at IO time.

`--stages full` used to follow four uprobes (mysql_execute_command, JOIN::optimize,
JOIN::exec, ha_commit_trans), four traps a point select: ~2 us each on this VM,
about as much as everything else a recording costs (docs/cost.md).
MariaDB already keeps the answer: every THD_STAGE_INFO stores the stage's name in
THD::proc_info (what SHOW PROCESSLIST's State shows), and the THD of the running thread
is in the thread-local THR_THD. So the IO programs read it when, and only when, a thread
inside a statement does IO (bpf/thd_stage.bpf.h): the thread pointer's THR_THD slot,
then THD::proc_info, then the name's stage (map thd_stage_names). A statement without IO
pays nothing, which is why it is the default (`--stages auto`).

Nothing here needs debug info; three facts come from the server's binary:
  - THR_THD's offset from the thread pointer: from the code of the exported
    `_current_thd` (`mov %fs:0,%rax; mov disp(%rax),%rax`, or `mov %fs:disp,%rax`);
  - THD::proc_info's offset: from the exported `set_thd_stage_info`, which stores the
    new stage's name (`mov 8(%new_stage),%reg` ... `mov %reg,disp32(%thd)`);
  - the names: every exported `stage_*` PSI_stage_info object (its m_name at +8), and the
    addresses of LITERAL_NAMES in its read-only data (names set from a literal).
Names are folded into ioattr's stages (stage_of below). A binary where any fact is not
found (another compiler's code, a non-x86-64 build, a MySQL) has no stages inside statements
under `--stages auto`, or the four uprobes under `--stages full`, saying why.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from ioattr.collectors.abi import Stage
from ioattr.collectors.elf import STT_OBJECT, ElfImage

EM_X86_64 = 62
ET_DYN = 3
CURRENT_THD = "_current_thd"
SET_STAGE_INFO = "set_thd_stage_info"
STAGE_PREFIX = "stage_"
STAGE_NAME_MAX = 128

# MariaDB's stage names (PSI_stage_info m_name, compared case-insensitively) in ioattr's
# stages, close to what the uprobes said: parse until mysql_execute_command, optimize inside
# JOIN::optimize (a point select's row is read here: "Statistics" reads const tables), commit
# from ha_commit_trans to the statement's end, background outside statements (OUTSIDE_NAMES),
# execute the rest. A name not listed is execute. Names that are not stage objects (proc_info
# set from a literal) are learned at run time (StageProbes.learn_thd_names) and folded the same way.
# MariaDB names no stage of its own while it parses (nor does parsing read storage): "starting"
# lasts from the command's arrival until the statement sets one, and statements that set none
# (SHOW ENGINE ... STATUS, SET, ...) run their whole execution in it, so it is execute.
PARSE_NAMES = ("checking query cache for query", "checking privileges on cached query",
               "sending cached result to client")
OPTIMIZE_NAMES = ("optimizing", "statistics", "preparing")
COMMIT_NAMES = ("commit", "commit implicit", "rollback", "rollback_implicit", "writing to binlog",
                "waiting for prior transaction to commit", "waiting for prior transaction to start commit",
                "waiting for gtid to be written to binary log", "closing tables", "freeing items",
                "reset for next command", "starting cleanup", "logging slow query", "unlocking tables",
                "storing result in query cache")


# set while no client statement runs on the thread: a connection logging in (a cached thread
# still carries its previous connection's last statement; its IO is not that statement's)
OUTSIDE_NAMES = ("login",)
# names MariaDB sets from a string literal (thd_proc_info(thd, "login")), not a stage object: found
# in the binary's read-only data by their bytes (any address that reads so is that name), so that
# their IO has its stage from the first one on instead of after the recorder learns the name
LITERAL_NAMES = OUTSIDE_NAMES


def stage_of(name: str) -> Stage:
    """ioattr's stage for one of MariaDB's stage names."""
    n = name.strip().lower()
    if n in OUTSIDE_NAMES:
        return Stage.BACKGROUND
    if n in PARSE_NAMES:
        return Stage.PARSE
    if n in OPTIMIZE_NAMES:
        return Stage.OPTIMIZE
    if n in COMMIT_NAMES:
        return Stage.COMMIT
    return Stage.EXECUTE


@dataclass(frozen=True)
class ServerStages:
    """What one binary says: THR_THD's offset from the thread pointer, THD::proc_info's
    offset, and its stage names by their link-time address."""
    tls_off: int
    stage_off: int
    names: dict[int, str]
    pie: bool
    first_vaddr: int


def _s32(b: bytes, i: int) -> int:
    return struct.unpack_from("<i", b, i)[0]


def tls_slot(code: bytes) -> int | None:
    """THR_THD's offset from the thread pointer, from `_current_thd`'s first bytes:
    `mov %fs:0,%reg` then `mov disp(%reg),%any`, or `mov %fs:disp,%reg` (disp != 0)."""
    for i in range(len(code) - 8):
        rex = code[i + 1]
        if not (code[i] == 0x64 and rex & 0xF8 == 0x48 and code[i + 2] == 0x8B
                and code[i + 3] & 0xC7 == 0x04 and code[i + 4] == 0x25):
            continue
        disp = _s32(code, i + 5)
        if disp:
            return disp
        reg = (code[i + 3] >> 3 & 7) | (8 if rex & 4 else 0)
        for j in range(i + 9, min(i + 32, len(code) - 2)):
            r2, modrm = code[j], code[j + 2]
            if r2 & 0xF8 != 0x48 or code[j + 1] != 0x8B or modrm & 7 == 4:
                continue
            if (modrm & 7 | (8 if r2 & 1 else 0)) != reg:
                continue
            if modrm >> 6 == 1 and j + 3 < len(code):
                return struct.unpack_from("<b", code, j + 3)[0]
            if modrm >> 6 == 2 and j + 7 <= len(code):
                return _s32(code, j + 3)
        return None
    return None


def stage_field(code: bytes) -> int | None:
    """THD::proc_info's offset, from `set_thd_stage_info`: the name is loaded from the new
    stage (`mov 0x8(%base),%reg`, PSI_stage_info's m_name) and stored into the THD
    (`mov %reg,disp32(%thd)`) a few instructions later."""
    for i in range(len(code) - 3):
        rex, modrm = code[i], code[i + 2]
        if not (rex & 0xF8 == 0x48 and code[i + 1] == 0x8B and modrm >> 6 == 1 and modrm & 7 != 4
                and code[i + 3] == 0x08):
            continue
        reg = (modrm >> 3 & 7) | (8 if rex & 4 else 0)
        for j in range(i + 4, min(i + 48, len(code) - 6)):
            r2, m2 = code[j], code[j + 2]
            if (r2 & 0xF8 == 0x48 and code[j + 1] == 0x89 and m2 >> 6 == 2 and m2 & 7 != 4
                    and ((m2 >> 3 & 7) | (8 if r2 & 4 else 0)) == reg):
                off = _s32(code, j + 3)
                return off if 0 < off < 1 << 20 and off % 8 == 0 else None
    return None


def read_binary(path: str) -> ServerStages | str:
    """The binary's THD stage facts, or one line saying why they cannot be used."""
    try:
        img = ElfImage(path)
    except (OSError, ValueError) as e:
        return f"cannot read {path}: {e}"
    if img.machine != EM_X86_64:
        return "not an x86-64 binary"
    funcs = img.symbols([CURRENT_THD, SET_STAGE_INFO])
    for sym in (CURRENT_THD, SET_STAGE_INFO):
        if sym not in funcs:
            return f"no {sym} in the binary"
    tls = img.tls_size()
    at, size = funcs[CURRENT_THD]
    tls_off = tls_slot(img.read(at, max(size, 32)))
    if tls is None or tls_off is None:
        return f"THR_THD's thread-local slot not found in {CURRENT_THD}"
    memsz, align = tls
    block = -(-memsz // max(align, 1)) * max(align, 1)
    if not -block <= tls_off < 0:  # the executable's thread-local block ends at the thread pointer
        return f"THR_THD's slot {tls_off} is outside the executable's thread-local block ({block} bytes)"
    at, size = funcs[SET_STAGE_INFO]
    stage_off = stage_field(img.read(at, max(size, 64)))
    if stage_off is None:
        return f"THD::proc_info's offset not found in {SET_STAGE_INFO}"
    names: dict[int, str] = {}
    for _sym, (at, size) in img.symbols(prefix=STAGE_PREFIX, types=(STT_OBJECT,)).items():
        ptr = img.u64(at + 8) if size >= 16 else None
        name = img.cstring(ptr, STAGE_NAME_MAX) if ptr else None
        if name:
            names[ptr] = name
    if not names:
        return "no stage names (stage_* objects) in the binary"
    for literal in LITERAL_NAMES:  # known now, so their first IO is no miss (see LITERAL_NAMES)
        for ptr in img.rodata_strings(literal):
            names.setdefault(ptr, literal)
    pie = struct.unpack_from(img.end + "H", img.data, 16)[0] == ET_DYN
    return ServerStages(tls_off, stage_off, names, pie, img.first_load_vaddr())


def load_bias(pid: int, binary: str, stages: ServerStages) -> int | None:
    """How far server pid's binary is relocated: its mapping at file offset 0 less the
    lowest segment's link address; 0 for a fixed-address binary (None: not mapped)."""
    if not stages.pie:
        return 0
    try:
        ino = os.stat(binary).st_ino
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
    except OSError:
        return None
    for line in maps:
        f = line.split()
        if len(f) >= 6 and int(f[2], 16) == 0 and int(f[4]) == ino:
            return int(f[0].split("-")[0], 16) - (stages.first_vaddr & ~0xFFF)
    return None


def read_name(pid: int, addr: int) -> str | None:
    """The NUL-terminated stage name at addr in process pid (None: unreadable, or not a
    short printable string)."""
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as f:
            f.seek(addr)
            b = f.read(STAGE_NAME_MAX)
    except (OSError, ValueError, OverflowError):
        return None
    end = b.find(b"\0")
    if end <= 0 or not b[:end].isascii() or not b[:end].decode().isprintable():
        return None
    return b[:end].decode()

"""Statement text as recordings keep it: literals stripped by default.

The kernel side hashes statements with literals replaced (bpf/stage.bpf.c);
this does the same to the sample text before it is stored, so a recording
never holds a literal value unless --keep-literals asked for it.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""(?P<comment>/\*.*?\*/|--[^\n]*|\#[^\n]*)
      |(?P<string>'(?:[^'\\]|\\.|'')*'?|"(?:[^"\\]|\\.|"")*"?)
      |(?P<number>(?<![\w$])(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|\$\d+))
      |(?P<space>\s+)
    """, re.X | re.S)


def normalize(text: str) -> str:
    """Literals -> ?, comments dropped, whitespace folded, lists of ? collapsed."""
    def repl(m: re.Match) -> str:
        if m.group("comment") or m.group("space"):
            return " "
        return "?"

    out = _TOKEN.sub(repl, text)
    out = re.sub(r"\s+", " ", out).strip()
    # a sign where no operand ends is part of its literal ("a + -5" is "a + ?"), as the digest has it
    out = re.sub(r"([^\w$?)\] ])( ?)-\?", r"\1\2?", out)
    out = re.sub(r"\(\s*\?(?:\s*,\s*\?)+\s*\)", "(?, ...)", out)
    return out


def phase_marker(text: str) -> str | None:
    """The NAME of an `ioattr:phase=NAME` marker in a statement, if any."""
    m = re.search(r"ioattr:phase=([A-Za-z0-9_.:-]+)", text)
    return m.group(1) if m else None


# -- the kernel's statement digest, in Python ------------------------------------------
# bpf/stage.bpf.c digests a COM_QUERY text as FNV-1a 64 over a normalised byte stream, one
# byte at a time (digest_byte()). This is the same walk, byte for byte, so tests (the vectors
# in tests/vectors/sql_digest.json) and tools can tell which digest a statement has without
# loading BPF. It differs from normalize() above on purpose: the kernel folds case, keeps
# lists of ? as they are and reads only the first DIGEST_MAX bytes.
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
DIGEST_MAX = 256      # bytes of the statement the digest covers
QUERY_MAX = 512       # bytes of the statement the probe reads (IOATTR_QUERY_MAX)
INTERNAL_PREFIX = b"/*?ioattr-in"  # ioattr's own statements (byte 2 not compared): digest 255
DIGEST_INTERNAL = 255
_CODE, _SPACE, _NUMBER, _QUOTE, _COMMENT, _LINE_COMMENT = range(6)


def fnv1a64(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def _ident(ch: int) -> bool:
    return (0x61 <= ch <= 0x7A or 0x41 <= ch <= 0x5A or 0x30 <= ch <= 0x39 or ch in (0x5F, 0x24)
            or ch >= 0x80)


def digest_text(text: str | bytes) -> bytes:
    """The bytes the kernel hashes for a statement: literals (numbers, quoted strings,
    PostgreSQL's $N parameters) -> ?,
    comments dropped, whitespace folded to one space (none leading or trailing), ASCII
    letters lowered, from the first DIGEST_MAX bytes."""
    raw = text.encode() if isinstance(text, str) else text
    raw = raw[:QUERY_MAX]
    n = len(raw)
    out = bytearray()
    state, quote, escaped, prev = _SPACE, 0, False, 0
    for i in range(min(n, DIGEST_MAX)):
        ch = raw[i]
        nxt = raw[i + 1] if i + 1 < n else 0
        if state == _QUOTE:
            if escaped:
                escaped = False
            elif ch == 0x5C:          # backslash
                escaped = True
            elif ch == quote:
                state = _CODE
            continue
        if state == _COMMENT:
            if ch == 0x2A and nxt == 0x2F:   # */
                state, escaped = _SPACE, True
            continue
        if state == _LINE_COMMENT:
            if ch == 0x0A:
                state = _SPACE
            continue
        if state == _NUMBER:
            if chr(ch) in "0123456789.eExabcdefABCDEF":
                continue
            state = _CODE
        if state == _SPACE and escaped:      # the '/' closing a comment
            escaped = False
            continue
        if ch in (0x20, 0x09, 0x0A, 0x0D):
            state = _SPACE
            continue
        if ch == 0x2F and nxt == 0x2A:
            state = _COMMENT
            continue
        if (ch == 0x2D and nxt == 0x2D) or ch == 0x23:
            state = _LINE_COMMENT
            continue
        if ch == 0x2D and 0x30 <= nxt <= 0x39 and _signs(out):
            continue                         # a sign: part of the literal that follows
        if state == _SPACE:
            if prev and prev != 0x20:
                out.append(0x20)
                prev = 0x20
            state = _CODE
        if ch in (0x27, 0x22):
            state, quote = _QUOTE, ch
            out.append(0x3F)
            prev = 0x3F
            continue
        if 0x30 <= ch <= 0x39 and not _ident(prev):
            state = _NUMBER
            out.append(0x3F)
            prev = 0x3F
            continue
        if ch == 0x24 and 0x30 <= nxt <= 0x39 and not _ident(prev):  # a PostgreSQL parameter: $1
            state = _NUMBER
            out.append(0x3F)
            prev = 0x3F
            continue
        if 0x41 <= ch <= 0x5A:
            ch += 0x20
        out.append(ch)
        prev = ch
    return bytes(out)


def _signs(out: bytearray) -> bool:
    """Whether a '-' before a digit is a sign, after what went into the digest so far: no
    operand ends there (not after a name, a literal, ')' or ']'), as bpf/stage.bpf.c decides."""
    last = out[-1] if out else 0
    if last == 0x20:
        last = out[-2] if len(out) > 1 else 0
    return bool(last) and not _ident(last) and last not in (0x3F, 0x29, 0x5D)


def digest(text: str | bytes) -> int:
    """The digest bpf/stage.bpf.c gives a COM_QUERY statement (as recordings key it)."""
    raw = text.encode() if isinstance(text, str) else text
    if len(raw) >= 12 and raw[:2] == INTERNAL_PREFIX[:2] and raw[3:12] == INTERNAL_PREFIX[3:]:
        return DIGEST_INTERNAL
    h = fnv1a64(digest_text(raw))
    return h + 256 if h < 256 else h  # below 256 are protocol command numbers

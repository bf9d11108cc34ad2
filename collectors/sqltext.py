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
      |(?P<number>(?<![\w$])(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+))
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
    out = re.sub(r"\(\s*\?(?:\s*,\s*\?)+\s*\)", "(?, ...)", out)
    return out


def phase_marker(text: str) -> str | None:
    """The NAME of an `ioattr:phase=NAME` marker in a statement, if any."""
    m = re.search(r"ioattr:phase=([A-Za-z0-9_.:-]+)", text)
    return m.group(1) if m else None

"""Argument types: each checks and converts one kind of value, so a bad value is argparse's
one-line usage error (exit 2) naming the option, before anything is loaded or attached.

Declared apart from the options that use them (cli/definition.py) and from behaviour
(the subcommand modules), so every command that takes, say, an interval refuses the same
values with the same words.
"""
from __future__ import annotations

import argparse
import errno
import math
import os
import stat
from pathlib import Path
from typing import Callable, Sequence

from ioattr.format.control import PHASE_NAME


def _number(s: str, kind: type) -> float | int:
    try:
        v = kind(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {s!r}") from None
    if isinstance(v, float) and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {s!r}")
    return v


def seconds(low: float = 0.0, high: float | None = None, *, low_inclusive: bool = False) -> Callable[[str], float]:
    """A duration in seconds above `low` (or at least it) and at most `high`."""
    def parse(s: str) -> float:
        v = float(_number(s, float))
        if (v < low if low_inclusive else v <= low) or (high is not None and v > high):
            if high is None:
                raise argparse.ArgumentTypeError("must not be negative" if low_inclusive else "must be positive")
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g} seconds")
        return v
    parse.__name__ = "seconds"
    return parse


def count(s: str) -> float:
    """A count that is not negative (a benchmark's operations: 1200, 1.5e6)."""
    v = float(_number(s, float))
    if v < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return v


def int_range(low: int, high: int | None = None, what: str = "") -> Callable[[str], int]:
    """An integer in [low, high] (high None: no upper bound)."""
    def parse(s: str) -> int:
        v = int(_number(s, int))
        if v < low or (high is not None and v > high):
            if high is None:
                raise argparse.ArgumentTypeError(f"must be at least {low}{what}")
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}{what}")
        return v
    parse.__name__ = "int"
    return parse


def port(s: str) -> int:
    return int_range(1, 65535)(s)


def phase_name(s: str) -> str:
    """A phase name as `ioattr mark` and SQL markers accept it."""
    if not PHASE_NAME.match(s):
        raise argparse.ArgumentTypeError(f"bad phase name {s!r}: use 1-64 letters, digits and _ . : @ + -")
    return s


def readable_file(s: str) -> str:
    if not os.path.isfile(s) or not os.access(s, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read option file {s}")
    return s


def unix_socket(s: str) -> str:
    try:
        mode = os.stat(s).st_mode
    except OSError as e:
        raise argparse.ArgumentTypeError(f"{s}: {e.strerror}") from None
    if not stat.S_ISSOCK(mode):
        raise argparse.ArgumentTypeError(f"{s}: not a unix socket")
    return s


def one_of(what: str, values: Sequence[str]) -> Callable[[str], str]:
    """One of a fixed set of words (used with `choices=` too, so --help lists them); the
    refusal names the kind of value: "unknown format 'xml'; choose one of table, json"."""
    def parse(s: str) -> str:
        if s not in values:
            raise argparse.ArgumentTypeError(f"unknown {what} {s!r}; choose one of {', '.join(values)}")
        return s
    parse.__name__ = what
    return parse


def writable_file(s: str) -> str:
    """An output file that can be written (created or replaced), checked before any analysis
    runs: a user who mistyped -o hears about it at once. The words are write_output's
    (ioattr/output/render.py), so the error reads the same whichever check catches it;
    nothing is created here."""
    p = Path(s)
    err = 0
    if p.is_dir():
        err = errno.EISDIR
    elif p.exists():
        err = 0 if os.access(p, os.W_OK) else errno.EACCES
    elif not p.parent.exists():
        err = errno.ENOENT
    elif not p.parent.is_dir():
        err = errno.ENOTDIR
    elif not os.access(p.parent, os.W_OK | os.X_OK):
        err = errno.EACCES
    if err:
        raise argparse.ArgumentTypeError(f"cannot write {s}: {os.strerror(err)}")
    return s

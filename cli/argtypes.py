"""Argument types: each checks and converts one kind of value, so a bad value is argparse's
one-line usage error (exit 2) naming the option, before anything is loaded or attached.

Declared apart from the options that use them (cli/definition.py) and from behaviour
(the subcommand modules), so every command that takes, say, an interval refuses the same
values with the same words.
"""
from __future__ import annotations

import argparse
import math
import os
import stat
from typing import Callable

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

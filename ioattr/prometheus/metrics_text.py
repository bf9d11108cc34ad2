"""Prometheus' text exposition format (version 0.0.4), written straight from the counters.

prometheus_client's generic writer validates and escapes every label name of
every sample (~10 us a sample): 10,000 series would cost a scrape 100 ms
before any HTTP. Here label sets are escaped once and cached (series keep
their labels from drain to drain), names are ours and known valid, and a
sample line is one f-string. The output is what generate_latest() writes for
the same families (same names, TYPE/HELP lines, escaping), checked by the
suite with prometheus_client's parser and `promtool check metrics`.
"""
from __future__ import annotations

import math
from typing import SupportsFloat

import numpy as np

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def escape_label_value(v: str) -> str:
    if "\\" in v or '"' in v or "\n" in v:
        return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return v


def escape_help(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")


def fmt_value(v: SupportsFloat) -> str:
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    f = float(v)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    return repr(f)


class LabelCache:
    """label names + values -> 'a="x",b="y"', escaped once."""

    def __init__(self) -> None:
        self._cache: dict[tuple, str] = {}

    def fragment(self, names: tuple[str, ...], values: tuple) -> str:
        key = (names, values)
        frag = self._cache.get(key)
        if frag is None:
            frag = ",".join(f'{n}="{escape_label_value(str(v))}"' for n, v in zip(names, values))
            self._cache[key] = frag
        return frag

    def trim(self, live: int) -> None:
        """Forget label sets of series long gone (when the cache is much bigger than what is live)."""
        if len(self._cache) > 4 * max(live, 1000):
            self._cache.clear()

    def __len__(self) -> int:
        return len(self._cache)


class TextWriter:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def family(self, name: str, typ: str, help_text: str) -> None:
        """Start a family; counters are named with their _total suffix, as generate_latest() does."""
        self.parts.append(f"# HELP {name} {escape_help(help_text)}\n# TYPE {name} {typ}\n")

    def sample(self, name: str, labels: str, value: SupportsFloat) -> None:
        if labels:
            self.parts.append(f"{name}{{{labels}}} {fmt_value(value)}\n")
        else:
            self.parts.append(f"{name} {fmt_value(value)}\n")

    def histogram(self, name: str, labels: str, buckets: list[tuple[str, SupportsFloat]], count: SupportsFloat,
                  total: SupportsFloat) -> None:
        """One histogram series: cumulative buckets (le as text, +Inf last), _count and _sum."""
        sep = "," if labels else ""
        p = self.parts
        for le, v in buckets:
            p.append(f'{name}_bucket{{{labels}{sep}le="{le}"}} {fmt_value(v)}\n')
        self.sample(f"{name}_count", labels, count)
        self.sample(f"{name}_sum", labels, total)

    def text(self) -> str:
        return "".join(self.parts)

"""The one place a finding's verdict takes the direction of the change, and the words it is said in.

Findings (ioattr.analysis.findings, ioattr/engines/*/findings.py) are written for an increase:
"the working set grew larger than the buffer pool", "the dives read more". A decrease from A to
B is the increase from B to A, so for a decrease every finding is computed on the mirrored
evidence (Evidence.mirrored) and, when supported, explains the decrease as its mechanism undone
("the working set now fits"). Its numbers then read target -> baseline; `mirrored` says so.

A finding whose mechanism makes the other kind of IO (a checkpoint or flush storm makes writes)
is never supported for a change in reads, or the reverse, unless its own share of this metric's
change ties it (it accounts for at least SUPPORT_SHARE of the gross change).

Verdict words (the verdicts themselves stay the JSON contract's four):
  supported                        the mechanism accounts for the change, in its direction
  refuted: not what changed        the evidence is there and says no
  holds in both; not the cause     refuted, and the condition is present on both sides
  inconclusive                     the evidence is missing or points both ways
  n/a                              the mechanism can't move this metric
and of a change itself (explain's headline, compare's changes between runs):
  no significant change            within the noise model (ioattr/model/explain_math.py), said with
                                   its figure; no finding is supported by it
  a significant change             beyond it
The one definition of these words: the text output's marks, the JSON's verdict_words, the HTML
report's badges and compare's change lines all take them from here (mark, words, change_words).
"""
from __future__ import annotations

import re
from typing import Any

from ioattr.model.evidence import SUPPORT_SHARE
from ioattr.model.explain_math import NO_SIGNIFICANT_CHANGE

WORDS = {"supported": "supported", "refuted": "refuted: not what changed", "inconclusive": "inconclusive",
         "not_applicable": "n/a"}
HOLDS_IN_BOTH = "holds in both; not the cause"
SIGNIFICANT_CHANGE = "a significant change"
__all__ = ["WORDS", "HOLDS_IN_BOTH", "NO_SIGNIFICANT_CHANGE", "SIGNIFICANT_CHANGE", "words", "mark",
           "change_words", "judge", "explained_share"]


def explained_share(f: dict[str, Any]) -> float | None:
    """The share of the change a finding accounts for, as its evidence says (None: not a share)."""
    ev = f.get("evidence") or {}
    for k in ("share_of_change", "primary_share"):
        if isinstance(ev.get(k), (int, float)):
            return float(ev[k])
    return None


def judge(f: dict[str, Any], op: str, decrease: bool) -> dict[str, Any]:
    """Settle one computed finding for the change's direction and the metric's kind of IO (op:
    read | write), in place: verdict, title, `direction`, `mirrored`, `verdict_words`."""
    ev = f.setdefault("evidence", {})
    moves = f.pop("moves", None)
    mirror = f.pop("mirror_title", None)
    if moves and moves != op and f["verdict"] == "supported":
        share = explained_share(f)
        if share is None or share < SUPPORT_SHARE:
            f["verdict"] = "not_applicable"
            ev["summary"] = (f"a {moves} mechanism: nothing in the evidence ties it to this change in {op}s "
                             f"({ev.get('summary', '')})")
    f["direction"] = "decrease" if decrease else "increase"
    f["mirrored"] = decrease
    if decrease:
        f["title"] = mirror or f"Less of: {f['title']}"
        f["evidence"] = _unmirror(ev)
    f["verdict_words"] = words(f)
    return f


_SIDE = re.compile(r"\b(baseline|target)\b")


def _unmirror(ev: dict[str, Any]) -> dict[str, Any]:
    """A mirrored finding's evidence with its sides named as the user named them: keys and
    words `baseline` and `target` swapped back (the numbers of a summary's "x -> y" still read
    target -> baseline, as the output says)."""
    def swap(text: str) -> str:
        return _SIDE.sub(lambda m: "target" if m.group(1) == "baseline" else "baseline", text)

    out: dict[str, Any] = {}
    for k, v in ev.items():
        key = k if k == "summary" else re.sub(r"(?<![a-z])(baseline|target)(?![a-z])",
                                             lambda m: "target" if m.group(1) == "baseline" else "baseline", k)
        out[key] = swap(v) if k == "summary" and isinstance(v, str) else v
    return out


def words(f: dict[str, Any]) -> str:
    """What a verdict says in words (WORDS; a refuted condition present on both sides: HOLDS_IN_BOTH)."""
    if f.get("verdict") == "refuted" and (f.get("evidence") or {}).get("holds_in_both"):
        return HOLDS_IN_BOTH
    return WORDS.get(f.get("verdict", ""), str(f.get("verdict")))


def mark(f: dict[str, Any]) -> str:
    """A finding's mark, as the text prints it in brackets and the HTML report on its badge: its
    words, a supported one in capitals (what a reader scans for)."""
    w = words(f)
    return w.upper() if f.get("verdict") == "supported" else w


def change_words(noise: str | None) -> str:
    """A change said in words: NO_SIGNIFICANT_CHANGE when the noise model says why (noise_reason),
    else SIGNIFICANT_CHANGE."""
    return NO_SIGNIFICANT_CHANGE if noise else SIGNIFICANT_CHANGE

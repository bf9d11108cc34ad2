"""What explain's findings are written against: the evidence of one comparison, and the verdicts.

Every finding computes its verdict from numbers it can show:
  supported       the cause accounts for a real part of the change, and the
                  engine's counters (where they exist) agree
  refuted         the evidence is there and says no
  inconclusive    the evidence needed is missing or points both ways
  not_applicable  the cause can't move this metric (e.g. write amplification
                  for a read metric)
Contributor keys are (index, level, stage, role, file_class, query).

The findings themselves live where their knowledge is: ioattr.analysis.findings for the
server's (optimizer, write statements, access pattern), each engine adapter's for its own
(ioattr/engines/*/findings.py). Both import this module; it imports no engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ioattr.model import explain_math as em
from ioattr.model.dimensions import engine_label, native_engine, stage_mode

SUPPORT_SHARE = 0.15   # share of the change a cause must explain to be supported
MINOR_SHARE = 0.03     # below this (with evidence present) a cause is refuted

#: the dimensions of a contributor key, in key order (explain groups its report rows by them)
DIMS = ("index", "level", "stage", "role", "file_class", "query")
I_INDEX = DIMS.index("index")
I_LEVEL = DIMS.index("level")
I_STAGE = DIMS.index("stage")
I_ROLE = DIMS.index("role")
I_CLASS = DIMS.index("file_class")
I_QUERY = DIMS.index("query")
FINE_STAGES = ("parse", "optimize", "execute", "commit")


@dataclass
class Evidence:
    metric: Any            # explain.Metric
    base: Any              # explain.Side
    target: Any
    base_contrib: dict[tuple, float]
    target_contrib: dict[tuple, float]
    change: float
    gross: float = 0.0     # the gross change shares are over (explain_math.gross_change); 0: use change
    settings_base: dict[str, Any] = field(default_factory=dict)    # the server's settings (meta.json)
    settings_target: dict[str, Any] = field(default_factory=dict)

    # -- contributor arithmetic ------------------------------------------------
    def per_op(self, side: str, pred: Callable[[tuple], bool]) -> float:
        s = self.base if side == "base" else self.target
        c = self.base_contrib if side == "base" else self.target_contrib
        return sum(v for k, v in c.items() if pred(k)) / s.denominator

    def share(self, pred: Callable[[tuple], bool]) -> float | None:
        """The matching contributors' change over the gross change: at most 100% (explain_math)."""
        gross = self.gross or self.change
        if not gross:
            return None
        return em.share(self.per_op("target", pred) - self.per_op("base", pred), gross)

    def by_object(self, pred: Callable[[tuple], bool]) -> list[tuple[str, float]]:
        """The matching contributors of the target per op, summed by what they read or wrote
        (the index or relation, else "[file class]"), largest first."""
        out: dict[str, float] = {}
        for k, v in self.target_contrib.items():
            if pred(k) and v:
                name = k[I_INDEX] or f"[{k[I_CLASS]}]"
                out[name] = out.get(name, 0.0) + v / self.target.denominator
        return sorted(out.items(), key=lambda kv: -kv[1])

    def setting(self, name: str, side: str = "target") -> Any:
        """A server setting as recorded (None when not recorded)."""
        return (self.settings_target if side == "target" else self.settings_base).get(name)

    def mirrored(self) -> "Evidence":
        """The same comparison read the other way: target as baseline, baseline as target.

        A decrease from A to B is the increase from B to A, so every finding, written for an
        increase, tests the mirror of its mechanism on this (ioattr.analysis.direction)."""
        return Evidence(metric=self.metric, base=self.target, target=self.base,
                        base_contrib=self.target_contrib, target_contrib=self.base_contrib,
                        change=-self.change, gross=-self.gross, settings_base=self.settings_target,
                        settings_target=self.settings_base)

    @property
    def connected(self) -> bool:
        """Whether the recorder was connected to the target's server (it recorded its settings)."""
        return bool(self.settings_target)

    @property
    def stage_modes(self) -> set[str | None]:
        return {stage_mode(self.base.rec.meta), stage_mode(self.target.rec.meta)}

    @property
    def has_queries(self) -> bool:
        """Whether the stage probes attributed IO to statements (and purge) at all."""
        return any(k[I_STAGE] is not None for c in (self.base_contrib, self.target_contrib) for k in c) \
            or any(m is not None for m in self.stage_modes)

    @property
    def has_stages(self) -> bool:
        """Whether parse/optimize/execute/commit were traced (--stages full) on both sides."""
        modes = self.stage_modes
        if "statement" in modes:
            return False
        return modes == {"full"} or any(k[I_STAGE] in FINE_STAGES
                                        for c in (self.base_contrib, self.target_contrib) for k in c)

    @property
    def has_roles(self) -> bool:
        return any(k[I_ROLE] for k in self.target_contrib)

    # -- counters -----------------------------------------------------------------
    def counter(self, side: str, *names: str) -> float | None:
        s = self.base if side == "base" else self.target
        return s.stats.counter(*names)

    def rate(self, side: str, num: tuple[str, ...], den: tuple[str, ...]) -> float | None:
        n, d = self.counter(side, *num), self.counter(side, *den)
        if n is None or not d:
            return None
        return n / d

    @property
    def reads(self) -> bool:
        return self.metric.op == "read"


def finding(id_: str, title: str, verdict: str, summary: str, *, moves: str | None = None,
            mirror: str | None = None, **numbers: Any) -> dict[str, Any]:
    """One finding as explain prints it: its numbers (floats rounded) and a one-line summary.

    moves: the IO its mechanism makes ("read" or "write"; None: the metric's own), so that a
    write mechanism is never the cause of a change in reads unless its share ties it
    (ioattr.analysis.direction). mirror: its title for a decrease (the mechanism undone, e.g.
    "the working set now fits"); without one, "Less of: TITLE".
    Evidence keys the verdict reads: holds_in_both (the condition is present on both sides, so
    a refuted finding says "holds in both; not the cause"), setting_changed (the setting that
    governs the mechanism differs between the sides: a supported finding then ranks first)."""
    ev = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in numbers.items()}
    ev["summary"] = summary
    out: dict[str, Any] = {"id": id_, "title": title, "verdict": verdict, "evidence": ev}
    if moves is not None:
        out["moves"] = moves
    if mirror is not None:
        out["mirror_title"] = mirror
    return out


def by_share(share: float | None, *, evidence_present: bool = True) -> str:
    """The verdict a share of the gross change gives (SUPPORT_SHARE, MINOR_SHARE)."""
    if share is None or not evidence_present:
        return "inconclusive"
    if share >= SUPPORT_SHARE:
        return "supported"
    if share < MINOR_SHARE:
        return "refuted"
    return "inconclusive"


def absent(e: Evidence, what: str) -> str:
    """Why evidence is missing: the server was not connected, or it did not report it."""
    other = [(n, s) for n, s in (("baseline", e.base), ("target", e.target)) if native_engine(s.rec.meta)]
    if len(other) == 1:  # (the callers are MySQL/MariaDB engines' findings: InnoDB's, MyRocks')
        n, s = other[0]
        return (f"no {what} on the {n} side: it is {engine_label(s.rec.meta)}, which has none "
                "(an engine difference, not missing evidence)")
    if not e.connected:
        return f"{what} unknown: recorded without a server connection"
    return f"the connected server reported no {what} in one of the phases"


def pct(v: float | None) -> str:
    """A share as a percentage for summaries ("n/a" when unknown)."""
    return "n/a" if v is None else f"{100 * v:.0f}%"


WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def is_write_statement(q: str | None) -> bool:
    """Whether a statement text (normalised or not) is an INSERT, UPDATE, DELETE or REPLACE."""
    return bool(q) and q.lstrip("( ").split(None, 1)[0].upper() in WRITE_VERBS

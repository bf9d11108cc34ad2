"""The explain findings only PostgreSQL can test (the PostgreSQL adapter's "findings").

checkpoint_writes   a checkpoint wrote the dirty shared buffers: the checkpointer's writes (our
                    role, exact per process) explain the change, and PostgreSQL's own
                    pg_stat_bgwriter buffers_checkpoint (the counters table) moved with them.

Every PostgreSQL finding is not_applicable to a recording of no PostgreSQL server (its counters
are not there), so explain's list for a MySQL/MariaDB run says so rather than guessing.
"""
from __future__ import annotations

from typing import Any, Callable

from ioattr.analysis.evidence import I_ROLE, Evidence, by_share, finding, pct

BUFFERS_CHECKPOINT = "pg_stat_bgwriter:buffers_checkpoint"
CHECKPOINTS = ("pg_stat_bgwriter:checkpoints_timed", "pg_stat_bgwriter:checkpoints_req")


def _per(e: Evidence, side: str, name: str) -> float | None:
    s = e.base if side == "base" else e.target
    v = s.stats.counter(name)
    return None if v is None or not s.denominator else v / s.denominator


def checkpoint_writes(e: Evidence) -> dict[str, Any]:
    title = "Checkpoints wrote the dirty shared buffers (PostgreSQL)"
    fid = "checkpoint_writes"
    if e.target.stats.counter(BUFFERS_CHECKPOINT) is None and e.base.stats.counter(BUFFERS_CHECKPOINT) is None:
        return finding(fid, title, "not_applicable", "no PostgreSQL server's pg_stat_bgwriter in this recording")
    if e.reads:
        return finding(fid, title, "not_applicable", "a write cause; this metric counts reads")
    share = e.share(lambda k: k[I_ROLE] == "checkpointer")
    base, target = _per(e, "base", BUFFERS_CHECKPOINT), _per(e, "target", BUFFERS_CHECKPOINT)
    checkpoints = sum(e.target.stats.counter(n) or 0.0 for n in CHECKPOINTS)
    verdict = by_share(share, evidence_present=e.has_roles)
    counters_rose = base is not None and target is not None and target > base
    if verdict == "supported" and not counters_rose:
        verdict = "inconclusive"  # our checkpointer role and PostgreSQL's own count disagree
    unit = e.target.unit
    return finding(fid, title, verdict,
                   f"the checkpointer's writes explain {pct(share)} of the gross change; PostgreSQL's "
                   f"buffers_checkpoint went from {_g(base)} to {_g(target)} per {unit} "
                   f"({checkpoints:g} checkpoint(s) completed in the target phase)",
                   share_of_change=share, baseline_per_op=e.per_op("base", lambda k: k[I_ROLE] == "checkpointer"),
                   target_per_op=e.per_op("target", lambda k: k[I_ROLE] == "checkpointer"),
                   buffers_checkpoint_base=base, buffers_checkpoint_target=target,
                   checkpoints_target=checkpoints)


def _g(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4g}"


FINDINGS: tuple[Callable[[Evidence], dict[str, Any]], ...] = (checkpoint_writes,)

#: what each finding means and the one thing to try next (explain_text.NEXT_STEPS)
NEXT_STEPS: dict[str, tuple[str, str]] = {
    "checkpoint_writes": (
        "a checkpoint (every checkpoint_timeout, when max_wal_size worth of WAL was written, or "
        "a CHECKPOINT) writes every dirty shared buffer, so the phase it falls in writes far more",
        "spread checkpoints out: raise max_wal_size and checkpoint_timeout, keep "
        "checkpoint_completion_target near 0.9, and compare phases that each contain whole checkpoints"),
}

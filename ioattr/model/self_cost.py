"""How a recording's own cost (meta.json self_cost, written by ioattr/live/self_cost.py) reads:
one line for `report`, a short form for `top`'s status line."""
from __future__ import annotations

from typing import TypedDict


class ProgramCost(TypedDict):
    """One BPF program's runs and run time (the kernel's run-time statistics)."""

    run_cnt: int
    run_time_ns: int


class SelfCostSample(TypedDict, total=False):
    """meta.json's self_cost (SelfCost.sample): every key may be absent from an older recording."""

    bpf_stats: str          # "ioattr" (held by the recorder), "sysctl" (on for everyone), "off"
    seconds: float          # since the statistics went on
    recorder_cpu_s: float   # the recorder's own CPU over those seconds
    programs: dict[str, ProgramCost]  # the programs that ran


def bpf_seconds(cost: SelfCostSample) -> float:
    """Seconds of CPU all our programs ran."""
    progs = cost.get("programs") or {}
    return sum(int(p.get("run_time_ns", 0)) for p in progs.values()) / 1e9


def self_cost_line(cost: SelfCostSample | None, top: int = 3) -> str | None:
    """One line: BPF CPU in all and per run of the dearest programs, the recorder's CPU."""
    if not isinstance(cost, dict):
        return None
    secs = float(cost.get("seconds") or 0)
    rec = float(cost.get("recorder_cpu_s") or 0)
    share = (lambda s: f" ({100 * s / secs:.1f}% of a core)") if secs > 0 else (lambda s: "")
    progs = cost.get("programs") or {}
    if cost.get("bpf_stats") == "off":
        bpf = "BPF time not counted (BPF run-time statistics were off)"
    elif not progs:
        bpf = "BPF 0 s (no program ran)"
    else:
        dear = sorted(progs.items(), key=lambda kv: -int(kv[1].get("run_time_ns", 0)))[:top]
        per = ", ".join(f"{n.removeprefix('ioattr_')} {int(p['run_time_ns']) / max(int(p['run_cnt']), 1):,.0f}"
                        for n, p in dear)
        bpf = f"BPF {bpf_seconds(cost):.3g} s{share(bpf_seconds(cost))}, ns a run: {per}"
    return f"ioattr's own cost: {bpf}; recorder {rec:.2f} s CPU{share(rec)}"


def status_cost(prev: SelfCostSample | None, cur: SelfCostSample | None) -> str | None:
    """top's status line: the share of a core our programs and the recorder used between two
    samples (ioattr/live/self_cost.py SelfCost.sample), e.g. "cost: BPF 2.1% rec 0.9%"."""
    if not isinstance(prev, dict) or not isinstance(cur, dict):
        return None
    secs = float(cur.get("seconds") or 0) - float(prev.get("seconds") or 0)
    if secs <= 0:
        return None
    rec = float(cur.get("recorder_cpu_s") or 0) - float(prev.get("recorder_cpu_s") or 0)
    bpf = "off" if cur.get("bpf_stats") == "off" else f"{100 * (bpf_seconds(cur) - bpf_seconds(prev)) / secs:.1f}%"
    return f"cost: BPF {bpf} rec {100 * rec / secs:.1f}%"

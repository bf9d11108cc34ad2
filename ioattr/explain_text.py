"""The readable form of an explanation."""
from __future__ import annotations

from typing import Any

from ioattr.explain_math import plural

VERDICT_MARK = {"supported": "SUPPORTED", "refuted": "refuted", "inconclusive": "inconclusive",
                "not_applicable": "n/a"}


def _dims(d: dict[str, Any]) -> str:
    if d.get("other"):
        return "(everything else)"
    parts = [f"{k}={v}" for k, v in d.items() if v is not None]
    return " ".join(parts) if parts else "(unattributed)"


def _side(label: str, s: dict[str, Any], unit: str) -> str:
    ops = s.get("ops")
    what = [] if ops is None else [f"{ops:.0f} {plural(unit.removeprefix('per '), ops)}" if unit != "per second"
                                   else f"{ops:.0f} ops"]
    if s.get("storage_ios") is not None:
        what.append(f"{s['storage_ios']} storage IOs")
    if s.get("seconds") is not None:
        what.append(f"{s['seconds']:.3g} s")
    return f"{label}: {s['recording']} ({s['phase']}) = {s['value']:.4g}" + (f"  [{', '.join(what)}]" if what else "")


def render_text(r: dict[str, Any]) -> str:
    b, t = r["baseline"], r["target"]
    lines = [f"WARNING: {w}" for w in r.get("warnings") or []]
    lines += [f"{r['metric']} ({r['unit']}): {b['value']:.4g} -> {t['value']:.4g}",
              "  " + _side("baseline", b, r["unit"]), "  " + _side("target", t, r["unit"])]
    if r.get("no_significant_change"):
        lines.append(f"  {r['no_significant_change']}")
    lines.append("")
    basis = r.get("share_basis") or "share of the change"
    lines.append(f"What changed, by contributor (per op, baseline -> target, {basis}):")
    for c in r["contributors"]:
        lines.append(f"  {100 * c['share_of_change']:6.1f}%  {c['baseline_per_op']:10.4g} -> "
                     f"{c['target_per_op']:<10.4g}  {_dims(c['dims'])}")
    lines.append("")
    lines.append("Findings (most explained first):")
    for f in r["findings"]:
        lines.append(f"  [{VERDICT_MARK[f['verdict']]}] {f['title']}")
        lines.append(f"      {f['evidence'].get('summary', '')}")
    for m in r.get("missing") or []:
        lines.append(f"  missing: {m}")
    for n in r.get("notes") or []:
        lines.append(f"  note: {n}")
    return "\n".join(lines) + "\n"

"""The readable form of an explanation."""
from __future__ import annotations

from typing import Any

VERDICT_MARK = {"supported": "SUPPORTED", "refuted": "refuted", "inconclusive": "inconclusive",
                "not_applicable": "n/a"}


def _dims(d: dict[str, Any]) -> str:
    if d.get("other"):
        return "(everything else)"
    parts = [f"{k}={v}" for k, v in d.items() if v is not None]
    return " ".join(parts) if parts else "(unattributed)"


def render_text(r: dict[str, Any]) -> str:
    b, t = r["baseline"], r["target"]
    where = (f"{b['phase']} -> {t['phase']}" if b["recording"] == t["recording"]
             else f"{b['recording']}:{b['phase']} -> {t['recording']}:{t['phase']}")
    lines = [f"{r['metric']} ({r['unit']}): {b['value']:.4g} -> {t['value']:.4g}  ({where})", ""]
    lines.append("What changed, by contributor (per op, baseline -> target, share of the change):")
    for c in r["contributors"]:
        lines.append(f"  {100 * c['share_of_change']:6.1f}%  {c['baseline_per_op']:10.4g} -> "
                     f"{c['target_per_op']:<10.4g}  {_dims(c['dims'])}")
    lines.append("")
    lines.append("Findings:")
    for f in r["findings"]:
        lines.append(f"  [{VERDICT_MARK[f['verdict']]}] {f['title']}")
        lines.append(f"      {f['evidence'].get('summary', '')}")
    for m in r.get("missing") or []:
        lines.append(f"  missing: {m}")
    for n in r.get("notes") or []:
        lines.append(f"  note: {n}")
    return "\n".join(lines) + "\n"

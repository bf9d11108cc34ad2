"""explain's verdict and change words have one definition (ioattr/analysis/direction.py), and the
text output, the HTML report and compare all say them from it (no root, no recording)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ioattr.analysis import direction
from ioattr.analysis.compare import change
from ioattr.analysis.explain_text import render_text
from ioattr.analysis.phase_stats import PhaseStats
from ioattr.model.explain_math import NO_SIGNIFICANT_CHANGE
from ioattr.output.compare_view import change_line
from ioattr.output.html_report import render_explanation

FINDINGS = [
    {"id": "a", "title": "A", "verdict": "supported", "evidence": {"summary": "a"}},
    {"id": "b", "title": "B", "verdict": "refuted", "evidence": {"summary": "b"}},
    {"id": "c", "title": "C", "verdict": "refuted", "evidence": {"summary": "c", "holds_in_both": True}},
    {"id": "d", "title": "D", "verdict": "inconclusive", "evidence": {"summary": "d"}},
    {"id": "e", "title": "E", "verdict": "not_applicable", "evidence": {"summary": "e"}},
]
MARKS = ["SUPPORTED", "refuted: not what changed", "holds in both; not the cause", "inconclusive", "n/a"]


def _explanation(noise: str | None = None) -> dict[str, Any]:
    side = {"recording": "/r", "phase": "q", "value": 1.0, "ops": 100, "storage_ios": 100, "seconds": 1.0}
    return {"metric": "reads_per_query", "unit": "per query", "baseline": side, "target": side, "change": 0.0,
            "contributors": [], "findings": FINDINGS, "no_significant_change": noise}


def test_the_words() -> None:
    assert [direction.mark(f) for f in FINDINGS] == MARKS
    assert [direction.words(f) for f in FINDINGS] == [
        "supported", "refuted: not what changed", "holds in both; not the cause", "inconclusive", "n/a"]
    assert direction.change_words("no significant change: x") == NO_SIGNIFICANT_CHANGE == "no significant change"
    assert direction.change_words(None) == direction.SIGNIFICANT_CHANGE


def test_text_marks_are_the_words() -> None:
    lines = render_text(_explanation()).splitlines()
    for f, m in zip(FINDINGS, MARKS):
        assert f"  [{m}] {f['title']}" in lines, (m, lines)


def test_html_badges_are_the_words() -> None:
    html = render_explanation(_explanation("no significant change: reads_per_query 1 -> 1.01 (1.0%, within 5%)"))
    for f, m in zip(FINDINGS, MARKS):
        assert f'data-finding="{f["id"]}"' in html
        assert f'>{m}</span><span class="title">{f["title"]}<' in html, (m, html)
    # the counts line says each verdict's words, not the JSON's names
    assert "refuted: not what changed: 1" in html and "holds in both; not the cause: 1" in html
    assert "REFUTED" not in html and "N/A" not in html
    assert 'data-significant="false">no significant change: reads_per_query 1 -&gt; 1.01 (1.0%, within 5%)' in html


def _side(label: str, reads: float, queries: float, seconds: float = 10.0) -> tuple[Any, PhaseStats, tuple]:
    run = SimpleNamespace(label=label, rec=SimpleNamespace(path=Path(f"/recs/{label}")))
    st = PhaseStats("p", 0.0, seconds, counters={"status:Com_select": queries}, reads=reads)
    return run, st, ()


def test_compare_says_a_change_as_explain_does() -> None:
    c = change("p", _side("r1", 2000, 10000), _side("r2", 8000, 10000))
    assert c is not None and c["significant"] and c["words"] == direction.SIGNIFICANT_CHANGE
    assert (c["baseline_value"], c["target_value"]) == (0.2, 0.8)
    assert c["summary"] == ("a significant change: reads_per_query 0.2 -> 0.8 (+300%); why: ioattr explain "
                            "/recs/r1 --against /recs/r2 --baseline p --target p")
    assert change_line(c).startswith("change: phase p, r2 against r1: a significant change: ")


def test_compare_says_noise_with_its_figure() -> None:
    c = change("p", _side("r1", 2000, 10000), _side("r2", 2040, 10000))
    assert c is not None and not c["significant"] and c["words"] == NO_SIGNIFICANT_CHANGE
    assert c["summary"] == "no significant change: reads_per_query 0.2 -> 0.204 (2.0%, within 5%)"
    # too few queries on a side: the same reason explain gives
    c = change("p", _side("r1", 2000, 10000), _side("r2", 200, 20))
    assert c is not None and "phase p has 20 queries (fewer than 30)" in c["summary"]
    # a side without query counts: nothing to say
    run, st, iv = _side("r3", 10, 0)
    st.counters = {}
    assert change("p", _side("r1", 2000, 10000), (run, st, iv)) is None

"""The direction of a change in explain's verdicts (ioattr.analysis.direction), on made-up findings."""
from __future__ import annotations

from ioattr.analysis.direction import HOLDS_IN_BOTH, judge
from ioattr.model.evidence import finding


def test_a_write_mechanism_is_not_the_cause_of_a_change_in_reads() -> None:
    f = judge(finding("flush_storms", "Checkpoint and flush storms", "supported", "age 91%", moves="write",
                      fraction=0.91), "read", decrease=False)
    assert f["verdict"] == "not_applicable"
    assert f["evidence"]["summary"].startswith("a write mechanism: nothing in the evidence ties it")


def test_a_write_mechanism_whose_share_ties_it_stays_supported() -> None:
    f = judge(finding("x", "X", "supported", "s", moves="write", share_of_change=0.4), "read", decrease=False)
    assert f["verdict"] == "supported"


def test_a_decrease_is_said_as_the_mirror_with_the_sides_named_back() -> None:
    f = judge(finding("working_set", "Working set larger than the buffer pool", "supported",
                      "0.0 in the baseline phase, 0.3 in the target phase", mirror="Working set now fits",
                      miss_rate_baseline=0.0, miss_rate_target=0.3), "read", decrease=True)
    assert f["title"] == "Working set now fits" and f["mirrored"] and f["direction"] == "decrease"
    # computed on the mirrored evidence: its baseline is the user's target
    assert f["evidence"]["miss_rate_target"] == 0.0 and f["evidence"]["miss_rate_baseline"] == 0.3
    assert f["evidence"]["summary"] == "0.0 in the target phase, 0.3 in the baseline phase"
    g = judge(finding("other", "Other cause", "refuted", "s"), "read", decrease=True)
    assert g["title"] == "Less of: Other cause"


def test_a_condition_in_both_sides_says_so() -> None:
    f = judge(finding("working_set", "W", "refuted", "s", holds_in_both=True), "read", decrease=False)
    assert f["verdict"] == "refuted" and f["verdict_words"] == HOLDS_IN_BOTH
    g = judge(finding("working_set", "W", "refuted", "s", holds_in_both=False), "read", decrease=False)
    assert g["verdict_words"] == "refuted: not what changed"

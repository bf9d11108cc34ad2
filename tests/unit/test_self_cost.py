"""How a recording's own cost reads (ioattr/model/self_cost.py): report's line, top's status."""
from __future__ import annotations

from ioattr.model.self_cost import self_cost_line, status_cost

COST = {"bpf_stats": "ioattr", "seconds": 10.0, "recorder_cpu_s": 0.25,
        "programs": {"ioattr_tp_exit": {"run_cnt": 1000, "run_time_ns": 1_500_000},
                     "ioattr_wire_recv": {"run_cnt": 4000, "run_time_ns": 1_000_000},
                     "ioattr_rq_issue": {"run_cnt": 500, "run_time_ns": 400_000},
                     "ioattr_bio_queue": {"run_cnt": 500, "run_time_ns": 50_000}}}


def test_line_names_the_dearest_programs_per_run_and_the_shares_of_a_core() -> None:
    line = self_cost_line(COST)
    assert line == ("ioattr's own cost: BPF 0.00295 s (0.0% of a core), ns a run: tp_exit 1,500, wire_recv 250, "
                    "rq_issue 800; recorder 0.25 s CPU (2.5% of a core)")


def test_line_when_nothing_was_counted() -> None:
    assert "were off" in self_cost_line({**COST, "bpf_stats": "off", "programs": {}})  # type: ignore[operator]
    assert "no program ran" in self_cost_line({**COST, "programs": {}})  # type: ignore[operator]
    assert self_cost_line(None) is None


def test_status_is_the_share_of_a_core_between_two_samples() -> None:
    later = {**COST, "seconds": 12.0, "recorder_cpu_s": 0.27,
             "programs": {"ioattr_tp_exit": {"run_cnt": 2000, "run_time_ns": 41_500_000}}}
    assert status_cost(COST, later) == "cost: BPF 1.9% rec 1.0%"
    assert status_cost(None, later) is None and status_cost(later, later) is None

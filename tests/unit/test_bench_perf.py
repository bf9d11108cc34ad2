"""bench_sysbench_qps.py's perf breakdown: what a recording adds, per process and group.

Why here: the per-symbol tables of docs/cost.md's measurements is these numbers;
a symbol put in the wrong group, or a group counted twice, would move CPU between
"our code" and "the rest" without anyone seeing it."""
from __future__ import annotations

from types import ModuleType

from tests.unit.bench_scripts import load


def _bench() -> ModuleType:
    return load("bench_sysbench_qps")


def test_symbols_fall_in_their_groups() -> None:
    b = _bench()
    assert b.perf_group("bpf_prog_51498244174204b5_ioattr_wire_recv") == "programs"
    assert b.perf_group("perf_syscall_exit") == "syscall tracepoint dispatch"
    assert b.perf_group("syscall_exit_work") == "syscall tracepoint dispatch"
    assert b.perf_group("bpf_trace_run1") == "raw tracepoint dispatch"
    assert b.perf_group("lookup_nulls_elem_raw") == "map lookups and updates"
    assert b.perf_group("bpf_task_storage_get_recur") == "helpers"
    assert b.perf_group("copy_from_user_nofault") == "helpers"
    assert b.perf_group("call_trace_sock_recv_length") == "raw tracepoint dispatch"
    assert b.perf_group("handle_softirqs") == "interrupts, VM exits, page zeroing"
    assert b.perf_group("iowrite16") == "interrupts, VM exits, page zeroing"
    assert b.perf_group("JOIN::optimize_inner") == "rest"


def test_added_cpu_splits_into_groups_and_rest() -> None:
    b = _bench()
    hz = b.PERF_HZ
    # detached: 1000 queries, mariadbd 2*hz samples (2 s) of its own code
    base = {("mariadbd", "do_syscall_64"): 2 * hz, ("sysbench", "__poll"): 2 * hz}
    # attached: 500 queries; the same code per query, plus a program and its dispatch
    run = {("mariadbd", "do_syscall_64"): hz, ("mariadbd", "bpf_prog_x_ioattr_tp_exit"): hz,
           ("mariadbd", "trace_call_bpf"): 2 * hz, ("sysbench", "__poll"): hz}
    got = b.perf_added(base, 1000, run, 500)
    m = got["mariadbd"]
    assert abs(m["programs"] - 2000.0) < 1e-6         # 1 s over 500 queries
    assert abs(m["syscall tracepoint dispatch"] - 4000.0) < 1e-6
    assert abs(m["rest"]) < 1e-6                      # its own code: the same per query
    assert abs(m["total"] - 6000.0) < 1e-6
    assert abs(sum(v for k, v in m.items() if k != "total") - m["total"]) < 1e-6
    assert all(abs(v) < 1e-6 for v in got["sysbench"].values())
    assert got["python"]["total"] == 0


def test_rest_by_symbol_is_what_the_groups_leave() -> None:
    """The "rest" broken down by symbol sums to perf_added()'s rest, and the top list is
    the medians over rounds, largest first (a symbol one round lacks counts as 0 there)."""
    b = _bench()
    hz = b.PERF_HZ
    base = {("mariadbd", "do_syscall_64"): hz, ("mariadbd", "bpf_prog_x_ioattr_tp_exit"): 0,
            ("mariadbd", "row_search_mvcc"): hz}
    run = {("mariadbd", "do_syscall_64"): 2 * hz, ("mariadbd", "bpf_prog_x_ioattr_tp_exit"): hz,
           ("mariadbd", "row_search_mvcc"): hz, ("mariadbd", "srso_return_thunk"): hz // 2}
    rest = b.perf_rest_symbols(base, 1000, run, 1000, comms=("mariadbd",))["mariadbd"]
    assert set(rest) == {"do_syscall_64", "row_search_mvcc", "srso_return_thunk"}  # no program symbol
    assert abs(sum(rest.values()) - b.perf_added(base, 1000, run, 1000, comms=("mariadbd",))["mariadbd"]["rest"]) < 1e-2
    assert rest["do_syscall_64"] == 1000.0 and rest["row_search_mvcc"] == 0.0
    top = b.top_symbols([{"a": 1.0, "b": -3.0}, {"a": 2.0}, {"a": 3.0, "b": -1.0}], n=2)
    assert top == [("a", 2.0, 1.0, 3.0), ("b", -1.0, -3.0, 0.0)]

"""benchmarks/bench_verifier.py's measuring part, without loading anything: a refused load is a
result (its first line kept), and the time is the kernel's (system CPU), not wall time."""
from __future__ import annotations

import os

from tests.unit.bench_scripts import load

bench = load("bench_verifier")


def test_a_refused_load_is_a_result_with_its_first_line() -> None:
    def refused() -> None:
        raise OSError("load stage.bpf.o: Argument list too long\nverifier log ...")

    took, error = bench.system_seconds(refused)
    assert error == "load stage.bpf.o: Argument list too long" and took >= 0


def test_the_time_is_system_cpu() -> None:
    def syscalls() -> None:  # system time, and no error
        for _ in range(20000):
            os.stat("/")

    took, error = bench.system_seconds(syscalls)
    assert error is None and took > 0
    took, _ = bench.system_seconds(lambda: sum(range(10000)))  # user time only
    assert took < 0.05

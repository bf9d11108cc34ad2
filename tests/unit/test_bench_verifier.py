"""benchmarks/bench_verifier.py's measuring part, without loading anything: a refused load is a
result (its first line kept), and the time is the kernel's (system CPU), not wall time."""
from __future__ import annotations

from tests.unit.bench_scripts import load

bench = load("bench_verifier")


def test_a_refused_load_is_a_result_with_its_first_line() -> None:
    def refused() -> None:
        raise OSError("load stage.bpf.o: Argument list too long\nverifier log ...")

    took, error = bench.system_seconds(refused)
    assert error == "load stage.bpf.o: Argument list too long" and took >= 0


def test_the_time_is_system_cpu(monkeypatch) -> None:
    """The kernel's verifying shows as this process's system time; user time is left out. The
    clock is faked: real rusage ticks in scheduler steps, and a test may not depend on timing."""
    clock = iter([(1.0, 5.0), (1.25, 9.0)])  # (ru_stime, ru_utime) before and after

    class Usage:
        def __init__(self, stime: float, utime: float) -> None:
            self.ru_stime, self.ru_utime = stime, utime

    asked: list[int] = []

    def getrusage(who: int) -> Usage:
        asked.append(who)
        return Usage(*next(clock))

    monkeypatch.setattr(bench.resource, "getrusage", getrusage)
    took, error = bench.system_seconds(lambda: None)
    assert (took, error) == (0.25, None)
    assert asked == [bench.resource.RUSAGE_SELF] * 2

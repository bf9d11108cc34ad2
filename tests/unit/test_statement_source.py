"""--statements auto's verdict (collectors/stage_probes.py StageProbes.check_wire), without BPF:
the wire reader's statement count against the server's Questions. In clear the wire sees at
least every Question (and COM_STMT_PREPARE/CLOSE, COM_PING, which Questions skips): never a
fallback. When clients use TLS or compression the wire sees fewer: the dispatch_command
uprobe is attached, once. No verdict before WIRE_CHECK_QUESTIONS Questions."""
from __future__ import annotations

from ioattr.collectors import stage_probes as sp


class Probes(sp.StageProbes):
    """check_wire's bookkeeping with the wire count and the fallback faked."""

    def __init__(self, requested: str = "auto") -> None:  # no ProbeSession, no BPF
        self.requested = requested
        self.sources = {7: ("wire", "--statements auto")}
        self._wire_base = {}
        self._wire_long_base = {}
        self.wire = 0
        self.long = 0  # texts too long to scan to their end (BPF wire_long)
        self.fell_back: list[str] = []

    def wire_count(self, pid: int) -> int:
        return self.wire

    def wire_long(self) -> int:
        return self.long

    def fallback(self, pid: int, why: str) -> str:
        self.fell_back.append(why)
        self.sources[pid] = ("wire+uprobe", why)
        return f"server {pid}: {why}"


def test_clear_clients_never_fall_back() -> None:
    p = Probes()
    questions = 1000
    assert p.check_wire(7, questions) == ""  # the baseline
    for _ in range(20):
        p.wire += 500  # + prepares, closes, pings Questions does not count
        questions += 480
        assert p.check_wire(7, questions) == ""
    # statements in flight between the two reads (one per busy connection) are not a verdict
    p.wire += sp.WIRE_CHECK_QUESTIONS - sp.WIRE_SLACK
    questions += sp.WIRE_CHECK_QUESTIONS
    assert p.check_wire(7, questions) == "" and not p.fell_back


def test_tls_clients_fall_back_once() -> None:
    p = Probes()
    assert p.check_wire(7, 0) == ""
    p.wire += 10
    assert p.check_wire(7, sp.WIRE_CHECK_QUESTIONS - 1) == ""  # not enough evidence yet
    said = p.check_wire(7, 2 * sp.WIRE_CHECK_QUESTIONS)
    assert said and "Questions" in said and len(p.fell_back) == 1
    assert p.source(7) == "wire+uprobe"
    assert p.check_wire(7, 10 * sp.WIRE_CHECK_QUESTIONS) == ""  # decided: no more checks
    assert len(p.fell_back) == 1


def test_a_minority_of_tls_clients_is_enough() -> None:
    p = Probes()
    p.check_wire(7, 0)
    p.wire += 900
    assert p.check_wire(7, 1000)  # a tenth of the statements invisible: fall back
    assert len(p.fell_back) == 1


def test_forced_sources_are_never_checked() -> None:
    for requested in ("wire", "uprobe"):
        p = Probes(requested)
        p.check_wire(7, 0)
        assert p.check_wire(7, 10_000) == "" and not p.fell_back


def test_a_stall_between_the_reads_is_no_shortfall() -> None:
    """The 64-thread runs' false fallback: at ~12,000 statements/s the recorder, off the CPU for
    0.2 s between the server's answer to Questions and its read of the wire, took a base whose
    wire count ran ahead of its Questions; the next window, read without a stall, then showed the
    wire 2,449 statements short (8,359 of 10,808). Read before and after Questions, the wire's
    window holds every statement Questions counted, however long the reads were apart."""
    rate = 12_000  # statements a second, every one on the wire (in clear) before Questions counts it

    def check(p: Probes, t: float, stall: float, sandwich: bool) -> str:
        before = int(rate * t)            # the wire just before Questions
        questions = int(rate * t)         # what the server counted when it answered
        p.wire = int(rate * (t + stall))  # the wire once the recorder ran again
        return p.check_wire(7, questions, before if sandwich else None, connections=66)

    old, new = Probes(), Probes()
    for p, sandwich in ((old, False), (new, True)):
        assert check(p, 10.0, 0.2, sandwich) == ""    # the base, read across a 0.2 s stall
    assert check(old, 10.9, 0.001, False)              # one read after: 2,400 statements "missing"
    assert check(new, 10.9, 0.001, True) == "" and not new.fell_back
    for i in range(2, 60):                             # a minute of windows, stalls of any length
        assert check(new, 10.0 + 0.9 * i, 0.3 * (i % 3), True) == ""
    assert not new.fell_back


def test_statements_in_flight_on_every_connection_are_no_shortfall() -> None:
    """64 busy connections: at the base each has a command the wire counted that Questions
    counts only later (in the window's Questions, not its wire). Threads_connected bounds that."""
    for connections, falls_back in ((65, False), (0, True)):  # 0: the bare WIRE_SLACK alone
        p = Probes()
        assert p.check_wire(7, 10_000, 10_000 + 64, connections=connections) == ""
        p.wire = 10_000 + 64 + 136  # 136 more on the wire; Questions counts those and the 64
        said = p.check_wire(7, 10_000 + sp.WIRE_CHECK_QUESTIONS, p.wire, connections=connections)
        assert bool(said) == falls_back and len(p.fell_back) == int(falls_back)


def test_tls_clients_still_fall_back_with_the_wire_read_twice() -> None:
    p = Probes()
    assert p.check_wire(7, 0, 0, connections=65) == ""
    p.wire = 30                                     # only ioattr's own statements show
    assert p.check_wire(7, 5_000, 20, connections=65)
    assert len(p.fell_back) == 1 and p.source(7) == "wire+uprobe"


def test_the_shortfall_is_named_by_what_the_wire_knows() -> None:
    """Multi-statement packets are counted per statement: a shortfall is what came unread (TLS,
    compression), unless texts too long to scan came in the same seconds: then those are named
    first."""
    p = Probes()
    p.check_wire(7, 0)
    p.wire += 100
    said = p.check_wire(7, 1000)
    assert "TLS or compression" in said and "multi-statement" not in said, said
    q = Probes()
    q.check_wire(7, 0)
    q.wire += 100
    q.long += 3
    said = q.check_wire(7, 1000)
    assert "3 COM_QUERY texts longer than 64 KiB" in said and "multi-statement" in said, said

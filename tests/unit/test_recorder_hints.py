"""The recorder's one-line hints: when the last phase ran on idle past the benchmark (only when
that is known and matters), and the exact `ioattr mark` command its start line prints."""
from __future__ import annotations

from ioattr.live.recorder import phase_tail_hint

END = 1_000.0


def test_an_idle_tail_after_the_last_statement_is_said_with_record_cmd() -> None:
    hint = phase_tail_hint("q100", END - 12.4, END, 1.0, wrapped=False, stop_reason="SIGINT")
    assert hint == ("phase q100 ran 12 s past its last statement (idle time counted in its rates); "
                    "for exact phase ends: ioattr record ... -- CMD")
    assert phase_tail_hint("q100", END - 3.0, END, 1.0, wrapped=False, stop_reason="duration reached")


def test_no_hint_where_it_is_not_relevant() -> None:
    # statements up to the end (within two intervals, and never under 2 s)
    assert phase_tail_hint("main", END - 1.5, END, 0.3, wrapped=False, stop_reason="SIGINT") is None
    assert phase_tail_hint("main", END - 9.0, END, 5.0, wrapped=False, stop_reason="SIGINT") is None
    # a wrapped command ends the recording itself; mark --stop is an exact end
    assert phase_tail_hint("main", END - 60, END, 1.0, wrapped=True, stop_reason="command exited") is None
    assert phase_tail_hint("main", END - 60, END, 1.0, wrapped=False, stop_reason="ioattr mark --stop") is None
    # no statement seen (no server probes, or no server): nothing says the tail was idle
    assert phase_tail_hint("main", None, END, 1.0, wrapped=False, stop_reason="SIGINT") is None


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



def test_ops_pattern_counts_into_the_phase_in_force(tmp_path) -> None:
    """--ops-pattern: the number in group 'ops', else group 1, else 1 per line, added to the phase
    whose span holds the time the line was read; 0 for a phase the pattern never matched in."""
    import os
    import re
    import types

    from ioattr.live.recorder import Recorder, RecordOptions, ops_from_match
    from ioattr.collectors.targets import TargetSpec

    assert ops_from_match(re.search(r"total number of events:\s+(\d+)", "    total number of events:   1154")) == 1154
    assert ops_from_match(re.search(r"ops=(?P<ops>[\d,]+)", "ops=1,200 done")) == 1200
    assert ops_from_match(re.search(r"request done", "a request done")) == 1
    r = Recorder(RecordOptions(output=tmp_path / "rec", targets=TargetSpec(command=["true"]),
                               ops_pattern=r"events:\s+(\d+)"))
    writer = types.SimpleNamespace(meta={"phases": [{"name": "load", "start": 10.0, "end": 20.0},
                                                    {"name": "run", "start": 20.0, "end": None},
                                                    {"name": "idle", "start": 30.0, "end": None}]})
    for at, n in ((12.0, 5.0), (21.0, 300.0), (25.0, 2.0)):
        r._ops_seen.put((at, n))
    r._take_ops(writer, final=True)  # type: ignore[arg-type]
    assert [p.get("ops") for p in writer.meta["phases"]] == [5, 302, 0]
    for fd in (r._wake_r, r._wake_w):
        os.close(fd)

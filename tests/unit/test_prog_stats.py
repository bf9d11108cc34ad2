"""collectors/prog_stats.py: the fdinfo counters of our programs, and the skipped runs."""
from __future__ import annotations

from pathlib import Path

from ioattr.collectors.prog_stats import ProgStats, all_prog_stats, read_prog_stats, skipped_runs
from ioattr.model import labels

FDINFO = """pos:\t0
flags:\t02000002
mnt_id:\t16
ino:\t1057
prog_type:\t5
prog_jited:\t1
prog_tag:\t0123456789abcdef
memlock:\t4096
prog_id:\t{id}
run_time_ns:\t{ns}
run_cnt:\t{cnt}
{misses}verified_insns:\t93
"""


def fake(tmp_path: Path, fd: int, ns: int, cnt: int, misses: int | None) -> None:
    line = "" if misses is None else f"recursion_misses:\t{misses}\n"
    (tmp_path / str(fd)).write_text(FDINFO.format(id=fd, ns=ns, cnt=cnt, misses=line))


def test_reads_the_three_counters(tmp_path: Path) -> None:
    fake(tmp_path, 7, 1500, 3, 2)
    assert read_prog_stats(7, str(tmp_path)) == ProgStats(1500, 3, 2)


def test_a_kernel_without_recursion_misses_reads_zero(tmp_path: Path) -> None:
    fake(tmp_path, 7, 10, 1, None)  # before 5.12 fdinfo has no recursion_misses line
    assert read_prog_stats(7, str(tmp_path)) == ProgStats(10, 1, 0)


def test_not_a_program_or_gone(tmp_path: Path) -> None:
    (tmp_path / "3").write_text("pos:\t0\nflags:\t02\n")  # a map's or a file's fdinfo
    assert read_prog_stats(3, str(tmp_path)) is None
    assert read_prog_stats(4, str(tmp_path)) is None  # closed meanwhile
    (tmp_path / "5").write_text("run_time_ns:\tx\nrun_cnt:\t1\n")
    assert read_prog_stats(5, str(tmp_path)) is None


def test_skipped_runs_sum_over_loaded_programs(tmp_path: Path) -> None:
    fake(tmp_path, 7, 0, 0, 3)
    fake(tmp_path, 8, 0, 0, 0)
    fake(tmp_path, 9, 0, 0, None)
    fds = {"ioattr_rq_complete": 7, "ioattr_rq_issue": 8, "ioattr_pread_enter": 9,
           "ioattr_not_loaded": -1, "ioattr_closed": 42}
    assert set(all_prog_stats(fds, str(tmp_path))) == {"ioattr_rq_complete", "ioattr_rq_issue",
                                                       "ioattr_pread_enter"}
    assert skipped_runs(fds, str(tmp_path)) == 3
    assert skipped_runs({}, str(tmp_path)) == 0


def test_skipped_runs_are_a_drop_reason_said_in_the_warning() -> None:
    assert labels.DROP_MAPS[labels.PROG_SKIPPED] == ""
    line = labels.drops_line({"stats_full": 0, labels.PROG_SKIPPED: 4})
    assert line is not None and "4 IO/events dropped" in line and "prog_skipped 4" in line
    assert "--max-entries" not in line  # a larger map would not help
    assert labels.drops_line({labels.PROG_SKIPPED: 0}) is None


def test_top_header_names_full_maps_and_other_reasons_apart() -> None:
    from ioattr.topview.top import Header
    from ioattr.topview.top_render import header_lines

    hdr = Header(host="h", dropped=9, drops={"stats_full": 5, "events_full": 0, "pages_cut": 1,
                                             labels.PROG_SKIPPED: 3})
    second = header_lines(None, hdr, "syscall")[1]
    assert "DROPPED 9 (io_stats full; pages_cut; prog_skipped)" in second, second
    hdr = Header(host="h", dropped=3, drops={labels.PROG_SKIPPED: 3})
    assert "DROPPED 3 (prog_skipped)" in header_lines(None, hdr, "syscall")[1]

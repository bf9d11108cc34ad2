"""The one line a host without btrfs block attribution gets (collectors/filesystems.py), and
the report note that carries it from meta.json."""
from __future__ import annotations

from ioattr.collectors import filesystems
from ioattr.collectors.filesystems import BTRFS_END_IO


def test_missing_end_io_symbols_say_unknown_in_one_line() -> None:
    ok, line = filesystems.btrfs_support({})
    assert not ok and "\n" not in line
    assert line.startswith("btrfs: ") and "[unknown]" in line


def test_recording_line_only_when_btrfs_is_mounted(monkeypatch) -> None:
    monkeypatch.setattr(filesystems, "mounted_types", lambda: {"ext4", "xfs"})
    assert filesystems.btrfs_line({}) is None
    monkeypatch.setattr(filesystems, "mounted_types", lambda: {"btrfs"})
    assert "[unknown]" in (filesystems.btrfs_line({}) or "")
    monkeypatch.setattr(filesystems, "_btf_has_btrfs", lambda: True)
    assert filesystems.btrfs_line(dict.fromkeys(BTRFS_END_IO, 0xffffffff81000000)) is None


def test_report_prints_the_filesystem_line() -> None:
    from ioattr.output.render import render_table

    report = {"recording": "r", "phases": [], "rows": [], "dropped": 0,
              "notes": ["btrfs: block IO of files on btrfs is counted as [unknown], not charged to its files (x)"]}
    assert "NOTE: btrfs: block IO of files on btrfs is counted as [unknown]" in render_table(report, ["file"])

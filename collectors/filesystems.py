"""Which filesystems' block IO this host lets ioattr charge to files, said in one line.

Block requests are charged to files by what their bios carry (bpf/block.bpf.c): iomap's
direct-IO bios (ext4, XFS) name their iomap_dio, page-cache bios their pages' inode. btrfs
sends bios of its own (struct btrfs_bio, bpf/compat.bpf.h), recognised by their end_io
functions' addresses from /proc/kallsyms and read through btrfs's types in the kernel's BTF.
Without those, every btrfs data request is counted as `[unknown]`: doctor and the recording
say so (docs/filesystems.md).
"""
from __future__ import annotations

import os

from ioattr.collectors.targets import read_proc_text

BTRFS_END_IO = ("btrfs_simple_end_io", "btrfs_orig_write_end_io", "btrfs_clone_write_end_io", "btrfs_dio_end_io")
VMLINUX_BTF = "/sys/kernel/btf/vmlinux"


def kernel_filesystems() -> set[str]:
    """The filesystem types this kernel knows now (/proc/filesystems)."""
    try:
        with open("/proc/filesystems") as f:
            return {line.split()[-1] for line in f if line.strip()}
    except OSError:
        return set()


def mounted_types() -> set[str]:
    """The filesystem types mounted in this mount namespace."""
    try:
        with open("/proc/self/mounts") as f:
            return {parts[2] for parts in (line.split() for line in f) if len(parts) > 2}
    except OSError:
        return set()


def _btf_has_btrfs() -> bool:
    """Whether the kernel's BTF describes btrfs's types: built in (vmlinux) or a module's."""
    if os.path.exists("/sys/kernel/btf/btrfs"):
        return True
    try:
        with open(VMLINUX_BTF, "rb") as f:
            return b"\0btrfs_bio\0" in f.read()
    except OSError:
        return False


def btrfs_support(addresses: dict[str, int]) -> tuple[bool, str]:
    """(whether btrfs block IO is charged to files, one line saying so or why not), given
    the kallsyms addresses of BTRFS_END_IO (0: hidden or absent)."""
    missing = [name for name in BTRFS_END_IO if not addresses.get(name)]
    unknown = "block IO of files on btrfs is counted as [unknown], not charged to its files"
    if missing:
        why = ("addresses hidden (kptr_restrict=%s)" % read_proc_text("/proc/sys/kernel/kptr_restrict")
               if len(missing) == len(BTRFS_END_IO) and _kallsyms_hidden() else
               "not in /proc/kallsyms: " + ", ".join(missing))
        return False, f"btrfs: {unknown} ({why})"
    if not _btf_has_btrfs():
        return False, f"btrfs: {unknown} (the kernel's BTF has no btrfs types)"
    return True, "btrfs: block IO charged to files through btrfs's own bios (btrfs_bio, its end_io functions)"


def btrfs_line(addresses: dict[str, int]) -> str | None:
    """The one line a recording carries when btrfs is mounted here and its block IO cannot be
    charged to files; None otherwise."""
    if "btrfs" not in mounted_types():
        return None
    ok, line = btrfs_support(addresses)
    return None if ok else line


def _kallsyms_hidden() -> bool:
    try:
        with open("/proc/kallsyms") as f:
            first = f.readline().split()
        return bool(first) and int(first[0], 16) == 0
    except (OSError, ValueError):
        return False

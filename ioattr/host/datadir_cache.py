"""Freshly initialised MariaDB datadirs, kept to be copied instead of initialised again.

Why: ``mariadb-install-db`` takes about a second, copying its result (~50 MB) about a
tenth of that. The test suite starts some seventy private servers, in its own process and
in the example scripts it runs, all from the same few installs; a cache shared through the
environment turns all but the first install of each kind into a copy.

Only where ``IOATTR_DATADIR_CACHE`` names a directory (the suite sets it for its run and
removes it at the end); nothing is cached otherwise, so a user's ``ioattr demo`` or
benchmark leaves nothing behind. An entry is keyed by everything that decides what the
install writes: the program (its path, size and change time: a package upgrade is another
key) and its arguments other than the directories. Entries are written under a temporary
name and renamed into place, so processes sharing the cache see a whole entry or none.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from ioattr import environment

ENV = "IOATTR_DATADIR_CACHE"


def _key(program: str, args: Sequence[str]) -> str | None:
    """The entry name of one install (None when the program can't be found)."""
    path = shutil.which(program)
    if path is None:
        return None
    st = os.stat(path)
    text = "\0".join([os.path.realpath(path), str(st.st_size), str(st.st_ctime_ns), *args])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class DatadirCache:
    """One cache directory: entries are pristine datadirs named by their install's key."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def from_env(cls) -> "DatadirCache | None":
        root = environment.get(ENV)
        if not root or not Path(root).is_dir():
            return None
        return cls(Path(root))

    def fetch(self, program: str, args: Sequence[str], datadir: Path) -> bool:
        """Copy the entry for this install to datadir (which must not exist yet); False
        when there is none (the caller installs, then store()s)."""
        key = _key(program, args)
        entry = self.root / key if key else None
        if entry is None or not entry.is_dir() or datadir.exists():
            return False  # an existing directory is somebody's: install_db fills it, as it would
        try:
            shutil.copytree(entry, datadir, symlinks=True)
        except OSError:
            shutil.rmtree(datadir, ignore_errors=True)  # ours, half copied: install instead
            return False
        return True

    def store(self, program: str, args: Sequence[str], datadir: Path) -> None:
        """Keep a copy of a datadir install just made (before any server ran on it). A
        failure to store costs the next install its second, nothing else."""
        key = _key(program, args)
        if key is None or (self.root / key).is_dir():
            return
        tmp = Path(tempfile.mkdtemp(prefix=".part-", dir=self.root))
        try:
            shutil.copytree(datadir, tmp / "d", symlinks=True)
            os.rename(tmp / "d", self.root / key)  # another process may have won: then this fails
        except OSError:
            pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

"""ioattr/host/datadir_cache.py without a server: an install is kept once and copied after,
keyed by its program and arguments; a directory that exists already is never written over."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ioattr.host import datadir_cache as dc

PROGRAM = "true"  # any program on PATH: the key needs it to exist, the cache never runs it
ARGS = ["--no-defaults", "--innodb-log-file-size=32M"]


def fake_install(datadir: Path) -> None:
    (datadir / "mysql").mkdir(parents=True)
    (datadir / "mysql" / "user.MAI").write_bytes(b"u" * 100)
    (datadir / "ibdata1").write_bytes(b"\0" * 4096)


def tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}


def test_store_then_fetch_copies_the_install(tmp_path: Path) -> None:
    cache = dc.DatadirCache(tmp_path / "cache")
    cache.root.mkdir()
    assert not cache.fetch(PROGRAM, ARGS, tmp_path / "a")  # nothing kept yet
    fake_install(tmp_path / "a")
    cache.store(PROGRAM, ARGS, tmp_path / "a")
    (tmp_path / "a" / "ibdata1").write_bytes(b"changed by a server")  # the original lives on
    assert cache.fetch(PROGRAM, ARGS, tmp_path / "b")
    assert tree(tmp_path / "b") == {"mysql/user.MAI": b"u" * 100, "ibdata1": b"\0" * 4096}
    assert len(list(cache.root.iterdir())) == 1  # one entry, no partial copies left


def test_other_arguments_or_program_are_another_entry(tmp_path: Path) -> None:
    cache = dc.DatadirCache(tmp_path)
    fake_install(tmp_path / "a")
    cache.store(PROGRAM, ARGS, tmp_path / "a")
    assert not cache.fetch(PROGRAM, ARGS[:1] + ["--innodb-log-file-size=8M"], tmp_path / "b")
    assert not cache.fetch("false", ARGS, tmp_path / "c")
    assert not cache.fetch("no-such-install-db", ARGS, tmp_path / "d")
    cache.store("no-such-install-db", ARGS, tmp_path / "a")  # no key: nothing stored, no error
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_an_existing_directory_is_left_alone(tmp_path: Path) -> None:
    cache = dc.DatadirCache(tmp_path / "cache")
    cache.root.mkdir()
    fake_install(tmp_path / "a")
    cache.store(PROGRAM, ARGS, tmp_path / "a")
    given = tmp_path / "given"
    given.mkdir()
    (given / "keep").write_text("mine")
    assert not cache.fetch(PROGRAM, ARGS, given)
    assert tree(given) == {"keep": b"mine"}


def test_only_where_the_environment_names_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dc.ENV, raising=False)
    assert dc.DatadirCache.from_env() is None
    monkeypatch.setenv(dc.ENV, str(tmp_path / "missing"))
    assert dc.DatadirCache.from_env() is None
    monkeypatch.setenv(dc.ENV, str(tmp_path))
    got = dc.DatadirCache.from_env()
    assert got is not None and got.root == tmp_path


def test_a_package_upgrade_is_another_key(tmp_path: Path) -> None:
    prog = tmp_path / "bin" / "install-db"
    prog.parent.mkdir()
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    before = dc._key(str(prog), ARGS)
    prog.write_text("#!/bin/sh\n# upgraded\n")
    os.utime(prog)
    assert before is not None and dc._key(str(prog), ARGS) != before

"""collectors/mysqld.py server_directories: where page files are looked for before the server
opens them. A relative directory variable is the server's (relative to its datadir), never the
recorder's working directory."""
from __future__ import annotations

import os

from ioattr.collectors.mysqld import server_directories


def test_innodbs_default_undo_directory_is_the_datadir() -> None:
    # MariaDB 10.11's defaults: datadir with a trailing slash, innodb_undo_directory './'
    got = server_directories("/srv/db/data", ["/srv/db/data/", "./"])
    assert got == ["/srv/db/data"]


def test_relative_values_never_name_the_recorders_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    got = server_directories("/srv/db/data", ["/srv/db/data/", "./", "undo", "../logs"])
    assert got == ["/srv/db/data", "/srv/db/data/undo", "/srv/db/logs"]
    assert not any(d.startswith(str(tmp_path)) or d == os.getcwd() for d in got)


def test_absolute_values_are_kept_once() -> None:
    got = server_directories("/srv/db/data", ["/srv/db/data", "/fast/ibdata", "/fast/ibdata/"])
    assert got == ["/srv/db/data", "/fast/ibdata"]


def test_without_the_servers_cwd_the_datadir_is_the_base() -> None:
    assert server_directories(None, ["/srv/db/data/", "./", "undo"]) == ["/srv/db/data", "/srv/db/data/undo"]


def test_nothing_known_nothing_guessed() -> None:
    assert server_directories(None, ["./", "undo"]) == []

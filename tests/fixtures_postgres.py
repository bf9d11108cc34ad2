"""pytest plugin: private PostgreSQL clusters for tests (ioattr.host.pg_sandbox.PrivatePostgres).

Loaded from tests/conftest.py (``pytest_plugins``), beside tests/fixtures_mariadb.py, whose
leftover-process guard also covers these clusters: a cluster is registered there while it
runs, so its postmaster and the backends it forks may outlive a single test.

``postgres`` (module)
    One started cluster per test module (16MB shared_buffers, autovacuum off), stopped at the
    module's end. Tests make their own tables in it.
"""
from __future__ import annotations

import pwd
from typing import Iterator

import pytest

from ioattr.host.pg_sandbox import PG_BINDIR, PrivatePostgres
from tests import fixtures_mariadb
from tests.conftest import need, need_root


def need_postgres() -> None:
    """Root (to start the server as user postgres), the postgresql-15 binaries, the user."""
    need_root()
    need((PG_BINDIR / "postgres").exists() and (PG_BINDIR / "initdb").exists(),
         f"postgresql-15 is not installed ({PG_BINDIR}/postgres)")
    try:
        pwd.getpwnam("postgres")
        has_user = True
    except KeyError:
        has_user = False
    need(has_user, "no user 'postgres' to run the server as")


@pytest.fixture(scope="module")
def postgres() -> Iterator[PrivatePostgres]:
    """A private PostgreSQL cluster shared by one test module."""
    need_postgres()
    pg = PrivatePostgres()
    fixtures_mariadb._SESSION_SERVERS.append(pg)  # type: ignore[arg-type]  # the guard needs .pid only
    try:
        pg.start()
        yield pg
    finally:
        pg.stop()
        fixtures_mariadb._SESSION_SERVERS.remove(pg)  # type: ignore[arg-type]

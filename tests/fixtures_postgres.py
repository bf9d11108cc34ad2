"""pytest plugin: private PostgreSQL clusters for tests (ioattr.host.pg_sandbox.PrivatePostgres).

Loaded from tests/conftest.py (``pytest_plugins``), beside tests/fixtures_mariadb.py, whose
leftover-process guard also covers these clusters: a cluster is registered there while it
runs, so its postmaster and the backends it forks may outlive a single test.

``postgres`` (module)
    One started cluster per test module (16MB shared_buffers, autovacuum off), stopped at the
    module's end. Tests make their own tables in it.
``pg_version`` (module, parametrized 15 and 18) and ``postgres_versions`` (module)
    The same cluster on Debian's PostgreSQL 15 and on 18 (PG18_BINDIR: the Makefile's `pg18`
    step, or $IOATTR_PG18_BINDIR): a module that asks for ``postgres_versions`` runs each of
    its tests on both. Only where it is cheap (an initdb and a start, ~3 s, per version and
    module): the suite's time budget is shared.
"""
from __future__ import annotations

import pwd
from typing import Iterator

import pytest

from ioattr.host.pg_sandbox import PG18_BINDIR, PG18_BINDIR_ENV, PG_BINDIR, PrivatePostgres
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


def need_postgres18() -> None:
    """need_postgres, and PostgreSQL 18's binaries (make pg18, or $IOATTR_PG18_BINDIR)."""
    need_postgres()
    need((PG18_BINDIR / "postgres").exists() and (PG18_BINDIR / "initdb").exists(),
         f"PostgreSQL 18 is not unpacked at {PG18_BINDIR} (run `make pg18`, or set {PG18_BINDIR_ENV} "
         "to a build's bin/)")


#: major version -> its binaries
PG_VERSIONS = {15: PG_BINDIR, 18: PG18_BINDIR}


def started_cluster(version: int = 15, **kwargs: object) -> Iterator[PrivatePostgres]:
    """A private cluster of that version, registered with the leftover-process guard."""
    need_postgres() if version == 15 else need_postgres18()
    pg = PrivatePostgres(bindir=PG_VERSIONS[version], **kwargs)  # type: ignore[arg-type]
    fixtures_mariadb._SESSION_SERVERS.append(pg)  # type: ignore[arg-type]  # the guard needs .pid only
    try:
        pg.start()
        yield pg
    finally:
        pg.stop()
        fixtures_mariadb._SESSION_SERVERS.remove(pg)  # type: ignore[arg-type]


@pytest.fixture(scope="module", params=sorted(PG_VERSIONS), ids=lambda v: f"pg{v}")
def pg_version(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture(scope="module")
def postgres_versions(pg_version: int) -> Iterator[PrivatePostgres]:
    """A private cluster per module and version (15, then 18 with its default io_method=worker)."""
    yield from started_cluster(pg_version)


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

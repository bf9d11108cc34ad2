"""pytest plugin: private PostgreSQL clusters for tests (ioattr.host.pg_sandbox.PrivatePostgres).

Loaded from tests/conftest.py (``pytest_plugins``), beside tests/fixtures_mariadb.py, whose
leftover-process guard also covers these clusters: a cluster is registered there while it
runs, so its postmaster and the backends it forks may outlive a single test.

``postgres`` (module)
    One started cluster per test module (16MB shared_buffers, autovacuum off), stopped at the
    module's end. Tests make their own tables in it.
``postgres_versions`` (module) and ``pg_version``
    A cluster of the major version ``pg_version`` says: 15 (Debian's) unless a test
    parametrizes it, ``ON_15`` or ``ON_15_AND_18`` (18: PG18_BINDIR, the Makefile's `pg18`
    step, or $IOATTR_PG18_BINDIR). One cluster per version and module. Run a test on both
    only where it is cheap (the suite's time budget is shared): every test of a module that
    uses ``postgres_versions`` names its versions, so the 15 cluster is one.
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


def cold_seq_scan(pg: PrivatePostgres, scan: str, relname: str) -> tuple[int, int]:
    """Run `scan` on a new connection (no TLS; index and bitmap scans off, statistics reset
    first): (heap_blks_read of table `relname` as pg_statio_user_tables says right after it,
    read on a second connection; the scanning backend's pid)."""
    with pg.connect(sslmode="disable") as c:
        backend = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        c.execute("SET enable_indexscan = off; SET enable_bitmapscan = off")
        c.execute("SELECT pg_stat_reset()")
        c.execute(scan).fetchone()
        c.execute("SELECT pg_stat_force_next_flush()")
        with pg.connect() as d:
            (heap_read,) = d.execute("SELECT heap_blks_read FROM pg_statio_user_tables WHERE relname = %s",
                                     (relname,)).fetchone()
    return int(heap_read), int(backend)


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
        fixtures_mariadb.forget_server(pg)


@pytest.fixture(scope="module")
def pg_version(request: pytest.FixtureRequest) -> int:
    """The PostgreSQL major version of ``postgres_versions`` (a test's parameter, else 15)."""
    return int(getattr(request, "param", 15))


#: a test of a module using ``postgres_versions``: on 15 only, or on 15 and 18 (18 with its
#: defaults: io_method=worker)
ON_15 = pytest.mark.parametrize("pg_version", [15], indirect=True, ids=["pg15"])
ON_15_AND_18 = pytest.mark.parametrize("pg_version", [15, 18], indirect=True, ids=["pg15", "pg18"])


@pytest.fixture(scope="module")
def postgres_versions(pg_version: int) -> Iterator[PrivatePostgres]:
    """A private cluster per module and version."""
    yield from started_cluster(pg_version)


@pytest.fixture(scope="module")
def postgres() -> Iterator[PrivatePostgres]:
    """A private PostgreSQL cluster (15) shared by one test module."""
    yield from started_cluster(15)

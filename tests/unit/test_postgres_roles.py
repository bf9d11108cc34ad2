"""Roles of a cluster's processes: pg_stat_activity.backend_type first, the process title where
the server lists no such process (no connection, a backend still starting), and how often
pg_stat_activity is read (no server: a fake connection, /proc answers patched)."""
from __future__ import annotations

import pytest

from ioattr.engines.postgres import roles, server


class FakeConn:
    closed = False

    def __init__(self, rows: list[tuple]) -> None:
        self.rows = rows
        self.queries = 0

    def execute(self, sql: str, *args):
        assert sql == server.ACTIVITY_QUERY
        self.queries += 1
        return self

    def fetchall(self) -> list[tuple]:
        return list(self.rows)


@pytest.fixture
def srv(monkeypatch: pytest.MonkeyPatch):
    s = server.PostgresServer(2_000_000_000)  # no such process: no data directory
    monkeypatch.setattr(s, "is_child", lambda pid: True)
    titles = {5: "postgres: postgres postgres [local] idle", 6: "postgres: postgres postgres [local] idle",
              7: "postgres: checkpointer "}
    monkeypatch.setattr(roles, "process_title", lambda pid: titles.get(pid))
    return s


def test_backend_type_first_then_titles(srv, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = FakeConn([(5, "autovacuum worker"), (8, "parallel worker"), (9, "TimescaleDB Background Worker"),
                     (None, "checkpointer")])
    srv.conns = {"postgres": conn}
    monkeypatch.setattr(srv, "connect", lambda dbname="postgres": conn)
    assert srv.role(5) == "autovacuum_worker"      # the server's word over the title's
    assert srv.role(8) == "parallel_worker"
    assert srv.role(9) == "background_worker"      # an extension's own type
    assert conn.queries == 1
    assert srv.role(6) == "connection"             # not listed (yet): its title; the list is fresh
    assert conn.queries == 1
    monkeypatch.setattr(server, "ACTIVITY_SECONDS", 0.0)
    srv._next_activity = 0.0
    assert srv.role(7) == "checkpointer" and conn.queries == 2  # re-read for an unlisted process


def test_titles_without_a_connection(srv) -> None:
    assert srv.role(5) == "connection" and srv.role(7) == "checkpointer" and srv.role(4) is None


@pytest.mark.parametrize("backend_type, role", [
    ("client backend", "connection"), ("parallel worker", "parallel_worker"), ("walsender", "walsender"),
    ("logical replication launcher", "logical_replication_launcher"), ("background worker", "background_worker"),
    (None, None), ("", None),
])
def test_role_of_backend_type(backend_type, role) -> None:
    assert roles.role_of_backend_type(backend_type) == role

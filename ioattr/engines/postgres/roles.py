"""PostgreSQL's processes and their roles (the PostgreSQL adapter's "roles").

Every PostgreSQL process is called `postgres` (comm), so the comm says nothing; the process
title does: the server rewrites its argv (what /proc/PID/cmdline shows) to
`postgres: [cluster_name: ]<what>`, e.g. `postgres: checkpointer`, `postgres: autovacuum worker
db1`, or for a client backend `postgres: <user> <database> <host> <status>`. The postmaster
keeps the command line it was started with. A just-forked child shows the postmaster's command
line until it sets its title: unknown, not "postmaster" (the caller knows which pid that is).
"""
from __future__ import annotations

import re

from ioattr.collectors.targets import read_proc_text

TITLE_PREFIX = "postgres: "

#: auxiliary processes by the start of their title -> role (longest match first)
AUX_ROLES: tuple[tuple[str, str], ...] = (
    ("checkpointer", "checkpointer"),
    ("background writer", "background_writer"),
    ("walwriter", "walwriter"),
    ("autovacuum launcher", "autovacuum_launcher"),
    ("autovacuum worker", "autovacuum_worker"),
    ("logical replication launcher", "logical_replication_launcher"),
    ("logical replication worker", "logical_replication_worker"),
    ("logical replication parallel apply worker", "logical_replication_worker"),
    ("logical replication tablesync worker", "logical_replication_worker"),
    ("parallel worker", "parallel_worker"),
    ("walsender", "walsender"),
    ("walreceiver", "walreceiver"),
    ("walsummarizer", "walsummarizer"),
    ("archiver", "archiver"),
    ("startup", "startup"),
    ("stats collector", "stats_collector"),
    ("io worker", "io_worker"),
)

#: pg_stat_activity.backend_type -> the role ioattr gives such a process (the ground truth the
#: titles are tested against; background workers of extensions show their own type)
BACKEND_TYPE_ROLES: dict[str, str] = {
    "client backend": "connection",
    "checkpointer": "checkpointer",
    "background writer": "background_writer",
    "walwriter": "walwriter",
    "autovacuum launcher": "autovacuum_launcher",
    "autovacuum worker": "autovacuum_worker",
    "logical replication launcher": "logical_replication_launcher",
    "logical replication worker": "logical_replication_worker",
    "parallel worker": "parallel_worker",
    "walsender": "walsender",
    "walreceiver": "walreceiver",
    "archiver": "archiver",
    "startup": "startup",
    "io worker": "io_worker",  # PostgreSQL 18, io_method=worker
}

def role_of_backend_type(backend_type: str | None) -> str | None:
    """The role of a process pg_stat_activity lists with this backend_type (None: not listed).
    A type PostgreSQL does not define (an extension's background worker names its own) is a
    background_worker."""
    if not backend_type:
        return None
    return BACKEND_TYPE_ROLES.get(backend_type, "background_worker")


# a client backend: "<user> <database> <host>[ <status>]"; host is [local] for a unix socket,
# host(port) for TCP (PostgreSQL always adds the port there)
_CLIENT_RE = re.compile(r"^\S+ \S+ (?:\[local\]|\S+\(\d+\))(?: |$)")


def _aux_role(rest: str) -> str | None:
    for prefix, role in AUX_ROLES:
        if rest == prefix or rest.startswith(prefix + " "):
            return role
    return None


def role_of_title(title: str | None) -> str | None:
    """A process's role from its title (None: not a titled PostgreSQL child process)."""
    if not title:
        return None
    t = title.split("\0", 1)[0].strip()
    if not t.startswith(TITLE_PREFIX):
        return None
    rest = t[len(TITLE_PREFIX):].strip()
    role = _aux_role(rest)
    if role is not None:
        return role
    # with cluster_name set the title is "postgres: <cluster_name>: <what>"
    head, sep, tail = rest.partition(": ")
    if sep and " " not in head:
        role = _aux_role(tail.strip())
        if role is not None:
            return role
        if _CLIENT_RE.match(tail.strip()):
            return "connection"
    if _CLIENT_RE.match(rest):
        return "connection"
    return "background_worker" if rest else None


def process_title(pid: int) -> str | None:
    """/proc/PID/cmdline's first string (the title a PostgreSQL process set), None if gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(4096)
    except OSError:
        return None
    return raw.split(b"\0", 1)[0].decode(errors="replace").strip() or None


def process_role(pid: int) -> str | None:
    """The role of a live PostgreSQL child process from its title (None: unknown yet)."""
    return role_of_title(process_title(pid))


def parent_pid(pid: int) -> int | None:
    """PPid from /proc/PID/status (None if the process is gone)."""
    text = read_proc_text(f"/proc/{pid}/status")
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("PPid:"):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None

"""A connection to the traced server, for names, roles and engine counters.

Credentials never go through argv or into a recording: use an option file
(--mysql-defaults-file), the MYSQL_PWD environment variable, or a unix
socket with socket authentication (as root, on the server's own socket,
which is found from the target process when not given). Failing to connect
is not fatal: file-level attribution goes on and the reason is reported.
"""
from __future__ import annotations

import configparser
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pymysql

from ioattr.collectors.namespaces import in_root, root_of
from ioattr.collectors.targets import socket_inodes
from ioattr import environment


@dataclass
class EngineOptions:
    defaults_file: str | None = None
    socket: str | None = None
    host: str | None = None
    port: int | None = None
    user: str | None = None


INTERNAL_TAG = "/* ioattr-internal */ "


class EngineError(Exception):
    pass


def server_sockets(pid: int) -> list[str]:
    """Unix socket paths the process is listening on (from /proc/net/unix), as reachable from
    here: through /proc/PID/root when the process is in another mount namespace (a container)."""
    inodes = {str(i) for i in socket_inodes(pid)}
    if not inodes:
        return []
    paths = []
    try:
        with open(f"/proc/{pid}/net/unix") as f:
            next(f, None)
            for line in f:
                parts = line.split()
                # Num RefCount Protocol Flags Type St Inode Path; St 01 = listening (unconnected)
                if len(parts) >= 8 and parts[6] in inodes and parts[7].startswith("/") and parts[5] == "01":
                    paths.append(parts[7])
    except OSError:
        pass
    root = root_of(pid)
    return sorted({in_root(root, p) for p in paths})


def _read_defaults_file(path: str) -> dict[str, str]:
    cp = configparser.ConfigParser(allow_no_value=True, strict=False, interpolation=None)
    try:
        with open(path) as f:
            cp.read_string(f.read())
    except (OSError, configparser.Error) as e:
        raise EngineError(f"cannot read option file {path}: {e}") from e
    out: dict[str, str] = {}
    for section in ("client", "mysql", "mariadb", "client-mariadb"):
        if cp.has_section(section):
            out.update({k.replace("-", "_"): v for k, v in cp.items(section) if v is not None})
    return out


# per server pid: statements ioattr sent it over TLS (they count in Questions, not on the wire)
HIDDEN_QUERIES: Counter[int] = Counter()


class EngineConnection:
    def __init__(self, opts: EngineOptions, target_pid: int | None = None) -> None:
        self.opts = opts
        self.target_pid = target_pid
        self.conn: Any = None
        self.flavor = "unknown"  # "mariadb" | "mysql"
        self.version = ""
        self.secure = False

    def connect(self) -> None:
        kw: dict[str, Any] = {"autocommit": True, "connect_timeout": 5, "read_timeout": 30}
        o = self.opts
        if o.defaults_file:
            conf = _read_defaults_file(o.defaults_file)
            for key in ("socket", "host", "user", "password"):
                if key in conf:
                    kw["unix_socket" if key == "socket" else key] = conf[key]
            if "port" in conf:
                kw["port"] = int(conf["port"])
        if o.socket:
            kw["unix_socket"] = o.socket
        if o.host:
            kw["host"] = o.host
        if o.port:
            kw["port"] = o.port
        if o.user:
            kw["user"] = o.user
        if "password" not in kw and environment.is_set("MYSQL_PWD"):
            kw["password"] = environment.get("MYSQL_PWD")
        if "unix_socket" not in kw and "host" not in kw and self.target_pid:
            socks = server_sockets(self.target_pid)
            if socks:
                kw["unix_socket"] = socks[0]
        if "unix_socket" not in kw and "host" not in kw:
            raise EngineError("no server socket found; give --mysql-socket or --mysql-defaults-file")
        kw.setdefault("user", "root")
        if "unix_socket" in kw and "host" not in kw:
            # pymysql takes TLS whenever the server offers it; on a local socket it protects
            # nothing, and in clear the wire reader sees ioattr's own statements like the
            # workload's (collectors/stage_probes.py compares that count with Questions)
            kw.setdefault("ssl_disabled", True)
        try:
            self.conn = pymysql.connect(**kw)
        except pymysql.MySQLError as e:
            where = kw.get("unix_socket") or f"{kw.get('host')}:{kw.get('port', 3306)}"
            # the error text from the server never contains the password
            raise EngineError(f"cannot connect to {where} as {kw['user']}: {e.args[-1]}") from e
        # over TLS (a TCP connection to a server that offers it) our statements are not on the
        # wire in clear: counted in HIDDEN_QUERIES so --statements auto leaves them out of Questions
        self.secure = bool(getattr(self.conn, "_secure", False))
        self.version = str(self.query("SELECT VERSION()")[0][0])
        self.flavor = "mariadb" if "mariadb" in self.version.lower() else "mysql"

    def query(self, sql: str, params: Any = None) -> list[tuple]:
        if self.conn is None:
            raise EngineError("not connected")
        if self.secure and self.target_pid is not None:
            HIDDEN_QUERIES[self.target_pid] += 1
        try:
            with self.conn.cursor() as cur:
                # tagged so the stage probes can tell ioattr's own statements from the workload's
                cur.execute(INTERNAL_TAG + sql, params)
                return list(cur.fetchall())
        except pymysql.MySQLError as e:
            raise EngineError(f"{sql.split()[0]} failed: {e.args[-1]}") from e

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

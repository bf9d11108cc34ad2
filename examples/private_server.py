#!/usr/bin/env python3
"""Run a private, throw-away MariaDB (ioattr.host.sandbox) for as long as stdin stays open.

For shell scripts (examples/sysbench_example.sh): it prints shell assignments

    PID=12345
    SOCKET=/tmp/ioattr-mariadb-xxxx/mysqld.sock
    CLIENT_CNF=/tmp/ioattr-mariadb-xxxx/client.cnf
    BASEDIR=/tmp/ioattr-mariadb-xxxx
    READY=1

then waits. Closing its stdin, SIGTERM or SIGINT shuts the server down (by its
pid) and removes its directory. Keep this process alive while the server is in
use: the server is also stopped if this process dies (PR_SET_PDEATHSIG).

Exit codes: 0 ok, 1 the server could not be started or stopped, 2 bad usage.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent
if (_REPO / "ioattr" / "__init__.py").exists() and str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))


def main() -> int:
    p = argparse.ArgumentParser(prog="private_server", description=__doc__.splitlines()[0])
    p.add_argument("--buffer-pool", default="32M", help="innodb_buffer_pool_size (default 32M)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="extra mariadbd option (repeatable)")
    args = p.parse_args()
    opts = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not key.strip():
            print(f"private_server: error: --option wants KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        opts[key.strip()] = value.strip() if sep else ""
    try:
        from ioattr.host.sandbox import PrivateMariaDB, SandboxError
    except ImportError:
        print("private_server: error: needs the ioattr package (run with the ioattr venv's python)",
              file=sys.stderr)
        return 1

    def _stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, _stop)

    db = PrivateMariaDB(buffer_pool=args.buffer_pool, extra_options=opts)
    try:
        try:
            db.start()
        except (SandboxError, OSError) as e:
            print(f"private_server: error: could not start MariaDB: {str(e).splitlines()[0]}", file=sys.stderr)
            return 1
        print(f"PID={db.pid}\nSOCKET={db.socket}\nCLIENT_CNF={db.client_defaults_file}\n"
              f"BASEDIR={db.basedir}\nREADY=1", flush=True)
        try:
            while sys.stdin.read(4096):
                pass  # anything written to us is ignored; EOF means stop
        except KeyboardInterrupt:
            pass
    except KeyboardInterrupt:
        pass
    finally:
        db.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every environment variable ioattr reads, declared once: its name, what it changes, its default.

The rest of the code reads the environment only through `get()`, at the moment it needs the
value (a test's monkeypatched environment, or a child's, is seen as it is then), and only for
a name declared here, so this table and docs/configuration.md are the whole list. A unit test
(tests/unit/test_environment.py) fails on an `os.environ` read elsewhere and on a variable the
page does not document. Options on the command line come first where both exist.
"""
from __future__ import annotations

import os

# name -> (default, what it does); the default is what get() returns when the variable is unset
VARIABLES: dict[str, tuple[str, str]] = {
    # server credentials: the clients' own variables, never a password in argv
    "MYSQL_PWD": ("", "the MariaDB/MySQL password, when no --mysql-defaults-file gives one"),
    "PGUSER": ("postgres", "the PostgreSQL user ioattr connects as (libpq reads PGPASSWORD and ~/.pgpass itself)"),
    # recordings
    "IOATTR_DUCKDB_MEMORY_LIMIT": ("", "memory limit of DuckDB when reading recordings (a size: 256MB, 2GB; "
                                       "at least 64MB)"),
    "IOATTR_DUCKDB_THREADS": ("", "DuckDB threads when reading recordings (1..256)"),
    "IOATTR_MEMTRACE": ("", "a file: the recorder appends its memory use (RSS, Arrow, the Python lines that grew) "
                            "to it every minute, tracing every allocation (slower: for debugging)"),
    "IOATTR_RUN_DIR": ("/run/ioattr", "where running recorders leave their control files (ioattr mark)"),
    "COLUMNS": ("", "the width tables and progress lines are laid out for (else the terminal's; "
                    "piped: tables 160, progress lines unfolded)"),
    "XDG_DATA_HOME": ("", "the demo keeps its recordings in $XDG_DATA_HOME/ioattr (else ~/.local/share/ioattr)"),
    # probes and the host
    "IOATTR_SYSCALL_HOOK": ("auto", "the syscall programs' hook: tracepoints, raw or auto"),
    "IOATTR_WIRE_HOOK": ("auto", "the wire reader's hook: sock (sock_recv_length), syscall (sys_exit_recvfrom) "
                                 "or auto"),
    "IOATTR_DIRTY_HOOK": ("auto", "the page-dirtying hook: folio, page or auto"),
    "IOATTR_THD_STAGES": ("", "off: read no THD::proc_info (stage inside statements null, or the uprobes of "
                              "--stages full)"),
    "IOATTR_BPF_DIR": ("", "a directory of compiled *.bpf.o to load instead of the package's"),
    "IOATTR_BTF": ("/sys/kernel/btf/vmlinux", "the kernel BTF file (to show a host without BTF)"),
    "IOATTR_TRACEFS": ("/sys/kernel/tracing", "where tracefs is mounted; when set, ioattr does not mount it"),
    "IOATTR_DATADIR_CACHE": ("", "a directory of pristine server datadirs that sandboxes copy instead of "
                                 "installing again (the test suite sets it)"),
    "IOATTR_ENGINES": ("", "more engine adapters, module:Class[,module:Class] (importable EngineAdapter "
                           "subclasses), asked after ioattr's own"),
    "IOATTR_PG18_BINDIR": ("", "PostgreSQL 18's bin/ for private servers and the tests (else .deps/pg18/bin, "
                               "filled by make pg18)"),
}


def get(name: str) -> str:
    """The variable's value, or its declared default when it is unset or empty."""
    default, _ = VARIABLES[name]  # KeyError: declare the variable above (and document it)
    return os.environ.get(name) or default


def is_set(name: str) -> bool:
    """Whether the user set the variable (to anything but the empty string)."""
    VARIABLES[name]
    return bool(os.environ.get(name))

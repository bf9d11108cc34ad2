"""The errors a command turns into one line on stderr and an exit code.

UsageError and HostError exit 2 (bad usage, or a host that cannot run
this); RuntimeFailure exits 1. Anything else is a bug and still gets one
line (with --debug showing the traceback)."""
from __future__ import annotations

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2


class IoattrError(Exception):
    exit_code = EXIT_RUNTIME

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class UsageError(IoattrError):
    exit_code = EXIT_USAGE


class HostError(IoattrError):
    """The host can't do what was asked (not root, no BTF, missing tracepoint...)."""

    exit_code = EXIT_USAGE


class RuntimeFailure(IoattrError):
    exit_code = EXIT_RUNTIME

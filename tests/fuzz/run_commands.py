"""Run several `ioattr` commands in one process and report each one's outcome as JSON.

    python -m tests.fuzz.run_commands '[["report", "REC", ...], ["compact", "REC"], ...]'

For tests/test_fuzz.py, which runs this under an address-space limit: one
interpreter start instead of one per command. Prints a JSON list of
{"argv", "rc", "out", "err", "peak_rss"} (peak_rss: this process's peak so
far, in bytes, so the last one bounds every command).
"""
from __future__ import annotations

import json
import resource
import sys


def main(argv: list[str]) -> int:
    from tests.helpers import cli_in_process

    results = []
    for args in json.loads(argv[0]):
        rc, out, err = cli_in_process(args)
        results.append({"argv": args, "rc": rc, "out": out, "err": err,
                        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024})
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The toy store: a file-backed key-value store with a known layout, driven line by line on stdin
(tests/helpers.Prompted), so a test knows to the byte what it read and wrote.

Layout, in its directory: `data.tdat`, record i (RECORD bytes) at offset i * RECORD; `redo.tlog`,
one LOG_ENTRY-byte entry appended per record written. `toy.stats` holds its counters as JSON
(queries: records read by `read`; records_written), rewritten after each step.

The process names itself `toy-store` (the adapter finds it by that name); the writer and reader
threads name themselves `toy-writer` and `toy-reader` (the adapter's roles).

Commands (one a line; each answers `done`):
  write N     the writer appends N records (pwrite), and one log entry each, then fsyncs both
  read N      the reader reads records 0..N-1 (pread), N queries
  recover N   the reader reads records 0..N-1 (N queries) and then the whole log again
  spin        the reader reads record 0 over and over until `stop` (for `ioattr top`)
  stop        ends a spin
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
import threading

RECORD = 4096
LOG_ENTRY = 512
PR_SET_NAME = 15


def set_name(name: str) -> None:
    """The calling thread's name (comm), as the kernel shows it to ioattr."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, name.encode(), 0, 0, 0)


class Store:
    def __init__(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        os.chdir(directory)
        self.data = os.open("data.tdat", os.O_RDWR | os.O_CREAT, 0o644)
        self.log = os.open("redo.tlog", os.O_RDWR | os.O_CREAT, 0o644)
        self.records = os.fstat(self.data).st_size // RECORD
        self.queries = 0
        self.written = 0
        self.spinning = threading.Event()

    def save_stats(self) -> None:
        with open("toy.stats.new", "w") as f:
            json.dump({"queries": self.queries, "records_written": self.written}, f)
        os.replace("toy.stats.new", "toy.stats")

    def write(self, n: int) -> None:
        set_name("toy-writer")
        for _ in range(n):
            i = self.records
            os.pwrite(self.data, bytes([i % 251]) * RECORD, i * RECORD)
            os.pwrite(self.log, i.to_bytes(8, "little") * (LOG_ENTRY // 8), i * LOG_ENTRY)
            self.records += 1
            self.written += 1
        os.fsync(self.log)
        os.fsync(self.data)

    def read(self, n: int) -> None:
        set_name("toy-reader")
        for i in range(n):
            assert len(os.pread(self.data, RECORD, i * RECORD)) == RECORD
            self.queries += 1

    def recover(self, n: int) -> None:
        self.read(n)
        for i in range(self.records):
            assert len(os.pread(self.log, LOG_ENTRY, i * LOG_ENTRY)) == LOG_ENTRY

    def spin(self) -> None:
        set_name("toy-reader")
        while self.spinning.is_set():
            os.pread(self.data, RECORD, 0)
            self.queries += 1


def main() -> None:
    set_name("toy-store")
    store = Store(sys.argv[1])
    spinner: threading.Thread | None = None
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, *arg = line.split()
        if cmd == "spin":
            store.spinning.set()
            spinner = threading.Thread(target=store.spin)
            spinner.start()
        elif cmd == "stop" and spinner is not None:
            store.spinning.clear()
            spinner.join()
        elif cmd in ("write", "read", "recover"):
            # each step in its own thread, named for its role
            t = threading.Thread(target=getattr(store, cmd), args=(int(arg[0]),))
            t.start()
            t.join()
        store.save_stats()
        print("done", flush=True)


if __name__ == "__main__":
    main()

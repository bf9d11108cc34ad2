"""The terminal under `ioattr top`: keys without Enter, a redrawn screen, a clean exit.

No curses and no extra dependency: termios puts the terminal in cbreak
mode (keys arrive one by one, no echo; Ctrl-C still interrupts), select()
waits for a key or the next refresh, and the screen is the alternate
screen, redrawn in place from the top-left corner. Whatever ends top
(q, Ctrl-C, SIGTERM, SIGHUP, an exception), the terminal is given back as
it was: modes restored, cursor shown, the previous screen content back.
"""
from __future__ import annotations

import os
import select
import shutil
import termios
import tty

ENTER_SCREEN = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"
LEAVE_SCREEN = "\x1b[?25h\x1b[?1049l"

# escape sequences of keys we understand -> a name
ESCAPES = {
    "\x1b[D": "left", "\x1bOD": "left",
    "\x1b[C": "right", "\x1bOC": "right",
    "\x1b[A": "up", "\x1bOA": "up",
    "\x1b[B": "down", "\x1bOB": "down",
}


def parse_keys(data: str) -> list[str]:
    """Split what one read returned into keys (arrow keys arrive as escape sequences)."""
    keys: list[str] = []
    i = 0
    while i < len(data):
        if data[i] == "\x1b":
            for seq, name in ESCAPES.items():
                if data.startswith(seq, i):
                    keys.append(name)
                    i += len(seq)
                    break
            else:
                if data.startswith("\x1b[", i):  # an escape sequence we don't know: skip it
                    j = i + 2
                    while j < len(data) and not data[j].isalpha() and data[j] != "~":
                        j += 1
                    i = j + 1
                else:
                    keys.append("esc")
                    i += 1
            continue
        keys.append(data[i])
        i += 1
    return keys


class Terminal:
    def __init__(self, in_fd: int = 0, out_fd: int = 1) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self._saved: list | None = None

    @staticmethod
    def usable(in_fd: int = 0, out_fd: int = 1) -> bool:
        return os.isatty(in_fd) and os.isatty(out_fd)

    def __enter__(self) -> "Terminal":
        self._saved = termios.tcgetattr(self.in_fd)
        tty.setcbreak(self.in_fd, termios.TCSANOW)
        self.write(ENTER_SCREEN)
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def restore(self) -> None:
        if self._saved is None:
            return
        try:
            self.write(LEAVE_SCREEN)
        except OSError:
            pass  # the terminal is gone (SIGHUP): nothing to give back on screen
        try:
            termios.tcsetattr(self.in_fd, termios.TCSADRAIN, self._saved)
        except termios.error:
            pass
        self._saved = None

    def write(self, text: str) -> None:
        data = text.encode("utf-8", errors="replace")
        while data:
            n = os.write(self.out_fd, data)
            data = data[n:]

    def size(self) -> tuple[int, int]:
        """(columns, lines)."""
        try:
            s = os.get_terminal_size(self.out_fd)
            return s.columns, s.lines
        except OSError:
            s = shutil.get_terminal_size((80, 24))
            return s.columns, s.lines

    def read_keys(self, timeout: float) -> list[str]:
        """Keys pressed within `timeout` seconds (waits at most that long, returns at the first)."""
        try:
            ready, _, _ = select.select([self.in_fd], [], [], max(timeout, 0.0))
        except InterruptedError:
            return []
        if not ready:
            return []
        try:
            data = os.read(self.in_fd, 64)
        except OSError:
            return []
        if not data:
            return ["eof"]
        return parse_keys(data.decode("utf-8", errors="replace"))

    def draw(self, screen: str) -> None:
        """Replace the screen's content: each line cleared to its end, nothing scrolled."""
        lines = screen.split("\n")
        out = "\x1b[H" + "\x1b[K\r\n".join(lines) + "\x1b[K\x1b[J"
        self.write(out)

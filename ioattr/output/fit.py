"""Tables that fit the terminal: every number whole, text folded, columns split when needed.

rich shrinks a table wider than the console by cutting cells with "…", numbers included
("57,479…"). Here the widths are chosen before rich sees the table: number columns get the
width of their widest cell (never wrapped, never cut; their headers wrap at spaces), text
columns (phase, file, run) shrink down to a floor and fold beyond it. When even that does
not fit, the value columns are split over several tables that each repeat the key columns,
so an 80-column terminal shows every number of a 200-column one, just in more lines.
Before splitting, a table drops its box for a lighter layout (two spaces between columns, a
rule under the header), which saves a column per cell border. A word in a text column (an
index name) folds only when wrapping the number headers and dropping the box are not enough.
"""
from __future__ import annotations

import os
import shlex
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from ioattr import environment

NARROWEST = 40


@dataclass(frozen=True)
class Layout:
    """What a table spends around its cells: per column, and once (rich's default box:
    "│ x " per column and the closing "│"; the light layout: two spaces between columns)."""

    per_col: int
    once: int
    boxed: bool


BOXED = Layout(3, 1, True)
LIGHT = Layout(2, -2, False)


def terminal_width(default: int = 160) -> int:
    """The width to lay out for: $COLUMNS or the terminal's, `default` when piped."""
    return max(NARROWEST, shutil.get_terminal_size((default, 24)).columns)


def stderr_width() -> int | None:
    """The width for progress lines on stderr: $COLUMNS, else stderr's terminal; None when
    stderr is a file or a pipe (a log keeps one line per event, for grep)."""
    try:
        cols = int(environment.get("COLUMNS"))
        if cols > 0:
            return max(NARROWEST, cols)
    except ValueError:
        pass
    try:
        return max(NARROWEST, os.get_terminal_size(2).columns)
    except OSError:
        return None


def wrap_words(line: str, width: int | None, indent: int = 4) -> list[str]:
    """A line wrapped at spaces to `width` (None: not wrapped), continuation lines indented;
    never inside a word, so a path longer than the width stands whole on its own line."""
    if not width or len(line) <= width:
        return [line]
    return textwrap.wrap(line, width=width, subsequent_indent=" " * indent, break_long_words=False,
                         break_on_hyphens=False) or [line]


def shell_lines(argv: Sequence[str], width: int | None, prefix: str = "", indent: int = 4) -> list[str]:
    """A command as lines a shell accepts pasted whole: quoted arguments packed up to `width`,
    each line but the last ending in ` \\` (an argument longer than the width stands alone); an
    option stays on the line of its value."""
    words: list[str] = []
    for a in argv:
        q = shlex.quote(a)
        if words and words[-1].startswith("-") and " " not in words[-1] and not a.startswith("-"):
            words[-1] += " " + q
        else:
            words.append(q)
    lines = [prefix + words[0]]
    for w in words[1:]:
        if width and len(lines[-1]) + 1 + len(w) + 2 > width:
            lines[-1] += " \\"
            lines.append(" " * indent + w)
        else:
            lines[-1] += " " + w
    return lines


@dataclass(frozen=True)
class Col:
    """A column: numbers are right-aligned and kept whole; text of up to `floor` characters
    keeps its line, longer text wraps at spaces and a word longer than `floor` (a path) folds."""

    header: str
    number: bool = True
    floor: int = 12


def _longest_word(s: str) -> int:
    return max((len(w) for w in s.split()), default=0)


def _widths(col: Col, cells: Sequence[str]) -> tuple[int, int]:
    """(narrowest, natural) width of a column."""
    widest = max((max((len(line) for line in c.split("\n")), default=0) for c in cells), default=0)
    if col.number:
        return max(widest, _longest_word(col.header)), max(widest, len(col.header))
    # text up to `floor` wide stays on one line (a row's key reads whole: "small setup"); past
    # it, text wraps at spaces and a word longer than the floor (a path) is folded
    return max(min(widest, col.floor), _longest_word(col.header), 1), max(widest, len(col.header))


def _span(widths: Sequence[int], layout: Layout) -> int:
    return sum(widths) + layout.per_col * len(widths) + layout.once


def _chunks(keys: int, mins: Sequence[int], width: int, layout: Layout) -> list[list[int]]:
    """Column indexes per table: the key columns, then as many value columns as fit."""
    chunks: list[list[int]] = []
    current = list(range(keys))
    for i in range(keys, len(mins)):
        if len(current) > keys and _span([mins[j] for j in current + [i]], layout) > width:
            chunks.append(current)
            current = list(range(keys))
        current.append(i)
    chunks.append(current)
    return chunks


def _settle(idx: Sequence[int], mins: Sequence[int], nats: Sequence[int], width: int,
            layout: Layout, words: Sequence[int] = ()) -> list[int]:
    """Natural widths, shrunk (the column with most room first: a long header, a long path)
    until the table fits; a number column never below its widest cell. `words[i]`: the
    narrowest column i takes without folding a word (its longest word; 0 for number
    columns): first every column shrinks down to that (number headers wrap at spaces, text
    wraps between words), and only then does a word fold ("ib.t.ix_registe" / "r")."""
    w = [nats[i] for i in idx]
    excess = _span(w, layout) - width
    for floor in ([max(mins[i], words[i] if words else 0) for i in idx], [mins[i] for i in idx]):
        while excess > 0:
            room = [(w[k] - floor[k], k) for k in range(len(idx)) if w[k] > floor[k]]
            if not room:
                break
            _, k = max(room)
            w[k] -= 1
            excess -= 1
    return w


def fit_tables(title: str | None, cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int,
               keys: int = 1, sections: Sequence[bool] | None = None) -> list[Table]:
    """rich Tables showing rows (cells already formatted, plain text: no markup) within `width` columns.

    `keys` leading columns identify a row and are repeated in every table of a split;
    `sections[i]` draws a line under row i (compare's phase groups)."""
    per_col = [[r[i] for r in rows] for i in range(len(cols))]
    mins, nats = zip(*(_widths(c, cells) for c, cells in zip(cols, per_col))) if cols else ((), ())
    words = [0 if c.number else min(n, max([_longest_word(x) for x in cells] + [_longest_word(c.header)]))
             for c, cells, n in zip(cols, per_col, nats)]
    # the box only where it costs no folded word (a long name keeps its line in the light layout)
    whole = [max(m, w) for m, w in zip(mins, words)]
    layout = (BOXED if _span(whole, BOXED) <= width else LIGHT if _span(whole, LIGHT) <= width
              else BOXED if _span(mins, BOXED) <= width else LIGHT)
    chunks = _chunks(keys, mins, width, layout)
    tables = []
    for n, idx in enumerate(chunks):
        widths = _settle(idx, mins, nats, width, layout, words)
        name = title if n == 0 or title is None else f"{title} (continued)"
        # the title on one line even over a narrow table ("per phase (continued)")
        head = (None if name is None else Text(name, no_wrap=True, overflow="ignore") if len(name) <= width
                else Text(name, overflow="fold"))
        t = (Table(title=head, title_justify="left") if layout.boxed else
             Table(title=head, title_justify="left", box=None, pad_edge=False))
        for i, w in zip(idx, widths):
            c = cols[i]
            if c.number:
                head = "\n".join(textwrap.wrap(c.header, w, break_long_words=False)) or c.header
                t.add_column(Text(head, justify="right"), justify="right", no_wrap=True, width=w)
            else:
                t.add_column(Text(c.header), overflow="fold", width=w)
        if not layout.boxed:  # the rule under the header that the box would have drawn
            t.add_row(*["─" * w for w in widths])
        for r_i, r in enumerate(rows):
            t.add_row(*[Text(r[i]) for i in idx], end_section=bool(sections and sections[r_i]))
        tables.append(t)
    return tables

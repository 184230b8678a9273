"""What every command prints with: exit codes, warnings, text tables, Markdown tables, JSON."""

from __future__ import annotations

import os
import sys
import textwrap
import time
import unicodedata

from ..documents import dump_json_line

__all__ = ["PROG", "OK", "INVALID_RULES", "CHANGED", "USAGE", "BAD_INPUT", "OVER_BUDGET", "warn", "one_line", "table",
           "columns", "wrap",
           "markdown", "count", "share", "ratio", "print_json_line", "Progress"]

PROG = "rules-compact"

OK = 0
INVALID_RULES = 1  # invalid rule files (and, with --fail-on-warning, warnings)
CHANGED = 1  # diff --exit-code: some decision changes
USAGE = BAD_INPUT = 2  # a usage error, or an input that cannot be read (some of a corpus included)
OVER_BUDGET = 3  # apply --fail-over-budget: the result is still over budget


def warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def one_line(text: str) -> str:
    """``text`` without control characters and line breaks (a newline in a file name): each as
    its escape, ``\\n``."""
    if text.isprintable():
        return text
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in text)


def columns() -> int:
    """The width human-readable output fits in: ``COLUMNS`` where set (20 or more), else 80."""
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return 80
    return width if width >= 20 else 80


def wrap(text: str, indent: str = "    ") -> str:
    """``text`` folded at spaces to ``columns()``, each further line indented; a word (a path)
    longer than the width stays whole."""
    width = columns()
    return "\n".join(textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False,
                                   break_on_hyphens=False) if len(line) > width else line
                     for line in text.split("\n"))


def table(rows, right=frozenset()) -> str:
    """Columns padded to their widest cell, separated by two spaces; ``right``: right-aligned
    columns.  Wider than ``columns()``: a header cell takes two lines; the last column (when
    left-aligned) folds onto further lines under itself, or, where it would be too narrow,
    goes under its row (``    note: …``); each cell on one line (``one_line``); a left-aligned first column (the row's name) is
    shortened in the middle (``tests/…/airline.json#1``), down to 16 characters; then the last
    columns go under the row too."""
    rows = [tuple(one_line(c) for c in row) for row in rows]
    header, body, limit = rows[0], rows[1:], columns()
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    heads = [[h] for h in header]
    if _over(widths, limit) > 0:
        for i, h in enumerate(header):
            data = max((len(r[i]) for r in body), default=0)
            if " " in h and len(h) > data:
                heads[i] = _halves(h)
                widths[i] = max(data, *map(len, heads[i]))
    last, kept = len(header) - 1, len(header)  # columns kept in the row: the first ``kept``
    if _over(widths, limit) > 0 and last not in right and last > 0:
        fits = widths[last] - _over(widths, limit)
        if fits < min(24, widths[last]):
            kept = last
        else:
            widths[last] = fits
    if 0 not in right and last > 0:  # the first column names the row (a conversation): shortened
        widths[0] = max(min(16, widths[0]), widths[0] - max(0, _over(widths[:kept], limit)))
    while _over(widths[:kept], limit) > 0 and kept > 2:
        kept -= 1
    head_lines = [tuple(h[j] if j < len(h) else "" for h in heads) for j in range(max(map(len, heads)))]
    lines = []
    for k, row in enumerate(head_lines + body):
        cells = [_shortened(row[0], widths[0]) if len(row[0]) > widths[0] else row[0], *row[1:]]
        if kept <= last:
            lines.append(_line(cells[:kept], widths, right))
            moved = "  ".join(f"{header[i]}: {row[i]}" for i in range(kept, last + 1) if row[i] not in ("", "-"))
            if k >= len(head_lines) and moved:
                lines.append(wrap(f"    {moved}", "      "))
            continue
        for j, part in enumerate(textwrap.wrap(row[last], widths[last], break_long_words=False) or [""]):
            lines.append(_line([("" if j else c) for c in cells[:last]] + [part], widths, right))
    return "\n".join(lines)


def _over(widths: list[int], limit: int) -> int:
    """By how many characters columns of ``widths`` overrun ``limit``."""
    return sum(widths) + 2 * (len(widths) - 1) - limit


def _line(cells, widths, right) -> str:
    return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()


def _halves(text: str) -> list[str]:
    """A header cell as two lines, split at the space nearest its middle."""
    spaces = [i for i, c in enumerate(text) if c == " "]
    at = min(spaces, key=lambda i: abs(len(text) - 2 * i))
    return [text[:at], text[at + 1:]]


def _shortened(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters in the middle, an ellipsis in the cut."""
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def markdown(rows) -> str:
    """A GitHub Markdown table, the first row its header."""
    def cell(text: str) -> str:
        return one_line(text).replace("|", "\\|")
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def count(n: int, noun: str) -> str:
    """``1 conversation``, ``2,000 conversations``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def share(before: int, after: int) -> str:
    """What share of ``before`` is gone: ``57.5%``."""
    return f"{(before - after) / before:.1%}" if before else "-"


def ratio(value: float, base: float) -> str:
    return f"{value / base:.3f}" if base else "-"


def print_json_line(data) -> None:
    """One JSON Lines record on stdout (what ``--json`` prints)."""
    sys.stdout.write(dump_json_line(data))


class Progress:
    """One progress bar on stderr, on a terminal and for more than one file: files done,
    conversations, their rate, and the time left, estimated from the bytes read so far."""

    WIDTH = 30

    def __init__(self, sizes: list[int], stream=None):
        self.stream = stream or sys.stderr
        self.shown = len(sizes) > 1 and self.stream.isatty()
        self.sizes, self.total = sizes, sum(sizes)
        self.files = self.conversations = self.read = 0
        self.start = time.monotonic()
        self.line = ""

    def advance(self, conversations: int) -> None:
        """One more file done, in input order, holding ``conversations``."""
        self.read += self.sizes[self.files]
        self.files += 1
        self.conversations += conversations
        if not self.shown:
            return
        elapsed = time.monotonic() - self.start
        done = self.read / self.total if self.total else self.files / len(self.sizes)
        left = f"{_duration(elapsed * (1 - done) / done)} left" if done else "-"
        filled = int(self.WIDTH * done)
        self.line = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.files:,}/{len(self.sizes):,} files, "
                     f"{self.conversations:,} conversations, {self.conversations / max(elapsed, 1e-9):,.1f}/s, {left}")
        print(f"\r{self.line}", end="", file=self.stream, flush=True)

    def clear(self) -> None:
        """Take the bar off its line (to print a warning), until the next ``advance``."""
        if self.line:
            print(f"\r{' ' * len(self.line)}\r", end="", file=self.stream, flush=True)
            self.line = ""

    def close(self) -> None:
        if self.line:
            print(file=self.stream, flush=True)
            self.line = ""


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"

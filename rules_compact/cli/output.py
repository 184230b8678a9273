"""What every command prints with: exit codes, warnings, text tables, Markdown tables, JSON."""

from __future__ import annotations

import sys
import time
import unicodedata

from ..documents import dump_json_line

__all__ = ["PROG", "OK", "INVALID_RULES", "CHANGED", "USAGE", "BAD_INPUT", "OVER_BUDGET", "warn", "one_line", "table",
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


def table(rows, right=frozenset()) -> str:
    """Columns padded to their widest cell, separated by two spaces; ``right``: right-aligned
    columns; each cell on one line (``one_line``)."""
    rows = [[one_line(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if i in right else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows)


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

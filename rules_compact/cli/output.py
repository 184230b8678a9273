"""What every command prints with: exit codes, warnings, text tables, Markdown tables, JSON."""

from __future__ import annotations

import sys

from ..documents import dump_json_line

__all__ = ["PROG", "OK", "INVALID_RULES", "CHANGED", "USAGE", "BAD_INPUT", "OVER_BUDGET", "warn", "table",
           "markdown", "count", "share", "ratio", "print_json_line", "progress", "progress_done"]

PROG = "rules-compact"

OK = 0
INVALID_RULES = 1  # invalid rule files (and, with --fail-on-warning, warnings)
CHANGED = 1  # diff --exit-code: some decision changes
USAGE = BAD_INPUT = 2  # a usage error, or an input that cannot be read (some of a corpus included)
OVER_BUDGET = 3  # apply --fail-over-budget: the result is still over budget


def warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def table(rows, right=frozenset()) -> str:
    """Columns padded to their widest cell, separated by two spaces; ``right``: right-aligned columns."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if i in right else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows)


def markdown(rows) -> str:
    """A GitHub Markdown table, the first row its header."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")
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


def progress(done: int, name: str) -> None:
    """A progress line on stderr, when it is a terminal: conversations done, the last one's name."""
    if sys.stderr.isatty():
        print(f"\r{done:,} conversations  {name[-50:]:<50}", end="", file=sys.stderr, flush=True)


def progress_done(done: int) -> None:
    if done and sys.stderr.isatty():
        print(file=sys.stderr)

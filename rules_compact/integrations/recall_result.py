"""``recall_result``: the tool through which a framework agent reads back a result that a
``placeholder: {save: true}`` cleared (each integration wraps it as its framework's tool:
``recall_tool(store_or_rules)``)."""

from __future__ import annotations

import re
from typing import Any

from ..engine import resolve_rules
from ..errors import RulesCompactError
from ..language.regexes import RegexError, compile_regex
from ..store import Store, StoreError

__all__ = ["NAME", "DESCRIPTION", "MAX_LINES", "MAX_CHARS", "RecallError", "recall_result", "store_of",
           "tool_function"]

NAME = "recall_result"
MAX_LINES = 200  # lines one call returns at most
MAX_CHARS = 20_000  # characters one call returns at most (a line over it is cut)
DESCRIPTION = (
    "Read back a tool result that was cleared from this conversation to save space. Its placeholder "
    "names the id to pass (a 64-character hex string, or a file path ending in it). By default it returns "
    f"the result from its first line; start_line and end_line (1-based, inclusive) pick a range, and grep "
    f"(a regular expression) returns only the matching lines, with their line numbers. At most {MAX_LINES} "
    f"lines and {MAX_CHARS:,} characters come back per call; the answer says how to get the rest.")
_ID = re.compile(r"[0-9a-f]{64}")


class RecallError(RulesCompactError):
    """A recall the store cannot answer: an unknown or removed id, a bad range or pattern."""


def store_of(source: Any) -> Store:
    """The store of ``source``: a Store itself, or rules (as the integrations take them) whose
    pass saves what it clears; raises RecallError when none has a store."""
    if isinstance(source, Store):
        return source
    rulesets = resolve_rules(source)
    found = next((r.store for r in rulesets if r.store is not None), None)
    if found is None:
        raise RecallError("these rules have no store to recall from: set store: FOLDER in the rule file or "
                          "RULES_COMPACT_STORE=FOLDER, or pass a store")
    return found


ARGS_DOC = """

Args:
    id: The id its placeholder names (64 hex characters), or the file path that ends in it.
    start_line: The first line to return, 1-based (default: the first).
    end_line: The last line to return, inclusive (default: the last).
    grep: A regular expression (RE2 syntax): only the lines that match are returned, numbered.
"""


def tool_function(source: Any, raise_as: type[Exception] | None = None):
    """``recall_result(id, start_line=None, end_line=None, grep=None) -> str`` reading from the
    store of ``source`` (as :func:`store_of` takes it), its docstring the tool's description and
    arguments, for a framework to wrap; a failed recall raises ``raise_as`` with the message, or
    without one is answered ``Error: ...``."""
    store = store_of(source)

    def recall_result_tool(id: str, start_line: int | None = None, end_line: int | None = None,
                           grep: str | None = None) -> str:
        try:
            return recall_result(store, id, start_line, end_line, grep)
        except RecallError as exc:
            if raise_as is not None:
                raise raise_as(str(exc)) from None
            return f"Error: {exc}"

    recall_result_tool.__name__ = recall_result_tool.__qualname__ = NAME
    recall_result_tool.__doc__ = DESCRIPTION + ARGS_DOC
    return recall_result_tool


def recall_result(store: Store, id: str, start_line: int | None = None, end_line: int | None = None,
                  grep: str | None = None) -> str:
    """What the tool answers: the saved content's lines ``start_line``..``end_line`` (or those
    matching ``grep``), at most MAX_LINES lines and MAX_CHARS characters, after a line saying
    which; raises RecallError for an unknown or removed id, a bad range or a bad pattern."""
    found = _ID.search(id) if isinstance(id, str) else None
    if found is None:
        raise RecallError(f"{id!r} is not the id of a saved result: give the 64-character hex id (or the path) "
                          "its placeholder names")
    key = found.group()
    try:
        content = store.load(key)
    except StoreError as exc:
        raise RecallError(f"cannot read result {key}: {exc}") from None
    if content is None:
        raise RecallError(f"no saved result {key}: it is unknown or has been removed from the store; call the "
                          "original tool again if you need it")
    lines = content.splitlines()
    total = len(lines)
    first, last = _bounds(start_line, end_line, total)
    if grep is not None:
        try:
            pattern = compile_regex(grep)
        except RegexError as exc:
            raise RecallError(f"invalid grep pattern {grep!r}: {exc}") from None
        numbered = [(n, lines[n - 1]) for n in range(first, last + 1) if pattern.search(lines[n - 1])]
        head = f"result {key}: {len(numbered)} of lines {first}-{last} (of {total}) match {grep!r}"
        shown, rest = _bounded([f"{n}: {line}" for n, line in numbered])
        more = f"[{rest} more matching lines: narrow grep, or pass start_line={numbered[-rest][0]}]" if rest else ""
    else:
        shown, rest = _bounded(lines[first - 1:last])
        head = f"result {key}: lines {first}-{first + len(shown) - 1} of {total}" if total else f"result {key}: empty"
        more = f"[{rest} more lines: call recall_result with start_line={first + len(shown)}]" if rest else ""
    return "\n".join([f"[{head}]", *shown, *([more] if more else [])])


def _bounds(start_line: Any, end_line: Any, total: int) -> tuple[int, int]:
    for name, value in (("start_line", start_line), ("end_line", end_line)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise RecallError(f"{name} must be a line number, 1 or more, got {value!r}")
    first = start_line or 1
    last = min(end_line or total, total)
    if total and first > total:
        raise RecallError(f"start_line {first} is past the end: the result has {total} lines")
    if end_line is not None and end_line < first:
        raise RecallError(f"end_line {end_line} is before start_line {first}")
    return first, last


def _bounded(lines: list[str]) -> tuple[list[str], int]:
    """The first lines that fit MAX_LINES and MAX_CHARS (a single long line cut), and how many are left."""
    shown, size = [], 0
    for line in lines[:MAX_LINES]:
        if size + len(line) + 1 > MAX_CHARS:
            if not shown:
                shown.append(line[:MAX_CHARS] + f" [... {len(line) - MAX_CHARS:,} more characters]")
            break
        shown.append(line)
        size += len(line) + 1
    return shown, len(lines) - len(shown)

"""Regular expressions run on RE2: linear time, so no pattern in a rule file can hang the engine."""

from __future__ import annotations

import re
from functools import lru_cache

import re2

__all__ = ["RegexError", "compile_regex", "escape", "quoted"]

escape = re2.escape


def quoted(pattern: str) -> str:
    """A pattern quoted as a rule file writes it: ``'(\\d+'``, its backslashes not doubled."""
    if "'" in pattern or not pattern.isprintable():
        return repr(pattern) if "\\" not in pattern or not pattern.isprintable() else f'"{pattern}"'
    return f"'{pattern}'"


class RegexError(ValueError):
    """A pattern RE2 does not accept (syntax error, backreference, lookaround...)."""


class _Pattern:
    """An RE2 pattern that also takes text with lone surrogates (valid in JSON, not in UTF-8)."""

    __slots__ = ("_re", "pattern")

    def __init__(self, compiled):
        self._re = compiled
        self.pattern = compiled.pattern

    def search(self, text: str):
        try:
            return self._re.search(text)
        except UnicodeEncodeError:
            return self._re.search(_clean(text))

    def fullmatch(self, text: str):
        try:
            return self._re.fullmatch(text)
        except UnicodeEncodeError:
            return self._re.fullmatch(_clean(text))

    def sub(self, repl, text: str, count: int = 0) -> str:
        try:
            return self._re.sub(repl, text, count)
        except UnicodeEncodeError:
            return self._re.sub(repl, _clean(text), count)

    def __getattr__(self, name: str):  # match, finditer, split...: RE2's own
        return getattr(self._re, name)


def _clean(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


@lru_cache(maxsize=4096)
def compile_regex(pattern: str, ignore_case: bool = False, dot_all: bool = False):
    """An RE2 pattern with ``search``/``fullmatch``; raises RegexError with RE2's reason."""
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_all
    try:
        return _Pattern(re2.compile(pattern, options))
    except re2.error as exc:
        try:
            re.compile(pattern)
        except re.error as python_error:  # its message says where the syntax breaks
            raise RegexError(str(python_error)) from None
        reason = exc.args[0] if exc.args else "invalid pattern"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise RegexError(f"not supported by RE2, the linear-time engine rules run on: {reason} "
                         "(no backreferences or lookarounds; \\z ends the text)") from None

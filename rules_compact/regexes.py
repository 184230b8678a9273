"""Regular expressions run on RE2: linear time, so no pattern in a rule file can hang the engine."""

from __future__ import annotations

import re
from functools import lru_cache

import re2

__all__ = ["RegexError", "compile_regex", "escape"]

escape = re2.escape


class RegexError(ValueError):
    """A pattern RE2 does not accept (syntax error, backreference, lookaround...)."""


@lru_cache(maxsize=4096)
def compile_regex(pattern: str, ignore_case: bool = False, dot_all: bool = False):
    """An RE2 pattern with ``search``/``fullmatch``; raises RegexError with RE2's reason."""
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_all
    try:
        return re2.compile(pattern, options)
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

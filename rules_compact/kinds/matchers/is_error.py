"""The ``is_error`` matcher: the result is an error (flag or error_when)."""

from __future__ import annotations

from ..base import TURN, History, MatcherKind, bool_matcher


def compile_is_error(value, ctx, path):
    return bool_matcher(KIND, value, lambda facts: facts.errors, {TURN: False}, cost=1)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('is_error', compile_is_error, "The tool result is an error: the format's flag, or the rule file's error_when.",
                   SCHEMA, History.ITEM)

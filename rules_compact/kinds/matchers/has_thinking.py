"""The ``has_thinking`` matcher: the assistant turn holds thinking or reasoning."""

from __future__ import annotations

from ..base import RESULT, History, MatcherKind, bool_matcher


def compile_has_thinking(value, ctx, path):
    return bool_matcher(KIND, value, lambda facts: facts.scan.thinking, {RESULT: False}, cost=0)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('has_thinking', compile_has_thinking, 'The assistant turn holds thinking, redacted_thinking or reasoning content.',
                   SCHEMA, History.ITEM)

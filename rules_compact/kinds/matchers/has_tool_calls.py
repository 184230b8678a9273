"""The ``has_tool_calls`` matcher: the assistant turn calls tools."""

from __future__ import annotations

from ..base import RESULT, History, MatcherKind, bool_matcher


def compile_has_tool_calls(value, ctx, path):
    return bool_matcher(KIND, value, lambda facts: facts.scan.calls, {RESULT: False}, cost=0)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('has_tool_calls', compile_has_tool_calls, 'The assistant turn calls tools.',
                   SCHEMA, History.ITEM)

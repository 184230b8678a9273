"""The ``dangling`` matcher: the assistant turn has a call with no result."""

from __future__ import annotations

from ..base import RESULT, History, MatcherKind, bool_matcher


def compile_dangling(value, ctx, path):
    return bool_matcher(KIND, value, lambda facts: facts.dangling, {RESULT: False}, cost=1)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('dangling', compile_dangling, 'The assistant turn has a call with no result.',
                   SCHEMA, History.ITEM)

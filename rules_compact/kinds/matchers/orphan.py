"""The ``orphan`` matcher: the result answers no known call."""

from __future__ import annotations

from ..base import TURN, History, MatcherKind, bool_matcher


def compile_orphan(value, ctx, path):
    return bool_matcher(KIND, value, lambda facts: facts.orphans, {TURN: False}, cost=1)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('orphan', compile_orphan, 'The tool result answers no call in the conversation.',
                   SCHEMA, History.ITEM)

"""The ``in_span`` matcher: the item is in a span: an assistant turn with tool calls, or one of the results right after it."""

from __future__ import annotations

from ..base import History, Matcher, MatcherKind


def compile_in_span(value, ctx, path):
    def select(items, facts):
        span = facts.scan.span
        return [i for i in items if (span[i] is not None) is value]

    return Matcher(select, KIND, cost=0)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('in_span', compile_in_span, 'The item is in a span: an assistant turn with tool calls, or a result among the tool results right after it.',
                   SCHEMA, History.ITEM)

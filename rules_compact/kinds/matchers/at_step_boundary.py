"""The ``at_step_boundary`` matcher: the item is the last one the rules decide on (the last before the step boundary)."""

from __future__ import annotations

from ..base import History, Matcher, MatcherKind


def compile_at_step_boundary(value, ctx, path):
    def select(items, facts):
        last = len(facts) - 1
        return [i for i in items if (i == last) is value]

    return Matcher(select, KIND, cost=0)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('at_step_boundary', compile_at_step_boundary, 'The item is the last one the rules decide on: the last before the step boundary (or the last item, without a step).',
                   SCHEMA, History.LAST)

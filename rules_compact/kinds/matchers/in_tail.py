"""The ``in_tail`` matcher: the item is at or after the last user turn."""

from __future__ import annotations

from ..base import History, Matcher, MatcherKind


def compile_in_tail(value, ctx, path):
    def select(items, facts):
        user_turns = facts.scan.user_turns
        if not user_turns:
            return items if facts.origin.user_turn_before is value else []
        start, msg = user_turns[-1], facts.scan.msg
        return [i for i in items if (msg[i] >= start) is value]

    return Matcher(select, KIND, cost=1)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('in_tail', compile_in_tail, 'The item is in the protected tail, which starts at the last user turn.',
                   SCHEMA, History.TAIL)

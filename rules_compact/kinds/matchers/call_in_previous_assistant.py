"""The ``call_in_previous_assistant`` matcher: the result's call is in the nearest assistant message before it."""

from __future__ import annotations

from ..base import TURN, History, Matcher, MatcherKind


def compile_call_in_previous_assistant(value, ctx, path):
    def select(items, facts):
        links, prev = facts.links, facts.scan.prev_assistant
        return [i for i in items if (links[i][1] is not None and links[i][1] == prev[i]) is value]

    return Matcher(select, KIND, {TURN: value is False}, cost=1)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('call_in_previous_assistant', compile_call_in_previous_assistant, "The result's call is in the nearest assistant message before it (LangChain only clears such results).",
                   SCHEMA, History.ITEM)

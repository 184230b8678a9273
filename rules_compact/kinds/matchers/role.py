"""The ``role`` matcher: the item's role: tool (a tool result) or assistant (an assistant turn)."""

from __future__ import annotations

from ..base import RESULT, TURN, History, Matcher, MatcherKind


def compile_role(value, ctx, path):
    roles = {value} if isinstance(value, str) else set(value)
    fold = {RESULT: "tool" in roles, TURN: "assistant" in roles}

    def select(items, facts):
        is_turn = facts.scan.is_turn
        return [i for i in items if fold[TURN if is_turn[i] else RESULT]]

    return Matcher(select, KIND, fold, cost=0)

SCHEMA = {'anyOf': [{'enum': ['tool', 'assistant']},
           {'type': 'array', 'items': {'enum': ['tool', 'assistant']}, 'minItems': 1}]}

KIND = MatcherKind('role', compile_role, "The item's role: 'tool' for a tool result (an OpenAI tool message or an Anthropic tool_result block), 'assistant' for an assistant turn.",
                   SCHEMA, History.ITEM)

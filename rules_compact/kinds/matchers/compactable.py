"""The ``compactable`` matcher: the tool's declared compact metadata."""

from __future__ import annotations

from ..base import History, Matcher, MatcherKind


def compile_compactable(value, ctx, path):
    def select(items, facts):
        tools, is_turn, names = facts.ruleset.tools, facts.scan.is_turn, facts.tool_names
        call_names = facts.call_names
        out = []
        for i in items:
            found = call_names[i] if is_turn[i] else (names[i],)
            if any(tools.compactable(n) for n in found) is value:
                out.append(i)
        return out

    return Matcher(select, KIND, cost=2)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('compactable', compile_compactable, "The tool's declared 'compact' metadata (from the tools section or plugins; undeclared tools follow 'undeclared').",
                   SCHEMA, History.ITEM)

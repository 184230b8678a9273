"""The ``declared`` matcher: the tool has metadata (the file's ``tools:`` or a plugin's)."""

from __future__ import annotations

from ..base import History, Matcher, MatcherKind


def compile_declared(value, ctx, path):
    def select(items, facts):
        lookup, is_turn, names = facts.ruleset.tools.lookup, facts.scan.is_turn, facts.tool_names
        call_names = facts.call_names
        out = []
        for i in items:
            found = call_names[i] if is_turn[i] else (names[i],)
            if any(lookup(n) is not None for n in found) is value:
                out.append(i)
        return out

    return Matcher(select, KIND, cost=2)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('declared', compile_declared, "The tool has declared metadata (in the tools section or from a plugin "
                   "the file uses); an assistant turn when any of its calls' tools has. With compactable it tells a "
                   "tool declared compact: true from an undeclared one.",
                   SCHEMA, History.ITEM)

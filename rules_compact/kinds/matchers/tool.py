"""The ``tool`` matcher: tool name: exact, glob or a list; an assistant turn matches if any call does."""

from __future__ import annotations

from fnmatch import fnmatchcase
from itertools import compress

from ..base import History, Matcher, MatcherKind


def compile_tool(value, ctx, path):
    patterns = tuple([value] if isinstance(value, str) else value)
    seen: dict[str, bool] = {}  # tool names are few: match each once

    def hit(name) -> bool:
        if name is None:
            return False
        found = seen.get(name)
        if found is None:
            found = any(fnmatchcase(name, p) for p in patterns)
            if len(seen) < 4096:
                seen[name] = found
        return found

    def select(items, facts):
        is_turn, names = facts.scan.is_turn, facts.tool_names
        if not any(map(is_turn.__getitem__, items)):
            of_items = list(map(names.__getitem__, items))
            matched = {name: hit(name) for name in set(of_items)}  # each name once
            return list(compress(items, map(matched.__getitem__, of_items)))
        matched = {name: hit(name) for name in {names[i] for i in items}}
        call_names = facts.call_names
        return [i for i in items if (any(hit(n) for n in call_names[i]) if is_turn[i] else matched[names[i]])]

    return Matcher(select, KIND, cost=2)

SCHEMA = {'anyOf': [{'type': 'string'}, {'type': 'array', 'items': {'type': 'string'}, 'minItems': 1}]}

KIND = MatcherKind('tool', compile_tool, "Tool name: exact, a glob such as 'Todo*' or 'mcp__*', or a list of them. An assistant turn matches if any of its calls does.",
                   SCHEMA, History.ITEM)

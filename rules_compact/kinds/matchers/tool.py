"""The ``tool`` matcher: tool name: exact, glob or a list; an assistant turn matches if any call does."""

from __future__ import annotations

from fnmatch import fnmatchcase
from itertools import compress

from ..base import RESULT, History, Matcher, MatcherKind


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

    def select_results(items, facts):
        names = facts.tool_names
        of_items = list(map(names.__getitem__, items))
        matched = {name: hit(name) for name in set(of_items)}  # each name once
        return list(compress(items, map(matched.__getitem__, of_items)))

    def select(items, facts):
        is_turn, names = facts.scan.is_turn, facts.tool_names
        if not any(map(is_turn.__getitem__, items)):
            return select_results(items, facts)
        matched = {name: hit(name) for name in {names[i] for i in items}}
        call_names = facts.call_names
        return [i for i in items if (any(hit(n) for n in call_names[i]) if is_turn[i] else matched[names[i]])]

    return ToolMatcher(select, Matcher(select_results, KIND, cost=2))


class ToolMatcher(Matcher):
    """The tool matcher, and itself for tool results alone (which reads no turn's calls)."""

    __slots__ = ("_of_results",)

    def __init__(self, select, of_results: Matcher):
        super().__init__(select, KIND, cost=2)
        self._of_results = of_results

    def specialize(self, item_kind: str) -> Matcher:
        return self._of_results if item_kind == RESULT else self

SCHEMA = {'anyOf': [{'type': 'string'}, {'type': 'array', 'items': {'type': 'string'}, 'minItems': 1}]}

KIND = MatcherKind('tool', compile_tool, "Tool name: exact, a glob such as 'Todo*' or 'mcp__*', or a list of them. An assistant turn matches if any of its calls does.",
                   SCHEMA, History.ITEM)

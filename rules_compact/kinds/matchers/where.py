"""The ``where`` matcher: a JMESPath expression over {item, message, call, args}."""

from __future__ import annotations

import jmespath.exceptions

from ..base import History, Matcher, MatcherKind, nothing


class Failures:
    """The items on which a ``where`` expression raised (a function given null): they count as
    no match, and ``explain`` warns with their count.  ``clear()`` before a conversation."""

    __slots__ = ("expression", "items", "first")

    def __init__(self, expression: str):
        self.expression = expression
        self.items: set[int] = set()  # item indices in the whole history
        self.first = ""  # the first error's message

    def add(self, item: int, error: Exception) -> None:
        if not self.items:
            self.first = str(error).splitlines()[0]
        self.items.add(item)

    def clear(self) -> None:
        self.items.clear()
        self.first = ""


def compile_where(expression, ctx, path):
    compiled = ctx.jmespath(expression, path)
    if compiled is None:
        return nothing
    failures = Failures(expression)

    def select(items, facts):
        root, search = facts.jmespath_root, compiled.search
        out = []
        for i in items:
            try:
                if search(root(i)):
                    out.append(i)
            except jmespath.exceptions.JMESPathError as exc:  # e.g. a function given null: no match
                failures.add(i + facts.origin.items, exc)
        return out

    return Matcher(select, KIND, cost=8, data=failures)


def where_failures(rules) -> list[tuple[str, Failures]]:
    """``(rule name, failures)`` of every ``where`` matcher in ``rules``."""
    return [(rule.name, node.data) for rule in rules for node in rule.matcher.nodes()
            if node.kind is KIND and isinstance(node.data, Failures)]

SCHEMA = {'type': 'string', 'minLength': 1, 'maxLength': 1000}

KIND = MatcherKind('where', compile_where, "A JMESPath expression over {item, message, call, args}; the item matches when the result is truthy. args are the call's JSON-decoded arguments, or null.",
                   SCHEMA, History.ITEM)

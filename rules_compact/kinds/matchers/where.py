"""The ``where`` matcher: a JMESPath expression over {item, message, call, args}."""

from __future__ import annotations

import jmespath.exceptions

from ..base import History, Matcher, MatcherKind, nothing


def compile_where(expression, ctx, path):
    compiled = ctx.jmespath(expression, path)
    if compiled is None:
        return nothing

    def select(items, facts):
        root, search = facts.jmespath_root, compiled.search
        out = []
        for i in items:
            try:
                if search(root(i)):
                    out.append(i)
            except jmespath.exceptions.JMESPathError:  # e.g. a function given null: no match
                pass
        return out

    return Matcher(select, KIND, cost=8)

SCHEMA = {'type': 'string', 'minLength': 1, 'maxLength': 1000}

KIND = MatcherKind('where', compile_where, "A JMESPath expression over {item, message, call, args}; the item matches when the result is truthy. args are the call's JSON-decoded arguments, or null.",
                   SCHEMA, History.ITEM)

"""The ``superseded`` matcher: a later call of the same tool repeats the result's arguments (or one value in them)."""

from __future__ import annotations

from ..base import History, Matcher, MatcherKind


def compile_superseded(value, ctx, path):
    key = ctx.jmespath(value["key"], f"{path}.key") if isinstance(value, dict) and "key" in value else None
    wanted = value if isinstance(value, bool) else True

    def select(items, facts):
        hits = facts.superseded(key)
        return [i for i in items if (i in hits) is wanted]

    return Matcher(select, KIND, cost=4, data=key)

SCHEMA = {'anyOf': [{'type': 'boolean'},
           {'type': 'object',
            'additionalProperties': False,
            'required': ['key'],
            'properties': {'key': {'type': 'string',
                                   'minLength': 1,
                                   'description': "JMESPath into the call's arguments, e.g. 'path' or "
                                                  "'file_path'.",
                                   'maxLength': 1000}}}]}

KIND = MatcherKind('superseded', compile_superseded, "A later call of the same tool repeats this result's call: the same arguments (true), or the same value at a JMESPath into the arguments ({key: path}, e.g. the same file read again).",
                   SCHEMA, History.LATER)

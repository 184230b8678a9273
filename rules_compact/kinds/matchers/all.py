"""The ``all`` matcher: every listed matcher holds."""

from __future__ import annotations

from ..base import All, History, MatcherKind


def compile_all(specs, ctx, path):
    return All([ctx.matcher(spec, f"{path}[{i}]") for i, spec in enumerate(specs)])

SCHEMA = {'type': 'array', 'items': {'$ref': '#/$defs/matcher'}, 'minItems': 1}

KIND = MatcherKind('all', compile_all, 'Every listed matcher holds.',
                   SCHEMA, History.ITEM)

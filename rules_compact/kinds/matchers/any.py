"""The ``any`` matcher: at least one listed matcher holds."""

from __future__ import annotations

from ..base import AnyOf, History, MatcherKind


def compile_any(specs, ctx, path):
    return AnyOf([ctx.matcher(spec, f"{path}[{i}]") for i, spec in enumerate(specs)])

SCHEMA = {'type': 'array', 'items': {'$ref': '#/$defs/matcher'}, 'minItems': 1}

KIND = MatcherKind('any', compile_any, 'At least one listed matcher holds.',
                   SCHEMA, History.ITEM)

"""The ``not`` matcher: the matcher does not hold."""

from __future__ import annotations

from ..base import History, MatcherKind, Not


def compile_not(spec, ctx, path):
    return Not(ctx.matcher(spec, path))

SCHEMA = {'$ref': '#/$defs/matcher'}

KIND = MatcherKind('not', compile_not, 'The matcher does not hold.',
                   SCHEMA, History.ITEM)

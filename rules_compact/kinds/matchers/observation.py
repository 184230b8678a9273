"""The ``observation`` matcher: the tool result is carried in a user message (a text-action
agent's observation)."""

from __future__ import annotations

from ..base import TURN, History, MatcherKind, bool_matcher


def compile_observation(value, ctx, path):
    return bool_matcher(KIND, value, lambda facts: facts.observations, {TURN: False}, cost=1)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('observation', compile_observation,
                   "The tool result is an observation: a text-action agent's tool output carried in a user message "
                   "(marked by the reader: \"observation\": true or the tool's name). Every rule that matches tool "
                   "results matches observations too; this tells them apart.",
                   SCHEMA, History.ITEM)

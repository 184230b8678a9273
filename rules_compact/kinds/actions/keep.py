"""The ``keep`` action: leave the item as it is; stops the rule chain."""

from __future__ import annotations

from ..base import Action, ActionKind


def compile_keep(options, ctx, path) -> Action:
    return Action("keep", run=lambda index, ed: None, kind=KIND)

SCHEMA = {'type': ['null', 'object'], 'additionalProperties': False}

KIND = ActionKind('keep', compile_keep,
                  'Leave the item as it is.',
                  SCHEMA, item_only=True)

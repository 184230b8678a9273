"""The ``clear-inputs`` action: blank the arguments of the tool call(s) to {}."""

from __future__ import annotations

from ..base import Action, ActionKind


def compile_clear_inputs(options, ctx, path) -> Action:
    def clear_inputs(index: int, ed) -> str | None:
        facts = ed.facts
        fmt = facts.fmt
        if not facts.scan.is_turn[index]:
            at = facts.links[index][1]
            if at is None:
                return "orphan result: no call to clear"
            ed.replace(at, fmt.clear_inputs(ed.message(at), frozenset([facts.scan.call_id[index]])))
            return None
        ids = frozenset(facts.call_ids[index])
        for at in sorted({at for at, _, _ in facts.turn_calls(index)}):  # Responses: several items
            ed.replace(at, fmt.clear_inputs(ed.message(at), ids))
        return None

    return Action("clear-inputs", run=clear_inputs, kind=KIND)

SCHEMA = {'type': ['null', 'object'], 'additionalProperties': False}

KIND = ActionKind('clear-inputs', compile_clear_inputs,
                  "Blank the arguments of the item's tool call(s) to {}.",
                  SCHEMA, item_only=False)

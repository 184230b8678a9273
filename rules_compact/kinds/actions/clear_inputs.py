"""The ``clear-inputs`` action: blank the arguments of the tool call(s) to {}, or shorten
their long values only (``longer_than``)."""

from __future__ import annotations

from ...formats.base import SHORTEST_CLEARED
from ..base import Action, ActionKind


def compile_clear_inputs(options, ctx, path) -> Action:
    longer_than = (options or {}).get("longer_than")

    def clear_inputs(index: int, ed) -> str | None:
        facts = ed.facts
        fmt = facts.fmt
        if not facts.scan.is_turn[index]:
            at = facts.links[index][1]
            if at is None:
                return None if facts.observations[index] else "orphan result: no call to clear"
            ed.replace(at, fmt.clear_inputs(ed.message(at), frozenset([facts.scan.call_id[index]]), longer_than))
            return None
        ids = frozenset(facts.call_ids[index])
        for at in sorted({at for at, _, _ in facts.turn_calls(index)}):  # Responses: several items
            ed.replace(at, fmt.clear_inputs(ed.message(at), ids, longer_than))
        return None

    return Action("clear-inputs", run=clear_inputs, kind=KIND)

SCHEMA = {'type': ['null', 'object'], 'additionalProperties': False,
          'properties': {'longer_than': {'type': 'integer', 'minimum': SHORTEST_CLEARED, 'maximum': 1000000,
                                         'description': 'Replace only the string values (at any depth) over this '
                                                        'many characters, each by "[N lines cleared]"; shorter '
                                                        'values, such as a path or a command, stay.'}}}

KIND = ActionKind('clear-inputs', compile_clear_inputs,
                  "Blank the arguments of the item's tool call(s) to {}; with longer_than, replace only their long string values.",
                  SCHEMA, span_only=True)

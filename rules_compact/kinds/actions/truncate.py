"""The ``truncate`` action: keep the first and last characters of a tool result."""

from __future__ import annotations

from ...language.templates import Variables
from ..base import Action, ActionKind, with_defaults, RESULT

def compile_truncate(options, ctx, path) -> Action:
    options = with_defaults(options, SCHEMA)
    head, tail, as_string = options["head"], options["tail"], options["as_string"]
    marker = ctx.template(options["marker"], f"{path}.marker", extra=("omitted",))
    if marker is None:
        return Action("truncate", run=lambda index, ed: None, kind=KIND)

    def shape(text: str) -> bool:
        """Already truncated: head, then a marker, then tail."""
        return len(text) >= head + tail and marker.matches_any(text[head:len(text) - tail])

    ctx.recognise(shape)

    def truncate(index: int, ed) -> str | None:
        facts = ed.facts
        if facts.scan.is_turn[index]:
            return "truncate applies to tool results only"
        current = ed.result_text_at(index)
        if len(current) <= head + tail or shape(current):
            return None
        omitted = len(current) - head - tail
        values = Variables(current, facts.tool_names[index], facts.scan.call_id[index], facts.estimate)
        values["omitted"] = omitted
        new = current[:head] + marker.render(values) + current[len(current) - tail:]
        if len(new) < len(current):
            ed.set_result_text_at(index, new, as_string)
        return None

    return Action("truncate", run=truncate, kind=KIND)

SCHEMA = {'type': 'object',
 'additionalProperties': False,
 'properties': {'head': {'default': 0,
                         'type': 'integer',
                         'minimum': 0,
                         'description': 'Characters kept from the start.'},
                'tail': {'default': 0,
                         'type': 'integer',
                         'minimum': 0,
                         'description': 'Characters kept from the end.'},
                'marker': {'default': '\n[... {omitted} chars omitted ...]\n',
                           'type': 'string',
                           'description': 'Text put between them; variables as for placeholder plus '
                                          '{omitted}.',
                           'maxLength': 2000},
                'as_string': {'default': False,
                              'type': 'boolean',
                              'description': 'Write the result as a plain string even when the content was a '
                                             'list of blocks.'}}}

KIND = ActionKind('truncate', compile_truncate,
                  'Keep the first head and last tail characters of a tool result, with a marker between them.',
                  SCHEMA, item_only=True, items=(RESULT,))

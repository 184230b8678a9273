"""The ``truncate`` action: keep the first and last characters of a tool result."""

from __future__ import annotations

from ...language.templates import RESULT_VARIABLES, Template, Variables
from ...store import StoreError, names_missing
from ..base import Action, ActionKind, with_defaults, RESULT
from .placeholder import saved_fields_need_save, saving_template

MARKER = "\n[... {omitted} chars omitted ...]\n"
SAVED_TO_FILE = ("\n[... {omitted} chars cleared to save space; the full result is saved in {saved}: read that "
                 "file to see all of it ...]\n")
SAVED_AS_ID = ("\n[... {omitted} chars cleared to save space; the full result is saved: call recall_result with "
               "id {saved} to see all of it ...]\n")
GONE = "\n[... part cleared to save space; its saved copy has since been removed from the store ...]\n"


def compile_truncate(options, ctx, path) -> Action:
    given = (options or {}).get("marker")
    options = with_defaults(options, SCHEMA)
    head, tail, as_string = options["head"], options["tail"], options["as_string"]
    store, marker = saving_template(ctx, options["save"], path, given, f"{path}.marker", MARKER,
                                    (SAVED_TO_FILE, SAVED_AS_ID), extra=("omitted",))
    if marker is None:
        return Action("truncate", run=lambda index, ed: None, kind=KIND)
    gone = Template.compile(GONE, RESULT_VARIABLES) if store is not None else None

    def shape(text: str) -> bool:
        """Already truncated: head, then a marker, then tail."""
        if len(text) < head + tail:
            return False
        middle = text[head:len(text) - tail]
        return marker.matches_any(middle) or (gone is not None and gone.matches_any(middle))

    ctx.recognise(shape)

    def truncate(index: int, ed) -> str | None:
        facts = ed.facts
        if facts.scan.is_turn[index]:
            return "truncate applies to tool results only"
        current = ed.result_text_at(index)
        if len(current) <= head + tail:
            return None
        if shape(current):
            middle = current[head:len(current) - tail]
            if store is not None and marker.matches_any(middle) and names_missing(store, middle):
                ed.set_result_text_at(index, current[:head] + GONE + current[len(current) - tail:], as_string)
            return None
        omitted = len(current) - head - tail
        values = Variables(current, facts.tool_names[index], facts.scan.call_id[index], facts.estimate,
                           save=store.save if store is not None else None)
        values["omitted"] = omitted
        try:
            new = current[:head] + marker.render(values) + current[len(current) - tail:]
        except StoreError as exc:
            return f"left as it is: {exc}"
        if len(new) < len(current):
            ed.set_result_text_at(index, new, as_string)
        return None

    return Action("truncate", run=truncate, kind=KIND)

SCHEMA = {'type': 'object',
 'additionalProperties': False,
 **saved_fields_need_save('marker'),
 'properties': {'head': {'default': 0,
                         'type': 'integer',
                         'minimum': 0,
                         'description': 'Characters kept from the start.'},
                'tail': {'default': 0,
                         'type': 'integer',
                         'minimum': 0,
                         'description': 'Characters kept from the end.'},
                'marker': {'default': MARKER,
                           'type': 'string',
                           'description': 'Text put between them; variables as for placeholder plus '
                                          '{omitted}; with save, by default one that says where the full '
                                          'result is saved.',
                           'maxLength': 2000},
                'save': {'default': False,
                         'type': 'boolean',
                         'description': "Save the result's exact content to the store first (as placeholder's "
                                        'save does); the marker gets {saved} and {saved_lines}.'},
                'as_string': {'default': False,
                              'type': 'boolean',
                              'description': 'Write the result as a plain string even when the content was a '
                                             'list of blocks.'}}}

KIND = ActionKind('truncate', compile_truncate,
                  'Keep the first head and last tail characters of a tool result, with a marker between them.',
                  SCHEMA, item_only=True, items=(RESULT,))

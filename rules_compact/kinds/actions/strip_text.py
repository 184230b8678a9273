"""The ``strip-text`` action: remove text and thinking from an assistant turn that calls tools."""

from __future__ import annotations

from ..base import Action, ActionKind
from ..estimators import utf16_len


def compile_strip_text(options, ctx, path) -> Action:
    options = options or {}
    patterns = [ctx.regex(p, f"{path}.keep_patterns[{i}]") for i, p in enumerate(options.get("keep_patterns", []))]
    patterns = [p for p in patterns if p is not None]
    max_chars = options.get("keep_max_chars")
    marker = options.get("marker")
    if marker is not None:
        ctx.recognise(marker.__eq__)
    text_first = options.get("text_first", False)
    keep_thinking = options.get("keep_thinking", False)
    keep_text = options.get("keep_text", False)
    tool_turns_only = options.get("tool_turns_only", True)
    drop_other = options.get("drop_other_blocks", False)
    length = utf16_len if options.get("length") == "utf16" else len

    def keep(text: str) -> bool:
        if keep_text or (max_chars is not None and length(text) <= max_chars):
            return True
        for pattern in patterns:
            if pattern.search(text):
                return True
        return False

    def strip_text(index: int, ed) -> str | None:
        facts = ed.facts
        scan = facts.scan
        if not scan.is_turn[index] or (tool_turns_only and not scan.calls[index]):
            return "strip-text applies to assistant turns" + (" with tool calls" if tool_turns_only else "")
        msg = scan.msg[index]
        latest = msg == scan.last_assistant
        fmt = facts.fmt
        new = fmt.strip_text(ed.message(msg), keep, marker, text_first and not latest,
                             keep_thinking or latest, drop_other)
        if fmt.is_empty(new):
            return "left as it is: stripping would leave an empty message"
        ed.replace(msg, new)
        return "latest assistant turn: thinking kept" if latest else None

    return Action("strip-text", run=strip_text, kind=KIND)

SCHEMA = {'type': ['null', 'object'],
 'additionalProperties': False,
 'description': 'On an assistant turn with tool calls, remove text and thinking/reasoning; tool calls stay.',
 'properties': {'keep_patterns': {'type': 'array',
                                  'items': {'type': 'string'},
                                  'description': 'Regexes: a text block that matches one is kept.'},
                'keep_max_chars': {'type': 'integer',
                                   'minimum': 0,
                                   'description': 'A text block of at most this many characters is kept.'},
                'marker': {'type': 'string',
                           'description': "Text put in place of what was removed, e.g. '[thinking "
                                          "removed]'."},
                'text_first': {'type': 'boolean',
                               'description': 'Put the kept text before the other blocks (tool calls).'},
                'keep_thinking': {'type': 'boolean', 'description': 'Keep thinking/reasoning content.'},
                'keep_text': {'type': 'boolean',
                              'description': 'Keep every text block: only thinking/reasoning is removed.'},
                'tool_turns_only': {'type': 'boolean',
                                    'description': 'Apply only to assistant turns that call tools (default '
                                                   'true); false also strips final answers, never leaving a '
                                                   'message empty.'},
                'drop_other_blocks': {'type': 'boolean',
                                      'description': 'Also drop blocks that are neither text, thinking nor '
                                                     'tool calls (images, for example).'},
                'length': {'enum': ['chars', 'utf16'],
                           'description': 'How keep_max_chars measures: characters (default) or UTF-16 code '
                                          "units, as JavaScript's length does."}}}

KIND = ActionKind('strip-text', compile_strip_text, 'Remove text and thinking from an assistant turn that calls tools.',
                  SCHEMA, item_only=True)

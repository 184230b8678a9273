"""The ``strip-text`` action: remove text and thinking from an assistant turn that calls tools."""

from __future__ import annotations

from ..base import Action, ActionKind, with_defaults, TURN
from ..estimators import utf16_len

#: What strip-text writes when the text it removes is all a message holds and the rule gives no
#: marker (or a blank one): a message is never left empty.
DEFAULT_MARKER = "[text removed]"


def compile_strip_text(options, ctx, path) -> Action:
    options = with_defaults(options, SCHEMA)
    patterns = [ctx.regex(p, f"{path}.keep_patterns[{i}]") for i, p in enumerate(options["keep_patterns"])]
    patterns = [p for p in patterns if p is not None]
    max_chars = options.get("keep_max_chars")
    marker = options.get("marker") or None
    if marker is not None and not marker.strip():
        marker = None  # a blank marker removes without a trace: an empty text block is invalid
    ctx.recognise((marker or DEFAULT_MARKER).__eq__)
    text_first, keep_thinking, keep_text = options["text_first"], options["keep_thinking"], options["keep_text"]
    tool_turns_only, drop_other = options["tool_turns_only"], options["drop_other_blocks"]
    length = utf16_len if options["length"] == "utf16" else len

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
        at = scan.msg[index]
        latest = at == scan.last_assistant
        fmt, msg = facts.fmt, ed.message(at)

        def strip(marker: str | None) -> dict:
            return fmt.strip_text(msg, keep, marker, text_first and not latest, keep_thinking or latest, drop_other)

        new = strip(marker)
        empty = fmt.is_empty(new)
        if marker is None and ((empty and any(fmt.text_blocks(msg)))
                               or (fmt.breakpoints(msg) and not fmt.breakpoints(new))):
            new = strip(DEFAULT_MARKER)  # it removed all the text, or all that could carry a breakpoint
            empty = fmt.is_empty(new)
        if empty:
            return "left as it is: stripping would leave an empty message"
        ed.replace(at, new)
        return "latest assistant turn: thinking kept" if latest else None

    return Action("strip-text", run=strip_text, kind=KIND)

SCHEMA = {'type': ['null', 'object'],
 'additionalProperties': False,
 'properties': {'keep_patterns': {'default': [],
                                  'type': 'array',
                                  'items': {'type': 'string'},
                                  'description': 'Regexes: a text block that matches one is kept.'},
                'keep_max_chars': {'type': 'integer',
                                   'minimum': 0,
                                   'description': 'A text block of at most this many characters is kept.'},
                'marker': {'type': 'string',
                           'description': "Text put in place of what was removed, e.g. '[thinking removed]'. A blank one removes without a trace; when nothing else would be left of the message, the marker (by default '[text removed]') stands in.",
                           'maxLength': 2000},
                'text_first': {'default': False,
                               'type': 'boolean',
                               'description': 'Put the kept text before the other blocks (tool calls).'},
                'keep_thinking': {'default': False,
                                  'type': 'boolean',
                                  'description': 'Keep thinking/reasoning content.'},
                'keep_text': {'default': False,
                              'type': 'boolean',
                              'description': 'Keep every text block: only thinking/reasoning is removed.'},
                'tool_turns_only': {'default': True,
                                    'type': 'boolean',
                                    'description': 'Apply only to assistant turns that call tools (default '
                                                   'true); false also strips final answers (a message is '
                                                   'never left empty).'},
                'drop_other_blocks': {'default': False,
                                      'type': 'boolean',
                                      'description': 'Also drop blocks that are neither text, thinking nor '
                                                     "tool calls (images, for example); a server tool's call "
                                                     'and result blocks stay.'},
                'length': {'default': 'chars',
                           'enum': ['chars', 'utf16'],
                           'description': 'How keep_max_chars measures: characters (default) or UTF-16 code '
                                          "units, as JavaScript's length does."}}}

KIND = ActionKind('strip-text', compile_strip_text,
                  'On an assistant turn with tool calls, remove text and thinking/reasoning; tool calls stay.',
                  SCHEMA, item_only=True, items=(TURN,))

"""The OpenAI Responses API input format (``responses``): a flat list of input items.

Used by the OpenAI Agents SDK (``call_model_input_filter``), by ``client.responses.create(
input=[...])`` and by Codex CLI rollouts.  Items the format understands:

* ``message`` items (``type: message``, or the short form with only ``role`` and ``content``):
  ``content`` is a string or a list of ``input_text`` / ``output_text`` (and other) parts;
* ``function_call`` ``{call_id, name, arguments}``, ``custom_tool_call`` ``{call_id, name,
  input}`` and ``local_shell_call`` ``{call_id, action}`` (tool name ``local_shell``; its
  ``action`` is never blanked): tool calls;
* ``function_call_output`` / ``custom_tool_call_output`` ``{call_id, output}`` and
  ``local_shell_call_output`` ``{id, output}``: tool results; ``output`` is a string or a list of
  ``input_text`` (and image/file) parts (Codex answers a local shell call with a
  ``function_call_output``);
* ``reasoning`` items: **never altered and never decided on**.  They are often encrypted
  (``encrypted_content``), and the API rejects a ``function_call`` whose reasoning item is
  missing or changed, so no action ever receives one.

Every other item (``web_search_call``, ``item_reference``, ``compaction`` ...) passes through
untouched.  Items are never removed, added or reordered.

Assistant turns
---------------
The Responses API has no "assistant message holding its tool calls": one model response is a
run of output items, e.g. ``reasoning, message, function_call, function_call``.  For the rules,
an **assistant turn** is such a run:

* it is a maximal run of consecutive output items (``reasoning``, assistant ``message``, calls
  and other ``*_call`` items); a tool result or an input message ends it;
* inside a run, a ``reasoning`` item that follows a non-reasoning item, or an assistant
  ``message`` that follows a message or a call, starts a new turn (a new model response);
* so a turn holds at most one assistant ``message``, and the calls that follow it.

The turn's item (what ``role: assistant`` matches, what the report's ``message`` index shows)
sits at its assistant ``message`` item, or at its first call when it has no message; a run of
reasoning items alone is no item.  Its calls are every call of the turn (``has_tool_calls``,
``tool``, ``dangling``), its text is the message's text, and ``has_thinking`` is true when
the turn holds a reasoning item.  ``strip-text`` edits the message item only (a text part that
goes becomes the marker; when all of it goes, the marker stands in even if the rule gives none,
``[text removed]``, so a message is never left empty); ``clear-inputs`` on a result blanks
its call's ``arguments`` to ``"{}"`` (``input`` to ``""`` for a custom tool call; a local shell
call's ``action`` stays).  A model response starts at the first item of each turn
(:meth:`ResponsesFormat.response_starts`), so ``replay`` counts a round for a turn made only of
calls or of reasoning too.

Spans, ages and the tail work as in the other formats: a span is a turn with calls plus the
results right after it; a user turn is a ``user`` message with non-empty text.  The format has
no error flag: use ``error_when``.  Token estimates count message text, call names and
arguments, result text, and a reasoning item's summary, content and ``encrypted_content``
(like Anthropic's redacted thinking data).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .base import (Format, KeepText, Scan, breakpoint_of, count_breakpoints, dumps_args, is_shortened, json_kind,
                   shorten_json, shorten_values, with_breakpoint)

__all__ = ["ResponsesFormat", "RESPONSES", "RESPONSES_ITEM_TYPES", "RESPONSES_PARTS", "is_responses_input",
           "check_item_invariants"]

CALL_TYPES = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action"}
RESULT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
CLEARED_INPUT = {"function_call": "{}", "custom_tool_call": ""}  # a local shell call's action is never blanked
LOCAL_SHELL = "local_shell"  # the tool name of a local_shell_call, which has no name
TEXT_PARTS = frozenset({"input_text", "output_text", "text", "refusal", "summary_text", "reasoning_text"})
RESPONSES_ITEM_TYPES = frozenset({"function_call", "function_call_output", "reasoning", "custom_tool_call",
                                  "custom_tool_call_output", "local_shell_call", "local_shell_call_output"})
# (an item of one of these types: Responses input)
RESPONSES_PARTS = frozenset({"input_text", "output_text"})  # content parts only Responses input has
MESSAGE_ROLES = ("user", "assistant", "system", "developer")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dicts(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _type(x: dict) -> str | None:
    """An item's or part's ``type`` when it is a string (a malformed one is no type)."""
    kind = x.get("type")
    return kind if isinstance(kind, str) else None


def _part_text(part: dict) -> str:
    return _str(part.get("text")) or _str(part.get("refusal"))


def content_text(content: Any) -> str:
    """Text of a string, or of a list of ``input_text`` / ``output_text`` / ``text`` parts."""
    if isinstance(content, str):
        return content
    return "".join(_part_text(p) for p in _dicts(content) if _type(p) in TEXT_PARTS)


def _kind(item: Any) -> str:
    """``message`` (any role), ``call``, ``result``, ``reasoning``, ``output`` (other output items)
    or ``other``."""
    if not isinstance(item, dict):
        return "other"
    kind = item.get("type")
    if kind == "message" or (kind is None and "role" in item):
        return "message"
    kind = _type(item)
    if kind in CALL_TYPES:
        return "call"
    if kind in RESULT_TYPES:
        return "result"
    if kind == "reasoning":
        return "reasoning"
    if isinstance(kind, str) and kind.endswith("_call"):
        return "output"  # a hosted tool call (web_search_call, ...): part of the model's output
    return "other"


def _is_assistant(item: Any) -> bool:
    return isinstance(item, dict) and _kind(item) == "message" and item.get("role") == "assistant"


def is_responses_input(messages: list) -> bool:
    """Whether a list looks like Responses input: an item typed ``function_call``,
    ``function_call_output``, ``reasoning`` (or the custom-tool pair), or a message whose
    content holds ``input_text`` / ``output_text`` parts."""
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        if _type(msg) in RESPONSES_ITEM_TYPES:
            return True
        if any(_type(p) in RESPONSES_PARTS for p in _dicts(msg.get("content"))):
            return True
    return False


@dataclass
class _Turn:
    members: list[int] = field(default_factory=list)
    message: int | None = None
    calls: list[int] = field(default_factory=list)
    thinking: bool = False
    other: bool = False  # holds a non-reasoning item

    @property
    def anchor(self) -> int | None:
        if self.message is not None:
            return self.message
        return self.calls[0] if self.calls else None


#: Parts that take no breakpoint: an assistant's output text, a refusal.
_NO_BREAKPOINT = frozenset({"output_text", "refusal"})


class ResponsesFormat(Format):
    """OpenAI Responses API input items (see the module docstring)."""

    name = "responses"
    resumable = False  # a turn's item stands for several input items
    unit = "item"
    own_calls = False  # a turn's calls are items of their own
    openai_max_breakpoints = 3  # prompt_cache_breakpoint: 4 writes a request, one the implicit breakpoint

    @staticmethod
    def shows(msg: dict) -> bool:
        return _type(msg) in RESPONSES_ITEM_TYPES or any(_type(p) in RESPONSES_PARTS for p in _dicts(msg.get("content")))

    def problem(self, msg: Any) -> str | None:
        if not isinstance(msg, dict):
            return f"is {json_kind(msg)}, not an object"
        kind = msg.get("type")
        if kind is not None and not isinstance(kind, str):
            return f"'type' is {json_kind(kind)}, not a string"
        if kind is None and "role" not in msg:
            return "has neither a 'type' nor a 'role'"
        if _kind(msg) == "message":
            role, content = msg.get("role"), msg.get("content")
            if role not in MESSAGE_ROLES:
                return f"unknown role {role!r}; allowed: {', '.join(MESSAGE_ROLES)}"
            if not isinstance(content, (str, list)):
                return f"'content' is {json_kind(content)}, not a string or a list of parts"
        elif _kind(msg) in ("call", "result"):
            ref = "id" if kind == "local_shell_call_output" and "call_id" not in msg else "call_id"
            if not isinstance(msg.get(ref), str):
                return f"{kind} '{ref}' is {json_kind(msg.get(ref))}, not a string"
            key = CALL_TYPES.get(kind, "output")
            value = msg.get(key)
            if key == "action":  # a local shell call's action is an object ({type: exec, command: [...]})
                if not isinstance(value, dict):
                    return f"{kind} 'action' is {json_kind(value)}, not an object"
            elif not (isinstance(value, str) or (key == "output" and isinstance(value, list))):
                return f"{kind} '{key}' is {json_kind(value)}, not a string" + (" or a list" if key == "output" else "")
        return None

    # -- what an item holds ---------------------------------------------------
    def calls(self, msg: Any) -> list[tuple[str, str | None, dict]]:
        if _kind(msg) != "call" or not isinstance(msg.get("call_id"), str):
            return []
        name = LOCAL_SHELL if msg["type"] == "local_shell_call" else msg.get("name")
        return [(msg["call_id"], name if isinstance(name, str) else None, msg)]

    def results(self, msg: Any) -> list[tuple[str | None, None, bool]]:
        if _kind(msg) != "result":
            return []
        call_id = msg.get("call_id", msg.get("id") if msg["type"] == "local_shell_call_output" else None)
        return [(call_id if isinstance(call_id, str) else None, None, False)]

    @staticmethod
    def result_text(msg: Any, block: int | None) -> str:
        return content_text(msg.get("output"))

    def is_user_turn(self, msg: Any) -> bool:
        return (_kind(msg) == "message" and msg.get("role") == "user"
                and bool(content_text(msg.get("content")).strip()))

    def has_thinking(self, msg: Any) -> bool:
        return _kind(msg) == "reasoning"

    def reasoning_text(self, msg: Any) -> str:
        return "".join(self.message_pieces(msg)) if _kind(msg) == "reasoning" else ""

    def assistant_text(self, msg: Any) -> str:
        return content_text(msg.get("content")) if _is_assistant(msg) else ""

    def text_blocks(self, msg: Any) -> list[str]:
        if _kind(msg) != "message":
            return []
        content = msg.get("content")
        if isinstance(content, str):
            return [content]
        return [_part_text(p) for p in _dicts(content) if _type(p) in TEXT_PARTS and _part_text(p)]

    def message_pieces(self, msg: Any) -> Iterable[str]:
        kind = _kind(msg)
        if kind == "message":
            yield content_text(msg.get("content"))
        elif kind == "call":
            yield _str(msg.get("name"))
            yield dumps_args(msg.get(CALL_TYPES[msg["type"]], ""))
        elif kind == "result":
            yield content_text(msg.get("output"))
        elif kind == "reasoning":
            for key in ("summary", "content"):
                for part in _dicts(msg.get(key)):
                    yield _part_text(part)
            yield _str(msg.get("encrypted_content"))

    # -- structure ---------------------------------------------------------------
    def _turns(self, messages: list) -> list[_Turn]:
        turns: list[_Turn] = []
        current: _Turn | None = None
        for i, msg in enumerate(messages):
            kind = _kind(msg)
            assistant = _is_assistant(msg)
            if not (assistant or kind in ("call", "reasoning", "output")):
                current = None
                continue
            if (current is None or (kind == "reasoning" and current.other)
                    or (assistant and (current.message is not None or current.calls))):
                current = _Turn()
                turns.append(current)
            current.members.append(i)
            if kind == "reasoning":
                current.thinking = True
                continue
            current.other = True
            if assistant:
                current.message = i
            elif kind == "call" and self.calls(msg):
                current.calls.append(i)
        return turns

    def response_starts(self, messages: list) -> list[int]:
        """Where each model response starts: the first item (reasoning, message or call) of every turn."""
        return [turn.members[0] for turn in self._turns(messages)]

    def scan(self, messages: list) -> Scan:
        scan = Scan()
        call_at, calls_of = scan.call_at, scan.calls_of
        for i, msg in enumerate(messages):
            calls = self.calls(msg)
            calls_of.append(calls)
            for call_id, name, call in calls:
                call_at.setdefault(call_id, (call, i, name))
        turns = [t for t in self._turns(messages) if t.anchor is not None]
        turn_of = {i: t for t in turns for i in t.members}
        span: int | None = None
        last_turn: _Turn | None = None
        for i, msg in enumerate(messages):
            turn = turn_of.get(i)
            if turn is not None:
                if i != turn.anchor:
                    continue  # reasoning or a later call of the turn: the turn's item stands for it
                last_turn = turn
                calls = [c for index in turn.calls for c in calls_of[index]]
                if calls:
                    scan.span_starts.append(i)
                    span = len(scan.span_starts) - 1
                else:
                    span = None
                scan.add_turn(i, calls, turn.thinking, span)
                continue
            results = self.results(msg)
            if not results:
                span = None
            for call_id, _, error in results:
                call_msg = call_at[call_id][1] if call_id in call_at else None
                prev = last_turn.anchor if last_turn is not None else None
                if last_turn is not None and call_msg is not None and call_msg in last_turn.calls:
                    prev = call_msg  # the call is in the nearest turn before the result
                scan.add_result(i, None, call_id, error, span, prev)
            if self.is_user_turn(msg):
                scan.user_turns.append(i)
        scan.last_assistant = last_turn.anchor if last_turn is not None else None
        return scan

    # -- edits -------------------------------------------------------------------
    def result_content(self, msg: dict, block: int | None) -> Any:
        # What the engine reads a result's text from (with formats.parts_text, which knows only
        # "text" parts): a string output as it is, a list output as one text part of its text.
        output = msg.get("output")
        if isinstance(output, list):
            return [{"type": "text", "text": content_text(output)}]
        return output if isinstance(output, str) else ""

    def set_result_content(self, msg: dict, block: int | None, text: str, as_string: bool = False) -> dict:
        output = msg.get("output")
        new = text if as_string or not isinstance(output, list) or not text.strip() else [
            {"type": "input_text", "text": text}]
        lost = ([m for m in map(breakpoint_of, output) if m] or [None])[-1] if isinstance(output, list) else None
        if lost is not None and text.strip():  # a breakpoint wins over as_string: it needs a part
            new = [{"type": "input_text", "text": text, **lost}]
        return {**msg, "output": new}

    def breakpoints(self, msg: Any) -> int:
        """The ``prompt_cache_breakpoint`` marks on a result's output parts or a message's content parts."""
        if not isinstance(msg, dict):
            return 0
        return count_breakpoints(msg.get("output") if _kind(msg) == "result" else msg.get("content"))

    def mark_cache(self, msg: dict, block: int | None, marker: dict) -> dict:
        """A function call output's last part (a string output becomes one ``input_text`` part), or
        an input message's (an assistant message's output text takes none)."""
        kind = _kind(msg)
        if kind == "result" and msg.get("type") == "function_call_output":
            key = "output"
        elif kind == "message" and msg.get("role") in ("user", "system", "developer"):
            key = "content"
        else:
            return msg
        parts = msg.get(key)
        if isinstance(parts, str):
            parts = [{"type": "input_text", "text": parts}]
        marked = with_breakpoint(parts, marker, _NO_BREAKPOINT) if isinstance(parts, list) else None
        return msg if marked is None else {**msg, key: marked}

    def strip_text(self, msg: dict, keep: KeepText, marker: str | None, text_first: bool,
                   keep_thinking: bool, drop_other: bool = False) -> dict:
        """Strip an assistant ``message`` item's text; any other item (a call, reasoning) is
        returned as it is.  ``text_first`` and ``keep_thinking`` have nothing to act on: the
        message item holds no calls and no reasoning."""
        if not _is_assistant(msg):
            return msg
        content = msg.get("content")
        if isinstance(content, str):
            if content and content != marker and not keep(content):
                return {**msg, "content": marker if marker is not None else ""}
            return msg
        if not isinstance(content, list):
            return msg
        kept, removed = [], False
        for part in content:
            is_text = (isinstance(part, dict) and part.get("type") in ("output_text", "input_text", "text")
                       and isinstance(part.get("text"), str))
            if is_text and part["text"] != marker and not keep(part["text"]):
                removed = True
                continue
            if drop_other and not is_text:
                removed = True
                continue
            kept.append(part)
        if not removed:
            return msg
        if marker is not None and not any(isinstance(p, dict) and p.get("text") == marker for p in kept):
            kept.insert(0, {"type": "output_text", "text": marker, "annotations": []})
        return {**msg, "content": kept}

    def is_empty(self, msg: dict) -> bool:
        if _is_assistant(msg):
            return not content_text(msg.get("content"))
        return False

    def clear_inputs(self, msg: dict, call_ids: frozenset[str], longer_than: int | None = None) -> dict:
        if _kind(msg) != "call" or msg.get("call_id") not in call_ids or msg["type"] not in CLEARED_INPUT:
            return msg
        key = CALL_TYPES[msg["type"]]
        if longer_than is None:
            new = CLEARED_INPUT[msg["type"]]
        elif msg["type"] == "function_call":
            new = shorten_json(msg.get(key), longer_than)
        else:
            new = shorten_values(msg.get(key), longer_than)
        return msg if msg.get(key) == new else {**msg, key: new}


RESPONSES = ResponsesFormat()


# -- the engine's guarantees for this format, for rules_compact.testing.check_invariants -----

def _without(d: dict, keys: Iterable[str]) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


def check_item_invariants(before: Any, after: Any, i: int) -> None:
    """Assert what compaction may change in one Responses item: a result's ``output``, an
    assistant message's ``content`` (never emptied), a call's arguments (to the blank value,
    or their long string values shortened); reasoning and every other item and field stay identical."""
    if not isinstance(before, dict) or before is after:
        assert before == after, f"item {i} changed"
        return
    kind = _kind(before)
    assert _kind(after) == kind, f"item {i}: its type changed"
    if kind == "result":
        assert _without(before, {"output"}) == _without(after, {"output"}), f"item {i}: a result's fields changed"
        assert isinstance(after.get("output"), (str, list)), f"item {i}: output is neither a string nor a list"
    elif kind == "call":
        key = CALL_TYPES[before["type"]]
        assert _without(before, {key}) == _without(after, {key}), f"item {i}: a call's name or ids changed"
        was, now = before.get(key), after.get(key)
        assert now == CLEARED_INPUT.get(before["type"], was) or is_shortened(was, now), \
            f"item {i}: a call's arguments changed to something other than the blank value or their long values shortened"
    elif _is_assistant(before):
        assert _without(before, {"content"}) == _without(after, {"content"}), f"item {i}: a message's fields changed"
        assert content_text(after.get("content")), f"item {i}: an assistant message was emptied"
    else:
        assert before == after, f"item {i} ({kind}) changed: only results, calls and assistant messages may"

"""OpenAI Chat Completions: ``tool_calls`` on assistant messages, ``role: tool`` results."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..lazy import lazy
from .base import (THINKING_BLOCKS, Call, Format, Scan, is_blank, observed_tool, blocks_problem, _dicts, id_problem,
                   keep_breakpoint, breakpoint_of, role_problem, _str, count_breakpoints, deep_copy, dumps_args, shorten_json, json_kind,
                   parts_text, replace_content, shallow_parts,
                   thinking_text, with_breakpoint)

__all__ = ["OpenAIFormat", "OpenAIScan", "REASONING_FIELDS", "OPENAI_CACHE_CONTROL"]

REASONING_FIELDS = ("reasoning_content", "reasoning")
OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_ROLE_SET = frozenset(OPENAI_ROLES)
_OTHER_ROLES = _ROLE_SET - {"tool", "assistant"}
#: Content parts of OpenAI messages that carry no breakpoint: thinking, the tool_use blocks of
#: LangChain's Anthropic messages, which ChatAnthropic rebuilds from ``tool_calls`` without it,
#: and refusal parts (OpenAI's refusal part has no ``prompt_cache_breakpoint``).
OPENAI_NO_BREAKPOINT = THINKING_BLOCKS | {"tool_use", "refusal"}
_NO: tuple = ()


def _calls(tool_calls: Any) -> tuple[Call, ...]:
    if not tool_calls or not isinstance(tool_calls, list):
        return _NO
    out = []
    for call in tool_calls:
        found = _call(call)
        if found is not None:
            out.append(found)
    return tuple(out)


def _call(call: Any) -> Call | None:
    """``(id, name, call)`` of one entry of ``tool_calls``; None when it has no string id."""
    if not isinstance(call, dict):
        return None
    try:  # the usual shape: {"id": str, "function": {"name": str, ...}}
        call_id, name = call["id"], call["function"]["name"]
    except (KeyError, TypeError):
        call_id, fn = call.get("id"), call.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(call_id, str):
        return None
    return call_id, name if isinstance(name, str) else None, call


def _observation(msg: Any) -> str | bool:
    """A user message's observation marker (``observed_tool``); False for every other message."""
    return observed_tool(msg) if isinstance(msg, dict) and msg.get("role") == "user" else False


def _has_calls(tool_calls: Any) -> bool:
    """Whether ``_calls(tool_calls)`` finds a call (without building them)."""
    if not tool_calls or not isinstance(tool_calls, list):
        return False
    return any(isinstance(call, dict) and isinstance(call.get("id"), str) for call in tool_calls)


class OpenAIScan(Scan):
    """The generic scan's columns for Chat Completions messages (every item is a whole
    message: a ``tool`` message or an ``assistant`` one).  One walk fills the items, their call
    ids and error flags, ``call_at``, and ``doubtful``: the messages whose shape this walk could
    not vouch for, which :meth:`OpenAIFormat.check` hands to ``problem``.  The other columns
    are computed when first read."""

    def __init__(self, messages: list, fmt: OpenAIFormat):
        self._messages, self._fmt = messages, fmt
        self._roles = roles = []
        self.msg = msg = []
        self.results = results = []
        self.turns = turns = []
        self.call_id = call_ids = []
        self.error_flag = errors = []
        self.call_at = at = {}
        self.doubtful = doubtful = []  # message indices
        observations = {}  # item -> what its observation marker says
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                roles.append(None)
                doubtful.append(i)
                continue
            role = m.get("role")
            roles.append(role)
            content = m.get("content")
            plain = m.__class__ is dict and (content is None or content.__class__ is str)  # else problem decides
            if role == "tool":
                results.append(len(msg))
                msg.append(i)
                cid = m.get("tool_call_id")
                call_ids.append(cid if cid.__class__ is str else None)
                errors.append(m.get("is_error") is True)
                plain = plain and "tool_calls" not in m and (cid is None or cid.__class__ is str)
            elif role == "assistant":
                turns.append(len(msg))
                msg.append(i)
                call_ids.append(None)
                errors.append(False)
                tool_calls = m.get("tool_calls")
                odd = tool_calls is not None
                if tool_calls.__class__ is list:
                    for call in tool_calls:
                        try:  # the usual shape
                            cid, fn = call["id"], call["function"]
                            name, arguments = fn["name"], fn["arguments"]
                        except (KeyError, TypeError):
                            break
                        if call.__class__ is not dict or fn.__class__ is not dict or name.__class__ is not str \
                                or arguments.__class__ is not str or (cid is not None and cid.__class__ is not str):
                            break
                        if cid.__class__ is str and cid not in at:
                            at[cid] = (call, i, name)
                    else:
                        odd = False
                if odd:  # the calls as _calls reads them
                    plain = False
                    for cid, name, call in _calls(tool_calls):
                        if cid not in at:
                            at[cid] = (call, i, name)
            else:
                plain = plain and role.__class__ is str and role in _OTHER_ROLES and "tool_calls" not in m
                if role == "user" and (observed := observed_tool(m)) is not False:
                    observations[len(msg)] = observed
                    results.append(len(msg))
                    msg.append(i)
                    call_ids.append(None)
                    errors.append(False)
            if not plain:
                doubtful.append(i)
        self._observations = observations
        self.is_turn = is_turn = [False] * len(msg)
        for k in turns:
            is_turn[k] = True

    @lazy
    def block(self) -> list:
        return [None] * len(self.msg)

    @lazy
    def observed(self) -> list:
        observed = [False] * len(self.msg)
        for item, value in self._observations.items():
            observed[item] = value
        return observed

    @lazy
    def calls_of(self) -> list:
        return [_calls(m.get("tool_calls")) if role == "assistant" else _NO
                for m, role in zip(self._messages, self._roles)]

    @lazy
    def calls(self) -> list:
        calls_of = self.calls_of
        return [calls_of[m] if turn else _NO for m, turn in zip(self.msg, self.is_turn)]  # tuples, shared

    @lazy
    def thinking(self) -> list[bool]:
        messages, has = self._messages, self._fmt.has_thinking
        return [turn and has(messages[m]) for m, turn in zip(self.msg, self.is_turn)]

    @lazy
    def _spans(self) -> tuple[list, list, list]:
        spans, starts, prev = [], [], []
        roles, messages = self._roles, self._messages
        calls_of = self.__dict__.get("calls_of")
        span = last = None
        for i, role in enumerate(roles):
            if role == "assistant":
                last = i
                if calls_of[i] if calls_of is not None else _has_calls(messages[i].get("tool_calls")):
                    starts.append(i)
                    span = len(starts) - 1
                else:
                    span = None
                spans.append(span)
                prev.append(None)
            elif role == "tool":
                spans.append(span)
                prev.append(last)
            else:
                span = None
                if role == "user" and observed_tool(messages[i]) is not False:  # an observation: outside any span
                    spans.append(None)
                    prev.append(last)
        return spans, starts, prev

    @property
    def span(self) -> list:
        return self._spans[0]

    @property
    def span_starts(self) -> list[int]:
        return self._spans[1]

    @property
    def prev_assistant(self) -> list:
        return self._spans[2]

    def span_start(self, item: int) -> int:
        if "_spans" in self.__dict__:
            return super().span_start(item)
        at = self.msg[item]  # without the span columns: walk back over the results before it
        i, roles = at, self._roles
        if not self.is_turn[item]:
            if roles[at] != "tool":  # an observation: outside any span
                return at
            i -= 1
            while i >= 0 and roles[i] == "tool":
                i -= 1
            if i < 0 or roles[i] != "assistant":
                return at
        calls_of = self.__dict__.get("calls_of")
        found = calls_of[i] if calls_of is not None else _has_calls(self._messages[i].get("tool_calls"))
        return i if found else at

    @lazy
    def user_turns(self) -> list[int]:
        messages, is_turn = self._messages, self._fmt.is_user_turn
        return [i for i, role in enumerate(self._roles) if role == "user" and is_turn(messages[i])]

    @lazy
    def last_assistant(self) -> int | None:
        turns = self.turns
        return self.msg[turns[-1]] if turns else None

    def __len__(self) -> int:
        return len(self.msg)


class OpenAIFormat(Format):
    """OpenAI Chat Completions: ``tool_calls`` on assistant messages, ``role: tool`` results."""

    name = "openai"
    openai_max_breakpoints = 3  # OpenAI's prompt_cache_breakpoint: 4 writes a request, one the implicit breakpoint

    def scan(self, messages: list) -> Scan:
        return OpenAIScan(messages, self)

    @staticmethod
    def shows(msg: dict) -> bool:
        return msg.get("role") == "tool" or "tool_calls" in msg or "tool_call_id" in msg

    @staticmethod
    def calls(msg: Any) -> list[Call]:
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            return []
        return _calls(msg.get("tool_calls"))

    @staticmethod
    def results(msg: Any) -> list[tuple[str | None, None, bool]]:
        if _observation(msg) is not False:
            return [(None, None, False)]
        if not isinstance(msg, dict) or msg.get("role") != "tool":
            return []
        call_id = msg.get("tool_call_id")
        return [(call_id if isinstance(call_id, str) else None, None, msg.get("is_error") is True)]

    @staticmethod
    def result_text(msg: Any, block: int | None) -> str:
        return parts_text(msg.get("content"))

    def item_texts(self, messages: list, scan: Scan, items) -> list[str]:
        msg = scan.msg  # a result's text and an assistant turn's are both its content's
        out = []
        for i in items:
            content = messages[msg[i]].get("content")
            out.append(content if content.__class__ is str else parts_text(content))
        return out

    @staticmethod
    def result_count(msg: Any) -> int:
        return 1 if isinstance(msg, dict) and msg.get("role") == "tool" or _observation(msg) is not False else 0

    observation = staticmethod(_observation)

    @staticmethod
    def is_user_turn(msg: Any) -> bool:
        """A user message with text that is not an observation (a text-action agent's tool output)."""
        return isinstance(msg, dict) and msg.get("role") == "user" and bool(parts_text(msg.get("content")).strip()) \
            and _observation(msg) is False

    def has_thinking(self, msg: Any) -> bool:
        return isinstance(msg, dict) and (any(_str(msg.get(f)) for f in REASONING_FIELDS) or any(
            b.get("type") in THINKING_BLOCKS for b in _dicts(msg.get("content"))))

    def reasoning_text(self, msg: Any) -> str:
        return "".join(_str(msg.get(f)) for f in REASONING_FIELDS) if isinstance(msg, dict) else ""

    def message_pieces(self, msg: Any) -> list[str]:
        if not isinstance(msg, dict):
            return []
        pieces = [parts_text(msg.get("content"))]
        pieces += [thinking_text(b) for b in _dicts(msg.get("content")) if b.get("type") in THINKING_BLOCKS]
        pieces += [_str(msg.get(field)) for field in REASONING_FIELDS]
        if msg.get("tool_calls"):
            for _, name, call in self.calls(msg):
                fn = call.get("function")
                pieces += (name or "", dumps_args(fn.get("arguments", "") if isinstance(fn, dict) else ""))
        return pieces

    def result_content(self, msg: dict, block: int | None) -> Any:
        return msg.get("content")

    def set_result_content(self, msg: dict, block: int | None, text: str, as_string: bool = False) -> dict:
        content = msg.get("content")
        if not isinstance(content, list):  # replace_content's answer for a string: the text, no marker
            return {**msg, "content": text}
        content, lost = replace_content(content, text, as_string)
        if lost is not None:  # a breakpoint wins over as_string: it needs a part
            if is_blank(text):  # no part may carry it (an empty text part is invalid): left as it is
                return msg
            content = [{"type": "text", "text": text, **lost}]
        return {**msg, "content": content}

    def strip_text(self, msg, keep, marker, text_first, keep_thinking, drop_other=False):
        new = dict(msg)
        if not keep_thinking:
            for field in REASONING_FIELDS:
                new.pop(field, None)
        content = msg.get("content")
        if isinstance(content, str):
            if content and content != marker and not keep(content):
                new["content"] = marker
        elif isinstance(content, list):
            kept, removed, lost = [], False, None
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                is_text = kind == "text" and isinstance(part.get("text"), str)
                if (is_text and part["text"] != marker and not keep(part["text"])) or (
                        kind in THINKING_BLOCKS and not keep_thinking):
                    removed, lost = True, breakpoint_of(part) or lost
                    continue
                kept.append(part)
            if removed and marker is not None and not any(
                    isinstance(p, dict) and p.get("text") == marker for p in kept):
                kept.insert(_leading_thinking(kept), {"type": "text", "text": marker})
            if removed:
                new["content"] = keep_breakpoint(kept, lost, OPENAI_NO_BREAKPOINT) or None
        return new if new != msg else msg

    def is_empty(self, msg: dict) -> bool:
        return not self.calls(msg) and is_blank(parts_text(msg.get("content")))

    def snapshot(self, msg: Any) -> Any:
        """Its keys, its content parts and its calls (a call's function too)."""
        if not isinstance(msg, dict):
            return deep_copy(msg)
        copy = dict(msg)
        content = msg.get("content")
        if isinstance(content, list):
            copy["content"] = shallow_parts(content)
        calls = msg.get("tool_calls")
        if isinstance(calls, list):
            copy["tool_calls"] = [{**c, "function": dict(c["function"])} if isinstance(c, dict)
                                  and isinstance(c.get("function"), dict) else deep_copy(c) for c in calls]
        return copy

    def clear_inputs(self, msg, call_ids, longer_than=None):
        calls = msg.get("tool_calls")
        if not isinstance(calls, list):
            return msg
        new_calls, changed = [], False
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and call.get("id") in call_ids:
                old = fn.get("arguments")
                new = "{}" if longer_than is None else shorten_json(old, longer_than)
                if new != old:
                    call = {**call, "function": {**fn, "arguments": new}}
                    changed = True
            new_calls.append(call)
        return {**msg, "tool_calls": new_calls} if changed else msg

    def breakpoints(self, msg: Any) -> int:
        return count_breakpoints(msg.get("content")) if isinstance(msg, dict) else 0

    def mark_cache(self, msg: dict, block: int | None, marker: dict) -> dict:
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        marked = with_breakpoint(content, marker, OPENAI_NO_BREAKPOINT) if isinstance(content, list) else None
        return msg if marked is None else {**msg, "content": marked}

    def check(self, messages: list, start: int = 0) -> None:
        """As :meth:`Format.check`: the scan's walk vouches for most messages, and ``problem``
        decides on the others (a few messages, such as a Compactor's new ones, go straight to it)."""
        if len(messages) - start <= FEW_MESSAGES:
            super().check(messages, start)
        else:
            self._checked(OpenAIScan(messages[start:] if start else messages, self), start)

    def checked_scan(self, messages: list) -> Scan:
        return self._checked(OpenAIScan(messages, self))

    def _checked(self, scan: OpenAIScan, offset: int = 0) -> OpenAIScan:
        for i in scan.doubtful:
            problem = self.problem(scan._messages[i])
            if problem is not None:
                raise InputError(f"{self.unit} {i + offset}: {problem}")
        return scan

    def problem(self, msg: Any) -> str | None:
        problem = role_problem(msg, OPENAI_ROLES)
        if problem is not None:
            return problem
        content = msg.get("content")
        if content is not None and not isinstance(content, (str, list)):
            return f"'content' is {json_kind(content)}, not a string, a list of parts or null"
        if isinstance(content, list) and (problem := blocks_problem(content, "content part")):
            return problem
        if problem := id_problem(msg.get("tool_call_id"), "'tool_call_id'"):
            return problem
        calls = msg.get("tool_calls")
        if calls is None:
            return None
        if not isinstance(calls, list):
            return f"'tool_calls' is {json_kind(calls)}, not a list"
        for j, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                return f"tool call {j} is {json_kind(call)}, not an object" if not isinstance(call, dict) \
                    else f"tool call {j}: 'function' is {json_kind(fn)}, not an object"
            for key, what in (("name", "a string"), ("arguments", "a JSON string")):
                if key in fn and not isinstance(fn[key], str):
                    return f"tool call {j}: 'function.{key}' is {json_kind(fn[key])}, not {what}"
            if problem := id_problem(call.get("id"), f"tool call {j}: 'id'"):
                return problem
        return None


FEW_MESSAGES = 8


class CacheControlOpenAIFormat(OpenAIFormat):
    """OpenAI messages bound for a provider that reads Anthropic ``cache_control`` on content
    parts, as LangChain's ChatAnthropic does (it hoists a tool message's onto its tool_result
    block): ``cache-breakpoint`` marks the item's last content part, within Anthropic's limit.
    Not a format of its own (reports say ``openai``): the LangChain integration uses it for
    Anthropic models."""

    max_breakpoints = 4
    openai_max_breakpoints = 0  # bound for Anthropic: no OpenAI marks


OPENAI_CACHE_CONTROL = CacheControlOpenAIFormat()


def _leading_thinking(parts: list) -> int:
    """How many reasoning parts ``parts`` starts with (a marker goes after them: Anthropic
    rejects a turn whose thinking does not come first)."""
    count = 0
    while count < len(parts) and isinstance(parts[count], dict) and parts[count].get("type") in THINKING_BLOCKS:
        count += 1
    return count

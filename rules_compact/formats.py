"""Message formats: how items are found in a message list, and copy-on-write edits.

Two formats are built in: OpenAI Chat Completions (``openai``) and Anthropic
Messages (``anthropic``).  A format never mutates a message: every edit returns a
new message dict that shares the untouched parts of the old one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple

from .errors import InputError, kind_of
from .jsontext import dumps_data

__all__ = ["Item", "Scan", "Format", "FORMATS", "detect_format", "count_breakpoints"]

ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
OPENAI_REASONING_FIELDS = ("reasoning_content", "reasoning")
#: Content blocks that hold reasoning: Anthropic's thinking blocks, and LangChain v1's reasoning
#: blocks (in an ``AIMessage.content`` list, which the OpenAI format also reads).
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking", "reasoning"})
OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: Content parts of OpenAI messages that carry no breakpoint: thinking, and the tool_use blocks of
#: LangChain's Anthropic messages, which ChatAnthropic rebuilds from ``tool_calls`` without it.
OPENAI_NO_BREAKPOINT = THINKING_BLOCKS | {"tool_use"}
ANTHROPIC_ROLES = ("user", "assistant", "system")  # system: a mid-conversation system entry


class Item(NamedTuple):
    """One thing a rule decides on: a tool result or an assistant turn."""

    index: int
    kind: str  # "tool_result" | "assistant"
    msg_index: int
    block_index: int | None  # Anthropic tool_result block; None for whole messages
    tool_name: str | None  # the called tool, for a result; None when orphan
    tool_call_id: str | None
    call: dict | None  # the raw call a result answers
    call_msg_index: int | None
    call_names: tuple[str, ...]  # assistant: names of its calls
    call_ids: tuple[str, ...]  # assistant: ids of its calls
    text: str  # visible text: result content, or assistant text
    is_error: bool  # the format's own error flag
    orphan: bool
    dangling: bool  # assistant: a call of it has no result
    span: int | None
    prev_assistant: int | None = None  # result: the nearest assistant message before it
    has_thinking: bool = False  # assistant: holds thinking or reasoning content

    @property
    def role(self) -> str:
        return "tool" if self.kind == "tool_result" else "assistant"


@dataclass(frozen=True, slots=True)
class Scan:
    """Everything the engine needs to know about a message list's structure."""

    items: tuple[Item, ...]
    user_turns: tuple[int, ...]  # message indices of user turns
    span_starts: tuple[int, ...]  # message index where each span starts
    last_assistant: int | None
    calls: tuple[list, ...] = ()  # per message: Format.calls of it


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dicts(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def thinking_text(block: dict) -> str:
    """What the model reads in a thinking block: its thinking, redacted data or reasoning."""
    kind = block.get("type")
    return _str(block.get("data" if kind == "redacted_thinking" else kind))


def json_kind(value: Any) -> str:
    """A JSON value's type as an error names it: 'an object', 'a list', 'a string', 'null'..."""
    return "an object" if isinstance(value, dict) else kind_of(value)


def _blank(text: Any) -> bool:
    return not isinstance(text, str) or not text.strip()


def count_breakpoints(value: Any) -> int:
    """The cache breakpoints in a system prompt, a tool list or a list of blocks: the entries
    that carry a ``cache_control`` (a string system prompt carries none)."""
    if isinstance(value, dict):
        return 1 if value.get("cache_control") else 0
    return sum(1 for v in value if isinstance(v, dict) and v.get("cache_control")) if isinstance(value, list) else 0


def with_breakpoint(blocks: list, cache_control: dict, skip: frozenset = THINKING_BLOCKS) -> list | None:
    """``blocks`` with ``cache_control`` on the last block that may carry a breakpoint (none of
    the ``skip`` types, thinking by default, nor an empty text block); None when there is none,
    or it already has one."""
    at = next((j for j in range(len(blocks) - 1, -1, -1) if isinstance(blocks[j], dict)
               and blocks[j].get("type") not in skip
               and not (blocks[j].get("type") == "text" and _blank(blocks[j].get("text")))), None)
    if at is None or blocks[at].get("cache_control"):
        return None
    out = list(blocks)
    out[at] = {**blocks[at], "cache_control": cache_control}
    return out


def parts_text(content: Any) -> str:
    """Text of a string or of a list of text parts/blocks, concatenated."""
    if isinstance(content, str):
        return content
    texts = [p.get("text") or p.get("refusal") for p in _dicts(content) if p.get("type") in ("text", "refusal")]
    return "".join(t for t in texts if isinstance(t, str))


def replace_content(content: Any, text: str, as_string: bool = False) -> tuple[Any, dict | None]:
    """New content holding only ``text``, in the shape of ``content`` (a string with
    ``as_string``, or when ``text`` is blank: an empty text block is invalid), and the
    cache_control marker of the old blocks it could not keep (the last one), if any."""
    markers = [p["cache_control"] for p in _dicts(content) if p.get("cache_control")]
    marker = markers[-1] if markers else None
    if not isinstance(content, list) or as_string or _blank(text):
        return text, marker
    part: dict[str, Any] = {"type": "text", "text": text}
    if marker is not None:
        part["cache_control"] = marker
    return [part], None


def dumps_args(value: Any) -> str:
    return value if isinstance(value, str) else dumps_data(value)


KeepText = Callable[[str], bool]


class Format:
    """Base of the built-in formats; subclasses fill in the format-specific parts."""

    name = ""
    resumable = True  # items are found message by message (see engine.Resume)
    max_breakpoints = 0  # the cache breakpoints a request may hold (Anthropic: 4); 0: it carries none
    unit = "message"  # what an error calls one entry of the list

    def problem(self, msg: Any) -> str | None:
        """Why a model API would reject this message for its shape (a role it does not know,
        a value of the wrong type), or None."""
        return None

    def check(self, messages: list, start: int = 0) -> None:
        """Raise InputError ("message I: ...") at the first message from ``start`` on that has a
        :meth:`problem`."""
        for i in range(start, len(messages)):
            problem = self.problem(messages[i])
            if problem is not None:
                raise InputError(f"{self.unit} {i}: {problem}")

    def breakpoints(self, msg: Any) -> int:
        """How many cache breakpoints (``cache_control`` markers) a message holds."""
        return 0

    def calls(self, msg: Any) -> list[tuple[str, str | None, dict]]:
        """``(id, name, raw call)`` for each tool call of an assistant message."""
        raise NotImplementedError

    def results(self, msg: Any) -> list[tuple[str | None, int | None, bool, str]]:
        """``(call id, block index, error flag, text)`` for each tool result in a message."""
        raise NotImplementedError

    def is_user_turn(self, msg: Any) -> bool:
        raise NotImplementedError

    def result_count(self, msg: Any) -> int:
        """How many tool results a message holds (an assistant message holds none)."""
        return 0 if isinstance(msg, dict) and msg.get("role") == "assistant" else len(self.results(msg))

    def has_thinking(self, msg: Any) -> bool:
        raise NotImplementedError

    def assistant_text(self, msg: Any) -> str:
        return parts_text(msg.get("content")) if isinstance(msg, dict) else ""

    def scan(self, messages: list) -> Scan:
        return _build_scan(messages, self)

    def response_starts(self, messages: list) -> list[int]:
        """Where each model response starts (a ``replay`` round ends before it): every assistant message."""
        return [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"]

    def text_blocks(self, msg: Any) -> list[str]:
        """The texts of a message's text blocks (a string content is one block)."""
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, str):
            return [content]
        return [b["text"] for b in _dicts(content) if b.get("type") == "text" and isinstance(b.get("text"), str)]

    def message_pieces(self, msg: Any) -> Iterable[str]:
        """Every text the model sees in a message: the input of token estimates."""
        raise NotImplementedError

    def result_content(self, msg: dict, item: Item) -> Any:
        raise NotImplementedError

    def set_result_content(self, msg: dict, item: Item, text: str, as_string: bool = False) -> dict:
        raise NotImplementedError

    def strip_text(self, msg: dict, keep: KeepText, marker: str | None, text_first: bool,
                   keep_thinking: bool, drop_other: bool = False) -> dict:
        raise NotImplementedError

    def is_empty(self, msg: dict) -> bool:
        """Whether an assistant message has nothing left that the API would accept."""
        raise NotImplementedError

    def mark_cache(self, msg: dict, item: Item, cache_control: dict) -> dict:
        """Put ``cache_control`` on the item's block; ``msg`` itself when there is no block that
        may carry it, or it already has one.  Used when ``max_breakpoints`` is not 0."""
        return msg

    def clear_inputs(self, msg: dict, call_ids: frozenset[str]) -> dict:
        raise NotImplementedError


def assistant_item(index: int, msg_index: int, calls: list, text: str, answered: set[str], span: int | None,
                   has_thinking: bool) -> Item:
    """The item of an assistant turn with ``calls`` (``(id, name, call)``)."""
    ids = tuple(c[0] for c in calls)
    return Item(index, "assistant", msg_index, None, None, None, None, None, tuple(c[1] or "" for c in calls), ids,
                text, False, False, not answered.issuperset(ids), span, None, has_thinking)


_NO_CALL = (None, None, None)


def result_item(index: int, msg_index: int, block_index: int | None, call_id: str | None, is_error: bool,
                text: str, call_at: dict, span: int | None, prev_assistant: int | None) -> Item:
    """The item of a tool result, linked through ``call_at`` (call id -> (call, message, name))."""
    call, call_msg, name = call_at.get(call_id, _NO_CALL) if call_id is not None else _NO_CALL
    return Item(index, "tool_result", msg_index, block_index, name, call_id, call, call_msg, (), (),
                text, is_error, call is None, False, span, prev_assistant)


def is_tool_block(kind: Any) -> bool:
    """A tool call or its result in an assistant turn: ``tool_use``, and the server tools'
    ``server_tool_use`` / ``mcp_tool_use`` and ``*_tool_result`` blocks (``web_search_tool_result`` ...)."""
    return isinstance(kind, str) and (kind == "tool_use" or kind.endswith(("_tool_use", "_tool_result")))


def _role_problem(msg: Any, roles: tuple[str, ...]) -> str | None:
    if not isinstance(msg, dict):
        return f"is {json_kind(msg)}, not an object"
    role = msg.get("role")
    if not isinstance(role, str):
        return "has no 'role'" if role is None else f"'role' is {json_kind(role)}, not a string"
    if role not in roles:
        return f"unknown role {role!r}; allowed: {', '.join(roles)}"
    return None


def _blocks_problem(content: list, what: str) -> str | None:
    for j, block in enumerate(content):
        if not isinstance(block, dict):
            return f"{what} {j} is {json_kind(block)}, not an object"
        if not isinstance(block.get("type"), str):
            return f"{what} {j} has no string 'type'"
    return None


def _keep_breakpoint(blocks: list, lost: dict | None, skip: frozenset = THINKING_BLOCKS) -> list:
    """``blocks``, with the breakpoint of a block removed from them (``lost``) moved onto the last
    block that may carry one (when that block has one already, the two become one)."""
    if lost is None:
        return blocks
    moved = with_breakpoint(blocks, lost, skip)
    return blocks if moved is None else moved


def _build_scan(messages: list, fmt: Format) -> Scan:
    """Shared scan: link results to calls, number spans, find user turns."""
    call_at: dict[str, tuple[dict, int, str | None]] = {}
    answered: set[str] = set()
    found = []  # per message: (role, calls, results)
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        calls = fmt.calls(msg)
        results = fmt.results(msg)
        for call_id, name, call in calls:
            if call_id not in call_at:
                call_at[call_id] = (call, i, name)
        for result in results:
            if result[0] is not None:
                answered.add(result[0])
        found.append((role, calls, results))  # an assistant message's results are not items
    items: list[Item] = []
    user_turns: list[int] = []
    span_starts: list[int] = []
    span: int | None = None
    last_assistant = None
    for i, (role, calls, results) in enumerate(found):
        if role == "assistant":
            last_assistant = i
            if calls:
                span_starts.append(i)
                span = len(span_starts) - 1
            else:
                span = None
            msg = messages[i]
            items.append(assistant_item(len(items), i, calls, fmt.assistant_text(msg), answered, span,
                                        fmt.has_thinking(msg)))
            continue
        if not results:
            span = None
        for call_id, block_index, is_error, text in results:
            items.append(result_item(len(items), i, block_index, call_id, is_error, text, call_at, span,
                                     last_assistant))
        if role == "user" and fmt.is_user_turn(messages[i]):
            user_turns.append(i)
    return Scan(tuple(items), tuple(user_turns), tuple(span_starts), last_assistant, tuple(f[1] for f in found))


class OpenAIFormat(Format):
    """OpenAI Chat Completions: ``tool_calls`` on assistant messages, ``role: tool`` results."""

    name = "openai"

    @staticmethod
    def calls(msg: Any) -> list[tuple[str, str | None, dict]]:
        if not isinstance(msg, dict) or msg.get("role") != "assistant" or not msg.get("tool_calls"):
            return []
        out = []
        for call in _dicts(msg["tool_calls"]):
            call_id = call.get("id")
            if isinstance(call_id, str):
                fn = call.get("function")
                name = fn.get("name") if isinstance(fn, dict) else None
                out.append((call_id, name if isinstance(name, str) else None, call))
        return out

    @staticmethod
    def results(msg: Any) -> list[tuple[str | None, None, bool, str]]:
        if not isinstance(msg, dict) or msg.get("role") != "tool":
            return []
        call_id = msg.get("tool_call_id")
        return [(call_id if isinstance(call_id, str) else None, None, msg.get("is_error") is True,
                 parts_text(msg.get("content")))]

    @staticmethod
    def result_count(msg: Any) -> int:
        return 1 if isinstance(msg, dict) and msg.get("role") == "tool" else 0

    @staticmethod
    def is_user_turn(msg: Any) -> bool:
        return isinstance(msg, dict) and msg.get("role") == "user" and bool(parts_text(msg.get("content")).strip())

    def problem(self, msg: Any) -> str | None:
        problem = _role_problem(msg, OPENAI_ROLES)
        if problem is not None:
            return problem
        content = msg.get("content")
        if content is not None and not isinstance(content, (str, list)):
            return f"'content' is {json_kind(content)}, not a string, a list of parts or null"
        if isinstance(content, list) and (problem := _blocks_problem(content, "content part")):
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
        return None

    def has_thinking(self, msg: Any) -> bool:
        return isinstance(msg, dict) and (any(_str(msg.get(f)) for f in OPENAI_REASONING_FIELDS) or any(
            b.get("type") in THINKING_BLOCKS for b in _dicts(msg.get("content"))))

    def breakpoints(self, msg: Any) -> int:
        return count_breakpoints(msg.get("content")) if isinstance(msg, dict) else 0

    def message_pieces(self, msg: Any) -> list[str]:
        if not isinstance(msg, dict):
            return []
        pieces = [parts_text(msg.get("content"))]
        pieces += [thinking_text(b) for b in _dicts(msg.get("content")) if b.get("type") in THINKING_BLOCKS]
        pieces += [_str(msg.get(field)) for field in OPENAI_REASONING_FIELDS]
        if msg.get("tool_calls"):
            for _, name, call in self.calls(msg):
                fn = call.get("function")
                pieces += (name or "", dumps_args(fn.get("arguments", "") if isinstance(fn, dict) else ""))
        return pieces

    def result_content(self, msg: dict, item: Item) -> Any:
        return msg.get("content")

    def set_result_content(self, msg: dict, item: Item, text: str, as_string: bool = False) -> dict:
        content, lost = replace_content(msg.get("content"), text, as_string)
        if lost is not None and not _blank(text):  # a breakpoint wins over as_string: it needs a part
            content = [{"type": "text", "text": text, "cache_control": lost}]
        return {**msg, "content": content}

    def strip_text(self, msg, keep, marker, text_first, keep_thinking, drop_other=False):
        new = dict(msg)
        if not keep_thinking:
            for field in OPENAI_REASONING_FIELDS:
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
                    removed, lost = True, part.get("cache_control") or lost
                    continue
                kept.append(part)
            if removed and marker is not None and not any(
                    isinstance(p, dict) and p.get("text") == marker for p in kept):
                kept.insert(0, {"type": "text", "text": marker})
            if removed:
                new["content"] = _keep_breakpoint(kept, lost, OPENAI_NO_BREAKPOINT) or None
        return new if new != msg else msg

    def is_empty(self, msg: dict) -> bool:
        return not self.calls(msg) and _blank(parts_text(msg.get("content")))

    def mark_cache(self, msg: dict, item: Item, cache_control: dict) -> dict:
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        marked = with_breakpoint(content, cache_control, OPENAI_NO_BREAKPOINT) if isinstance(content, list) else None
        return msg if marked is None else {**msg, "content": marked}

    def clear_inputs(self, msg, call_ids):
        calls = msg.get("tool_calls")
        if not isinstance(calls, list):
            return msg
        new_calls, changed = [], False
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and call.get("id") in call_ids and fn.get("arguments") != "{}":
                call = {**call, "function": {**fn, "arguments": "{}"}}
                changed = True
            new_calls.append(call)
        return {**msg, "tool_calls": new_calls} if changed else msg


class CacheControlOpenAIFormat(OpenAIFormat):
    """OpenAI messages bound for a provider that reads Anthropic ``cache_control`` on content
    parts, as LangChain's ChatAnthropic does (it hoists a tool message's onto its tool_result
    block): ``cache-breakpoint`` marks the item's last content part, within Anthropic's limit.
    Not a format of its own (reports say ``openai``): the LangChain integration uses it for
    Anthropic models."""

    max_breakpoints = 4


OPENAI_CACHE_CONTROL = CacheControlOpenAIFormat()


class AnthropicFormat(Format):
    """Anthropic Messages: content blocks ``tool_use`` / ``tool_result`` / ``thinking``."""

    name = "anthropic"
    max_breakpoints = 4

    @staticmethod
    def _blocks(msg: Any) -> list:
        if not isinstance(msg, dict):
            return []
        content = msg.get("content")
        return content if isinstance(content, list) else []

    def calls(self, msg: Any) -> list[tuple[str, str | None, dict]]:
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            return []
        return [(b["id"], b.get("name") if isinstance(b.get("name"), str) else None, b)
                for b in _dicts(self._blocks(msg)) if b.get("type") == "tool_use" and isinstance(b.get("id"), str)]

    def results(self, msg: Any) -> list[tuple[str | None, int, bool, str]]:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            return []
        out = []
        for j, block in enumerate(self._blocks(msg)):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                call_id = block.get("tool_use_id")
                out.append((call_id if isinstance(call_id, str) else None, j, block.get("is_error") is True,
                            parts_text(block.get("content"))))
        return out

    def is_user_turn(self, msg: Any) -> bool:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            return False
        content = msg.get("content")
        if isinstance(content, str):
            return bool(content.strip())
        return any(b.get("type") == "text" and _str(b.get("text")).strip() for b in _dicts(content))

    def has_thinking(self, msg: Any) -> bool:
        return any(b.get("type") in ("thinking", "redacted_thinking") for b in _dicts(self._blocks(msg)))

    def problem(self, msg: Any) -> str | None:
        problem = _role_problem(msg, ANTHROPIC_ROLES)
        if problem is not None:
            return problem
        content = msg.get("content")
        if not isinstance(content, (str, list)):
            return "has no 'content'" if "content" not in msg else \
                f"'content' is {json_kind(content)}, not a string or a list of blocks"
        if isinstance(content, str) or (problem := _blocks_problem(content, "content block")):
            return problem
        for j, block in enumerate(content):
            kind, inner = block["type"], block.get("content")
            if kind == "tool_use" and not isinstance(block.get("input", {}), dict):
                return f"content block {j}: tool_use 'input' is {json_kind(block['input'])}, not an object"
            if kind == "tool_result" and inner is not None and not isinstance(inner, (str, list)):
                return f"content block {j}: tool_result 'content' is {json_kind(inner)}, not a string or a list"
            if kind == "tool_result" and isinstance(inner, list) and (
                    problem := _blocks_problem(inner, f"content block {j}: tool_result block")):
                return problem
        return None

    def breakpoints(self, msg: Any) -> int:
        blocks = self._blocks(msg)
        return count_breakpoints(blocks) + sum(count_breakpoints(b.get("content")) for b in _dicts(blocks)
                                               if b.get("type") == "tool_result")

    def message_pieces(self, msg: Any) -> Iterable[str]:
        if not isinstance(msg, dict):
            return
        content = msg.get("content")
        if isinstance(content, str):
            yield content
            return
        for block in _dicts(content):
            kind = block.get("type")
            if kind == "text":
                yield _str(block.get("text"))
            elif kind in ("thinking", "redacted_thinking"):
                yield thinking_text(block)
            elif kind == "tool_use":
                yield _str(block.get("name"))
                yield dumps_args(block.get("input", {}))
            elif kind == "tool_result":
                yield parts_text(block.get("content"))

    def result_content(self, msg: dict, item: Item) -> Any:
        return msg["content"][item.block_index].get("content")

    def set_result_content(self, msg: dict, item: Item, text: str, as_string: bool = False) -> dict:
        blocks = list(msg["content"])
        block = blocks[item.block_index]
        new, lost = replace_content(block.get("content"), text, as_string)
        block = {**block, "content": new}
        if lost is not None and not block.get("cache_control"):  # the breakpoint moves onto the block
            block["cache_control"] = lost
        blocks[item.block_index] = block
        return {**msg, "content": blocks}

    def strip_text(self, msg, keep, marker, text_first, keep_thinking, drop_other=False):
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        lead, texts, others = [], [], []
        marker_slot: tuple[list, int] | None = None
        lost = None  # the breakpoint of a removed block
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            is_text = kind == "text" and isinstance(block.get("text"), str)
            is_thinking = kind in ("thinking", "redacted_thinking")
            if is_text and (block["text"] == marker or keep(block["text"])):
                (texts if text_first else others).append(block)
            elif is_thinking and keep_thinking:
                (lead if text_first else others).append(block)
            elif is_text or is_thinking:
                if marker_slot is None:
                    target = texts if text_first else others
                    marker_slot = (target, len(target))
                lost = block.get("cache_control") or lost
            elif not drop_other or is_tool_block(kind):
                others.append(block)
            elif block.get("cache_control"):  # dropped with its breakpoint: the marker may carry it
                if marker_slot is None:
                    marker_slot = (others, len(others))
                lost = block["cache_control"]
        has_marker = any(isinstance(b, dict) and b.get("type") == "text" and b.get("text") == marker
                         for b in texts + others)
        if marker is not None and not has_marker and marker_slot is not None:
            marker_slot[0].insert(marker_slot[1], {"type": "text", "text": marker})
        new = _keep_breakpoint(lead + texts + others, lost)
        if len(new) == len(blocks) and all(x is y for x, y in zip(new, blocks)):
            return msg
        return {**msg, "content": new}

    def is_empty(self, msg: dict) -> bool:
        return not msg.get("content")

    def mark_cache(self, msg: dict, item: Item, cache_control: dict) -> dict:
        content = msg.get("content")
        if not isinstance(content, list) or not content:
            return msg
        if item.block_index is None:  # an assistant turn: its last block that may carry one
            return {**msg, "content": marked} if (marked := with_breakpoint(content, cache_control)) else msg
        block = content[item.block_index]
        if not isinstance(block, dict) or block.get("cache_control"):  # never move or weaken one
            return msg
        blocks = list(content)
        blocks[item.block_index] = {**block, "cache_control": cache_control}
        return {**msg, "content": blocks}

    def clear_inputs(self, msg, call_ids):
        blocks, changed = [], False
        for block in self._blocks(msg):
            if (isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id") in call_ids
                    and block.get("input") != {}):
                block = {**block, "input": {}}
                changed = True
            blocks.append(block)
        return {**msg, "content": blocks} if changed else msg


FORMATS: dict[str, Format] = {"openai": OpenAIFormat(), "anthropic": AnthropicFormat()}

from .responses_format import RESPONSES, RESPONSES_ITEM_TYPES, RESPONSES_PARTS  # noqa: E402  (subclasses Format)

FORMATS["responses"] = RESPONSES


def detect_format(messages: list) -> str:
    """``responses`` for Responses API input items (an item typed ``function_call``,
    ``function_call_output``, ``reasoning`` ..., or ``input_text`` / ``output_text`` parts),
    ``anthropic`` if any message holds Anthropic-only blocks, else ``openai``."""
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        if msg.get("type") in RESPONSES_ITEM_TYPES or (
                isinstance(content, list) and any(b.get("type") in RESPONSES_PARTS for b in _dicts(content))):
            return "responses"
        if msg.get("role") == "tool" or "tool_calls" in msg or "tool_call_id" in msg:
            return "openai"
        if isinstance(content, list) and any(b.get("type") in ANTHROPIC_BLOCKS for b in _dicts(content)):
            return "anthropic"
    return "openai"

"""What every message format provides: its items in columns, and copy-on-write edits.

A format never mutates a message: every edit returns a new message dict that shares the
untouched parts of the old one.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any, Callable, Iterable, NamedTuple

from ..errors import InputError, kind_of
from ..jsontext import TooDeep, dumps_data, loads_held

#: Content blocks that hold reasoning: Anthropic's thinking blocks, and LangChain v1's reasoning
#: blocks (in an ``AIMessage.content`` list, which the OpenAI format also reads).
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking", "reasoning"})

__all__ = ["Item", "Scan", "Format", "THINKING_BLOCKS", "BREAKPOINT_KEYS", "breakpoint_of", "count_breakpoints", "breakpoints_outside", "with_breakpoint", "json_kind", "parts_text", "replace_content", "dumps_args", "decode_args", "KeepText", "deep_copy",
           "shallow_parts"]


class Item(NamedTuple):
    """One thing a rule decides on, as plugins and reports see it: a tool result or an
    assistant turn."""

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
    observation: bool = False  # a result carried in a user message (a text-action agent's observation)

    @property
    def role(self) -> str:
        return "tool" if self.kind == "tool_result" else "assistant"


Call = tuple  # (call id, tool name or None, the raw call)


class Scan:
    """A message list's items, in columns indexed by item (results and assistant turns in
    conversation order), and its turns and spans.

    The generic scan (``Format.scan``) fills every column in one loop; a format may return a
    subclass that computes columns when first read (the same names, the same values)."""

    COLUMNS = ("msg", "block", "is_turn", "call_id", "error_flag", "calls", "thinking", "span", "prev_assistant",
               "observed", "results", "turns", "user_turns", "span_starts", "last_assistant", "calls_of", "call_at")

    def __init__(self) -> None:
        self.msg: list[int] = []  # the item's message
        self.block: list = []  # its block (an Anthropic tool_result), else None
        self.is_turn: list[bool] = []  # an assistant turn, else a tool result
        self.call_id: list = []  # a result: the call id it answers (None if none); a turn: None
        self.error_flag: list[bool] = []  # a result: the format's own error flag
        self.calls: list = []  # a turn: its calls, as Calls; a result: ()
        self.thinking: list[bool] = []  # a turn: holds thinking or reasoning
        self.span: list = []  # the item's span, or None
        self.prev_assistant: list = []  # a result: the nearest assistant message before it
        self.observed: list = []  # an observation (a result in a user message): the tool it names, or True; else False
        self.results: list[int] = []  # item indices of the results
        self.turns: list[int] = []  # item indices of the assistant turns
        self.user_turns: list[int] = []  # message indices of user turns
        self.span_starts: list[int] = []  # message index where each span starts
        self.last_assistant: int | None = None  # message index
        self.calls_of: list = []  # per message: its own calls (Format.calls)
        self.call_at: dict = {}  # call id -> (call, message index, tool name), first seen

    def add_result(self, msg: int, block, call_id, error: bool, span, prev, observed=False) -> None:
        self.results.append(len(self.msg))
        self._add(msg, block, False, call_id, error, (), False, span, prev)
        self.observed[-1] = observed

    def add_turn(self, msg: int, calls: list, thinking: bool, span) -> None:
        self.turns.append(len(self.msg))
        self._add(msg, None, True, None, False, tuple(calls), thinking, span, None)

    def _add(self, msg, block, is_turn, call_id, error, calls, thinking, span, prev) -> None:
        self.msg.append(msg)
        self.block.append(block)
        self.is_turn.append(is_turn)
        self.call_id.append(call_id)
        self.error_flag.append(error)
        self.calls.append(calls)
        self.thinking.append(thinking)
        self.span.append(span)
        self.prev_assistant.append(prev)
        self.observed.append(False)

    def __len__(self) -> int:
        return len(self.msg)

    def span_start(self, item: int) -> int:
        """The message where the item's span starts, or the item's own message outside a span."""
        span = self.span[item]
        return self.span_starts[span] if span is not None else self.msg[item]

    def prefix(self, messages: int) -> Scan:
        """The scan of the first ``messages`` messages: the same columns, cut (a scan reads
        the messages in order, so a prefix's columns are the whole one's first entries)."""
        return PrefixScan(self, bisect_left(self.msg, messages), messages)


_PER_ITEM = frozenset(("msg", "block", "is_turn", "call_id", "error_flag", "calls", "thinking", "span",
                       "prev_assistant", "observed"))


class PrefixScan(Scan):
    """A scan cut to its first ``items`` items and ``messages`` messages (:meth:`Scan.prefix`);
    each column is cut when first read."""

    def __init__(self, whole: Scan, items: int, messages: int):  # no Scan.__init__: no columns of its own
        self._whole, self._items, self._messages = whole, items, messages

    def __getattr__(self, name: str):
        whole, items, messages = self._whole, self._items, self._messages
        if name in _PER_ITEM:
            value = getattr(whole, name)[:items]
        elif name in ("results", "turns"):  # item indices
            column = getattr(whole, name)
            value = column[:bisect_left(column, items)]
        elif name in ("user_turns", "span_starts"):  # message indices
            column = getattr(whole, name)
            value = column[:bisect_left(column, messages)]
        elif name == "calls_of":
            value = whole.calls_of[:messages]
        elif name == "last_assistant":
            turns = self.turns
            value = self.msg[turns[-1]] if turns else None
        elif name == "call_at":
            value = {cid: found for cid, found in whole.call_at.items() if found[1] < messages}
        else:
            raise AttributeError(name)
        self.__dict__[name] = value
        return value

    def __len__(self) -> int:
        return self._items


#: The key of an OpenAI user message that carries an observation (a text-action agent's tool
#: output): true, or the name of the tool the observation answers.  Readers set it.
OBSERVATION_KEY = "observation"


def observed_tool(msg: Any) -> str | bool:
    """What a message's observation marker says: the tool's name, True (an observation naming no
    tool), or False (not an observation)."""
    value = msg.get(OBSERVATION_KEY) if isinstance(msg, dict) else None
    if value is True or (isinstance(value, str) and value):
        return value
    return False


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dicts(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def parts_text(content: Any) -> str:
    """Text of a string or of a list of text parts/blocks, concatenated."""
    if isinstance(content, str):
        return content
    texts = [p.get("text") or p.get("refusal") for p in _dicts(content) if p.get("type") in ("text", "refusal")]
    return "".join(t for t in texts if isinstance(t, str))


#: The keys that make a content block a cache breakpoint: Anthropic's ``cache_control``, and
#: OpenAI's ``prompt_cache_breakpoint`` (GPT-5.6 and later).
BREAKPOINT_KEYS = ("cache_control", "prompt_cache_breakpoint")


def breakpoint_of(block: Any) -> dict | None:
    """The breakpoint a block carries, as ``{key: value}`` (see ``BREAKPOINT_KEYS``), or None."""
    if not isinstance(block, dict):
        return None
    found = {key: block[key] for key in BREAKPOINT_KEYS if block.get(key)}
    return found or None


def replace_content(content: Any, text: str, as_string: bool = False, kind: str = "text") -> tuple[Any, dict | None]:
    """New content holding only ``text``, in the shape of ``content`` (a string with
    ``as_string``, or when ``text`` is blank: an empty text block is invalid; ``kind``: the new
    part's type), and the breakpoint of the old blocks it could not keep (the last one), if any."""
    if not isinstance(content, list):
        return text, None
    markers = [m for m in map(breakpoint_of, content) if m]
    marker = markers[-1] if markers else None
    if as_string or is_blank(text):
        return text, marker
    part: dict[str, Any] = {"type": kind, "text": text}
    if marker is not None:
        part.update(marker)
    return [part], None


def thinking_text(block: dict) -> str:
    """What the model reads in a thinking block: its thinking, redacted data or reasoning."""
    kind = block.get("type")
    return _str(block.get("data" if kind == "redacted_thinking" else kind))


def json_kind(value: Any) -> str:
    """A JSON value's type as an error names it: 'an object', 'a list', 'a string', 'null'..."""
    return "an object" if isinstance(value, dict) else kind_of(value)


def is_blank(text: Any) -> bool:
    return not isinstance(text, str) or not text.strip()


def count_breakpoints(value: Any) -> int:
    """The cache breakpoints in a system prompt, a tool list or a list of blocks: the entries
    that carry a ``cache_control`` or a ``prompt_cache_breakpoint`` (a string carries none)."""
    if isinstance(value, dict):
        return 1 if breakpoint_of(value) else 0
    return sum(1 for v in value if breakpoint_of(v)) if isinstance(value, list) else 0


def breakpoints_outside(request: Any) -> int:
    """The cache breakpoints a request body holds outside its messages: on ``system`` blocks, on
    ``tools``, on Responses ``instructions`` items and at its top level (0 for a message list)."""
    if not isinstance(request, Mapping):
        return 0
    instructions = request.get("instructions")
    marked = sum(count_breakpoints(i.get("content")) for i in instructions if isinstance(i, dict)) \
        if isinstance(instructions, list) else 0
    return (count_breakpoints(request.get("system")) + count_breakpoints(request.get("tools")) + marked
            + count_breakpoints({"cache_control": request.get("cache_control")}))


def with_breakpoint(blocks: list, marker: dict, skip: frozenset = THINKING_BLOCKS) -> list | None:
    """``blocks`` with the breakpoint ``marker`` (``{key: value}``, e.g. ``{"cache_control":
    {"type": "ephemeral"}}``) on the last block that may carry one (none of the ``skip`` types,
    thinking by default, nor an empty text block); None when there is none, or it already has one."""
    at = next((j for j in range(len(blocks) - 1, -1, -1) if isinstance(blocks[j], dict)
               and blocks[j].get("type") not in skip
               and not (blocks[j].get("type") in ("text", "input_text") and is_blank(blocks[j].get("text")))), None)
    if at is None or breakpoint_of(blocks[at]):
        return None
    out = list(blocks)
    out[at] = {**blocks[at], **marker}
    return out


def is_tool_block(kind: Any) -> bool:
    """A tool call or its result in an assistant turn: ``tool_use``, and the server tools'
    ``server_tool_use`` / ``mcp_tool_use`` and ``*_tool_result`` blocks (``web_search_tool_result`` ...)."""
    return isinstance(kind, str) and (kind == "tool_use" or kind.endswith(("_tool_use", "_tool_result")))


def role_problem(msg: Any, roles: tuple[str, ...]) -> str | None:
    if not isinstance(msg, dict):
        return f"is {json_kind(msg)}, not an object"
    role = msg.get("role")
    if not isinstance(role, str):
        return "has no 'role'" if role is None else f"'role' is {json_kind(role)}, not a string"
    if role not in roles:
        return f"unknown role {role!r}; allowed: {', '.join(roles)}"
    return None


def id_problem(value: Any, what: str) -> str | None:
    """A tool-call id that is neither a string nor absent (the APIs take strings only: an integer
    id was accepted silently)."""
    return None if value is None or isinstance(value, str) else f"{what} is {json_kind(value)}, not a string"


def blocks_problem(content: list, what: str) -> str | None:
    for j, block in enumerate(content):
        if not isinstance(block, dict):
            return f"{what} {j} is {json_kind(block)}, not an object"
        if not isinstance(block.get("type"), str):
            return f"{what} {j} has no string 'type'"
    return None


def keep_breakpoint(blocks: list, lost: dict | None, skip: frozenset = THINKING_BLOCKS) -> list:
    """``blocks``, with the breakpoint of a block removed from them (``lost``, as ``breakpoint_of``
    gives it) moved onto the last block that may carry one (when that block has one already, the
    two become one)."""
    if lost is None:
        return blocks
    moved = with_breakpoint(blocks, lost, skip)
    return blocks if moved is None else moved



def dumps_args(value: Any) -> str:
    return value if isinstance(value, str) else dumps_data(value)


def decode_args(call: dict | None) -> Any:
    """A call's arguments as JSON data, or None if they do not decode."""
    if not isinstance(call, dict):
        return None
    if "input" in call:
        return call["input"]
    fn = call.get("function")
    raw = fn.get("arguments") if isinstance(fn, dict) else call.get("arguments")  # Responses: top level
    if not isinstance(raw, str):
        return raw if isinstance(raw, dict) else None
    try:
        return loads_held(raw)
    except ValueError:
        return None


def shorten_values(value: Any, longer_than: int) -> Any:
    """``value`` with every string over ``longer_than`` characters, at any depth, replaced by
    ``[N lines cleared]`` (the rest, such as a path or a short command, stays)."""
    return rebuilt(value, lambda v: f"[{len(v.splitlines())} lines cleared]"
                   if isinstance(v, str) and len(v) > longer_than else v)


def rebuilt(value: Any, leaf: Callable[[Any], Any] = lambda v: v) -> Any:
    """A copy of the dicts and lists in ``value`` with every other value ``v`` in it replaced by
    ``leaf(v)``.  Walked in a loop, as every walk over a value is: arguments may nest as deeply
    as the JSON reader reads (some 900 levels from the command line), past what Python's
    recursion limit leaves a recursive walk."""
    if not isinstance(value, (dict, list)):
        return leaf(value)
    top: list = [None]
    todo: list[tuple[Any, Any, Any]] = [(value, top, 0)]  # (a container, where its copy goes, at which key)
    while todo:
        source, parent, key = todo.pop()
        copy: Any = dict.fromkeys(source) if isinstance(source, dict) else [None] * len(source)
        parent[key] = copy
        for k, v in source.items() if isinstance(source, dict) else enumerate(source):
            if isinstance(v, (dict, list)):
                todo.append((v, copy, k))
            else:
                copy[k] = leaf(v)
    return top[0]


def leaves(value: Any) -> Iterable[Any]:
    """Every value in ``value`` that is no dict or list, at any depth, in order (in a loop)."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            todo.extend(reversed(v.values()))
        elif isinstance(v, list):
            todo.extend(reversed(v))
        else:
            yield v


#: The least ``longer_than`` of clear-inputs: shorter strings are never shortened.
SHORTEST_CLEARED = 40


def is_shortened(before: Any, after: Any, longer_than: int = SHORTEST_CLEARED) -> bool:
    """Whether ``after`` is ``before`` (call arguments: a value, or JSON text of one) with some
    strings over ``longer_than`` characters replaced as ``shorten_values`` replaces them, and
    nothing else changed (compared in a loop)."""
    todo = [(before, after)]
    while todo:
        before, after = todo.pop()
        if isinstance(before, str) and isinstance(after, str) and before != after:
            decoded = _json_container(before)
            if decoded is not None:
                todo.append((decoded, _json_container(after)))
            elif not (len(before) > longer_than and after == f"[{len(before.splitlines())} lines cleared]"):
                return False
        elif isinstance(before, dict) and isinstance(after, dict):
            if before.keys() != after.keys():
                return False
            todo.extend((before[k], after[k]) for k in before)
        elif isinstance(before, list) and isinstance(after, list):
            if len(before) != len(after):
                return False
            todo.extend(zip(before, after))
        elif before != after:
            return False
    return True


def _json_container(text: str) -> Any:
    """A JSON object or array decoded from ``text``, else None."""
    try:
        data = loads_held(text)
    except ValueError:
        return None
    return data if isinstance(data, (dict, list)) else None


def shorten_json(text: Any, longer_than: int) -> Any:
    """JSON ``arguments`` text with its long string values shortened (``shorten_values``); text
    that does not decode as a JSON object or array is shortened as one string."""
    if not isinstance(text, str):
        return text
    try:
        data = loads_held(text)
    except TooDeep:  # JSON all the same: left as it is, not cleared as one string
        return text
    except ValueError:
        return shorten_values(text, longer_than)
    if not isinstance(data, (dict, list)):
        return text
    new = shorten_values(data, longer_than)
    return text if new == data else json.dumps(new, ensure_ascii=False)


def deep_copy(value: Any, depth: int = 0) -> Any:
    """A copy of the dicts and lists in ``value``; everything else is shared (past
    RECURSIVE_COPY levels, by ``rebuilt``'s loop)."""
    if depth == RECURSIVE_COPY:
        return rebuilt(value)
    if isinstance(value, dict):
        return {k: v if type(v) in _ATOMS else deep_copy(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _ATOMS else deep_copy(v, depth + 1) for v in value]
    return value


RECURSIVE_COPY = 50  # levels deep_copy recurses (faster than the loop) before it hands over


_ATOMS = frozenset({str, int, float, bool, type(None)})


def shallow_parts(value: Any) -> Any:
    """A list of dicts copied one level deep (content parts), anything else as it is."""
    if isinstance(value, list):
        return [dict(v) if isinstance(v, dict) else v for v in value]
    return value


KeepText = Callable[[str], bool]


class Format:
    """A message format: how its items are found, measured and edited.  Formats are
    registered in ``rules_compact.formats.FORMATS``."""

    name = ""
    max_breakpoints = 0  # the Anthropic cache_control breakpoints a request may hold (4); 0: it carries none
    #: OpenAI prompt_cache_breakpoint marks a request may hold (GPT-5.6+: 4 writes a request, one
    #: of them the implicit breakpoint of the default prompt_cache_options.mode): 0, none
    openai_max_breakpoints = 0
    unit = "message"  # what an error calls one entry of the list
    resumable = True  # items are found message by message, so a pass can resume (incremental layer)
    own_calls = True  # an assistant turn's calls are all in its own message
    shared_messages = False  # several items can be in one message (so their edits must go in order)

    # -- what a model API accepts ---------------------------------------------------------
    def problem(self, msg: Any) -> str | None:
        """Why a model API would reject this message (a role it does not know, a value of the
        wrong type, data that is not JSON), or None."""
        return None

    def check(self, messages: list, start: int = 0) -> None:
        """Raise InputError ("message I: ...") at the first of ``messages[start:]`` that has a
        :meth:`problem` (the earlier ones were checked before)."""
        for i in range(start, len(messages)):
            problem = self.problem(messages[i])
            if problem is not None:
                raise InputError(f"{self.unit} {i}: {problem}")

    def checked_scan(self, messages: list) -> Scan:
        """:meth:`check`, then :meth:`scan` (a format may do both in one walk)."""
        self.check(messages)
        return self.scan(messages)

    def breakpoints(self, msg: Any) -> int:
        """How many cache breakpoints (``cache_control`` markers) a message holds."""
        return 0

    # -- structure ---------------------------------------------------------------------
    def calls(self, msg: Any) -> list[Call]:
        """``(id, name, raw call)`` for each tool call of an assistant message."""
        raise NotImplementedError

    def results(self, msg: Any) -> list[tuple[str | None, int | None, bool]]:
        """``(call id, block index, error flag)`` for each tool result in a message."""
        raise NotImplementedError

    def result_text(self, msg: Any, block: int | None) -> str:
        """The text of a tool result (the message's, or its block's)."""
        raise NotImplementedError

    def is_user_turn(self, msg: Any) -> bool:
        raise NotImplementedError

    def observation(self, msg: Any) -> str | bool:
        """Whether a message is an observation (a text-action agent's tool output in a user
        message): the tool it names, True, or False (every message of a format without them)."""
        return False

    def result_count(self, msg: Any) -> int:
        """How many tool results a message holds (an assistant message holds none)."""
        return 0 if isinstance(msg, dict) and msg.get("role") == "assistant" else len(self.results(msg))

    def has_thinking(self, msg: Any) -> bool:
        raise NotImplementedError

    def assistant_text(self, msg: Any) -> str:
        return parts_text(msg.get("content")) if isinstance(msg, dict) else ""

    def reasoning_text(self, msg: Any) -> str:
        """The thinking or reasoning a message holds (for reports; none by default)."""
        return ""

    def scan(self, messages: list) -> Scan:
        """Link results to calls, number spans, find user turns."""
        scan = Scan()
        call_at = scan.call_at
        calls_of = scan.calls_of
        span: int | None = None
        for i, msg in enumerate(messages):
            calls = tuple(self.calls(msg))  # one tuple per message, shared with its turn's item: () when none
            calls_of.append(calls)
            for call in calls:
                if call[0] not in call_at:
                    call_at[call[0]] = (call[2], i, call[1])
            if isinstance(msg, dict) and msg.get("role") == "assistant":
                scan.last_assistant = i
                if calls:
                    scan.span_starts.append(i)
                    span = len(scan.span_starts) - 1
                else:
                    span = None
                scan.add_turn(i, calls, self.has_thinking(msg), span)
                continue
            results = self.results(msg)
            observed = self.observation(msg)
            if not results or observed is not False:  # an observation is outside any span
                span = None
            for call_id, block, error in results:
                scan.add_result(i, block, call_id, error, span, scan.last_assistant, observed)
            if self.is_user_turn(msg):
                scan.user_turns.append(i)
        return scan

    def response_starts(self, messages: list) -> list[int]:
        """Where each model response starts (a ``replay`` round ends before it): every assistant message."""
        return [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"]

    def item_text(self, messages: list, scan: Scan, item: int) -> str:
        """The visible text of an item: a result's content, an assistant turn's text."""
        msg = messages[scan.msg[item]]
        if scan.is_turn[item]:
            return self.assistant_text(msg)
        return self.result_text(msg, scan.block[item])

    def item_texts(self, messages: list, scan: Scan, items) -> list[str]:
        """The texts of several items, in their order."""
        text = self.item_text
        return [text(messages, scan, i) for i in items]

    def text_blocks(self, msg: Any) -> list[str]:
        """The texts of a message's text blocks (a string content is one block)."""
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, str):
            return [content]
        return [b["text"] for b in _dicts(content) if b.get("type") == "text" and isinstance(b.get("text"), str)]

    def message_pieces(self, msg: Any) -> Iterable[str]:
        """Every text the model sees in a message: the input of token estimates."""
        raise NotImplementedError

    # -- edits -------------------------------------------------------------------------
    def result_content(self, msg: dict, block: int | None) -> Any:
        raise NotImplementedError

    def set_result_content(self, msg: dict, block: int | None, text: str, as_string: bool = False) -> dict:
        raise NotImplementedError

    def strip_text(self, msg: dict, keep: KeepText, marker: str | None, text_first: bool,
                   keep_thinking: bool, drop_other: bool = False) -> dict:
        raise NotImplementedError

    def is_empty(self, msg: dict) -> bool:
        """Whether an assistant message has nothing left that the API would accept."""
        raise NotImplementedError

    def mark_cache(self, msg: dict, block: int | None, marker: dict) -> dict:
        """Put the breakpoint ``marker`` (``{"cache_control": ...}`` or ``{"prompt_cache_breakpoint":
        ...}``) on the item's block; ``msg`` itself when there is no block that may carry it, or it
        already has one.  Used when ``max_breakpoints`` (or ``openai_max_breakpoints``) is not 0."""
        return msg

    def clear_inputs(self, msg: dict, call_ids: frozenset[str], longer_than: int | None = None) -> dict:
        """The message with the arguments of these calls blanked, or with ``longer_than``, only
        their string values over that many characters replaced (``shorten_values``)."""
        raise NotImplementedError

    # -- noticing edits in place ----------------------------------------------------------
    def snapshot(self, msg: Any) -> Any:
        """A copy of what the format reads of a message: equal to the message for as long as
        nothing the rules read in it was edited (formats copy only the parts they read)."""
        return deep_copy(msg)

    # -- for tools that inspect conversations ---------------------------------------------
    def items(self, messages: list) -> tuple[Item, ...]:
        """The items as Item records (for reports, tests and tools; the engine reads columns)."""
        return self.build_items(messages, self.scan(messages))

    def build_items(self, messages: list, scan: Scan) -> tuple[Item, ...]:
        answered = {cid for cid in scan.call_id if cid is not None}
        call_at = scan.call_at
        out = []
        for i in range(len(scan)):
            text = self.item_text(messages, scan, i)
            if scan.is_turn[i]:
                calls = scan.calls[i]
                ids = tuple(c[0] for c in calls)
                out.append(Item(i, "assistant", scan.msg[i], None, None, None, None, None,
                                tuple(c[1] or "" for c in calls), ids, text, False, False,
                                not answered.issuperset(ids), scan.span[i], None, scan.thinking[i]))
            else:
                cid, observed = scan.call_id[i], scan.observed[i]
                call, call_msg, name = call_at.get(cid, _NO_CALL) if cid is not None else _NO_CALL
                name = observed if isinstance(observed, str) else name
                out.append(Item(i, "tool_result", scan.msg[i], scan.block[i], name, cid, call, call_msg, (), (),
                                text, scan.error_flag[i], call is None and observed is False, False, scan.span[i],
                                scan.prev_assistant[i], observation=observed is not False))
        return tuple(out)


_NO_CALL = (None, None, None)

"""Readers for real agent logs: each log becomes one or more API-format conversations.

``read_conversations(raw, name)`` looks at the content (never at the file name) and
returns a list of :class:`Conversation`, each an OpenAI Chat Completions, Anthropic
Messages or OpenAI Responses API item list.  Understood inputs (``source_format``):

``messages``
    Input already in an API format, kept as it is: a message list, or an object with a
    ``messages`` list (a request body); a list of Responses API input items, or an object
    with an ``input`` list of them (a Responses request body).  A JSONL file whose lines are
    messages (or Responses items) is one conversation; a JSONL file whose lines are request
    bodies (a fine-tuning data set) is one conversation per line.
``claude-code``
    A Claude Code session (or subagent) JSONL file, converted to Anthropic
    Messages (see :func:`claude_code_messages`).
``codex``
    An OpenAI Codex CLI rollout (``~/.codex/sessions/**/rollout-*.jsonl``), current
    (``session_meta`` / ``response_item`` / ``compacted`` ... lines) or legacy (a meta line,
    then one item per line): the Responses items Codex sends (see :func:`codex_items`).
``swe-agent``
    A SWE-agent ``.traj`` file: its ``history`` as SWE-agent sends it to the model
    (``tool_call_ids[0]`` becomes ``tool_call_id``; ``agent``, ``message_type``,
    ``thought``, ``action`` ... are dropped).  Legacy text-action files keep their
    observations as ``user`` messages.
``mini-swe-agent``
    A mini-swe-agent trajectory (``trajectory_format: mini-swe-agent-*``): its
    ``messages``, unchanged, but for the closing ``role: exit`` message, which no model saw.
``tau-bench``
    tau-bench results (a list of ``{task_id, reward, info, traj}``): one
    conversation per ``traj``, unchanged.
``tau2``
    tau2-bench simulation results: one conversation per simulation, as the agent
    saw it (see :func:`tau2_messages`).
``openhands``
    An OpenHands event stream (a list of events, an object with a ``history`` of
    events, or an ``output.jsonl`` with one such object per line): see
    :func:`openhands_messages`; OpenDevin-era output, whose ``history`` is a list of
    ``[action, observation]`` pairs: see :func:`opendevin_messages`.

Each source format is one section of this module, registered in :data:`READERS`, which
says in which order the formats are tried.  Files holding several conversations name
them ``NAME#1``, ``NAME#2``, ... (the N-th conversation of the file, counting from 1).
Content that is none of these raises :class:`~rules_compact.errors.InputError` with one
line starting with ``NAME:``; so does a known log with missing keys or values of the
wrong type.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, NamedTuple

from . import jsontext
from .errors import InputError
from .formats import detect_format
from .responses_format import RESPONSES, is_responses_input

__all__ = [
    "Conversation",
    "READERS",
    "SOURCE_FORMATS",
    "read_conversations",
    "parse_conversations",
    "claude_code_messages",
    "codex_items",
    "swe_agent_messages",
    "tau2_messages",
    "openhands_messages",
    "opendevin_messages",
]


@dataclass(frozen=True)
class Conversation:
    """One conversation read from a file, in an API message format.

    ``notes`` say what the conversion did that a user may want to know (lines
    skipped, responses regrouped, calls left without a result ...).  ``envelope``
    is the JSON value the messages came from when the input was already a message
    list or request body (``source_format == "messages"``), so that a result can be
    written back in the same shape; it is ``None`` for converted logs.  ``body_key``
    is the key of the messages in a request body (``messages``, or ``input`` for a
    Responses body); ``one_per_line`` is true when the file held one message per line.
    ``timestamps`` gives, per message, when the log says it was written (seconds since
    the epoch; ``None`` for a message without one), for the logs that record it (Claude
    Code, OpenHands, tau2); it is ``None`` when no message has one.
    """

    name: str
    format: str  # "openai" | "anthropic" | "responses"
    messages: list
    source_format: str
    notes: tuple[str, ...] = ()
    envelope: Any = field(default=None, repr=False, compare=False)
    body_key: str = "messages"
    one_per_line: bool = False
    timestamps: tuple[float | None, ...] | None = field(default=None, repr=False, compare=False)

    def with_messages(self, messages: list) -> Any:
        """The value to write for new ``messages``: the request body for a body, else the list.

        A converted log is never written back as a log: the result is the API
        message list.
        """
        if isinstance(self.envelope, dict):
            return {**self.envelope, self.body_key: messages}
        return messages


class _Bad(InputError):
    """A problem inside a known format; becomes ``InputError("NAME: ...")`` (``NAME:LINE: ...`` in JSONL).

    The converters (``claude_code_messages`` ...) raise it unprefixed when called directly.
    """

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@dataclass
class _Draft:
    messages: list
    source_format: str
    format: str
    notes: list[str] = field(default_factory=list)
    envelope: Any = None
    body_key: str = "messages"
    one_per_line: bool = False
    timestamps: tuple[float | None, ...] | None = None


# --- entry points ---------------------------------------------------------------------------------


def read_conversations(raw: bytes, name: str) -> list[Conversation]:
    """Parse ``raw`` (JSON or JSONL bytes) into conversations; ``name`` labels errors and results."""
    text = _decode(raw, name)
    try:
        data = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        records = _jsonl_records(text, name) if exc.msg == "Extra data" else None
        if records is None:
            raise InputError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        return _finish(name, _guard(name, lambda: _from_records(records)))
    except RecursionError:
        raise InputError(f"{name}: JSON nests too deeply") from None
    return _finish(name, _guard(name, lambda: _from_value(data)))


def parse_conversations(data: Any, name: str) -> list[Conversation]:
    """Like :func:`read_conversations` for one already parsed JSON value."""
    return _finish(name, _guard(name, lambda: _from_value(data)))


def _decode(raw: bytes, name: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (bad byte at offset {exc.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _jsonl_records(text: str, name: str) -> list[tuple[int, Any]] | None:
    """The values of a JSONL text, or ``None`` when its first line is not a JSON value by itself."""
    records = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((lineno, jsontext.loads(line)))
        except json.JSONDecodeError as exc:
            if not records:
                return None
            raise InputError(f"{name}:{lineno}:{exc.colno}: invalid JSON on this line of a JSONL file "
                             f"(one value per line): {exc.msg}") from None
        except RecursionError:
            raise InputError(f"{name}:{lineno}: JSON nests too deeply") from None
    return records


def _guard(name: str, build) -> list[_Draft]:
    """Run a converter; any problem with the content becomes one ``InputError`` line."""
    try:
        return build()
    except _Bad as exc:
        raise InputError(f"{name}:{exc.line}: {exc}" if exc.line is not None else f"{name}: {exc}") from None
    except RecursionError:
        raise InputError(f"{name}: JSON nests too deeply") from None
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:  # a malformed log
        raise InputError(f"{name}: malformed log ({type(exc).__name__}: {exc})") from None


def _finish(name: str, drafts: list[_Draft]) -> list[Conversation]:
    many = len(drafts) > 1
    return [Conversation(f"{name}#{i}" if many else name, d.format, d.messages, d.source_format,
                         tuple(d.notes), d.envelope, d.body_key, d.one_per_line, d.timestamps)
            for i, d in enumerate(drafts, 1)]


def _from_records(records: list[tuple[int, Any]]) -> list[_Draft]:
    """A JSONL file: read whole by the first ``lines`` reader that knows it, else one document per line."""
    if not records:
        raise _Bad("no JSON value in the file")
    for reader in READERS:
        if reader.kind == "lines" and reader.detect(records):
            return reader.read(records)
    drafts: list[_Draft] = []
    for lineno, record in records:
        try:
            drafts += _from_value(record)
        except _Bad as exc:
            raise _Bad(str(exc), exc.line if exc.line is not None else lineno) from None
    return drafts


def _from_value(data: Any) -> list[_Draft]:
    """One JSON value: read by the first ``object`` / ``list`` reader that knows it."""
    kind = "object" if isinstance(data, dict) else "list" if isinstance(data, list) else None
    if kind is None:
        raise _Bad(f"expected a list of messages or an object with a 'messages' list, got {_describe(data)}")
    for reader in READERS:
        if reader.kind == kind and reader.detect(data):
            return reader.read(data)
    if kind == "object":
        keys = ", ".join(list(map(str, data))[:8]) or "none"
        raise _Bad(f"expected a list of messages or an object with a 'messages' list; the object has keys: {keys}")
    if is_responses_input(data):
        i, item = next((i, m) for i, m in enumerate(data) if not _is_item(m))
        raise _Bad(f"a list of Responses items whose item {i} is not a Responses item (an object with a string "
                   f"'type' or 'role'): {_describe(item)}")
    i, item = next((i, m) for i, m in enumerate(data) if not _is_message(m))
    raise _Bad(f"a list whose items are neither messages nor a known log format: item {i} is not a message "
               "(an object with a string 'role')")


# --- shared helpers -------------------------------------------------------------------------------


def _is_message(x: Any) -> bool:
    return isinstance(x, dict) and isinstance(x.get("role"), str)


_TYPE_NAMES = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list"}


def _describe(x: Any) -> str:
    if isinstance(x, dict):
        keys = ", ".join(list(map(str, x))[:8])
        return f"an object with keys {keys}" if keys else "an empty object"
    return "null" if x is None else _TYPE_NAMES.get(type(x), f"a {type(x).__name__}")


def _message_list(value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise _Bad(f"{what} is {_describe(value)}, not a list of messages")
    for i, msg in enumerate(value):
        if not _is_message(msg):
            raise _Bad(f"{what}: message {i} is not a message (an object with a string 'role'): {_describe(msg)}")
    return value


def _counts(counter: Counter, unit: str) -> str:
    """``"3 event_msg, 1 session_meta lines"``: a counter, largest first."""
    parts = [f"{n} {kind}" for kind, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]
    return ", ".join(parts) + f" {unit}"


# --- messages: input already in an API format -----------------------------------------------------


def _is_message_lines(records: list[tuple[int, Any]]) -> bool:
    return all(_is_message(r) for _, r in records)


def _message_lines(records: list[tuple[int, Any]]) -> list[_Draft]:
    messages = [r for _, r in records]
    return [_Draft(messages, "messages", detect_format(messages), ["JSONL with one message per line"],
                   one_per_line=True)]


def _message_body(data: dict) -> list[_Draft]:
    messages = data["messages"]
    if not isinstance(messages, list):
        raise _Bad(f"'messages' must be a list, got {_describe(messages)}")
    for i, msg in enumerate(messages):
        if not _is_message(msg):
            raise _Bad(f"message {i} is not a message (an object with a string 'role'); "
                       "not a known conversation format")
    return [_Draft(messages, "messages", detect_format(messages), envelope=data)]


def _is_message_list(data: list) -> bool:
    return all(_is_message(m) for m in data)


def _message_list_draft(data: list) -> list[_Draft]:
    return [_Draft(data, "messages", detect_format(data), envelope=data)]


# Responses API input: items are messages (a string ``role``) or typed items (a string ``type``:
# function_call, function_call_output, reasoning ...); see rules_compact.responses_format.

def _is_item(x: Any) -> bool:
    return isinstance(x, dict) and (isinstance(x.get("type"), str) or isinstance(x.get("role"), str))


def _is_item_lines(records: list[tuple[int, Any]]) -> bool:
    items = [r for _, r in records]
    return all(_is_item(r) for r in items) and is_responses_input(items)


def _item_lines(records: list[tuple[int, Any]]) -> list[_Draft]:
    return [_Draft([r for _, r in records], "messages", "responses", ["JSONL with one Responses item per line"],
                   one_per_line=True)]


def _is_item_list(data: list) -> bool:
    return all(_is_item(m) for m in data) and is_responses_input(data)


def _item_list(data: list) -> list[_Draft]:
    return [_Draft(data, "messages", "responses", envelope=data)]


def _is_responses_body(data: dict) -> bool:
    return "input" in data and "messages" not in data


def _responses_body(data: dict) -> list[_Draft]:
    """A Responses request body (``{"model", "input": [...], "instructions", "tools" ...}``): its ``input``."""
    items = data["input"]
    if not isinstance(items, list):
        raise _Bad(f"'input' must be a list of Responses items, got {_describe(items)}")
    for i, item in enumerate(items):
        if not _is_item(item):
            raise _Bad(f"'input' item {i} is not a Responses item (an object with a string 'type' or 'role'): "
                       f"{_describe(item)}")
    return [_Draft(items, "messages", "responses", envelope=data, body_key="input")]


# --- mini-swe-agent -------------------------------------------------------------------------------


def _is_mini_swe_agent(data: dict) -> bool:
    fmt = data.get("trajectory_format")
    return isinstance(fmt, str) and fmt.startswith("mini-swe-agent")


def _mini_swe_agent(data: dict) -> list[_Draft]:
    messages = _message_list(data.get("messages"), "'messages'")
    sent = [m for m in messages if m["role"] != "exit"]
    notes = [f"left out the closing exit message{'s' if len(messages) - len(sent) > 1 else ''} "
             "(no model saw it)"] if len(sent) < len(messages) else []
    return [_Draft(sent, "mini-swe-agent", "openai", notes)]


# --- tau-bench ------------------------------------------------------------------------------------


def _is_tau_bench_result(data: dict) -> bool:
    return isinstance(data.get("traj"), list) and "task_id" in data


def _is_tau_bench_list(data: list) -> bool:
    return all(isinstance(r, dict) and isinstance(r.get("traj"), list) for r in data)


def _tau_bench_draft(result: dict, i: int) -> _Draft:
    messages = _message_list(result.get("traj"), f"tau-bench result {i}: 'traj'")
    notes = []
    if isinstance(result.get("task_id"), (int, str)):
        notes.append(f"task {result['task_id']}" + (f", trial {result['trial']}"
                                                     if isinstance(result.get("trial"), int) else ""))
    return _Draft(messages, "tau-bench", "openai", notes)


# --- Claude Code ----------------------------------------------------------------------------------

CLAUDE_CODE_TYPES = frozenset({"user", "assistant", "system", "progress", "summary", "file-history-snapshot",
                               "queue-operation", "attachment"})
CLAUDE_CODE_KEYS = ("sessionId", "uuid", "parentUuid", "leafUuid", "messageId")


def _is_claude_code_line(x: Any) -> bool:
    return (isinstance(x, dict) and isinstance(x.get("type"), str) and x["type"] in CLAUDE_CODE_TYPES
            and any(k in x for k in CLAUDE_CODE_KEYS))


def _is_claude_code(records: list[tuple[int, Any]]) -> bool:
    return any(_is_claude_code_line(r) for _, r in records)


def _claude_code(records: list[tuple[int, Any]]) -> list[_Draft]:
    messages, notes, times = _claude_code_timed(records)
    return [_Draft(messages, "claude-code", "anthropic", notes, timestamps=times)]


BLOCK_FIELDS = {
    "text": ("type", "text"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "tool_use": ("type", "id", "name", "input"),
    "tool_result": ("type", "tool_use_id", "content", "is_error"),
    "image": ("type", "source"),
    "document": ("type", "source", "title", "context", "citations"),
}


def _clean_block(block: Any) -> dict:
    """A content block restricted to its Messages API fields (unknown block types are kept whole)."""
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if not isinstance(block, dict):
        raise _Bad(f"a content block is {_describe(block)}, not an object")
    fields = BLOCK_FIELDS.get(block["type"]) if isinstance(block.get("type"), str) else None
    if fields is None:
        return block
    out = {k: block[k] for k in fields if k in block}
    if out["type"] == "tool_result" and isinstance(out.get("content"), list):
        out["content"] = [_clean_block(b) for b in out["content"]]
    return out


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise _Bad(f"message content is {_describe(content)}, not a string or a list of blocks")
    return [_clean_block(b) for b in content]


def claude_code_messages(records: Iterable[tuple[int, Any]]) -> tuple[list, list[str]]:
    """Anthropic Messages from the lines ``(line number, object)`` of a Claude Code JSONL file.

    * Only ``user`` / ``assistant`` lines hold conversation; ``progress``, ``system``,
      ``file-history-snapshot``, ``queue-operation``, ``summary`` ... lines are skipped.
    * Sidechain lines (``isSidechain: true``, subagent conversations) are skipped,
      unless every conversation line is one: then the file is a subagent's own log
      (``subagents/agent-*.jsonl``) and is read whole.
    * The conversation starts after the last ``compact_boundary`` (a ``system`` line
      with that subtype): Claude Code restarted the conversation there from the
      summary user message that follows it.
    * The main chain: the last conversation line and its ``parentUuid`` ancestors,
      plus the lines that belong to the same responses (the other blocks of an
      assistant ``message.id``, the ``tool_result`` lines answering its calls; with
      parallel tool use Claude Code parents each result on its own ``tool_use``
      line, so these hang off the chain).  Lines of abandoned branches (a rewound or
      edited message) are left out.  When the ``parentUuid`` links cannot be
      followed (a line without ``uuid``, a parent missing from the file), every
      conversation line is taken in file order.
    * Claude Code writes one line per content block: assistant lines sharing a
      ``message.id`` are merged into one message.  When the ``tool_result`` of the
      first call of a parallel batch was written before the batch's later
      ``tool_use`` lines, those blocks still join their message and the result moves
      after it, so one API response is one assistant message followed by one user
      message with its results (recorded order kept).
    * Consecutive user lines are merged into one user message, ``tool_result`` blocks
      first; a string content becomes a text block.
    * Every message is ``{"role", "content": [blocks]}`` with only API fields in the
      blocks (``toolUseResult`` copies, ``caller``, and all line metadata dropped).
    """
    messages, notes, _ = _claude_code_timed(records)
    return messages, notes


def _claude_code_timed(records: Iterable[tuple[int, Any]]) -> tuple[list, list[str], tuple | None]:
    """:func:`claude_code_messages`, and each message's time: that of its first line."""
    entries = [(n, d) for n, d in records]
    for n, d in entries:
        if not isinstance(d, dict):
            raise _Bad(f"{_describe(d)}, not a Claude Code log entry", n)
    notes: list[str] = []

    def is_conv(d: dict) -> bool:
        return d.get("type") in ("user", "assistant") and isinstance(d.get("message"), dict)

    for n, d in entries:
        if d.get("type") in ("user", "assistant") and not isinstance(d.get("message"), dict):
            raise _Bad(f"a '{d['type']}' line without a 'message' object", n)
    conv_all = [(n, d) for n, d in entries if is_conv(d)]
    keep_side = bool(conv_all) and all(d.get("isSidechain") is True for _, d in conv_all)

    def on_side(d: dict) -> bool:
        return (d.get("isSidechain") is True) == keep_side

    start = 0
    for i, (n, d) in enumerate(entries):
        if d.get("type") == "system" and d.get("subtype") == "compact_boundary" and on_side(d):
            start = i + 1
    if start:
        notes.append(f"started after the compact_boundary on line {entries[start - 1][0]} "
                     "(earlier lines were summarised by Claude Code)")
    segment = entries[start:]
    conv = [(n, d) for n, d in segment if is_conv(d) and on_side(d)]
    skipped_side = sum(1 for _, d in segment if is_conv(d) and not on_side(d))
    if skipped_side:
        notes.append(f"skipped {skipped_side} sidechain (subagent) lines")
    if keep_side:
        notes.append("subagent log: every line is a sidechain line")

    chosen = _main_chain(entries[max(start - 1, 0):], conv, notes)
    messages, times = _merge_claude_code(chosen, notes)
    return messages, notes, _timestamps(times)


def _main_chain(lines: list[tuple[int, dict]], conv: list[tuple[int, dict]],
                notes: list[str]) -> list[tuple[int, dict]]:
    """The lines of ``conv`` on the branch that ends with its last line (see :func:`claude_code_messages`)."""
    if not conv or not all(isinstance(d.get("uuid"), str) for _, d in conv):
        return conv
    by_uuid: dict[str, dict] = {}
    for _, d in lines:
        if isinstance(d.get("uuid"), str):
            by_uuid.setdefault(d["uuid"], d)
    chain: set[str] = set()
    u: Any = conv[-1][1]["uuid"]
    while isinstance(u, str) and u not in chain and u in by_uuid:
        chain.add(u)
        u = by_uuid[u].get("parentUuid")
    if isinstance(u, str) and conv[0][1]["uuid"] not in chain:
        # The walk stopped at a parent missing from the file (or a loop) before the first
        # conversation line: the links cannot tell the branches apart.
        notes.append("parentUuid links lead out of the file: conversation lines taken in file order")
        return conv
    selected = {id(d) for _, d in conv if d["uuid"] in chain}
    while True:  # add the other lines of the responses on the chain, and their results
        resp_ids, use_ids = set(), set()
        for _, d in conv:
            if id(d) in selected and d["type"] == "assistant":
                msg = d["message"]
                if isinstance(msg.get("id"), str):
                    resp_ids.add(msg["id"])
                content = msg.get("content")
                if isinstance(content, list):
                    use_ids.update(b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
                                   and isinstance(b.get("id"), str))
        added = False
        for _, d in conv:
            if id(d) in selected:
                continue
            msg = d["message"]
            content = msg.get("content")
            if d["type"] == "assistant":
                attach = isinstance(msg.get("id"), str) and msg["id"] in resp_ids
            else:
                attach = isinstance(content, list) and any(
                    isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
                    and b["tool_use_id"] in use_ids for b in content)
            if attach:
                selected.add(id(d))
                added = True
        if not added:
            break
    dropped = len(conv) - len(selected)
    if dropped:
        notes.append(f"skipped {dropped} conversation lines off the main chain (abandoned branches)")
    return [(n, d) for n, d in conv if id(d) in selected]


def _merge_claude_code(conv: list[tuple[int, dict]], notes: list[str]) -> tuple[list, list]:
    messages: list[dict] = []
    times: list[Any] = []  # the timestamp of each message's first line
    ids: list[Any] = []  # message.id of each assistant output message (None for user)
    regrouped = 0
    for n, d in conv:
        msg = d["message"]
        role = d["type"]
        try:
            blocks = _blocks(msg)
        except _Bad as exc:
            raise _Bad(str(exc), n) from None
        if role == "assistant":
            mid = msg.get("id")
            if messages and messages[-1]["role"] == "assistant" and mid is not None and ids[-1] == mid:
                messages[-1]["content"].extend(blocks)
                continue
            if (mid is not None and len(messages) >= 2 and messages[-1]["role"] == "user"
                    and messages[-2]["role"] == "assistant" and ids[-2] == mid and messages[-1]["content"]
                    and all(b.get("type") == "tool_result" for b in messages[-1]["content"])):
                messages[-2]["content"].extend(blocks)  # a late block of a response whose first result came early
                regrouped += 1
                continue
            messages.append({"role": "assistant", "content": blocks})
            ids.append(mid)
            times.append(d.get("timestamp"))
        elif messages and messages[-1]["role"] == "user":
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": "user", "content": blocks})
            ids.append(None)
            times.append(d.get("timestamp"))
    if regrouped:
        notes.append(f"regrouped {regrouped} assistant lines written after a tool_result of the same response")
    reordered = 0
    for m in messages:
        if m["role"] == "user":
            results = [b for b in m["content"] if b.get("type") == "tool_result"]
            others = [b for b in m["content"] if b.get("type") != "tool_result"]
            if results and m["content"] != results + others:
                m["content"] = results + others
                reordered += 1
    if reordered:
        notes.append(f"moved tool_result blocks first in {reordered} user messages")
    same = sum(1 for a, b in zip(messages, messages[1:]) if a["role"] == b["role"] == "assistant")
    if same:
        notes.append(f"{same} pairs of consecutive assistant messages (responses with different ids)")
    return messages, times


def _seconds(value: Any) -> float | None:
    """An ISO 8601 timestamp as seconds since the epoch (UTC when it names no zone), else None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def _timestamps(values: Iterable[Any]) -> tuple[float | None, ...] | None:
    """Per-message times from logged timestamps; None when no message has one."""
    times = tuple(_seconds(v) for v in values)
    return times if any(t is not None for t in times) else None


# --- SWE-agent ------------------------------------------------------------------------------------


def _is_swe_agent(data: dict) -> bool:
    return "trajectory" in data and "history" in data


def _swe_agent(data: dict) -> list[_Draft]:
    messages, notes = swe_agent_messages(data.get("history"))
    return [_Draft(messages, "swe-agent", "openai", notes)]



def swe_agent_messages(history: Any) -> tuple[list, list[str]]:
    """The messages SWE-agent sends for a ``.traj`` ``history`` (its ``_history_to_messages``).

    A ``tool`` entry becomes ``{"role", "content", "tool_call_id": tool_call_ids[0]}``
    (SWE-agent runs one call per observation); an entry with ``tool_calls`` keeps
    them (and ``thinking_blocks``); every other entry keeps ``role`` and
    ``content``; ``cache_control`` is kept where present.  ``agent``,
    ``message_type``, ``thought``, ``action``, ``is_demo`` ... are dropped.
    """
    if not isinstance(history, list):
        raise _Bad(f"SWE-agent trajectory: 'history' is {_describe(history)}, not a list")
    messages, notes, extra_ids, no_ids = [], [], 0, 0
    for i, item in enumerate(history):
        if not _is_message(item):
            raise _Bad(f"SWE-agent history entry {i} is not a message (an object with a string 'role'): "
                       f"{_describe(item)}")
        role = item["role"]
        out: dict[str, Any] = {"role": role, "content": item.get("content")}
        if role == "tool":
            ids = item.get("tool_call_ids")
            if isinstance(ids, list) and ids and isinstance(ids[0], str):
                out["tool_call_id"] = ids[0]
                extra_ids += len(ids) - 1
            elif isinstance(item.get("tool_call_id"), str):
                out["tool_call_id"] = item["tool_call_id"]
            else:
                no_ids += 1
        else:
            calls = item.get("tool_calls")
            if isinstance(calls, list) and calls:
                out["tool_calls"] = calls
                if item.get("thinking_blocks"):
                    out["thinking_blocks"] = item["thinking_blocks"]
            elif calls not in (None, []):
                raise _Bad(f"SWE-agent history entry {i}: 'tool_calls' is {_describe(calls)}, not a list")
        if "cache_control" in item:
            out["cache_control"] = item["cache_control"]
        messages.append(out)
    if no_ids:
        notes.append(f"{no_ids} tool messages without tool_call_ids (orphan results)")
    if extra_ids:
        notes.append(f"{extra_ids} extra ids in tool_call_ids ignored (SWE-agent uses the first)")
    if not any(m["role"] == "tool" for m in messages):
        notes.append("text-action trajectory: actions are in assistant text, observations are user messages")
    return messages, notes


# --- tau2 -----------------------------------------------------------------------------------------


def _is_tau2(data: dict) -> bool:
    return "simulations" in data


def _tau2(data: dict) -> list[_Draft]:
    sims = data.get("simulations")
    if not isinstance(sims, list):
        raise _Bad(f"tau2 results: 'simulations' is {_describe(sims)}, not a list")
    drafts = []
    for i, sim in enumerate(sims):
        if not isinstance(sim, dict):
            raise _Bad(f"tau2 results: simulation {i} is {_describe(sim)}, not an object")
        try:
            messages, notes, times = _tau2_timed(sim.get("messages"))
        except _Bad as exc:
            raise _Bad(f"tau2 simulation {i}: {exc}") from None
        sim_id = sim.get("id") or sim.get("task_id")
        drafts.append(_Draft(messages, "tau2", "openai",
                             ([f"simulation {sim_id}"] if isinstance(sim_id, str) else []) + notes, timestamps=times))
    return drafts



def tau2_messages(raw_messages: Any) -> tuple[list, list[str]]:
    """One tau2 simulation's messages as the agent saw them, in OpenAI format.

    tau2 stores the whole exchange: the agent, the simulated user and both their
    tools.  The agent never sees the user simulator's own tool calls (``user``
    messages with ``tool_calls``) nor their results (``tool`` messages with
    ``requestor: "user"``): these are left out.  Tool calls become
    ``{"id", "type": "function", "function": {"name", "arguments": JSON string}}``
    (tau2 stores the arguments as an object), a tool message's ``id`` becomes
    ``tool_call_id`` and ``error: true`` becomes ``is_error: true``; ``turn_idx``,
    ``timestamp``, ``cost``, ``usage``, ``raw_data`` are dropped.  The agent's
    system prompt is not stored in the file, so there is no system message.
    """
    messages, notes, _ = _tau2_timed(raw_messages)
    return messages, notes


def _tau2_timed(raw_messages: Any) -> tuple[list, list[str], tuple | None]:
    """:func:`tau2_messages`, and each message's ``timestamp``."""
    if not isinstance(raw_messages, list):
        raise _Bad(f"'messages' is {_describe(raw_messages)}, not a list")
    messages: list[dict] = []
    times: list[Any] = []
    user_calls = user_results = 0
    for i, m in enumerate(raw_messages):
        if not _is_message(m):
            raise _Bad(f"message {i} is not a message (an object with a string 'role'): {_describe(m)}")
        role = m["role"]
        calls = m.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise _Bad(f"message {i}: 'tool_calls' is {_describe(calls)}, not a list")
        if role == "user" and calls:
            user_calls += len(calls)
            continue
        if role == "tool":
            if m.get("requestor") == "user":
                user_results += 1
                continue
            if not isinstance(m.get("id"), str):
                raise _Bad(f"message {i}: a tool message without a string 'id'")
            out: dict[str, Any] = {"role": "tool", "tool_call_id": m["id"], "content": m.get("content")}
            if m.get("error") is True:
                out["is_error"] = True
            messages.append(out)
            times.append(m.get("timestamp"))
            continue
        out = {"role": role, "content": m.get("content")}
        if role == "assistant" and calls:
            out["tool_calls"] = [_tau2_call(c, i) for c in calls]
        messages.append(out)
        times.append(m.get("timestamp"))
    notes = []
    if user_calls or user_results:
        notes.append(f"left out the user simulator's {user_calls} tool calls and {user_results} tool results "
                     "(the agent never saw them)")
    return messages, notes, _timestamps(times)


def _tau2_call(call: Any, i: int) -> dict:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
        raise _Bad(f"message {i}: a tool call without a string 'id' and 'name': {_describe(call)}")
    args = call.get("arguments", {})
    return {"id": call["id"], "type": "function",
            "function": {"name": call["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}}


# --- OpenHands ------------------------------------------------------------------------------------


def _is_event(x: Any) -> bool:
    return (isinstance(x, dict) and "role" not in x
            and (isinstance(x.get("action"), str) or isinstance(x.get("observation"), str)))


def _is_openhands_output(data: dict) -> bool:
    return isinstance(data.get("history"), list) and all(_is_event(e) for e in data["history"])


def _is_event_list(data: list) -> bool:
    return all(_is_event(e) for e in data)


def _openhands(events: list) -> list[_Draft]:
    messages, notes, times = _openhands_timed(events)
    return [_Draft(messages, "openhands", "openai", notes, timestamps=times)]


def _is_opendevin_output(data: dict) -> bool:
    history = data.get("history")
    return isinstance(history, list) and bool(history) and all(isinstance(pair, list) for pair in history)


def _opendevin(data: dict) -> list[_Draft]:
    messages, notes = opendevin_messages(data["history"])
    return [_Draft(messages, "openhands", "openai", notes)]


# Actions and observations that ConversationMemory never turns into messages.
OPENHANDS_SKIPPED_ACTIONS = frozenset({"change_agent_state", "recall", "condensation", "condensation_request",
                                       "null", "reject", "pause", "resume", "stop", "start"})
OPENHANDS_SKIPPED_OBSERVATIONS = frozenset({"null", "agent_state_changed", "recall", "condensation"})
# Bookkeeping fields of a legacy event's arguments, not part of a tool call's input.
OPENHANDS_NOT_ARGS = frozenset({"action", "observation", "thought", "keep_prompt", "is_confirmed",
                                "confirmation_state", "action_risk", "security_risk", "hidden", "blocking",
                                "is_input", "wait_for_response", "images_urls", "image_urls", "id", "source",
                                "timestamp", "cause", "tool_call_metadata", "llm_metrics", "args", "extras",
                                "success"})


class _OpenHands:
    """State of an OpenHands event-stream conversion (see :func:`openhands_messages`)."""

    def __init__(self) -> None:
        self.out: list[dict] = []
        self.notes: list[str] = []
        self.groups: dict[Any, dict] = {}  # response id -> {"msg", "calls", "results"}
        self.owner: dict[str, Any] = {}  # tool call id -> response id of its pending group
        self.by_event: dict[Any, str] = {}  # action event id -> tool call id
        self.open_legacy: str | None = None  # the last positional call still waiting for its observation
        self.immediate: set[str] = set()  # call ids already written out (positional calls)
        self.finished: set[str] = set()  # finish calls: answered by ending the run
        self.messages_seen = 0
        self.orphans = self.skipped = 0
        self.now: Any = None  # the timestamp of the event being read
        self.stamps: dict[int, tuple[dict, Any]] = {}  # id(message) -> (message, timestamp)

    def stamp(self, msg: dict, when: Any) -> None:
        """Record when ``msg`` was written (the first stamp holds; the message is kept alive with it)."""
        self.stamps.setdefault(id(msg), (msg, when))

    # groups of calls made by one model response
    def emit(self, key: Any) -> None:
        """Write out a response's assistant message and the results it got, in call order."""
        group = self.groups.pop(key)
        for c in group["calls"]:
            self.owner.pop(c["id"], None)
        calls = [c for c in group["calls"] if c["id"] not in self.finished]
        if not calls and not group["msg"].get("content"):
            return
        msg = dict(group["msg"])
        if calls:
            msg["tool_calls"] = calls
        self.stamp(msg, group["time"])  # when the model responded, not when the last result came
        self.out.append(msg)
        missing = [c["id"] for c in calls if c["id"] not in group["results"]]
        if missing:
            self.notes.append(f"calls without an observation (dangling): {', '.join(missing)}")
        self.out += [group["results"][c["id"]] for c in calls if c["id"] in group["results"]]

    def flush(self) -> None:
        for key in list(self.groups):
            self.emit(key)

    def complete(self, key: Any) -> None:
        group = self.groups[key]
        if all(c["id"] in group["results"] or c["id"] in self.finished for c in group["calls"]):
            self.emit(key)

    def action(self, i: int, e: dict) -> None:
        kind = e["action"]
        args = e["args"] if isinstance(e.get("args"), dict) else {k: v for k, v in e.items() if k != "action"}
        source = e.get("source")
        tcm = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else None
        if kind in OPENHANDS_SKIPPED_ACTIONS:
            return
        if kind == "system":
            self.out.append({"role": "system", "content": _text(args.get("content"))})
            return
        if kind == "message":
            if source in ("user", "agent"):
                role = "user" if source == "user" else "assistant"
            else:  # legacy events carry no source: the first message is the task, later ones the agent's
                role = "user" if self.messages_seen == 0 else "assistant"
            self.messages_seen += 1
            content = args.get("content")
            if not isinstance(content, str):
                content = _text(e.get("message"))
            self.out.append({"role": role, "content": content})
            return
        if kind == "finish":
            self.finish(args, tcm)
            return
        if source == "user" and tcm is None:
            command = args.get("command") if isinstance(args.get("command"), str) else None
            text = f"User executed the command:\n{command}" if command is not None else _text(e.get("message"))
            if text:
                self.out.append({"role": "user", "content": text})
            return
        if tcm is not None and isinstance(tcm.get("tool_call_id"), str):
            self.tool_action(e, args, tcm)
        else:
            self.positional_action(i, e, kind, args)

    def finish(self, args: dict, tcm: dict | None) -> None:
        content = _response_message(tcm).get("content") if tcm else None
        parts = []
        for text in (args.get("thought"), content, args.get("final_thought")):
            if isinstance(text, str) and text.strip() and not any(text.strip() in p for p in parts):
                parts.append(text.strip())
        if tcm and isinstance(tcm.get("tool_call_id"), str):
            self.finished.add(tcm["tool_call_id"])
            key = self.owner.get(tcm["tool_call_id"])
            if key is not None:
                self.complete(key)
        self.flush()
        if parts:
            self.out.append({"role": "assistant", "content": "\n".join(parts)})

    def tool_action(self, e: dict, args: dict, tcm: dict) -> None:
        call_id = tcm["tool_call_id"]
        response = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else {}
        key = response.get("id") if isinstance(response.get("id"), str) else call_id
        if key not in self.groups:
            self.flush()  # a new model response: the previous one got all the results it will get
            message = _response_message(tcm)
            content = message.get("content")
            calls = [_openai_call(c) for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            self.groups[key] = {"msg": {"role": "assistant",
                                        "content": content if isinstance(content, str) and content.strip() else None},
                                "calls": [c for c in calls if c is not None], "results": {}, "time": self.now}
        group = self.groups[key]
        if all(c["id"] != call_id for c in group["calls"]):
            name = tcm.get("function_name") if isinstance(tcm.get("function_name"), str) else e["action"]
            group["calls"].append({"id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": json.dumps(_call_args(args))}})
        for c in group["calls"]:
            self.owner[c["id"]] = key
        if _event_id(e.get("id")) is not None:
            self.by_event[e["id"]] = call_id

    def positional_action(self, i: int, e: dict, kind: str, args: dict) -> None:
        self.flush()
        call_id = f"openhands-event-{e['id'] if _event_id(e.get('id')) is not None else i}"
        thought = args.get("thought")
        self.out.append({"role": "assistant",
                         "content": thought if isinstance(thought, str) and thought.strip() else None,
                         "tool_calls": [{"id": call_id, "type": "function",
                                         "function": {"name": kind, "arguments": json.dumps(_call_args(args))}}]})
        self.immediate.add(call_id)
        self.open_legacy = call_id
        if _event_id(e.get("id")) is not None:
            self.by_event[e["id"]] = call_id

    def observation(self, i: int, e: dict) -> None:
        kind = e["observation"]
        if kind in OPENHANDS_SKIPPED_OBSERVATIONS:
            if kind == "recall" and _text(e.get("content")):
                self.skipped += 1
            return
        text = _text(e.get("content"))
        tcm = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else None
        call_id = tcm.get("tool_call_id") if tcm else None
        if not isinstance(call_id, str):
            cause = _event_id(e.get("cause"))
            call_id = self.by_event.get(cause) if cause is not None else None
        if call_id is None and "id" not in e and "cause" not in e and self.open_legacy is not None:
            call_id = self.open_legacy  # legacy: an observation answers the action just before it
        if call_id is None:
            if kind == "error":
                text += "\n[Error occurred in processing last action]"
            if text:
                self.out.append({"role": "user", "content": text})
            return
        if call_id == self.open_legacy:
            self.open_legacy = None
        result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": text}
        if kind == "error":
            result["is_error"] = True
        self.stamp(result, self.now)
        key = self.owner.get(call_id)
        if key is not None and key in self.groups and call_id not in self.groups[key]["results"]:
            self.groups[key]["results"][call_id] = result
            self.complete(key)
            return
        if call_id not in self.immediate:
            self.orphans += 1
        self.out.append(result)

    def run(self, events: list) -> tuple[list, list[str], tuple | None]:
        for i, e in enumerate(events):
            if not isinstance(e, dict):
                raise _Bad(f"event {i} is {_describe(e)}, not an object")
            self.now, written = e.get("timestamp"), len(self.out)
            try:
                if isinstance(e.get("action"), str):
                    self.action(i, e)
                elif isinstance(e.get("observation"), str):
                    self.observation(i, e)
                else:
                    raise _Bad(f"neither an action nor an observation: {_describe(e)}")
            except _Bad as exc:
                raise _Bad(f"event {i}: {exc}") from None
            for msg in self.out[written:]:
                self.stamp(msg, self.now)
        written = len(self.out)
        self.flush()
        for msg in self.out[written:]:
            self.stamp(msg, self.now)
        if self.orphans:
            self.notes.append(f"{self.orphans} observations answer no recorded action (orphans)")
        if self.skipped:
            self.notes.append(f"left out {self.skipped} recall observations (workspace context / microagent "
                              "knowledge, rendered by OpenHands' prompt templates)")
        if self.immediate:
            self.notes.append(f"{len(self.immediate)} actions without tool_call_metadata paired positionally "
                              "with the observation that follows them (ids openhands-event-N)")
        return self.out, self.notes, _timestamps(self.stamps[id(m)][1] for m in self.out)


def _event_id(value: Any) -> Any:
    """An event id usable as a key (OpenHands ids are integers), else ``None``."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _response_message(tcm: dict | None) -> dict:
    response = tcm.get("model_response") if tcm else None
    choices = response.get("choices") if isinstance(response, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return {}


def _openai_call(call: dict) -> dict | None:
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    if not isinstance(call.get("id"), str):
        return None
    args = fn.get("arguments", "{}")
    return {"id": call["id"], "type": "function",
            "function": {"name": fn.get("name") if isinstance(fn.get("name"), str) else "",
                         "arguments": args if isinstance(args, str) else json.dumps(args)}}


def _call_args(args: dict) -> dict:
    return {k: v for k, v in args.items() if k not in OPENHANDS_NOT_ARGS}


def openhands_messages(events: Any) -> tuple[list, list[str]]:
    """OpenAI messages from an OpenHands event stream, as OpenHands' ConversationMemory builds them.

    * ``system`` actions become the system message; ``message`` actions a user
      message (``source: user``) or an assistant message (``source: agent``).
    * An agent action with ``tool_call_metadata`` is a tool call: the assistant
      message is the metadata's ``model_response`` (its text and *all* its
      ``tool_calls``, so parallel calls of one response are one message); the
      observations carrying the same ``tool_call_id`` (or whose ``cause`` is the
      action's event id) become ``role: tool`` messages, written right after the
      assistant message once every call of the response has its observation, or
      when the next response starts (a call never answered stays dangling).
    * ``finish`` ends the run: an assistant text message (its thought, the
      response text and the final thought), no tool call, as OpenHands sends it.
    * Observations answering no tool call (an ``error`` for a malformed call, a
      command the user ran) become user messages; ``error`` observations are
      tool results with ``is_error: true`` when they answer a call.
    * Legacy events (mid-2024: no ``id``, ``source`` or ``tool_call_metadata``,
      arguments inlined) are paired by position: each action becomes an assistant
      message with one call ``openhands-event-N`` (N: the event's index; name: the
      action type; arguments: the action's fields minus bookkeeping like
      ``thought``, which becomes the message text), and the observation right after
      it is its result; an observation not preceded by an unanswered action is a
      user message.  Without ``source``, the first message event is the user's
      task and later ones are the agent's.
    * ``agent_state_changed``, ``null``, ``recall`` and state-change events carry
      no conversation and are left out.  Tool message content is the observation's
      ``content`` as logged (OpenHands appends a few status lines, such as the exit
      code, when it renders a command's output for the model).
    """
    messages, notes, _ = _openhands_timed(events)
    return messages, notes


def _openhands_timed(events: Any) -> tuple[list, list[str], tuple | None]:
    """:func:`openhands_messages`, and each message's time: that of the event it came from (an
    assistant message with calls: the first of its actions)."""
    if not isinstance(events, list):
        raise _Bad(f"OpenHands history is {_describe(events)}, not a list of events")
    return _OpenHands().run(events)


def opendevin_messages(history: Any) -> tuple[list, list[str]]:
    """OpenAI messages from an OpenDevin-era (mid-2024) ``history``: a list of ``[action, observation]`` pairs.

    OpenDevin's agents turned each pair into the action's message and then its
    observation's; the pairs are read as the event stream ``action, observation, ...``
    and converted by :func:`openhands_messages`, whose legacy positional pairing makes
    the observation of a pair the result of its action.  Other keys of the output line
    (``instruction``, ``metadata``, a ``messages`` list of plain strings ...) are ignored.
    """
    if not isinstance(history, list):
        raise _Bad(f"OpenDevin history is {_describe(history)}, not a list of [action, observation] pairs")
    events: list = []
    for i, pair in enumerate(history):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], dict)
                and isinstance(pair[0].get("action"), str) and isinstance(pair[1], dict)
                and isinstance(pair[1].get("observation"), str)):
            raise _Bad(f"OpenDevin history pair {i} is not [action, observation]: {_describe(pair)}")
        events += pair
    messages, notes = openhands_messages(events)
    return messages, [f"OpenDevin output: {len(history)} [action, observation] pairs"] + notes


# --- OpenAI Codex CLI rollouts --------------------------------------------------------------------

CODEX_LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
#: Items a rollout records that Codex never sends to the model.
CODEX_NOT_SENT = frozenset({"ghost_snapshot", "compaction_trigger"})
#: Item types the ``responses`` format decides on; every other item passes through untouched.
CODEX_DECIDED = frozenset({"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                           "custom_tool_call_output", "local_shell_call", "local_shell_call_output"})
#: How the user messages Codex writes itself (instructions, environment) begin: context, not the user's words.
CODEX_CONTEXT_PREFIXES = ("<user_instructions>", "<environment_context>", "# AGENTS.md instructions")
CODEX_SUMMARY_BUDGET = 20_000  # tokens (4 bytes each) of the user's messages Codex keeps when it compacts


def _is_codex_line(x: Any) -> bool:
    return isinstance(x, dict) and x.get("type") in CODEX_LINE_TYPES and "payload" in x


def _is_codex_legacy(records: list[tuple[int, Any]]) -> bool:
    """A meta line (``id``, ``timestamp``, ``instructions`` ...), then items and ``record_type`` lines."""
    first = records[0][1]
    return (len(records) > 1 and isinstance(first, dict) and isinstance(first.get("id"), str) and "timestamp" in first
            and not any(k in first for k in ("type", "role", "record_type", "payload"))
            and all(_is_item(r) or (isinstance(r, dict) and "record_type" in r) for _, r in records[1:]))


def _is_codex(records: list[tuple[int, Any]]) -> bool:
    return _is_codex_legacy(records) or any(_is_codex_line(r) for _, r in records)


def _codex(records: list[tuple[int, Any]]) -> list[_Draft]:
    items, notes = codex_items(records)
    return [_Draft(items, "codex", "responses", notes)]


def _text_of(content: Any) -> str:
    """Codex's text of a message: its non-empty text parts joined by newlines."""
    if isinstance(content, str):
        return content
    parts = [p.get("text") for p in content if isinstance(p, dict)] if isinstance(content, list) else []
    return "\n".join(t for t in parts if isinstance(t, str) and t)


def _is_codex_message(item: Any, role: str) -> bool:
    return (isinstance(item, dict) and item.get("role") == role
            and (item.get("type") == "message" or "type" not in item))


def _is_codex_context(item: Any) -> bool:
    """An item of the initial context Codex builds from its settings: a developer message, instructions, environment."""
    return _is_codex_message(item, "developer") or (
        _is_codex_message(item, "user") and _text_of(item.get("content")).lstrip().startswith(CODEX_CONTEXT_PREFIXES))


def _codex_user_text(item: Any) -> str | None:
    """The text of a message the user wrote (not context), else ``None``."""
    if not _is_codex_message(item, "user") or _is_codex_context(item):
        return None
    return _text_of(item.get("content"))


def _codex_user_message(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


class _Codex:
    """State of a rollout conversion (see :func:`codex_items`)."""

    def __init__(self) -> None:
        self.history: list = []
        self.notes: list[str] = []
        self.skipped: Counter = Counter()  # line kind -> lines left out
        self.dropped: Counter = Counter()  # item type -> items never sent
        self.summaries: set[str] = set()  # summary messages inserted by compactions
        self.start: str | None = None  # how the history after the last compacted line was made
        self.legacy = False

    def record(self, item: Any, line: int, what: str) -> None:
        if not _is_item(item):
            raise _Bad(f"{what} is {_describe(item)}, not a Responses item (an object with a string 'type' or 'role')",
                       line)
        kind = item.get("type")
        if kind in CODEX_NOT_SENT or _is_codex_message(item, "system"):
            self.dropped[kind if kind in CODEX_NOT_SENT else "system message"] += 1
            return
        self.history.append(item)

    def compacted(self, payload: Any, line: int) -> None:
        if not isinstance(payload, dict):
            raise _Bad(f"a compacted line whose payload is {_describe(payload)}, not an object", line)
        self.dropped.clear()  # what was before is replaced as a whole
        replacement = payload.get("replacement_history")
        if isinstance(replacement, list):
            self.history = []
            for i, item in enumerate(replacement):
                self.record(item, line, f"compacted: replacement_history item {i}")
            self.start = (f"started at the compacted line {line}: Codex replaced the history with its "
                          f"replacement_history ({len(replacement)} items)")
            return
        message = payload.get("message")
        if not isinstance(message, str):
            raise _Bad("a compacted line with neither a 'replacement_history' list nor a 'message' string", line)
        context = [it for it in self.history if _is_codex_context(it)]
        said = [t for it in self.history if (t := _codex_user_text(it)) is not None and t not in self.summaries]
        kept: list[str] = []
        budget = CODEX_SUMMARY_BUDGET
        for text in reversed(said):  # the newest messages that fit
            cost = (len(text.encode("utf-8")) + 3) // 4
            if cost > budget:
                break
            kept.insert(0, text)
            budget -= cost
        summary = message or "(no summary available)"
        self.summaries.add(summary)
        self.history = context + [_codex_user_message(t) for t in kept] + [_codex_user_message(summary)]
        self.start = (f"started at the compacted line {line}: rebuilt what Codex sends after it: the initial "
                      f"context recorded before it ({len(context)} items; Codex renders it anew from its settings), "
                      f"the user's {len(kept)} last messages and the summary")
        if len(kept) < len(said):
            self.start += f" (the user's {len(said) - len(kept)} older messages are over Codex's 20,000-token budget)"

    def roll_back(self, turns: Any, line: int) -> None:
        """``thread_rolled_back``: drop the last ``turns`` user turns, as Codex does on resume."""
        if not isinstance(turns, int) or isinstance(turns, bool) or turns <= 0:
            return
        starts = [i for i, it in enumerate(self.history)
                  if _codex_user_text(it) is not None or (isinstance(it, dict) and it.get("type") == "agent_message")]
        if not starts:
            return
        cut = starts[0] if turns >= len(starts) else starts[-turns]
        while cut > starts[0] and _is_codex_context(self.history[cut - 1]):
            cut -= 1
        self.notes.append(f"rolled back the last {turns} turns at line {line} (thread_rolled_back): "
                          f"left out {len(self.history) - cut} items")
        self.history = self.history[:cut]

    def line(self, n: int, d: Any) -> None:
        if not isinstance(d, dict):
            raise _Bad(f"{_describe(d)}, not a Codex rollout line", n)
        if "record_type" in d:  # legacy state snapshot
            self.skipped[f"record_type {d['record_type']}" if isinstance(d["record_type"], str) else "record_type"] += 1
        elif "payload" in d and isinstance(d.get("type"), str):
            kind, payload = d["type"], d["payload"]
            if kind == "response_item":
                self.record(payload, n, "a response_item payload")
            elif kind == "compacted":
                self.compacted(payload, n)
            elif kind == "event_msg" and isinstance(payload, dict) and payload.get("type") == "thread_rolled_back":
                self.roll_back(payload.get("num_turns"), n)
            else:
                self.skipped[kind] += 1
        elif _is_item(d):  # legacy: one item per line
            self.legacy = True
            self.record(d, n, "an item line")
        else:
            self.skipped["meta" if n == 1 or not self.history else "other"] += 1

    def run(self, records: Iterable[tuple[int, Any]]) -> tuple[list, list[str]]:
        for n, d in records:
            self.line(n, d)
        notes = (["legacy rollout: a meta line, then one item per line"] if self.legacy else [])
        notes += ([self.start] if self.start else []) + self.notes
        if self.skipped:
            notes.append(f"left out {_counts(self.skipped, 'lines')} (session metadata, settings, UI events and "
                         "state: not conversation items)")
        if self.dropped:
            notes.append(f"left out {_counts(self.dropped, 'items')} (recorded by Codex, never sent to the model)")
        other = Counter(it.get("type", "message") for it in self.history
                        if isinstance(it, dict) and it.get("type", "message") not in CODEX_DECIDED)
        if other:
            notes.append(f"{_counts(other, 'items')} pass through the rules untouched")
        scan = RESPONSES.scan(self.history)
        answered = {it.tool_call_id for it in scan.items if it.kind == "tool_result"}
        dangling = [call_id for calls in scan.calls for call_id, _, _ in calls if call_id not in answered]
        if dangling:
            notes.append(f"{len(dangling)} calls without an output in the log (Codex sends an \"aborted\" output "
                         "for them)")
        return self.history, notes


def codex_items(records: Iterable[tuple[int, Any]]) -> tuple[list, list[str]]:
    """The Responses items Codex sends, from the lines ``(line number, object)`` of a rollout.

    * Current rollouts: ``response_item`` lines hold the items, in the order Codex
      recorded them (``message``, ``reasoning`` with its ``encrypted_content``,
      ``function_call`` / ``function_call_output``, ``custom_tool_call`` /
      ``custom_tool_call_output``, ``local_shell_call``, ``web_search_call`` ...), each
      kept exactly as logged.  ``session_meta``, ``turn_context``, ``event_msg`` (UI
      events), ``world_state`` and other lines are left out and counted in the notes.
    * Legacy rollouts (before the ``{timestamp, type, payload}`` lines): a meta line
      (``id``, ``timestamp``, ``instructions``, ``git``), then one item per line, mixed
      with ``{"record_type": "state"}`` lines, which are left out.
    * A ``compacted`` line replaces the history, as Codex does when it resumes: with
      its ``replacement_history`` (newer Codex), or, with only a summary ``message``,
      with the initial context recorded before it (developer messages, instructions and
      environment messages), the user's last messages within Codex's 20,000-token
      budget and the summary as a user message.  So the conversation starts from the
      last ``compacted`` line.  A ``thread_rolled_back`` event drops the last turns.
    * Items Codex records but never sends (``ghost_snapshot``, ``system`` messages)
      are left out; calls whose output is missing stay dangling (Codex adds an
      "aborted" output when it sends them).
    """
    return _Codex().run(records)


# --- the table of readers -------------------------------------------------------------------------


class _Reader(NamedTuple):
    """A source format: ``detect`` looks at the content, ``read`` converts it to drafts.

    ``kind`` is what it reads: ``lines`` a whole JSONL file (``[(line number, value)]``),
    ``object`` or ``list`` one JSON value (a file, or one line of a JSONL file of documents).
    """

    name: str
    kind: str  # "lines" | "object" | "list"
    detect: Callable[[Any], bool]
    read: Callable[[Any], list[_Draft]]


#: Every reader, in the order they are tried: the first whose ``detect`` says yes reads the content.
READERS: tuple[_Reader, ...] = (
    _Reader("codex", "lines", _is_codex, _codex),
    _Reader("claude-code", "lines", _is_claude_code, _claude_code),
    _Reader("messages", "lines", _is_message_lines, _message_lines),
    _Reader("messages", "lines", _is_item_lines, _item_lines),
    _Reader("mini-swe-agent", "object", _is_mini_swe_agent, _mini_swe_agent),
    _Reader("swe-agent", "object", _is_swe_agent, _swe_agent),
    _Reader("tau2", "object", _is_tau2, _tau2),
    _Reader("codex", "object", _is_codex_line, lambda data: _codex([(1, data)])),
    _Reader("claude-code", "object", _is_claude_code_line, lambda data: _claude_code([(1, data)])),
    _Reader("openhands", "object", _is_openhands_output, lambda data: _openhands(data["history"])),
    _Reader("openhands", "object", _is_opendevin_output, _opendevin),
    _Reader("tau-bench", "object", _is_tau_bench_result, lambda data: [_tau_bench_draft(data, 0)]),
    _Reader("messages", "object", _is_responses_body, _responses_body),
    _Reader("messages", "object", lambda data: "messages" in data, _message_body),
    _Reader("messages", "list", _is_message_list, _message_list_draft),
    _Reader("messages", "list", _is_item_list, _item_list),
    _Reader("tau-bench", "list", _is_tau_bench_list, lambda data: [_tau_bench_draft(r, i) for i, r in enumerate(data)]),
    _Reader("openhands", "list", _is_event_list, _openhands),
)

SOURCE_FORMATS = tuple(dict.fromkeys(reader.name for reader in READERS))

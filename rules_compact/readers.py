"""Readers for real agent logs: each log becomes one or more API-format conversations.

``read_conversations(raw, name)`` looks at the content (never at the file name) and
returns a list of :class:`Conversation`, each an OpenAI Chat Completions or
Anthropic Messages message list.  Understood inputs (``source_format``):

``messages``
    A plain message list, or an object with a ``messages`` list (a request body);
    kept as it is.  A JSONL file whose lines are messages is one conversation; a
    JSONL file whose lines are request bodies (a fine-tuning data set) is one
    conversation per line.
``claude-code``
    A Claude Code session (or subagent) JSONL file, converted to Anthropic
    Messages (see :func:`claude_code_messages`).
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
    :func:`openhands_messages`.

Files holding several conversations name them ``NAME#1``, ``NAME#2``, ... (the
N-th conversation of the file, counting from 1).  Content that is none of these
raises :class:`~rules_compact.errors.InputError` with one line starting with
``NAME:``; so does a known log with missing keys or values of the wrong type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from .errors import InputError
from .formats import detect_format

__all__ = [
    "Conversation",
    "SOURCE_FORMATS",
    "read_conversations",
    "parse_conversations",
    "claude_code_messages",
    "swe_agent_messages",
    "tau2_messages",
    "openhands_messages",
]

SOURCE_FORMATS = ("messages", "claude-code", "swe-agent", "mini-swe-agent", "tau-bench", "tau2", "openhands")


@dataclass(frozen=True)
class Conversation:
    """One conversation read from a file, in an API message format.

    ``notes`` say what the conversion did that a user may want to know (lines
    skipped, responses regrouped, calls left without a result ...).  ``envelope``
    is the JSON value the messages came from when the input was already a message
    list or request body (``source_format == "messages"``), so that a result can be
    written back in the same shape; it is ``None`` for converted logs.
    """

    name: str
    format: str  # "openai" | "anthropic"
    messages: list
    source_format: str
    notes: tuple[str, ...] = ()
    envelope: Any = field(default=None, repr=False, compare=False)

    def with_messages(self, messages: list) -> Any:
        """The value to write for new ``messages``: the request body for a body, else the list.

        A converted log is never written back as a log: the result is the API
        message list.
        """
        if isinstance(self.envelope, dict):
            return {**self.envelope, "messages": messages}
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


# --- entry points ---------------------------------------------------------------------------------


def read_conversations(raw: bytes, name: str) -> list[Conversation]:
    """Parse ``raw`` (JSON or JSONL bytes) into conversations; ``name`` labels errors and results."""
    text = _decode(raw, name)
    try:
        data = json.loads(text)
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
            records.append((lineno, json.loads(line)))
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
                         tuple(d.notes), d.envelope)
            for i, d in enumerate(drafts, 1)]


# --- detection ------------------------------------------------------------------------------------

CLAUDE_CODE_TYPES = frozenset({"user", "assistant", "system", "progress", "summary", "file-history-snapshot",
                               "queue-operation", "attachment"})
CLAUDE_CODE_KEYS = ("sessionId", "uuid", "parentUuid", "leafUuid", "messageId")


def _is_message(x: Any) -> bool:
    return isinstance(x, dict) and isinstance(x.get("role"), str)


def _is_event(x: Any) -> bool:
    return (isinstance(x, dict) and "role" not in x
            and (isinstance(x.get("action"), str) or isinstance(x.get("observation"), str)))


def _is_claude_code_line(x: Any) -> bool:
    return (isinstance(x, dict) and isinstance(x.get("type"), str) and x["type"] in CLAUDE_CODE_TYPES
            and any(k in x for k in CLAUDE_CODE_KEYS))


def _is_claude_code(records: list[tuple[int, Any]]) -> bool:
    return any(_is_claude_code_line(r) for _, r in records)


_TYPE_NAMES = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list"}


def _describe(x: Any) -> str:
    if isinstance(x, dict):
        keys = ", ".join(list(map(str, x))[:8])
        return f"an object with keys {keys}" if keys else "an empty object"
    return "null" if x is None else _TYPE_NAMES.get(type(x), f"a {type(x).__name__}")


def _from_records(records: list[tuple[int, Any]]) -> list[_Draft]:
    """A JSONL file: a Claude Code log, a message per line, or one document per line."""
    if not records:
        raise _Bad("no JSON value in the file")
    if _is_claude_code(records):
        messages, notes = claude_code_messages(records)
        return [_Draft(messages, "claude-code", "anthropic", notes)]
    if all(_is_message(r) for _, r in records):
        messages = [r for _, r in records]
        return [_Draft(messages, "messages", detect_format(messages), ["JSONL with one message per line"])]
    drafts: list[_Draft] = []
    for lineno, record in records:
        try:
            drafts += _from_value(record)
        except _Bad as exc:
            raise _Bad(str(exc), exc.line if exc.line is not None else lineno) from None
    return drafts


def _from_value(data: Any) -> list[_Draft]:
    if isinstance(data, dict):
        return _from_object(data)
    if isinstance(data, list):
        return _from_list(data)
    raise _Bad(f"expected a list of messages or an object with a 'messages' list, got {_describe(data)}")


def _from_object(data: dict) -> list[_Draft]:
    fmt = data.get("trajectory_format")
    if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
        messages = _message_list(data.get("messages"), "'messages'")
        sent = [m for m in messages if m["role"] != "exit"]
        notes = [f"left out the closing exit message{'s' if len(messages) - len(sent) > 1 else ''} "
                 "(no model saw it)"] if len(sent) < len(messages) else []
        return [_Draft(sent, "mini-swe-agent", "openai", notes)]
    if "trajectory" in data and "history" in data:
        messages, notes = swe_agent_messages(data.get("history"))
        return [_Draft(messages, "swe-agent", "openai", notes)]
    if "simulations" in data:
        sims = data.get("simulations")
        if not isinstance(sims, list):
            raise _Bad(f"tau2 results: 'simulations' is {_describe(sims)}, not a list")
        drafts = []
        for i, sim in enumerate(sims):
            if not isinstance(sim, dict):
                raise _Bad(f"tau2 results: simulation {i} is {_describe(sim)}, not an object")
            try:
                messages, notes = tau2_messages(sim.get("messages"))
            except _Bad as exc:
                raise _Bad(f"tau2 simulation {i}: {exc}") from None
            sim_id = sim.get("id") or sim.get("task_id")
            drafts.append(_Draft(messages, "tau2", "openai",
                                 ([f"simulation {sim_id}"] if isinstance(sim_id, str) else []) + notes))
        return drafts
    if _is_claude_code_line(data):
        messages, notes = claude_code_messages([(1, data)])
        return [_Draft(messages, "claude-code", "anthropic", notes)]
    if isinstance(data.get("history"), list) and all(_is_event(e) for e in data["history"]):
        messages, notes = openhands_messages(data["history"])
        return [_Draft(messages, "openhands", "openai", notes)]
    if isinstance(data.get("traj"), list) and "task_id" in data:
        return [_tau_bench_draft(data, 0)]
    if "messages" in data:
        messages = data["messages"]
        if not isinstance(messages, list):
            raise _Bad(f"'messages' must be a list, got {_describe(messages)}")
        for i, msg in enumerate(messages):
            if not _is_message(msg):
                raise _Bad(f"message {i} is not a message (an object with a string 'role'); "
                           "not a known conversation format")
        return [_Draft(messages, "messages", detect_format(messages), envelope=data)]
    keys = ", ".join(list(map(str, data))[:8]) or "none"
    raise _Bad(f"expected a list of messages or an object with a 'messages' list; the object has keys: {keys}")


def _from_list(data: list) -> list[_Draft]:
    if all(_is_message(m) for m in data):
        return [_Draft(data, "messages", detect_format(data), envelope=data)]
    if all(isinstance(r, dict) and isinstance(r.get("traj"), list) for r in data):
        return [_tau_bench_draft(r, i) for i, r in enumerate(data)]
    if all(_is_event(e) for e in data):
        messages, notes = openhands_messages(data)
        return [_Draft(messages, "openhands", "openai", notes)]
    i, item = next((i, m) for i, m in enumerate(data) if not _is_message(m))
    raise _Bad(f"a list whose items are neither messages nor a known log format: item {i} is not a message "
               "(an object with a string 'role')")


def _message_list(value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise _Bad(f"{what} is {_describe(value)}, not a list of messages")
    for i, msg in enumerate(value):
        if not _is_message(msg):
            raise _Bad(f"{what}: message {i} is not a message (an object with a string 'role'): {_describe(msg)}")
    return value


def _tau_bench_draft(result: dict, i: int) -> _Draft:
    messages = _message_list(result.get("traj"), f"tau-bench result {i}: 'traj'")
    notes = []
    if isinstance(result.get("task_id"), (int, str)):
        notes.append(f"task {result['task_id']}" + (f", trial {result['trial']}"
                                                     if isinstance(result.get("trial"), int) else ""))
    return _Draft(messages, "tau-bench", "openai", notes)


# --- Claude Code ----------------------------------------------------------------------------------

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
    return _merge_claude_code(chosen, notes), notes


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


def _merge_claude_code(conv: list[tuple[int, dict]], notes: list[str]) -> list:
    messages: list[dict] = []
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
        elif messages and messages[-1]["role"] == "user":
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": "user", "content": blocks})
            ids.append(None)
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
    return messages


# --- SWE-agent ------------------------------------------------------------------------------------


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
    if not isinstance(raw_messages, list):
        raise _Bad(f"'messages' is {_describe(raw_messages)}, not a list")
    messages: list[dict] = []
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
            continue
        out = {"role": role, "content": m.get("content")}
        if role == "assistant" and calls:
            out["tool_calls"] = [_tau2_call(c, i) for c in calls]
        messages.append(out)
    notes = []
    if user_calls or user_results:
        notes.append(f"left out the user simulator's {user_calls} tool calls and {user_results} tool results "
                     "(the agent never saw them)")
    return messages, notes


def _tau2_call(call: Any, i: int) -> dict:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
        raise _Bad(f"message {i}: a tool call without a string 'id' and 'name': {_describe(call)}")
    args = call.get("arguments", {})
    return {"id": call["id"], "type": "function",
            "function": {"name": call["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}}


# --- OpenHands ------------------------------------------------------------------------------------

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
                                "calls": [c for c in calls if c is not None], "results": {}}
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
        key = self.owner.get(call_id)
        if key is not None and key in self.groups and call_id not in self.groups[key]["results"]:
            self.groups[key]["results"][call_id] = result
            self.complete(key)
            return
        if call_id not in self.immediate:
            self.orphans += 1
        self.out.append(result)

    def run(self, events: list) -> tuple[list, list[str]]:
        for i, e in enumerate(events):
            if not isinstance(e, dict):
                raise _Bad(f"event {i} is {_describe(e)}, not an object")
            try:
                if isinstance(e.get("action"), str):
                    self.action(i, e)
                elif isinstance(e.get("observation"), str):
                    self.observation(i, e)
                else:
                    raise _Bad(f"neither an action nor an observation: {_describe(e)}")
            except _Bad as exc:
                raise _Bad(f"event {i}: {exc}") from None
        self.flush()
        if self.orphans:
            self.notes.append(f"{self.orphans} observations answer no recorded action (orphans)")
        if self.skipped:
            self.notes.append(f"left out {self.skipped} recall observations (workspace context / microagent "
                              "knowledge, rendered by OpenHands' prompt templates)")
        if self.immediate:
            self.notes.append(f"{len(self.immediate)} actions without tool_call_metadata paired positionally "
                              "with the observation that follows them (ids openhands-event-N)")
        return self.out, self.notes


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
    if not isinstance(events, list):
        raise _Bad(f"OpenHands history is {_describe(events)}, not a list of events")
    return _OpenHands().run(events)

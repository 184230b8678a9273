"""Claude Code session and subagent logs (JSONL), as Anthropic Messages."""

from __future__ import annotations

from typing import Any, Iterable

from .base import Draft, LogError, Usage, describe, token_count, timestamps_of


CLAUDE_CODE_TYPES = frozenset({"user", "assistant", "system", "progress", "summary", "file-history-snapshot",
                               "queue-operation", "attachment"})
CLAUDE_CODE_KEYS = ("sessionId", "uuid", "parentUuid", "leafUuid", "messageId")


def is_claude_code_line(x: Any) -> bool:
    return (isinstance(x, dict) and isinstance(x.get("type"), str) and x["type"] in CLAUDE_CODE_TYPES
            and any(k in x for k in CLAUDE_CODE_KEYS))


def is_claude_code(records: list[tuple[int, Any]]) -> bool:
    return any(is_claude_code_line(r) for _, r in records)


def read_claude_code(records: list[tuple[int, Any]]) -> list[Draft]:
    messages, notes, times, usage = _claude_code_timed(records)
    return [Draft(messages, "claude-code", "anthropic", notes, timestamps=times, usage=usage)]


def billed(usage: Any) -> Usage | None:
    """An assistant line's ``message.usage`` (the request's prompt tokens), None without one or
    with no prompt tokens (the ``<synthetic>`` messages Claude Code writes itself)."""
    if not isinstance(usage, dict):
        return None
    billed = Usage(token_count(usage.get("input_tokens")), token_count(usage.get("cache_read_input_tokens")),
                   token_count(usage.get("cache_creation_input_tokens")))
    return billed if billed.prompt else None


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
        raise LogError(f"a content block is {describe(block)}, not an object")
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
        raise LogError(f"message content is {describe(content)}, not a string or a list of blocks")
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
    messages, notes, _, _ = _claude_code_timed(records)
    return messages, notes


def _claude_code_timed(records: Iterable[tuple[int, Any]]) -> tuple[list, list[str], tuple | None, tuple | None]:
    """:func:`claude_code_messages`, each message's time (that of its first line) and each
    response's billed usage (that of its first line that records one)."""
    entries = [(n, d) for n, d in records]
    for n, d in entries:
        if not isinstance(d, dict):
            raise LogError(f"{describe(d)}, not a Claude Code log entry", n)
    notes: list[str] = []

    def is_conv(d: dict) -> bool:
        return d.get("type") in ("user", "assistant") and isinstance(d.get("message"), dict)

    for n, d in entries:
        if d.get("type") in ("user", "assistant") and not isinstance(d.get("message"), dict):
            raise LogError(f"a '{d['type']}' line without a 'message' object", n)
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
    messages, times, usage = _merge_claude_code(chosen, notes)
    return messages, notes, timestamps_of(times), tuple(usage) if any(usage) else None


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


def _merge_claude_code(conv: list[tuple[int, dict]], notes: list[str]) -> tuple[list, list, list]:
    messages: list[dict] = []
    times: list[Any] = []  # the timestamp of each message's first line
    usage: list[Usage | None] = []  # each response's billed usage
    ids: list[Any] = []  # message.id of each assistant output message (None for user)
    regrouped = 0
    for n, d in conv:
        msg = d["message"]
        role = d["type"]
        try:
            blocks = _blocks(msg)
        except LogError as exc:
            raise LogError(str(exc), n) from None
        if role == "assistant":
            mid = msg.get("id")
            if messages and messages[-1]["role"] == "assistant" and mid is not None and ids[-1] == mid:
                messages[-1]["content"].extend(blocks)
                usage[-1] = usage[-1] or billed(msg.get("usage"))
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
            usage.append(billed(msg.get("usage")))
        elif messages and messages[-1]["role"] == "user":
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": "user", "content": blocks})
            ids.append(None)
            times.append(d.get("timestamp"))
            usage.append(None)
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
    return messages, times, usage

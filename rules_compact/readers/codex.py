"""OpenAI Codex CLI rollouts, as Responses items."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from ..formats.responses import RESPONSES
from .base import Draft, LogError, Usage, counts, describe, token_count
from .messages import is_item


CODEX_LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
#: Items a rollout records that Codex never sends to the model.
CODEX_NOT_SENT = frozenset({"ghost_snapshot", "compaction_trigger"})
#: Item types the ``responses`` format decides on; every other item passes through untouched.
CODEX_DECIDED = frozenset({"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                           "custom_tool_call_output", "local_shell_call", "local_shell_call_output"})
#: How the user messages Codex writes itself (instructions, environment) begin: context, not the user's words.
CODEX_CONTEXT_PREFIXES = ("<user_instructions>", "<environment_context>", "# AGENTS.md instructions")
#: Item types a model response is made of (the rest is input: results, user messages).
CODEX_OUTPUT = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
CODEX_SUMMARY_BUDGET = 20_000  # tokens (4 bytes each) of the user's messages Codex keeps when it compacts


def is_codex_line(x: Any) -> bool:
    return isinstance(x, dict) and x.get("type") in CODEX_LINE_TYPES and "payload" in x


def _is_codex_legacy(records: list[tuple[int, Any]]) -> bool:
    """A meta line (``id``, ``timestamp``, ``instructions`` ...), then items and ``record_type`` lines."""
    first = records[0][1]
    return (len(records) > 1 and isinstance(first, dict) and isinstance(first.get("id"), str) and "timestamp" in first
            and not any(k in first for k in ("type", "role", "record_type", "payload"))
            and all(is_item(r) or (isinstance(r, dict) and "record_type" in r) for _, r in records[1:]))


def is_codex(records: list[tuple[int, Any]]) -> bool:
    return _is_codex_legacy(records) or any(is_codex_line(r) for _, r in records)


def read_codex(records: list[tuple[int, Any]]) -> list[Draft]:
    codex = _Codex()
    items, notes = codex.run(records)
    usage = tuple(codex.usage.get(i) for i in range(len(items))) if codex.usage else None
    return [Draft(items, "codex", "responses", notes, usage=usage)]


def billed(info: Any) -> Usage | None:
    """A ``token_count`` event's ``info.last_token_usage``: the last request's prompt tokens
    (``input_tokens`` includes the ``cached_input_tokens`` and ``cache_write_input_tokens``),
    None without one."""
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict) or not token_count(last.get("input_tokens")):
        return None
    prompt = token_count(last.get("input_tokens"))
    cached = min(token_count(last.get("cached_input_tokens")), prompt)
    written = min(token_count(last.get("cache_write_input_tokens")), prompt - cached)
    return Usage(prompt - cached - written, cached, written)


def _is_output(item: Any) -> bool:
    return isinstance(item, dict) and (item.get("type") in CODEX_OUTPUT or _is_codex_message(item, "assistant"))


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
        self.repaired = 0  # function calls whose arguments the log has as null
        self.usage: dict[int, Usage] = {}  # item index -> the billed usage of the response it starts
        self.billed_from = 0  # the first item no token_count event has accounted for

    def record(self, item: Any, line: int, what: str) -> None:
        if not is_item(item):
            raise LogError(f"{what} is {describe(item)}, not a Responses item (an object with a string 'type' or 'role')",
                       line)
        kind = item.get("type")
        if kind in CODEX_NOT_SENT or _is_codex_message(item, "system"):
            self.dropped[kind if kind in CODEX_NOT_SENT else "system message"] += 1
            return
        if kind == "function_call" and item.get("arguments") is None:  # trimmed logs; the API needs a string
            item = {**item, "arguments": "{}"}
            self.repaired += 1
        self.history.append(item)

    def compacted(self, payload: Any, line: int) -> None:
        if not isinstance(payload, dict):
            raise LogError(f"a compacted line whose payload is {describe(payload)}, not an object", line)
        self.dropped.clear()  # what was before is replaced as a whole
        self.usage.clear()
        self.billed_from = 0
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
            raise LogError("a compacted line with neither a 'replacement_history' list nor a 'message' string", line)
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
        self.usage = {i: u for i, u in self.usage.items() if i < cut}
        self.billed_from = min(self.billed_from, cut)

    def token_count(self, info: Any) -> None:
        """The usage of the request whose response are the items since the last one: at the
        response's first output item (an event with no new output repeats the last)."""
        usage = billed(info)
        first = next((i for i in range(min(self.billed_from, len(self.history)), len(self.history))
                      if _is_output(self.history[i])), None)
        if usage is not None and first is not None:
            self.usage[first] = usage
            self.billed_from = len(self.history)

    def line(self, n: int, d: Any) -> None:
        if not isinstance(d, dict):
            raise LogError(f"{describe(d)}, not a Codex rollout line", n)
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
            elif kind == "event_msg" and isinstance(payload, dict) and payload.get("type") == "token_count":
                self.token_count(payload.get("info"))
                self.skipped[kind] += 1
            else:
                self.skipped[kind] += 1
        elif is_item(d):  # legacy: one item per line
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
            notes.append(f"left out {counts(self.skipped, 'lines')} (session metadata, settings, UI events and "
                         "state: not conversation items)")
        if self.dropped:
            notes.append(f"left out {counts(self.dropped, 'items')} (recorded by Codex, never sent to the model)")
        if self.repaired:
            notes.append(f"read the null arguments of {self.repaired} function_call items as '{{}}' (the API "
                         "takes only a string)")
        other = Counter(it.get("type", "message") for it in self.history
                        if isinstance(it, dict) and it.get("type", "message") not in CODEX_DECIDED)
        if other:
            notes.append(f"{counts(other, 'items')} pass through the rules untouched")
        scan = RESPONSES.scan(self.history)
        answered = {cid for cid in scan.call_id if cid is not None}
        dangling = [call_id for calls in scan.calls_of for call_id, _, _ in calls if call_id not in answered]
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

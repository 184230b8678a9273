"""SWE-agent .traj files."""

from __future__ import annotations

from typing import Any

from ..formats.base import OBSERVATION_KEY
from .base import Draft, LogError, describe, is_message


def is_swe_agent(data: dict) -> bool:
    return "trajectory" in data and "history" in data


def read_swe_agent(data: dict) -> list[Draft]:
    messages, notes = swe_agent_messages(data.get("history"))
    return [Draft(messages, "swe-agent", "openai", notes)]


def swe_agent_messages(history: Any) -> tuple[list, list[str]]:
    """The messages SWE-agent sends for a ``.traj`` ``history`` (its ``_history_to_messages``).

    A ``tool`` entry becomes ``{"role", "content", "tool_call_id": tool_call_ids[0]}``
    (SWE-agent runs one call per observation); an entry with ``tool_calls`` keeps
    them (and ``thinking_blocks``); every other entry keeps ``role`` and
    ``content``; ``cache_control`` is kept where present.  ``agent``,
    ``message_type``, ``thought``, ``action``, ``is_demo`` ... are dropped.

    A text-action trajectory returns observations as user messages: each user entry after an
    assistant one without tool calls (not a demonstration, not one whose ``message_type`` says
    it is no observation, and so not the instance template, which SWE-agent never masks) gets ``"observation"``: the first word of the assistant's ``action`` before
    it (the command: ``edit``, ``python``), or true.
    """
    if not isinstance(history, list):
        raise LogError(f"SWE-agent trajectory: 'history' is {describe(history)}, not a list")
    messages, notes, extra_ids, no_ids = [], [], 0, 0
    action = None  # the latest assistant entry's action: None before the first one
    for i, item in enumerate(history):
        if not is_message(item):
            raise LogError(f"SWE-agent history entry {i} is not a message (an object with a string 'role'): "
                       f"{describe(item)}")
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
        elif role == "user" and action is not None and not item.get("is_demo") \
                and item.get("message_type", "observation") == "observation":
            out[OBSERVATION_KEY] = _command(action)
        else:
            calls = item.get("tool_calls")
            if isinstance(calls, list) and calls:
                out["tool_calls"] = calls
                if item.get("thinking_blocks"):
                    out["thinking_blocks"] = item["thinking_blocks"]
            elif calls not in (None, []):
                raise LogError(f"SWE-agent history entry {i}: 'tool_calls' is {describe(calls)}, not a list")
        if "cache_control" in item:
            out["cache_control"] = item["cache_control"]
        if role == "assistant":  # a function-calling turn's observations are tool messages
            action = None if out.get("tool_calls") else item.get("action", "")
        messages.append(out)
    if no_ids:
        notes.append(f"{no_ids} tool messages without tool_call_ids (orphan results)")
    if extra_ids:
        notes.append(f"{extra_ids} extra ids in tool_call_ids ignored (SWE-agent uses the first)")
    observed = sum(1 for m in messages if OBSERVATION_KEY in m)
    if observed:
        notes.append(f"text-action trajectory: {observed} observations in user messages, marked "
                     f"\"{OBSERVATION_KEY}\" (tool results for the rules)")
    return messages, notes


def _command(action) -> str | bool:
    """The command an action runs (its first word), or True when it names none."""
    words = action.split(maxsplit=1) if isinstance(action, str) else []
    return words[0] if words else True

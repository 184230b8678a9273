"""tau2-bench simulation results."""

from __future__ import annotations

import json
from typing import Any

from .base import Draft, LogError, describe, is_message, timestamps_of


def is_tau2(data: dict) -> bool:
    return "simulations" in data


def read_tau2(data: dict) -> list[Draft]:
    sims = data.get("simulations")
    if not isinstance(sims, list):
        raise LogError(f"tau2 results: 'simulations' is {describe(sims)}, not a list")
    drafts = []
    for i, sim in enumerate(sims):
        if not isinstance(sim, dict):
            raise LogError(f"tau2 results: simulation {i} is {describe(sim)}, not an object")
        try:
            messages, notes, times = _tau2_timed(sim.get("messages"))
        except LogError as exc:
            raise LogError(f"tau2 simulation {i}: {exc}") from None
        sim_id = sim.get("id") or sim.get("task_id")
        drafts.append(Draft(messages, "tau2", "openai",
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
        raise LogError(f"'messages' is {describe(raw_messages)}, not a list")
    messages: list[dict] = []
    times: list[Any] = []
    user_calls = user_results = 0
    for i, m in enumerate(raw_messages):
        if not is_message(m):
            raise LogError(f"message {i} is not a message (an object with a string 'role'): {describe(m)}")
        role = m["role"]
        calls = m.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise LogError(f"message {i}: 'tool_calls' is {describe(calls)}, not a list")
        if role == "user" and calls:
            user_calls += len(calls)
            continue
        if role == "tool":
            if m.get("requestor") == "user":
                user_results += 1
                continue
            if not isinstance(m.get("id"), str):
                raise LogError(f"message {i}: a tool message without a string 'id'")
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
    return messages, notes, timestamps_of(times)


def _tau2_call(call: Any, i: int) -> dict:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
        raise LogError(f"message {i}: a tool call without a string 'id' and 'name': {describe(call)}")
    args = call.get("arguments", {})
    return {"id": call["id"], "type": "function",
            "function": {"name": call["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}}

"""mini-swe-agent trajectories."""

from __future__ import annotations

from ..formats.base import OBSERVATION_KEY
from .base import Draft, message_list

#: mini-swe-agent's one action: a bash command.
SHELL = "bash"


def is_mini_swe_agent(data: dict) -> bool:
    fmt = data.get("trajectory_format")
    return isinstance(fmt, str) and fmt.startswith("mini-swe-agent")


def read_mini_swe_agent(data: dict) -> list[Draft]:
    """Its ``messages``, but for the closing ``role: exit`` message, which no model saw.

    In text mode (assistant turns without tool calls: the command is in a bash block of the
    text), the environment answers in user messages: each user message after such a turn gets
    ``"observation": "bash"``, so that the rules treat it as the bash call's result."""
    messages = message_list(data.get("messages"), "'messages'")
    sent = [m for m in messages if m["role"] != "exit"]
    notes = [f"left out the closing exit message{'s' if len(messages) - len(sent) > 1 else ''} "
             "(no model saw it)"] if len(sent) < len(messages) else []
    sent, observed = _mark_observations(sent)
    if observed:
        notes.append(f"text mode: {observed} observations in user messages, marked \"{OBSERVATION_KEY}\" "
                     "(tool results for the rules)")
    return [Draft(sent, "mini-swe-agent", "openai", notes)]


def _mark_observations(messages: list) -> tuple[list, int]:
    """The messages with each user message that follows a text-mode assistant turn marked (new
    dicts: the input is never changed), and how many were marked."""
    out, text_mode, observed = [], False, 0
    for msg in messages:
        if msg["role"] == "assistant":
            text_mode = not msg.get("tool_calls")
        elif msg["role"] == "user" and text_mode and OBSERVATION_KEY not in msg:
            msg = {**msg, OBSERVATION_KEY: SHELL}
            observed += 1
        out.append(msg)
    return out, observed

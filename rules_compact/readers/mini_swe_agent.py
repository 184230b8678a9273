"""mini-swe-agent trajectories."""

from __future__ import annotations

from .base import Draft, message_list


def is_mini_swe_agent(data: dict) -> bool:
    fmt = data.get("trajectory_format")
    return isinstance(fmt, str) and fmt.startswith("mini-swe-agent")


def read_mini_swe_agent(data: dict) -> list[Draft]:
    """Its ``messages``, but for the closing ``role: exit`` message, which no model saw."""
    messages = message_list(data.get("messages"), "'messages'")
    sent = [m for m in messages if m["role"] != "exit"]
    notes = [f"left out the closing exit message{'s' if len(messages) - len(sent) > 1 else ''} "
             "(no model saw it)"] if len(sent) < len(messages) else []
    return [Draft(sent, "mini-swe-agent", "openai", notes)]

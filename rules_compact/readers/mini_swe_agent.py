"""mini-swe-agent trajectories."""

from __future__ import annotations


from .base import Draft, message_list


def is_mini_swe_agent(data: dict) -> bool:
    fmt = data.get("trajectory_format")
    return isinstance(fmt, str) and fmt.startswith("mini-swe-agent")


def read_mini_swe_agent(data: dict) -> list[Draft]:
    return [Draft(message_list(data.get("messages"), "'messages'"), "mini-swe-agent", "openai")]

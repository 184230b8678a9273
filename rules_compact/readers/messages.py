"""Input already in an API format: message lists, Responses items, request bodies."""

from __future__ import annotations

from typing import Any

from ..formats import detect_format
from ..formats.responses import is_responses_input
from .base import Draft, LogError, describe, is_message


def is_message_lines(records: list[tuple[int, Any]]) -> bool:
    return all(is_message(r) for _, r in records)


def read_message_lines(records: list[tuple[int, Any]]) -> list[Draft]:
    messages = [r for _, r in records]
    return [Draft(messages, "messages", detect_format(messages), ["JSONL with one message per line"],
                   one_per_line=True)]


def read_message_body(data: dict) -> list[Draft]:
    messages = data["messages"]
    if not isinstance(messages, list):
        raise LogError(f"'messages' must be a list, got {describe(messages)}")
    for i, msg in enumerate(messages):
        if not is_message(msg):
            raise LogError(f"message {i} is not a message (an object with a string 'role'); "
                       "not a known conversation format")
    return [Draft(messages, "messages", detect_format(messages), envelope=data)]


def is_message_list(data: list) -> bool:
    return all(is_message(m) for m in data)


def read_message_list(data: list) -> list[Draft]:
    return [Draft(data, "messages", detect_format(data), envelope=data)]


# Responses API input: items are messages (a string ``role``) or typed items (a string ``type``:
# function_call, function_call_output, reasoning ...); see rules_compact.responses_format.

def is_item(x: Any) -> bool:
    return isinstance(x, dict) and (isinstance(x.get("type"), str) or isinstance(x.get("role"), str))


def is_item_lines(records: list[tuple[int, Any]]) -> bool:
    items = [r for _, r in records]
    return all(is_item(r) for r in items) and is_responses_input(items)


def read_item_lines(records: list[tuple[int, Any]]) -> list[Draft]:
    return [Draft([r for _, r in records], "messages", "responses", ["JSONL with one Responses item per line"],
                   one_per_line=True)]


def is_item_list(data: list) -> bool:
    return all(is_item(m) for m in data) and is_responses_input(data)


def read_item_list(data: list) -> list[Draft]:
    return [Draft(data, "messages", "responses", envelope=data)]


def is_responses_body(data: dict) -> bool:
    return "input" in data and "messages" not in data


def read_responses_body(data: dict) -> list[Draft]:
    """A Responses request body (``{"model", "input": [...], "instructions", "tools" ...}``): its ``input``."""
    items = data["input"]
    if not isinstance(items, list):
        raise LogError(f"'input' must be a list of Responses items, got {describe(items)}")
    for i, item in enumerate(items):
        if not is_item(item):
            raise LogError(f"'input' item {i} is not a Responses item (an object with a string 'type' or 'role'): "
                       f"{describe(item)}")
    return [Draft(items, "messages", "responses", envelope=data, body_key="input")]

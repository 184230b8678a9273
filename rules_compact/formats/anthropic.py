"""Anthropic Messages: content blocks ``tool_use`` / ``tool_result`` / ``thinking``."""

from __future__ import annotations

from typing import Any, Iterable

from ..errors import InputError
from ..jsontext import dumps_data
from .base import (Call, Format, blocks_problem, breakpoint_of, _dicts, id_problem, keep_breakpoint, role_problem, _str, count_breakpoints,
                   deep_copy, dumps_args, is_tool_block, shorten_values, json_kind, parts_text, replace_content, shallow_parts,
                   thinking_text, with_breakpoint)

__all__ = ["AnthropicFormat", "ANTHROPIC_BLOCKS"]

ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
ANTHROPIC_ROLES = ("user", "assistant", "system")  # system: a mid-conversation system entry


class AnthropicFormat(Format):
    """Anthropic Messages: content blocks ``tool_use`` / ``tool_result`` / ``thinking``."""

    name = "anthropic"
    max_breakpoints = 4
    shared_messages = True  # a user message holds several tool_result blocks

    @staticmethod
    def shows(msg: dict) -> bool:
        return any(b.get("type") in ANTHROPIC_BLOCKS for b in _dicts(msg.get("content")))

    @staticmethod
    def _blocks(msg: Any) -> list:
        if not isinstance(msg, dict):
            return []
        content = msg.get("content")
        return content if isinstance(content, list) else []

    def calls(self, msg: Any) -> list[Call]:
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            return []
        return [(b["id"], b.get("name") if isinstance(b.get("name"), str) else None, b)
                for b in _dicts(self._blocks(msg)) if b.get("type") == "tool_use" and isinstance(b.get("id"), str)]

    def results(self, msg: Any) -> list[tuple[str | None, int, bool]]:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            return []
        out = []
        for j, block in enumerate(self._blocks(msg)):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                call_id = block.get("tool_use_id")
                out.append((call_id if isinstance(call_id, str) else None, j, block.get("is_error") is True))
        return out

    @staticmethod
    def result_text(msg: Any, block: int | None) -> str:
        return parts_text(msg["content"][block].get("content"))

    def is_user_turn(self, msg: Any) -> bool:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            return False
        content = msg.get("content")
        if isinstance(content, str):
            return bool(content.strip())
        return any(b.get("type") == "text" and _str(b.get("text")).strip() for b in _dicts(content))

    def has_thinking(self, msg: Any) -> bool:
        return any(b.get("type") in ("thinking", "redacted_thinking") for b in _dicts(self._blocks(msg)))

    def reasoning_text(self, msg: Any) -> str:
        return "".join(_str(b.get("thinking")) if b.get("type") == "thinking" else _str(b.get("data"))
                       for b in _dicts(self._blocks(msg)) if b.get("type") in ("thinking", "redacted_thinking"))

    def message_pieces(self, msg: Any) -> Iterable[str]:
        if not isinstance(msg, dict):
            return
        content = msg.get("content")
        if isinstance(content, str):
            yield content
            return
        for block in _dicts(content):
            kind = block.get("type")
            if kind == "text":
                yield _str(block.get("text"))
            elif kind in ("thinking", "redacted_thinking"):
                yield thinking_text(block)
            elif kind == "tool_use":
                yield _str(block.get("name"))
                yield dumps_args(block.get("input", {}))
            elif kind == "tool_result":
                yield parts_text(block.get("content"))

    def result_content(self, msg: dict, block: int | None) -> Any:
        return msg["content"][block].get("content")

    def set_result_content(self, msg: dict, block: int | None, text: str, as_string: bool = False) -> dict:
        blocks = list(msg["content"])
        result = blocks[block]
        new, lost = replace_content(result.get("content"), text, as_string)
        result = {**result, "content": new}
        if lost is not None and not breakpoint_of(result):  # the breakpoint moves onto the block
            result.update(lost)
        blocks[block] = result
        return {**msg, "content": blocks}

    def strip_text(self, msg, keep, marker, text_first, keep_thinking, drop_other=False):
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        lead, texts, others = [], [], []
        marker_slot: tuple[list, int] | None = None
        lost = None  # the breakpoint of a removed block
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            is_text = kind == "text" and isinstance(block.get("text"), str)
            is_thinking = kind in ("thinking", "redacted_thinking")
            if is_text and (block["text"] == marker or keep(block["text"])):
                (texts if text_first else others).append(block)
            elif is_thinking and keep_thinking:
                (lead if text_first else others).append(block)
            elif is_text or is_thinking:
                if marker_slot is None:
                    target = texts if text_first else others
                    marker_slot = (target, len(target))
                lost = breakpoint_of(block) or lost
            elif not drop_other or is_tool_block(kind):
                others.append(block)
            elif breakpoint_of(block):  # dropped with its breakpoint: the marker may carry it
                if marker_slot is None:
                    marker_slot = (others, len(others))
                lost = breakpoint_of(block)
        has_marker = any(isinstance(b, dict) and b.get("type") == "text" and b.get("text") == marker
                         for b in texts + others)
        if marker is not None and not has_marker and marker_slot is not None:
            marker_slot[0].insert(marker_slot[1], {"type": "text", "text": marker})
        new = keep_breakpoint(lead + texts + others, lost)
        if len(new) == len(blocks) and all(x is y for x, y in zip(new, blocks)):
            return msg
        return {**msg, "content": new}

    def is_empty(self, msg: dict) -> bool:
        return not msg.get("content")

    def mark_cache(self, msg: dict, block: int | None, marker: dict) -> dict:
        content = msg.get("content")
        if not isinstance(content, list) or not content:
            return msg
        if block is None:  # an assistant turn: its last block that may carry one
            return {**msg, "content": marked} if (marked := with_breakpoint(content, marker)) else msg
        result = content[block]
        if not isinstance(result, dict) or breakpoint_of(result):  # never move or weaken one
            return msg
        blocks = list(content)
        blocks[block] = {**result, **marker}
        return {**msg, "content": blocks}

    def snapshot(self, msg: Any) -> Any:
        """Its keys and its blocks; a tool_use's input whole, a tool_result's content blocks."""
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
            return deep_copy(msg)
        blocks = []
        for block in msg["content"]:
            if isinstance(block, dict):
                block = dict(block)
                if "input" in block:
                    block["input"] = deep_copy(block["input"])
                if isinstance(block.get("content"), list):
                    block["content"] = shallow_parts(block["content"])
            blocks.append(block)
        return {**msg, "content": blocks}

    def clear_inputs(self, msg, call_ids, longer_than=None):
        blocks, changed = [], False
        for block in self._blocks(msg):
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id") in call_ids:
                old = block.get("input")
                new = {} if longer_than is None else shorten_values(old, longer_than)
                if new != old:
                    block = {**block, "input": new}
                    changed = True
            blocks.append(block)
        return {**msg, "content": blocks} if changed else msg

    def breakpoints(self, msg: Any) -> int:
        blocks = self._blocks(msg)
        return count_breakpoints(blocks) + sum(count_breakpoints(b.get("content")) for b in _dicts(blocks)
                                               if b.get("type") == "tool_result")

    def problem(self, msg: Any) -> str | None:
        problem = role_problem(msg, ANTHROPIC_ROLES)
        if problem is not None:
            return problem
        content = msg.get("content")
        if not isinstance(content, (str, list)):
            return "has no 'content'" if "content" not in msg else \
                f"'content' is {json_kind(content)}, not a string or a list of blocks"
        if isinstance(content, str) or (problem := blocks_problem(content, "content block")):
            return problem
        for j, block in enumerate(content):
            kind, inner = block["type"], block.get("content")
            if kind == "tool_use" and not isinstance(block.get("input", {}), dict):
                return f"content block {j}: tool_use 'input' is {json_kind(block['input'])}, not an object"
            if kind == "tool_use" and "input" in block:
                try:
                    dumps_data(block["input"])  # data built in Python may be no JSON (a set)
                except InputError as exc:
                    return str(exc)
            key = {"tool_use": "id", "tool_result": "tool_use_id"}.get(kind)
            if key is not None and (problem := id_problem(block.get(key), f"content block {j}: {kind} '{key}'")):
                return problem
            if kind == "tool_result" and inner is not None and not isinstance(inner, (str, list)):
                return f"content block {j}: tool_result 'content' is {json_kind(inner)}, not a string or a list"
            if kind == "tool_result" and isinstance(inner, list) and (
                    problem := blocks_problem(inner, f"content block {j}: tool_result block")):
                return problem
        return None

"""OpenAI Chat Completions: ``tool_calls`` on assistant messages, ``role: tool`` results."""

from __future__ import annotations

from typing import Any

from .base import Call, Format, _dicts, _str, dumps_args, parts_text, replace_content

__all__ = ["OpenAIFormat", "REASONING_FIELDS"]

REASONING_FIELDS = ("reasoning_content", "reasoning")


class OpenAIFormat(Format):
    """OpenAI Chat Completions: ``tool_calls`` on assistant messages, ``role: tool`` results."""

    name = "openai"

    @staticmethod
    def shows(msg: dict) -> bool:
        return msg.get("role") == "tool" or "tool_calls" in msg or "tool_call_id" in msg

    @staticmethod
    def calls(msg: Any) -> list[Call]:
        if not isinstance(msg, dict) or msg.get("role") != "assistant" or not msg.get("tool_calls"):
            return []
        out = []
        for call in _dicts(msg["tool_calls"]):
            call_id = call.get("id")
            if isinstance(call_id, str):
                fn = call.get("function")
                name = fn.get("name") if isinstance(fn, dict) else None
                out.append((call_id, name if isinstance(name, str) else None, call))
        return out

    @staticmethod
    def results(msg: Any) -> list[tuple[str | None, None, bool]]:
        if not isinstance(msg, dict) or msg.get("role") != "tool":
            return []
        call_id = msg.get("tool_call_id")
        return [(call_id if isinstance(call_id, str) else None, None, msg.get("is_error") is True)]

    @staticmethod
    def result_text(msg: Any, block: int | None) -> str:
        return parts_text(msg.get("content"))

    @staticmethod
    def result_count(msg: Any) -> int:
        return 1 if isinstance(msg, dict) and msg.get("role") == "tool" else 0

    @staticmethod
    def is_user_turn(msg: Any) -> bool:
        return isinstance(msg, dict) and msg.get("role") == "user" and bool(parts_text(msg.get("content")).strip())

    def has_thinking(self, msg: Any) -> bool:
        return isinstance(msg, dict) and any(_str(msg.get(f)) for f in REASONING_FIELDS)

    def message_pieces(self, msg: Any) -> list[str]:
        if not isinstance(msg, dict):
            return []
        pieces = [parts_text(msg.get("content"))]
        pieces += [_str(msg.get(field)) for field in REASONING_FIELDS]
        if msg.get("tool_calls"):
            for _, name, call in self.calls(msg):
                fn = call.get("function")
                pieces += (name or "", dumps_args(fn.get("arguments", "") if isinstance(fn, dict) else ""))
        return pieces

    def result_content(self, msg: dict, block: int | None) -> Any:
        return msg.get("content")

    def set_result_content(self, msg: dict, block: int | None, text: str, as_string: bool = False) -> dict:
        return {**msg, "content": text if as_string else replace_content(msg.get("content"), text)}

    def strip_text(self, msg, keep, marker, text_first, keep_thinking, drop_other=False):
        new = dict(msg)
        if not keep_thinking:
            for field in REASONING_FIELDS:
                new.pop(field, None)
        content = msg.get("content")
        if isinstance(content, str):
            if content and content != marker and not keep(content):
                new["content"] = marker
        elif isinstance(content, list):
            kept, removed = [], False
            for part in content:
                is_text = isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
                if is_text and part["text"] != marker and not keep(part["text"]):
                    removed = True
                    continue
                kept.append(part)
            if removed and marker is not None and not any(
                    isinstance(p, dict) and p.get("text") == marker for p in kept):
                kept.insert(0, {"type": "text", "text": marker})
            if removed:
                new["content"] = kept or None
        return new if new != msg else msg

    def is_empty(self, msg: dict) -> bool:
        return not self.calls(msg) and not parts_text(msg.get("content"))

    def clear_inputs(self, msg, call_ids):
        calls = msg.get("tool_calls")
        if not isinstance(calls, list):
            return msg
        new_calls, changed = [], False
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and call.get("id") in call_ids and fn.get("arguments") != "{}":
                call = {**call, "function": {**fn, "arguments": "{}"}}
                changed = True
            new_calls.append(call)
        return {**msg, "tool_calls": new_calls} if changed else msg

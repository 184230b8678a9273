"""Token estimators and text lengths.

An estimator turns text into an estimated token count.  Most work piece by piece (a text
block, a tool name, a call's arguments); one that needs the whole message, such as
LangChain's approximate counter, also defines ``message``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..jsontext import loads_held
from . import tokenizers

__all__ = ["Estimator", "ESTIMATORS", "DEFAULT_ESTIMATOR", "utf8_len", "utf16_len", "as_estimator"]


def utf8_len(text: str) -> int:
    """UTF-8 bytes; lone surrogates (valid in JSON) count as 3 bytes instead of failing."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def utf16_len(text: str) -> int:
    """UTF-16 code units, as JavaScript's ``length`` counts."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(frozen=True)
class Estimator:
    """``text(piece) -> tokens``; ``message(msg, pieces) -> tokens`` if not the pieces' sum;
    ``missing() -> why it cannot run here`` (an extra not installed), None when it can."""

    name: str
    text: Callable[[str], int]
    message: Callable[[Any, list[str]], int] | None = None
    description: str = ""
    missing: Callable[[], str | None] = lambda: None

    def __call__(self, text: str) -> int:
        return self.text(text)

    def of_message(self, msg: Any, pieces: Iterable[str]) -> int:
        if self.message is not None:
            return self.message(msg, list(pieces))
        return sum(self.text(p) for p in pieces if p)


def as_estimator(name: str, value: Any) -> Estimator:
    """Plugins may register an Estimator or a plain ``text -> tokens`` function."""
    return value if isinstance(value, Estimator) else Estimator(name, value)


#: The ``claude`` estimator's constants, fitted on what Claude Code logs say was billed (docs/tokens.md,
#: ``bench/tokens.py``): each round's new prompt tokens against the characters and pieces it added.
CLAUDE_CHARS_PER_100_TOKENS, CLAUDE_TOKENS_PER_PIECE = 295, 34


def _claude(text: str) -> int:
    """Characters / 2.95, rounded half up, + 34; 0 for no text."""
    if not text:
        return 0
    return (len(text) * 100 + CLAUDE_CHARS_PER_100_TOKENS // 2) // CLAUDE_CHARS_PER_100_TOKENS + CLAUDE_TOKENS_PER_PIECE


def _half_up(units: int) -> int:
    return (units + 2) // 4


def _langchain_message(msg: Any, pieces: list[str]) -> int:
    """LangChain's ``count_tokens_approximately``: ceil(chars / 4) + 3 per message, where chars
    are the content, the role, the tool call id, the name, and the repr of the tool calls."""
    if not isinstance(msg, dict):
        return 0
    content = msg.get("content")
    chars, images = (len(content), 0) if isinstance(content, str) else _lc_blocks(content) if content else (0, 0)
    role = msg.get("role") if isinstance(msg.get("role"), str) else ""
    calls = msg.get("tool_calls")
    if role == "assistant" and isinstance(calls, list) and calls and not isinstance(content, list):
        chars += len(repr([_lc_call(c) for c in calls]))
    if role == "tool" and isinstance(msg.get("tool_call_id"), str):
        chars += len(msg["tool_call_id"])
    chars += len(role)
    if isinstance(msg.get("name"), str):
        chars += len(msg["name"])
    return math.ceil(chars / 4.0) + 3 + 85 * images


def _lc_blocks(content: Any) -> tuple[int, int]:
    """Characters and images of list content, as langchain-core counts them."""
    if not isinstance(content, list):
        return len(repr(content)), 0
    chars = images = 0
    for block in content:
        if isinstance(block, str):
            chars += len(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            chars += len(block.get("text") or "")
        elif isinstance(block, dict) and block.get("type") in ("image", "image_url"):
            images += 1
        else:
            chars += len(repr(block))
    return chars, images


def _lc_call(call: Any) -> dict:
    fn = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
    try:
        args = loads_held(fn.get("arguments") or "{}")
    except (TypeError, ValueError):
        args = {}
    return {"name": fn.get("name"), "args": args, "id": call.get("id") if isinstance(call, dict) else None,
            "type": "tool_call"}


ESTIMATORS: dict[str, Estimator] = {
    e.name: e
    for e in [
        Estimator("chars4", lambda t: _half_up(len(t)), description="characters / 4, rounded half up"),
        Estimator("chars4_ceil", lambda t: (len(t) + 3) // 4, description="characters / 4, rounded up"),
        Estimator("bytes4", lambda t: _half_up(utf8_len(t)), description="UTF-8 bytes / 4, rounded half up"),
        Estimator("utf16_4", lambda t: _half_up(utf16_len(t)),
                  description="UTF-16 code units / 4, rounded half up (JavaScript's Math.round(length / 4))"),
        Estimator("langchain_approx", lambda t: math.ceil(len(t) / 4.0), _langchain_message,
                  description="LangChain's count_tokens_approximately (OpenAI-shaped messages)"),
        Estimator("claude", _claude, description="characters / 2.95, rounded half up, + 34 per piece: fitted on the "
                                                 "tokens Claude Code sessions were billed"),
        Estimator("o200k", tokenizers.counter("o200k"), missing=tokenizers.missing,
                  description="exact o200k_base tokens (GPT-4o, GPT-5, Codex); the tokens extra"),
        Estimator("cl100k", tokenizers.counter("cl100k"), missing=tokenizers.missing,
                  description="exact cl100k_base tokens (GPT-4, GPT-3.5); the tokens extra"),
    ]
}

DEFAULT_ESTIMATOR = "chars4"

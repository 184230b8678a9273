"""Message formats, registered by name: OpenAI Chat Completions (``openai``), Anthropic
Messages (``anthropic``) and OpenAI Responses API input items (``responses``).

A format is a :class:`Format` subclass; ``register_format`` adds one.  Detection asks the
formats, in registration order, whether a message shows their marks (``Format.shows``): the
first message that shows any decides; a list that shows none is ``openai``.
"""

from __future__ import annotations

from .anthropic import ANTHROPIC_BLOCKS, AnthropicFormat
from .base import (THINKING_BLOCKS, Format, Item, KeepText, Scan, breakpoints_outside, count_breakpoints, decode_args,
                   dumps_args, parts_text, replace_content)
from .openai import OPENAI_CACHE_CONTROL, OpenAIFormat
from .responses import RESPONSES, RESPONSES_ITEM_TYPES, RESPONSES_PARTS, ResponsesFormat

__all__ = ["Format", "Item", "Scan", "KeepText", "FORMATS", "register_format", "detect_format", "parts_text",
           "replace_content", "dumps_args", "decode_args", "OpenAIFormat", "AnthropicFormat", "ResponsesFormat", "RESPONSES",
           "ANTHROPIC_BLOCKS", "RESPONSES_ITEM_TYPES", "RESPONSES_PARTS", "THINKING_BLOCKS",
           "count_breakpoints", "breakpoints_outside", "OPENAI_CACHE_CONTROL"]

FORMATS: dict[str, Format] = {}
DETECT_ORDER: list[Format] = []  # whose marks are looked for first
FALLBACK = "openai"


def register_format(fmt: Format, detect_before: str | None = None) -> None:
    """Add a format; detection asks it before ``detect_before`` (else after the others)."""
    FORMATS[fmt.name] = fmt
    if fmt in DETECT_ORDER:
        DETECT_ORDER.remove(fmt)
    names = [f.name for f in DETECT_ORDER]
    DETECT_ORDER.insert(names.index(detect_before) if detect_before in names else len(names), fmt)


for _fmt in (RESPONSES, OpenAIFormat(), AnthropicFormat()):
    register_format(_fmt)


def detect_format(messages: list) -> str:
    """The format of the first message that shows one's marks, else ``openai``."""
    for msg in messages:
        if isinstance(msg, dict):
            for fmt in DETECT_ORDER:
                if fmt.shows(msg):
                    return fmt.name
    return FALLBACK

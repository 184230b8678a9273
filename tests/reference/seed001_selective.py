"""Reference: seed 001 ``selectiveCompact`` applied with ``microcompactWithRecency``'s window.

Follows
-------
* Design seed ``/work/shared/seeds/001_2528afa084ee70c1.txt``:

  - ``selectiveCompact``: for each ``role == 'assistant'`` message, take
    ``textBlocks = content.filter(b => b.type === 'text')`` and
    ``toolBlocks = content.filter(b => b.type === 'tool_use')``; if there is
    no tool block, keep the message; otherwise
    ``content = [...textBlocks.filter(b => isImportant(b.text)), ...toolBlocks]``.
  - ``isImportant(text)``: ``includes('Error') || includes('Failed')`` -> true;
    ``includes('I will') || includes('I need to')`` -> true;
    ``text.length > 500`` -> false; otherwise true.
  - ``microcompactWithRecency``: ``KEEP_RECENT = 5``;
    ``recent = messages.slice(-KEEP_RECENT * 2)``,
    ``old = messages.slice(0, -KEEP_RECENT * 2)``; only ``old`` is compacted;
    result ``[...compactedOld, ...recent]``.  Here ``selectiveCompact`` takes
    the place of ``microcompact`` (as the brief asks).
* No real peer code exists; the seed is the only source.

Interpretation choices
----------------------
* ``text.length`` is JavaScript length = UTF-16 code units (an astral-plane
  character such as an emoji counts 2).  Implemented via UTF-16 encoding.
* ``includes`` is case-sensitive substring search (``'error'`` does not match).
* The rebuilt content puts ALL kept text blocks first, then ALL tool_use
  blocks, even if they were interleaved originally (literal spread order).
  Every other block type (``thinking``, ``redacted_thinking``, images, ...)
  is dropped from such messages.
* JS ``slice`` semantics: with fewer than 10 messages, ``slice(0, -10)`` is
  empty and everything is "recent" (nothing changes).  The window counts
  messages of any role, not turns.
* An assistant message whose ``content`` is not a list has no tool blocks and
  is kept unchanged.  A text block without ``text`` is treated as ``""``
  (important: ``"".length <= 500``).
* No token trigger: the seed applies ``microcompactWithRecency`` directly.
"""

from __future__ import annotations

import copy

KEEP_RECENT = 5
RECENT_MESSAGES = KEEP_RECENT * 2  # 10 messages (any role) left untouched
LONG_TEXT_LIMIT = 500
IMPORTANT_ALWAYS = ("Error", "Failed")
IMPORTANT_DECISION = ("I will", "I need to")


def _js_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def is_important(text: str) -> bool:
    if any(k in text for k in IMPORTANT_ALWAYS):
        return True
    if any(k in text for k in IMPORTANT_DECISION):
        return True
    if _js_len(text) > LONG_TEXT_LIMIT:
        return False
    return True


def selective_compact(messages: list[dict]) -> list[dict]:
    """``selectiveCompact`` over all given messages (deep copy)."""
    out = copy.deepcopy(messages)
    for msg in out:
        if msg.get("role") != "assistant":
            continue
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        blocks = [b for b in content if isinstance(b, dict)]
        text_blocks = [b for b in blocks if b.get("type") == "text"]
        tool_blocks = [b for b in blocks if b.get("type") == "tool_use"]
        if not tool_blocks:
            continue
        important = [b for b in text_blocks if is_important(b.get("text") or "")]
        msg["content"] = important + tool_blocks
    return out


def apply(messages: list[dict], *, recent: int = RECENT_MESSAGES) -> list[dict]:
    """``microcompactWithRecency`` with ``selectiveCompact`` on the old part."""
    out = copy.deepcopy(messages)
    if recent <= 0:
        # JS: slice(-0) is the whole array and slice(0, -0) is empty.
        return out
    split = max(0, len(out) - recent)  # JS slice(0, -recent) / slice(-recent)
    return selective_compact(out[:split]) + out[split:]

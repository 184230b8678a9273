"""Reference: seed 003 ``Microcompactor::prune`` (jeffkit/recursive).

Follows
-------
* The crate's real code: repo ``jeffkit/recursive``, path
  ``src/compact/micro.rs`` (stored version at commit
  ``102fcbbb2563cc31a768cc3c81973526e00490c9``), function
  ``Microcompactor::prune`` with ``Default`` = ``trigger_tool_count: 12,
  keep_recent: 4``, ``MIN_PRUNE_LENGTH = 200``,
  ``MICROCOMPACT_PLACEHOLDER = "[older tool output trimmed to fit budget]"``::

      let count = tool_indices.len();
      if count <= self.trigger_tool_count { return 0; }
      let eligible_count = count.saturating_sub(self.keep_recent);
      let target_prune   = count.saturating_sub(self.trigger_tool_count);
      let to_process     = eligible_count.min(target_prune);
      for idx in tool_indices.iter().take(to_process) {
          if msg.content == MICROCOMPACT_PLACEHOLDER
             || msg.content.len() <= MIN_PRUNE_LENGTH { continue; }
          msg.content = MICROCOMPACT_PLACEHOLDER.to_string();
      }

* Design seed ``/work/shared/seeds/003_72d012dfcf164121.txt`` (the crate's
  rustdoc page for ``Microcompactor``).

Disagreement between the seed text and the code
------------------------------------------------
The rustdoc (seed 003) says: "Iterate them [all candidates except the last
keep_recent] oldest-first; for each whose content.len() > MIN_PRUNE_LENGTH ...
replace ... Stop once ``count - pruned <= self.trigger_tool_count``".  Read
literally, short or already-placeholdered candidates would be skipped and the
loop would keep going to later candidates until enough were pruned.  The code
does NOT do that: it examines only the oldest ``min(count - keep_recent,
count - trigger)`` tool messages, skips short/placeholder ones *without*
looking further, and never stops early otherwise.  The crate's own test
``prune_skips_short_results`` asserts this (3 short oldest results -> 0
pruned).  The issue text describing the preset ("examine the oldest
(count - 12) of them, never one of the 4 most recent; replace those longer
than 200 bytes, and not already the placeholder; never look further") agrees
with the code.  This module implements the code.

Interpretation choices
----------------------
* ``content.len()`` is Rust ``String::len`` = UTF-8 bytes; strictly greater
  than 200 is needed (``<= 200`` is skipped).
* "Tool messages" are ``role == "tool"`` (OpenAI format), counted over the
  whole list regardless of pairing.
* Content ``None`` counts as ``""``; list content counts as the concatenation
  of its ``text`` parts, and the placeholder check compares that text with the
  placeholder exactly.  A pruned message's content becomes the placeholder
  string.
* Idempotent: a second run finds the same oldest window already placeholdered.
"""

from __future__ import annotations

import copy

TRIGGER_TOOL_COUNT = 12
KEEP_RECENT = 4
MIN_PRUNE_LENGTH = 200  # bytes; content must be strictly longer
PLACEHOLDER = "[older tool output trimmed to fit budget]"


def _content_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") or ""
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def apply(
    messages: list[dict],
    *,
    trigger_tool_count: int = TRIGGER_TOOL_COUNT,
    keep_recent: int = KEEP_RECENT,
) -> list[dict]:
    out = copy.deepcopy(messages)
    tool_indices = [i for i, m in enumerate(out) if m.get("role") == "tool"]
    count = len(tool_indices)
    if count <= trigger_tool_count:
        return out
    eligible_count = max(0, count - keep_recent)
    target_prune = max(0, count - trigger_tool_count)
    to_process = min(eligible_count, target_prune)
    for idx in tool_indices[:to_process]:
        text = _content_text(out[idx].get("content"))
        if text == PLACEHOLDER or _utf8_len(text) <= MIN_PRUNE_LENGTH:
            continue
        out[idx]["content"] = PLACEHOLDER
    return out


def apply_rustdoc_reading(
    messages: list[dict],
    *,
    trigger_tool_count: int = TRIGGER_TOOL_COUNT,
    keep_recent: int = KEEP_RECENT,
) -> list[dict]:
    """The rustdoc's literal wording (NOT the code): iterate all candidates,
    skipping short/placeholder ones, until ``count - pruned <= trigger``.
    Provided only so the disagreement can be demonstrated; do not use as the
    reference."""
    out = copy.deepcopy(messages)
    tool_indices = [i for i, m in enumerate(out) if m.get("role") == "tool"]
    count = len(tool_indices)
    if count <= trigger_tool_count:
        return out
    pruned = 0
    for idx in tool_indices[: max(0, count - keep_recent)]:
        if count - pruned <= trigger_tool_count:
            break
        text = _content_text(out[idx].get("content"))
        if text == PLACEHOLDER or _utf8_len(text) <= MIN_PRUNE_LENGTH:
            continue
        out[idx]["content"] = PLACEHOLDER
        pruned += 1
    return out

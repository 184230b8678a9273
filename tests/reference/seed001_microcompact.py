"""Reference: seed 001 ``microcompact`` (Claude-Code-style "keep tool calls, drop thinking").

Follows
-------
* Design seed ``/work/shared/seeds/001_2528afa084ee70c1.txt`` (Chinese article
  "microcompact"), functions ``microcompact`` and the auto-trigger in
  ``query``::

      const tokenCount = estimateTokens(messages);
      if (tokenCount > 120000) { messages = microcompact(messages); }

  ``microcompact``: for every ``role == 'assistant'`` message whose content
  has at least one ``tool_use`` block, keep only the ``tool_use`` blocks
  (``content.filter(b => b.type === 'tool_use')``); every other message is
  returned as is.  It is applied to *all* messages (no recency window; the
  recency variant is ``seed001_selective`` / ``microcompact_with_recency``).
* No real peer code exists for this article; it is the only source.

Interpretation choices
----------------------
* ``estimateTokens`` is not defined in the seed, so the estimator is a
  documented parameter, ``estimator=``.  Both choices measure the same pieces,
  in JavaScript string lengths (UTF-16 code units): string message content;
  ``text`` blocks' ``text``; ``thinking`` blocks' ``thinking``;
  ``redacted_thinking`` blocks' ``data``; ``tool_use`` blocks' ``name`` and,
  as a separate piece, ``JSON.stringify(input)`` (compact separators, key
  order kept, non-ASCII not escaped); ``tool_result`` blocks' content (string,
  or the concatenated text of its ``text`` sub-blocks).  Other blocks (images,
  documents, ...) count 0.

  - ``"utf16_4"`` (the default, and the estimator the preset
    ``strip-tool-turn-reasoning`` names): ``Math.round(length / 4)`` for each
    piece (JS round = half up), summed -- Claude Code's
    ``roughTokenCountEstimation`` applied piece by piece.
  - ``"js_total"``: the lengths summed first, then ``Math.round(total / 4)``
    once (the earlier choice of this oracle; it can differ from ``utf16_4`` by
    up to half a token per piece).

  The two are equally faithful to the seed, which leaves the function open;
  the default is the one the rule language names, so the preset can be
  compared exactly.
* The trigger is strict: ``> 120000`` (``TOKEN_THRESHOLD``).
* An assistant message whose ``content`` is not a list (plain string / None)
  has no ``tool_use`` block and is left unchanged (in the JS, ``.some`` on a
  string would throw; we treat it as "no tools").
* Block order among the kept ``tool_use`` blocks is preserved; all other
  assistant fields (``id``, ``model``, ...) are preserved (``{...msg}``).
"""

from __future__ import annotations

import copy
import json
import math

TOKEN_THRESHOLD = 120_000
CHARS_PER_TOKEN = 4


def _js_len(s: str) -> int:
    """JavaScript ``String.length`` (UTF-16 code units)."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _js_round(x: float) -> int:
    """JavaScript ``Math.round`` for non-negative numbers (half rounds up)."""
    return math.floor(x + 0.5)


def _json_stringify(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _tool_result_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") or ""
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def pieces(messages: list[dict]) -> list[str]:
    """Every string the estimate measures, one piece each (see the module docstring)."""
    out: list[str] = []
    for msg in messages:
        content = msg.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        if not isinstance(content, list):
            continue
        for b in content:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                out.append(b.get("text") or "")
            elif t == "thinking":
                out.append(b.get("thinking") or "")
            elif t == "redacted_thinking":
                out.append(b.get("data") or "")
            elif t == "tool_use":
                out.append(b.get("name") or "")
                out.append(_json_stringify(b.get("input", {})))
            elif t == "tool_result":
                out.append(_tool_result_text(b.get("content")))
    return out


def count_chars(messages: list[dict]) -> int:
    """Total JavaScript length of all pieces."""
    return sum(_js_len(p) for p in pieces(messages))


ESTIMATORS = ("utf16_4", "js_total")
DEFAULT_ESTIMATOR = "utf16_4"


def estimate_tokens(messages: list[dict], estimator: str = DEFAULT_ESTIMATOR) -> int:
    if estimator == "utf16_4":
        return sum(_js_round(_js_len(p) / CHARS_PER_TOKEN) for p in pieces(messages))
    if estimator == "js_total":
        return _js_round(count_chars(messages) / CHARS_PER_TOKEN)
    raise ValueError(f"unknown estimator {estimator!r}; allowed: {', '.join(ESTIMATORS)}")


def _has_tool_use(msg: dict) -> bool:
    content = msg.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" for b in content
    )


def microcompact(messages: list[dict]) -> list[dict]:
    """The seed's ``microcompact`` without the token check (returns a deep copy)."""
    out = copy.deepcopy(messages)
    for msg in out:
        if msg.get("role") != "assistant" or not _has_tool_use(msg):
            continue
        msg["content"] = [
            b for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
    return out


def apply(messages: list[dict], *, threshold: int = TOKEN_THRESHOLD,
          estimator: str = DEFAULT_ESTIMATOR) -> list[dict]:
    """``query``'s trigger: microcompact only when estimateTokens(messages) > threshold."""
    if estimate_tokens(messages, estimator) > threshold:
        return microcompact(messages)
    return copy.deepcopy(messages)

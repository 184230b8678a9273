"""Plain SDK requests: compact the arguments of ``messages.create`` / ``chat.completions.create``
/ ``responses.create`` before sending.  No dependency: it works on the request's dicts.

::

    import anthropic
    from rules_compact.integrations.sdk import RequestCompactor

    compact_request = RequestCompactor("preset:anthropic-clear-tool-uses")   # rules loaded once
    client = anthropic.Anthropic()
    response = client.messages.create(**compact_request(
        {"model": "claude-sonnet-4-6", "max_tokens": 1024, "system": "...", "messages": messages}))

``RequestCompactor(rules, on_compact=None, format=None)(request)`` returns a new dict: the
request with its ``messages`` (Anthropic Messages or OpenAI Chat Completions, detected unless
``format`` says) or its ``input`` list (Responses API items) compacted, every other key the
same.  The cache breakpoints the request holds outside its messages (``cache_control`` on
``system`` blocks, on ``tools`` and at the top level) are counted with the messages' own, so
a ``cache-breakpoint`` rule never takes an Anthropic request past its limit of 4.  Your ``messages`` are never mutated: keep them, and compact them again before the next
call.  ``on_compact(report)`` is called on every request; by default, requests that changed
something are logged on the ``rules_compact.integrations`` logger.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import InputError
from ..formats import count_breakpoints, detect_format
from ._common import Hook, OnCompact, Rules

__all__ = ["RequestCompactor", "compact_request"]


class RequestCompactor:
    """``compactor(request) -> request`` with the messages (or Responses input) compacted."""

    def __init__(self, rules: Rules = None, *, on_compact: OnCompact | None = None, format: str | None = None):
        self.compactor = Hook(rules, on_compact)
        self.format = format

    def __call__(self, request: Mapping[str, Any]) -> dict:
        if isinstance(request.get("messages"), list):
            key = "messages"
            fmt = self.format or detect_format(request["messages"])
        elif isinstance(request.get("input"), list):
            key, fmt = "input", self.format or "responses"
        else:
            raise InputError("the request has no 'messages' list (Messages, Chat Completions) "
                             "and no 'input' list (Responses)")
        outside = count_breakpoints(request.get("system")) + count_breakpoints(request.get("tools")) \
            + count_breakpoints({"cache_control": request.get("cache_control")})
        result = self.compactor.run(request[key], fmt, outside)
        return {**request, key: result.messages}


def compact_request(request: Mapping[str, Any], rules: Rules = None, *, on_compact: OnCompact | None = None,
                    format: str | None = None) -> dict:
    """One-off form of :class:`RequestCompactor` (loads ``rules`` on each call: keep a
    RequestCompactor in a loop)."""
    return RequestCompactor(rules, on_compact=on_compact, format=format)(request)

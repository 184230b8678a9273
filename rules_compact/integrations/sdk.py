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
call.  ``on_compact(report)`` (or ``on_compact(report, compaction)``, see
:class:`~rules_compact.integrations.tracing.Compaction`) is called on every request; by default,
requests that changed something are logged on the ``rules_compact.integrations`` logger.  Each
request is an OpenTelemetry span ``rules_compact.compact`` when ``opentelemetry-api`` is installed;
``compact_request.session(thread_id)`` is the conversation's summary (pass ``thread_id=`` to tell
conversations apart).  ``note=True`` adds :data:`~rules_compact.integrations.MODEL_NOTE` to the
system prompt (``system``, the leading system message, or ``instructions``) of a request in
which something was cleared.  ``verify=False``: the messages of earlier requests are never
edited in place (each request's are freshly made, as ``rules-compact serve`` parses them), so
the Compactor relies on their identity alone (see :class:`~rules_compact.Compactor`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import InputError
from ..formats import count_breakpoints, detect_format
from ._common import Hook, OnCompact, Rules, noted

__all__ = ["RequestCompactor", "compact_request", "breakpoints_outside"]


class RequestCompactor:
    """``compactor(request) -> request`` with the messages (or Responses input) compacted."""

    def __init__(self, rules: Rules = None, *, on_compact: OnCompact | None = None, format: str | None = None,
                 name: str = "rules-compact", note: bool | str = False, integration: str = "sdk",
                 verify: bool = True):
        self.compactor = Hook(rules, on_compact, verify, integration=integration, name=name, note=note)
        self.format = format
        self.session = self.compactor.session

    def __call__(self, request: Mapping[str, Any], *, thread_id: str | None = None, run_id: str | None = None
                 ) -> dict:
        if isinstance(request.get("messages"), list):
            key = "messages"
            fmt = self.format or detect_format(request["messages"])
        elif isinstance(request.get("input"), list):
            key, fmt = "input", self.format or "responses"
        else:
            raise InputError("the request has no 'messages' list (Messages, Chat Completions) "
                             "and no 'input' list (Responses)")
        result, _ = self.compactor.run(request[key], fmt, breakpoints_outside(request), thread_id=thread_id,
                                       run_id=run_id)
        out = {**request, key: result.messages}
        note = self.compactor.note_for(result.report)
        return out if note is None else {**out, **_noted(out, key, result.report.format, note)}


def breakpoints_outside(request: Mapping[str, Any]) -> int:
    """The cache breakpoints of a request outside its messages: on ``system`` blocks, on
    ``tools`` and at the top level (``cache_control``), which count against Anthropic's 4."""
    return count_breakpoints(request.get("system")) + count_breakpoints(request.get("tools")) \
        + count_breakpoints({"cache_control": request.get("cache_control")})


def _noted(request: dict, key: str, format_name: str, note: str) -> dict:
    """The keys of ``request`` that carry ``note`` at the end of its system prompt."""
    if key == "input":
        instructions = request.get("instructions")
        return {"instructions": f"{instructions}\n\n{note}" if isinstance(instructions, str) and instructions else note}
    if format_name == "anthropic":
        return {"system": noted(request.get("system"), note)}
    messages = request["messages"]
    if messages and isinstance(messages[0], dict) and messages[0].get("role") in ("system", "developer"):
        return {"messages": [{**messages[0], "content": noted(messages[0].get("content"), note)}, *messages[1:]]}
    return {"messages": [{"role": "system", "content": note}, *messages]}


def compact_request(request: Mapping[str, Any], rules: Rules = None, *, on_compact: OnCompact | None = None,
                    format: str | None = None, note: bool | str = False) -> dict:
    """One-off form of :class:`RequestCompactor` (loads ``rules`` on each call: keep a
    RequestCompactor in a loop)."""
    return RequestCompactor(rules, on_compact=on_compact, format=format, note=note)(request)

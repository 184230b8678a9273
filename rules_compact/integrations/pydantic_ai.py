"""pydantic-ai: ``history_processor(rules)`` and ``RulesCompactCapability(rules)``.

::

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from rules_compact.integrations.pydantic_ai import RulesCompactCapability, history_processor

    # the model sees compacted history; the run's history keeps the originals
    agent = Agent(model, capabilities=[RulesCompactCapability("preset:keep-recent-results")])

    # or as a history processor: pydantic-ai then writes the processed history back
    agent = Agent(model, capabilities=[ProcessHistory(history_processor("preset:keep-recent-results"))])
    # pydantic-ai 1.x: Agent(model, history_processors=[history_processor(...)])

What pydantic-ai does with a processed history (pydantic-ai-slim 2.x, checked in
tests/test_integrations_pydantic_ai.py): ``ProcessHistory`` (the capability that replaced the
``history_processors=`` argument of 1.x) sends the processor's output to the model **and writes
it back** into the run's message history (``ctx.messages[:] = processed``), so
``result.all_messages()`` and every later request hold the compacted messages: the cleared
contents are gone from the run.  Our rules are idempotent, so compacting an already compacted
history again changes nothing more than the rules decide.  ``RulesCompactCapability`` instead
changes only the request (``before_model_request`` returns a request context with compacted
messages and leaves ``ctx.messages`` alone): the model sees the compacted copy, the run keeps
the originals.

The rules see pydantic-ai messages in the Anthropic Messages format, one dict per message:

* a ``ModelRequest`` is a ``user`` message: a ``UserPromptPart`` is a text block (other user
  content, such as images, an opaque block), a ``ToolReturnPart`` (or a legacy
  ``RetryPromptPart`` with a tool name) a ``tool_result`` block, with ``is_error`` for the
  outcomes ``failed`` / ``retried``; system prompts and every other part are opaque blocks
  (never changed, not counted);
* a ``ModelResponse`` is an ``assistant`` message: ``TextPart`` -> ``text``, ``ThinkingPart`` ->
  ``thinking``, ``ToolCallPart`` -> ``tool_use``, anything else (native tool calls and returns,
  files, compaction parts) an opaque block.  A ``ThinkingPart`` with an ``id`` (an OpenAI
  Responses reasoning item, which the API requires next to its calls) and a ``CompactionPart``
  are pinned: never removed, not even by ``drop_other_blocks``.

Only changed messages are rebuilt (``dataclasses.replace``), part by part: a tool return gets
the new content as a string, a call whose inputs were cleared gets ``args={}``, a text part that
changed gets the new text and ``id=None`` (pydantic-ai's advice: the OpenAI Responses API would
use its stored copy of an item sent with its id), a removed text or thinking part is dropped
and a strip marker becomes a new ``TextPart``.  Ids, tool-call ids, timestamps and every other
field stay.

Requires ``pydantic-ai-slim`` (``pip install 'rules-compact[pydantic-ai]'``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart

from ._common import Hook, OnCompact, Rules, Translated

__all__ = ["history_processor", "RulesCompactCapability", "to_anthropic", "from_anthropic", "translated", "compact_history"]

TAG = "_rules_compact_part"  # the part index a block stands for (a private key, never sent)
ERROR_OUTCOMES = frozenset({"failed", "retried"})


def _opaque(kind: str, index: int) -> dict:
    return {"type": f"pydantic_ai:{kind}", TAG: index}


def _pinned(part: Any) -> bool:
    kind = getattr(part, "part_kind", None)
    return (kind == "thinking" and getattr(part, "id", None) is not None) or kind == "compaction"


def _is_call(part: Any) -> bool:
    kind = getattr(part, "part_kind", "")
    return (hasattr(part, "tool_call_id") and hasattr(part, "args") and isinstance(kind, str)
            and not kind.startswith(("builtin", "native")))


def _is_return(part: Any) -> bool:
    kind = getattr(part, "part_kind", "")
    return (hasattr(part, "tool_call_id") and hasattr(part, "content") and isinstance(kind, str)
            and (kind.endswith("-return") or (kind == "retry-prompt" and getattr(part, "tool_name", None)))
            and not kind.startswith(("builtin", "native")))


def _result_text(part: Any) -> str:
    for method in ("model_response_str", "model_response"):
        fn = getattr(part, method, None)
        if callable(fn):
            try:
                text = fn()
            except Exception:  # noqa: BLE001 -- a part we cannot render is left as it is
                continue
            if isinstance(text, str):
                return text
    content = getattr(part, "content", "")
    return content if isinstance(content, str) else str(content)


def _args(part: Any) -> Any:
    try:
        return part.args_as_dict()
    except Exception:  # noqa: BLE001
        return part.args if part.args is not None else {}


def _request_block(part: Any, i: int) -> list[dict]:
    kind = getattr(part, "part_kind", None)
    if _is_return(part):
        error = getattr(part, "outcome", None) in ERROR_OUTCOMES or kind == "retry-prompt"
        block = {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": _result_text(part), TAG: i}
        return [{**block, "is_error": True} if error else block]
    if kind == "user-prompt":
        content = part.content
        if isinstance(content, str):
            return [{"type": "text", "text": content, TAG: i}]
        return [{"type": "text", "text": c, TAG: i} if isinstance(c, str) else _opaque("user-content", i)
                for c in content]
    return [_opaque(kind or type(part).__name__, i)]


def _response_block(part: Any, i: int) -> dict:
    kind = getattr(part, "part_kind", None)
    if kind == "text":
        return {"type": "text", "text": part.content, TAG: i}
    if kind == "thinking" and not _pinned(part):
        block = {"type": "thinking", "thinking": part.content, TAG: i}
        return {**block, "signature": part.signature} if part.signature is not None else block
    if _is_call(part):
        return {"type": "tool_use", "id": part.tool_call_id, "name": part.tool_name, "input": _args(part), TAG: i}
    return _opaque(kind or type(part).__name__, i)


def to_anthropic(msg: ModelMessage) -> dict:
    """One pydantic-ai message as an Anthropic Messages dict (what the rules see)."""
    if isinstance(msg, ModelResponse):
        return {"role": "assistant", "content": [_response_block(p, i) for i, p in enumerate(msg.parts)]}
    return {"role": "user", "content": [b for i, p in enumerate(msg.parts) for b in _request_block(p, i)]}


def _changed_part(part: Any, block: dict, old: dict) -> Any:
    if block == old:
        return part
    kind = block.get("type")
    if kind == "tool_result" and block.get("content") != old.get("content"):
        content = block.get("content")
        text = content if isinstance(content, str) else "".join(
            b.get("text", "") for b in content if isinstance(b, dict))
        return dataclasses.replace(part, content=text)
    if kind == "tool_use" and block.get("input") != old.get("input"):
        return dataclasses.replace(part, args=block.get("input"))
    if kind == "text" and block.get("text") != old.get("text") and getattr(part, "part_kind", None) == "text":
        return dataclasses.replace(part, content=block["text"], id=None)
    return part  # e.g. a cache_control marker, which pydantic-ai parts do not hold


def from_anthropic(msg: ModelMessage, before: dict, after: dict) -> ModelMessage:
    """``msg`` with what compaction changed between ``before`` and ``after`` (its dicts)."""
    if after is before:
        return msg
    parts = list(msg.parts)
    old_blocks = {b[TAG]: b for b in before["content"] if TAG in b}
    if isinstance(msg, ModelRequest):
        new = list(parts)
        for block in after["content"]:
            if TAG in block and block.get("type") == "tool_result":
                new[block[TAG]] = _changed_part(parts[block[TAG]], block, old_blocks[block[TAG]])
        return msg if all(a is b for a, b in zip(new, parts)) else dataclasses.replace(msg, parts=new)
    out: list[tuple[float, Any]] = []  # (position among the original parts, part)
    seen: set[int] = set()
    blocks = after["content"]
    for k, block in enumerate(blocks):
        if TAG in block:
            seen.add(block[TAG])
            out.append((block[TAG], _changed_part(parts[block[TAG]], block, old_blocks[block[TAG]])))
        elif block.get("type") == "text":  # a strip marker: just before the next kept part
            following = next((b[TAG] for b in blocks[k + 1:] if TAG in b), len(parts))
            out.append((following - 0.5, TextPart(content=block["text"])))
    for i, part in enumerate(parts):  # pinned parts are never removed: put them back in place
        if i not in seen and _pinned(part):
            at = next((k for k, (j, _) in enumerate(out) if j > i), len(out))
            out.insert(at, (i, part))
    new_parts = [p for _, p in out]
    if len(new_parts) == len(parts) and all(a is b for a, b in zip(new_parts, parts)):
        return msg
    return dataclasses.replace(msg, parts=new_parts)


def translated(rules: Rules = None, on_compact: OnCompact | None = None) -> Translated:
    """pydantic-ai messages -> their compacted copies, remembered between calls (see
    Translated): unchanged messages are the same objects."""
    return Translated(Hook(rules, on_compact, verify=False), "anthropic", to_anthropic, from_anthropic)


def compact_history(messages: Sequence[ModelMessage], rules: Rules = None) -> list[ModelMessage]:
    """One-off form of :func:`translated` (loads ``rules`` on each call)."""
    return translated(rules, lambda report: None)(messages)


def history_processor(rules: Rules = None, *, on_compact: OnCompact | None = None):
    """A pydantic-ai history processor applying ``rules``: pass it to ``ProcessHistory`` (2.x)
    or ``history_processors=`` (1.x).  ``on_compact(report)`` is called on every model request;
    by default, requests that changed something are logged on ``rules_compact.integrations``."""
    compact = translated(rules, on_compact)

    def rules_compact_history(messages: list[ModelMessage]) -> list[ModelMessage]:
        return compact(messages)

    return rules_compact_history


def _capability_class():
    from pydantic_ai.capabilities import AbstractCapability

    @dataclasses.dataclass
    class RulesCompactCapability(AbstractCapability[Any]):
        """Compact the messages of every model request; the run's history keeps the originals.

        ``rules`` as for :func:`history_processor`; ``on_compact(report)`` on every request."""

        rules: Any = None
        on_compact: OnCompact | None = None

        def __post_init__(self):
            self._compact = translated(self.rules, self.on_compact)

        async def before_model_request(self, ctx, request_context):
            messages = self._compact(request_context.messages)
            return dataclasses.replace(request_context, messages=messages)

        @classmethod
        def get_serialization_name(cls) -> str | None:
            return None  # takes Python objects: not spec-serializable

    return RulesCompactCapability


try:
    RulesCompactCapability = _capability_class()
except ImportError:  # pydantic-ai 1.x has no capabilities: use history_processor
    RulesCompactCapability = None  # type: ignore[assignment]

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
  content, such as images, an opaque block; a ``CachePoint`` an opaque block carrying
  ``cache_control``, so that it counts as a breakpoint), a ``ToolReturnPart`` (or a legacy
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

Cache breakpoints: ``RulesCompactCapability``, when the request's model is an ``AnthropicModel``,
sends a breakpoint that ``cache-breakpoint`` put on a tool result as a ``CachePoint`` in a
``UserPromptPart`` right after its ``ToolReturnPart`` (AnthropicModel puts it on that
``tool_result`` block), and counts the breakpoints its ``anthropic_cache*`` (or ``cache``)
settings add with the messages' own, within Anthropic's limit of 4.  A breakpoint on an assistant
turn is not sent (a ``ModelResponse`` holds no cache point), nor any with another model or
through ``history_processor`` (``ProcessHistory`` writes the history back, so its cache points
would pile up round after round).

What was cleared shows in pydantic-ai's own instrumentation: each model request's compaction
is an OpenTelemetry span ``rules_compact.compact`` made with the run's tracer (so it sits in the
run's trace when the agent is instrumented, ``Agent(instrument=True)`` or Logfire's
``instrument_pydantic_ai()``; else the global tracer's), with the attributes of
:func:`rules_compact.integrations.tracing.attributes`.  ``on_compact(report, compaction)`` gets the
run's ``conversation_id`` (as ``thread_id``) and ``run_id``; ``capability.session(thread_id)`` is
a conversation's summary.  ``note=True`` adds :data:`~rules_compact.integrations.MODEL_NOTE` as a
dynamic instruction to a request in which something was cleared.  The capability works in agent
specs: ``Agent.from_spec({"model": ..., "capabilities": [{"RulesCompactCapability": {"rules":
"preset:keep-recent-results"}}]}, custom_capability_types=[RulesCompactCapability])`` (``rules``:
a rule name, path or YAML text, or a list of them; ``name``; ``note``).

Requires ``pydantic-ai-slim`` (``pip install 'rules-compact[pydantic-ai]'``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import Any, Sequence

from pydantic_ai.messages import CachePoint, ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from ._common import Hook, OnCompact, Rules, Translated

__all__ = ["history_processor", "RulesCompactCapability", "to_anthropic", "from_anthropic", "translated", "compact_history",
           "recall_tool"]

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
        return [{"type": "text", "text": c, TAG: i} if isinstance(c, str)
                else {**_opaque("cache-point", i), "cache_control": _cache_control(c.ttl)} if isinstance(c, CachePoint)
                else _opaque("user-content", i) for c in content]
    return [_opaque(kind or type(part).__name__, i)]


def _cache_control(ttl: str) -> dict:
    return {"type": "ephemeral", **({"ttl": ttl} if ttl != "5m" else {})}


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


def from_anthropic(msg: ModelMessage, before: dict, after: dict, cache_points: bool = False) -> ModelMessage:
    """``msg`` with what compaction changed between ``before`` and ``after`` (its dicts); with
    ``cache_points``, a breakpoint added to a tool result as a ``CachePoint`` after it."""
    if after is before:
        return msg
    parts = list(msg.parts)
    old_blocks = {b[TAG]: b for b in before["content"] if TAG in b}
    if isinstance(msg, ModelRequest):
        new: list = [[part] for part in parts]
        for block in after["content"]:
            if TAG in block and block.get("type") == "tool_result":
                old = old_blocks[block[TAG]]
                new[block[TAG]][0] = _changed_part(parts[block[TAG]], block, old)
                marker = block.get("cache_control")
                if cache_points and marker and not old.get("cache_control"):
                    new[block[TAG]].append(UserPromptPart(content=[CachePoint(ttl=marker.get("ttl", "5m"))]))
        flat = [p for group in new for p in group]
        return msg if len(flat) == len(parts) and all(a is b for a, b in zip(flat, parts)) \
            else dataclasses.replace(msg, parts=flat)
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


def translated(rules: Rules = None, on_compact: OnCompact | None = None, cache_points: bool = False, *,
               hook: Hook | None = None, written_back: bool = False) -> Translated:
    """pydantic-ai messages -> their compacted copies, remembered between calls (see
    Translated): unchanged messages are the same objects.  ``cache_points``: send the breakpoints
    ``cache-breakpoint`` puts on tool results as ``CachePoint`` parts (for AnthropicModel);
    ``hook``: the Hook to use (its rules and callback) instead of a new one."""
    rebuild = functools.partial(from_anthropic, cache_points=True) if cache_points else from_anthropic
    hook = hook or Hook(rules, on_compact, verify=False, integration="pydantic-ai", written_back=written_back)
    return Translated(hook, "anthropic", to_anthropic, rebuild)


def _run(ctx: Any) -> dict:
    """What the run context tells a compaction: the conversation, the run, the run's tracer
    (when the agent is instrumented; else None, for the global one)."""
    tracer = getattr(ctx, "tracer", None)
    if tracer is not None and type(tracer).__name__ == "NoOpTracer":
        tracer = None
    conversation, run = getattr(ctx, "conversation_id", None), getattr(ctx, "run_id", None)
    return {"thread_id": conversation if conversation is None else str(conversation),
            "run_id": run if run is None else str(run), "tracer": tracer}


def compact_history(messages: Sequence[ModelMessage], rules: Rules = None) -> list[ModelMessage]:
    """One-off form of :func:`translated` (loads ``rules`` on each call)."""
    return translated(rules, lambda report: None)(messages)


def history_processor(rules: Rules = None, *, on_compact: OnCompact | None = None):
    """A pydantic-ai history processor applying ``rules``: pass it to ``ProcessHistory`` (2.x)
    or ``history_processors=`` (1.x).  ``on_compact(report)`` is called on every model request;
    by default, requests that changed something are logged on ``rules_compact.integrations``.
    pydantic-ai writes the processed history back, so the processor's ``session()`` adds up
    what each request cleared (a processor is not told the run: its spans come from the global
    tracer, and ``thread_id`` is None)."""
    compact = translated(rules, on_compact, written_back=True)

    def rules_compact_history(messages: list[ModelMessage]) -> list[ModelMessage]:
        return compact(messages)

    rules_compact_history.session = compact.hook.session  # type: ignore[attr-defined]
    return rules_compact_history


ANTHROPIC_CACHE_SETTINGS = ("anthropic_cache_instructions", "anthropic_cache_tool_definitions", "anthropic_cache",
                            "anthropic_cache_messages")


def _settings_breakpoints(request_context: Any) -> int:
    """The breakpoints AnthropicModel adds from its settings: one per ``anthropic_cache*`` setting,
    or for the unified ``cache`` setting the instructions', the tools' and the conversation's."""
    settings = {**(getattr(request_context.model, "settings", None) or {}), **(request_context.model_settings or {})}
    if any(key in settings for key in ANTHROPIC_CACHE_SETTINGS):  # these win over the unified setting
        return sum(1 for key in ANTHROPIC_CACHE_SETTINGS if settings.get(key))
    return 3 if getattr(request_context.model_request_parameters, "cache", None) else 0


def _capability_class():
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import InstructionPart

    @dataclasses.dataclass
    class RulesCompactCapability(AbstractCapability[Any]):
        """Compact the messages of every model request; the run's history keeps the originals.

        ``rules`` as for :func:`history_processor`; ``on_compact(report)`` (or ``on_compact(report,
        compaction)``) on every request; ``name`` in spans and callbacks; ``note``: see the
        module; ``offload``: compact in a worker thread (``asyncio.to_thread``) so that the event
        loop keeps running meanwhile."""

        rules: Any = None
        on_compact: OnCompact | None = None
        name: str = "rules-compact"
        note: bool | str = False
        offload: bool = False

        def __post_init__(self):
            self._hook = Hook(self.rules, self.on_compact, verify=False, integration="pydantic-ai",
                              name=self.name, note=self.note)
            self.session = self._hook.session
            self._compact = translated(hook=self._hook)
            self._compact_anthropic: Translated | None = None  # with cache points, made when first needed

        @classmethod
        def from_spec(cls, rules: str | list[str] | None = None, *, name: str = "rules-compact",
                      note: bool | str = False, offload: bool = False):
            """From an agent spec: ``rules`` a rule name (``default``, ``preset:NAME``), a path or
            YAML text, or a list of them; the default callback logs what was cleared."""
            return cls(rules=rules, name=name, note=note, offload=offload)

        async def before_model_request(self, ctx, request_context):
            if self.offload:
                return await asyncio.to_thread(self._compacted, ctx, request_context)
            return self._compacted(ctx, request_context)

        def _compacted(self, ctx, request_context):
            run = _run(ctx)
            if getattr(request_context.model, "system", None) != "anthropic":
                messages, result, _ = self._compact.compact(request_context.messages, **run)
            else:
                if self._compact_anthropic is None:
                    self._compact_anthropic = translated(cache_points=True, hook=self._hook)
                messages, result, _ = self._compact_anthropic.compact(
                    request_context.messages, breakpoints_outside=_settings_breakpoints(request_context), **run)
            note = self._hook.note_for(result.report)
            if note is None:
                return dataclasses.replace(request_context, messages=messages)
            parameters = request_context.model_request_parameters
            parts = [*(parameters.instruction_parts or ()), InstructionPart(content=note, dynamic=True)]
            return dataclasses.replace(request_context, messages=messages,
                                       model_request_parameters=dataclasses.replace(parameters, instruction_parts=parts))

    return RulesCompactCapability


try:
    RulesCompactCapability = _capability_class()
except ImportError:  # pydantic-ai 1.x has no capabilities: use history_processor
    RulesCompactCapability = None  # type: ignore[assignment]


def recall_tool(source: Any = None):
    """The ``recall_result`` tool (a pydantic-ai ``Tool``, for ``Agent(tools=[...])``) that reads
    back what a ``placeholder: {save: true}`` cleared, from ``source``: a Store, or the rules
    whose store it is.  A failed recall is answered ``Error: ...`` (not a retry, which a model that
    asks again for a removed id would exhaust)."""
    from pydantic_ai import Tool

    from .recall_result import NAME, tool_function

    return Tool(tool_function(source), name=NAME, takes_ctx=False, docstring_format="google")

"""LangChain 1.x: ``RulesCompactMiddleware``, an ``AgentMiddleware`` for ``create_agent``.

::

    from langchain.agents import create_agent
    from rules_compact.integrations.langchain import RulesCompactMiddleware

    agent = create_agent(model, tools, middleware=[RulesCompactMiddleware(rules="preset:keep-recent-results")])

Like LangChain's ``ContextEditingMiddleware``, it works in ``wrap_model_call`` /
``awrap_model_call``: the model is called with a compacted copy of ``request.messages``, and the
agent state keeps the original messages (the middleware returns no state update).  The system
message is not part of ``request.messages`` and is never touched.

The messages are seen by the rules in the OpenAI Chat Completions format, one dict per message:
``HumanMessage`` -> ``user``, ``AIMessage`` -> ``assistant`` with ``tool_calls`` (``args`` as JSON
``arguments``) and ``reasoning_content`` from ``additional_kwargs``, ``ToolMessage`` -> ``tool``
(``status="error"`` -> ``is_error: true``), ``SystemMessage`` -> ``system``, any other message ->
its ``type`` as role.  Content lists are given as they are: ``text`` parts are text, Anthropic
``thinking`` / ``redacted_thinking`` and LangChain v1 ``reasoning`` blocks are thinking (stripped
by ``strip-text``, counted in sizes and ``has_thinking``; the latest assistant message keeps
them), other blocks (images) are kept as they are.  Only the messages a rule changed are copied
back (``model_copy``), so ids, tool-call ids, metadata and every other field stay:

* a ``ToolMessage`` gets the new ``content``;
* an ``AIMessage`` gets the new ``content``, the new ``args`` of each call whose arguments were
  cleared, and loses ``additional_kwargs["reasoning_content"]`` when ``strip-text`` removed it.

Cache breakpoints: when the model is an Anthropic one (``ChatAnthropic``), ``cache-breakpoint``
puts ``cache_control`` on the item's last content part (a string content becomes one text part),
which ChatAnthropic sends on the block (a tool message's, on its ``tool_result``); the
breakpoints of the system message, of the tools (``cache_control`` in a tool dict or a tool's
``extras``) and of the model settings (``AnthropicPromptCachingMiddleware``'s top-level one) are
counted with the messages' own, so a request never holds more than Anthropic's 4.  List
``AnthropicPromptCachingMiddleware`` before this middleware so that its breakpoints are seen.
With any other model no breakpoint is written.

What was cleared shows where LangChain users look: every message a rule changed carries
LangChain's own ``ContextEditingMiddleware`` marking in ``response_metadata["context_editing"]``
(``{"cleared": True, "strategy": "rules-compact"}`` on a tool message, ``cleared_tool_inputs``
with the call ids whose arguments were cleared on an AI message, ``{"cleared": True, ...}`` on an
AI message whose text or reasoning was stripped), so LangSmith runs show the marked messages the
model got; ``on_compact(report, compaction)`` gets the run's ``thread_id`` and ``run_id``; each
model call is an OpenTelemetry span when ``opentelemetry-api`` is installed; and
``middleware.session(thread_id)`` is the conversation's summary.  ``name`` tells several
instances in one agent apart (``create_agent`` refuses two middlewares of one name);
``note=True`` appends :data:`~rules_compact.integrations.MODEL_NOTE` to the system message of a
call in which something was cleared.

Requires ``langchain>=1.0`` (``pip install 'rules-compact[langchain]'``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, SystemMessage, ToolMessage

from ..formats import OPENAI_CACHE_CONTROL, count_breakpoints
from ..jsontext import loads_held
from ._common import Hook, OnCompact, Rules, Translated, noted

__all__ = ["RulesCompactMiddleware", "to_openai", "apply_changes", "translated", "compact_messages", "recall_tool"]

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _role(msg: BaseMessage) -> str:
    if isinstance(msg, ChatMessage):
        return msg.role
    return _ROLES.get(msg.type, msg.type)


def to_openai(msg: BaseMessage) -> dict:
    """One LangChain message as an OpenAI Chat Completions dict (what the rules see)."""
    content = msg.content
    out: dict[str, Any] = {"role": _role(msg), "content": content}
    if isinstance(msg.name, str):
        out["name"] = msg.name
    if isinstance(msg, AIMessage):
        if msg.tool_calls:
            out["tool_calls"] = [
                {"id": call.get("id"), "type": "function",
                 "function": {"name": call["name"], "arguments": json.dumps(call.get("args", {}), ensure_ascii=False)}}
                for call in msg.tool_calls]
        reasoning = msg.additional_kwargs.get("reasoning_content")
        if isinstance(reasoning, str):
            out["reasoning_content"] = reasoning
    elif isinstance(msg, ToolMessage):
        out["tool_call_id"] = msg.tool_call_id
        if msg.status == "error":
            out["is_error"] = True
    return out


def _args(arguments: str) -> Any:
    try:
        return loads_held(arguments)
    except (TypeError, ValueError):
        return {}


STRATEGY = "rules-compact"  # response_metadata["context_editing"]["strategy"] of what we changed


def apply_changes(msg: BaseMessage, before: dict, after: dict) -> BaseMessage:
    """``msg`` with what compaction changed between ``before`` and ``after`` (its OpenAI dicts),
    marked in ``response_metadata["context_editing"]`` as ContextEditingMiddleware marks its own."""
    update: dict[str, Any] = {}
    marks: dict[str, Any] = {}
    if after.get("content") != before.get("content"):
        content = after.get("content")
        update["content"] = "" if content is None else content
        marks["cleared"] = True
    if isinstance(msg, AIMessage):
        new_args = {c.get("id"): c["function"]["arguments"] for c in after.get("tool_calls") or []}
        old_args = {c.get("id"): c["function"]["arguments"] for c in before.get("tool_calls") or []}
        if new_args != old_args:
            update["tool_calls"] = [
                {**call, "args": _args(new_args[call.get("id")])}
                if new_args.get(call.get("id")) != old_args.get(call.get("id")) else call
                for call in msg.tool_calls]
            marks["cleared_tool_inputs"] = sorted(
                str(i) for i in new_args if new_args.get(i) != old_args.get(i))
        if "reasoning_content" in before and "reasoning_content" not in after:
            update["additional_kwargs"] = {k: v for k, v in msg.additional_kwargs.items() if k != "reasoning_content"}
            marks["cleared"] = True
    if not update:
        return msg
    metadata = dict(msg.response_metadata)
    entry = dict(metadata.get("context_editing") or {})
    if "cleared_tool_inputs" in marks:
        marks["cleared_tool_inputs"] = sorted({*entry.get("cleared_tool_inputs", []), *marks["cleared_tool_inputs"]})
    metadata["context_editing"] = {**entry, **marks, "strategy": STRATEGY} if marks.get("cleared") \
        else {**entry, **marks}
    return msg.model_copy(update={**update, "response_metadata": metadata})


def translated(rules: Rules = None, on_compact: OnCompact | None = None, *, name: str = "rules-compact",
               note: bool | str = False) -> Translated:
    """LangChain messages -> their compacted copies, remembered between calls (see Translated):
    unchanged messages are the same objects."""
    hook = Hook(rules, on_compact, verify=False, integration="langchain", name=name, note=note)
    return Translated(hook, "openai", to_openai, apply_changes)


def compact_messages(messages: list[BaseMessage], rules: Rules = None) -> list[BaseMessage]:
    """One-off form of :func:`translated` (loads ``rules`` on each call)."""
    return translated(rules, lambda report: None)(messages)


def _reads_cache_control(model: Any) -> bool:
    """Whether the chat model sends ``cache_control`` on content blocks: an Anthropic model."""
    return "anthropic" in str(getattr(model, "_llm_type", ""))


def _tool_breakpoint(tool: Any) -> bool:
    extras = tool if isinstance(tool, dict) else getattr(tool, "extras", None)
    return isinstance(extras, dict) and bool(extras.get("cache_control"))


def _run_ids(request: ModelRequest) -> tuple[str | None, str | None]:
    """The LangGraph thread and run of the call (None outside a graph, or without a checkpointer)."""
    info = getattr(getattr(request, "runtime", None), "execution_info", None)
    thread_id, run_id = getattr(info, "thread_id", None), getattr(info, "run_id", None)
    return (None if thread_id is None else str(thread_id)), (None if run_id is None else str(run_id))


class RulesCompactMiddleware(AgentMiddleware):
    """Apply rule files to the messages of every model call; the agent state keeps the originals.

    ``rules``: a RuleSet, a path, ``default``, ``preset:NAME``, YAML text or a list of them
    (successive passes), loaded once.  ``on_compact(report)`` or ``on_compact(report,
    compaction)`` is called on every model call with the :class:`rules_compact.Report` (and the
    :class:`~rules_compact.integrations.tracing.Compaction`: name, thread, run, session); by
    default, calls that changed something are logged on the ``rules_compact.integrations``
    logger.  ``name``: the middleware's name in the agent (default ``RulesCompactMiddleware``;
    give each instance its own).  ``note``: see the module.  ``offload``: in ``ainvoke``, compact
    in a worker thread (``asyncio.to_thread``) so that the event loop keeps running meanwhile."""

    def __init__(self, rules: Rules = None, *, on_compact: OnCompact | None = None,
                 name: str = "RulesCompactMiddleware", note: bool | str = False, offload: bool = False):
        super().__init__()
        self._name, self.offload = name, offload
        self.compact = translated(rules, on_compact, name=name, note=note)
        self.session = self.compact.hook.session

    @property
    def name(self) -> str:
        return self._name

    def _request(self, request: ModelRequest) -> ModelRequest:
        if not request.messages:
            return request
        if not _reads_cache_control(request.model):
            fmt, outside = None, 0
        else:
            system = request.system_message.content if request.system_message is not None else None
            fmt = OPENAI_CACHE_CONTROL
            outside = count_breakpoints(system) + sum(1 for t in request.tools or () if _tool_breakpoint(t)) \
                + count_breakpoints({"cache_control": (request.model_settings or {}).get("cache_control")})
        thread_id, run_id = _run_ids(request)
        messages, result, _ = self.compact.compact(request.messages, fmt, outside, thread_id=thread_id, run_id=run_id)
        note = self.compact.hook.note_for(result.report)
        if note is None:
            return request.override(messages=messages)
        system = request.system_message
        system = SystemMessage(content=note) if system is None else \
            system.model_copy(update={"content": noted(system.content, note)})
        return request.override(messages=messages, system_message=system)

    def wrap_model_call(self, request: ModelRequest,
                        handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse | AIMessage:
        return handler(self._request(request))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
                               ) -> ModelResponse | AIMessage:
        return await handler(await asyncio.to_thread(self._request, request) if self.offload
                             else self._request(request))


def recall_tool(source: Any = None):
    """The ``recall_result`` tool (a ``StructuredTool``) that reads back what a ``placeholder:
    {save: true}`` cleared, from ``source``: a Store, or the rules (as the middleware takes them)
    whose store it is.  An unknown or removed id, a bad range or pattern is a ToolMessage with
    ``status="error"`` saying why."""
    from langchain_core.tools import StructuredTool, ToolException

    from .recall_result import DESCRIPTION, NAME, tool_function

    return StructuredTool.from_function(tool_function(source, ToolException), name=NAME, description=DESCRIPTION,
                                        parse_docstring=True, handle_tool_error=True)

"""OpenAI Agents SDK: ``input_filter(rules)``, a ``RunConfig.call_model_input_filter``.

::

    from agents import Agent, RunConfig, Runner
    from rules_compact.integrations.openai_agents import input_filter

    config = RunConfig(call_model_input_filter=input_filter("preset:keep-recent-results"))
    result = await Runner.run(agent, "...", run_config=config)

The SDK calls the filter right before every model call with the input items it is about to
send (Responses API items: ``message``, ``function_call``, ``function_call_output``,
``reasoning`` ...); the filter returns a ``ModelInputData`` whose ``input`` is the compacted
copy, in the ``responses`` format of :mod:`rules_compact.responses_format`.  Items are never
removed, added or reordered, reasoning items are never altered, and an item no rule changed is
returned as the very same object (the SDK matches items by identity when it tracks what a
server-managed conversation was already sent).  The instructions are passed on unchanged.

The SDK does not write the filtered input back: the run's items (``result.to_input_list()``,
sessions) keep the originals.  It also builds new item objects for every call; the filter hands
the rules the previous call's object for each item equal to it, so a stepped rule set (the
default) reuses its decided prefix as with any Compactor.

What was cleared shows in the SDK's own tracing: each call is a custom span ``rules-compact``
(or the filter's ``name``) in the run's trace, its data the attributes of
:func:`rules_compact.integrations.tracing.attributes` (rule files, tokens before and after, items
changed per rule, boundary moved, over budget, the conversation's summary).  The trace's
``group_id`` is the conversation (``thread_id`` of ``on_compact(report, compaction)`` and of
``filter.session(thread_id)``), its ``trace_id`` the run.  ``note=True`` appends
:data:`~rules_compact.integrations.MODEL_NOTE` to the instructions of a call in which something
was cleared.

Requires ``openai-agents`` (``pip install 'rules-compact[openai-agents]'``); this module
imports it only for the return type, when the filter first runs.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from ._common import Hook, OnCompact, Rules, noted
from .tracing import attributes

__all__ = ["input_filter", "compact_items", "recall_tool"]


class _SameItems:
    """Compacts successive input lists, giving the rules last call's object for each item equal
    to it (so the Compactor sees the history it has handled) and the caller its own objects."""

    def __init__(self, hook: Hook):
        self.hook = hook
        self.previous: list = []
        self._lock = threading.Lock()

    def __call__(self, items: list, **where: Any) -> tuple[list, Any, Any]:
        """The compacted copy of ``items``, the Result and the Compaction (``where`` as for
        :meth:`Hook.run`)."""
        with self._lock:
            known = [old if old == new else new for old, new in zip(self.previous, items)] + items[len(self.previous):]
            self.previous = known
            result, compaction = self.hook.run(known, "responses", **where)
        out = [item if after is seen else after for item, seen, after in zip(items, known, result.messages)]
        return out, result, compaction


def compact_items(items: list, rules: Rules = None) -> list:
    """The compacted copy of a list of Responses input items (one-off: loads ``rules``)."""
    return _SameItems(Hook(rules, lambda report: None))(list(items))[0]


def input_filter(rules: Rules = None, *, on_compact: OnCompact | None = None, name: str = "rules-compact",
                 note: bool | str = False, offload: bool = False):
    """A ``call_model_input_filter`` applying ``rules`` (a RuleSet, a path, ``default``,
    ``preset:NAME``, YAML text, or a list of them), loaded once.  ``on_compact(report)`` (or
    ``on_compact(report, compaction)``) is called on every model call; by default, calls that
    changed something are logged on the ``rules_compact.integrations`` logger.  The filter's
    ``session(thread_id)`` is a conversation's summary."""
    hook = Hook(rules, on_compact, integration="openai-agents", name=name, note=note)
    compact = _SameItems(hook)

    def rules_compact_input_filter(data: Any):
        from agents.run_config import ModelInputData
        from agents.tracing import custom_span, get_current_trace
        from agents.tracing.spans import NoOpSpan
        from agents.tracing.traces import NoOpTrace

        model_data = data.model_data
        items = model_data.input
        if not isinstance(items, list) or not items:
            return model_data
        trace = get_current_trace()
        traced = trace is not None and not isinstance(trace, NoOpTrace)
        thread_id, run_id = (getattr(trace, "group_id", None), trace.trace_id) if traced else (None, None)
        with custom_span(name) as span:
            out, result, compaction = compact(items, thread_id=thread_id, run_id=run_id)
            if not isinstance(span, NoOpSpan):  # tracing on: the attributes measure the tokens
                span.span_data.data.update(attributes(result.report, compaction))
        instructions = model_data.instructions
        note_text = hook.note_for(result.report)
        if note_text is not None:
            instructions = noted(instructions, note_text) if isinstance(instructions, str) else note_text
        return ModelInputData(input=out, instructions=instructions)

    async def rules_compact_input_filter_offloaded(data: Any):
        return await asyncio.to_thread(rules_compact_input_filter, data)

    chosen = rules_compact_input_filter_offloaded if offload else rules_compact_input_filter
    chosen.session = hook.session  # type: ignore[attr-defined]
    return chosen


def recall_tool(source: Any = None):
    """The ``recall_result`` function tool (for ``Agent(tools=[...])``) that reads back what a
    ``placeholder: {save: true}`` cleared, from ``source``: a Store, or the rules whose store it
    is.  A failed recall is the tool's output, saying why."""
    from agents import function_tool

    from .recall_result import NAME, tool_function

    return function_tool(tool_function(source, RuntimeError), name_override=NAME,
                         failure_error_function=lambda ctx, error: f"Error: {error}")

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

Requires ``openai-agents`` (``pip install 'rules-compact[openai-agents]'``); this module
imports it only for the return type, when the filter first runs.
"""

from __future__ import annotations

import threading
from typing import Any

from ._common import Hook, OnCompact, Rules

__all__ = ["input_filter", "compact_items"]


class _SameItems:
    """Compacts successive input lists, giving the rules last call's object for each item equal
    to it (so the Compactor sees the history it has handled) and the caller its own objects."""

    def __init__(self, hook: Hook):
        self.hook = hook
        self.previous: list = []
        self._lock = threading.Lock()

    def __call__(self, items: list) -> list:
        with self._lock:
            known = [old if old == new else new for old, new in zip(self.previous, items)] + items[len(self.previous):]
            self.previous = known
            out = self.hook.run(known, "responses").messages
        return [item if after is seen else after for item, seen, after in zip(items, known, out)]


def compact_items(items: list, rules: Rules = None) -> list:
    """The compacted copy of a list of Responses input items (one-off: loads ``rules``)."""
    return _SameItems(Hook(rules, lambda report: None))(list(items))


def input_filter(rules: Rules = None, *, on_compact: OnCompact | None = None):
    """A ``call_model_input_filter`` applying ``rules`` (a RuleSet, a path, ``default``,
    ``preset:NAME``, YAML text, or a list of them), loaded once.  ``on_compact(report)`` is
    called on every model call; by default, calls that changed something are logged on the
    ``rules_compact.integrations`` logger."""
    compact = _SameItems(Hook(rules, on_compact))

    def rules_compact_input_filter(data: Any):
        from agents.run_config import ModelInputData

        model_data = data.model_data
        items = model_data.input
        if not isinstance(items, list) or not items:
            return model_data
        return ModelInputData(input=compact(items), instructions=model_data.instructions)

    return rules_compact_input_filter

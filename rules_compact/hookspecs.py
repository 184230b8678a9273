"""Plugin hooks. Implement any of them with ``@rules_compact.hookimpl`` and expose the
module through the ``rules_compact`` entry-point group."""

from __future__ import annotations

import pluggy

__all__ = ["hookspec", "hookimpl"]

hookspec = pluggy.HookspecMarker("rules_compact")
hookimpl = pluggy.HookimplMarker("rules_compact")


@hookspec
def rules_compact_tools():
    """Declare tool metadata: a list of ``ToolSpec`` or dicts with the keys ``name``,
    ``compact`` and optionally ``placeholder`` and ``summarize(content, call) -> str``."""


@hookspec
def rules_compact_matchers():
    """Add matcher kinds: a list of ``MatcherKind`` (name, compile, description, schema)."""


@hookspec
def rules_compact_actions():
    """Add action kinds: a list of ``ActionKind`` (name, compile, description, schema)."""


@hookspec
def rules_compact_estimators():
    """Add token estimators: a dict from name to ``estimate(text) -> int``."""

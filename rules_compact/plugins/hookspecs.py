"""Plugin hooks.  Implement any of them in a module marked with ``@rules_compact.hookimpl``
and expose the module through the ``rules_compact`` entry-point group; docs/plugins.md
documents each hook with a complete example.

Every hook takes no arguments and returns a list (a dict for estimators, a store for
``rules_compact_store``) or None.  Hooks
are called once per process, when the registry is first needed; what they return is
validated, and a plugin that returns something invalid, or raises (SystemExit too), is
reported and skipped.  The functions they return are wrapped (guard.py): one that fails
while rules compile or apply is one error naming the plugin, the rule and the kind.
"""

from __future__ import annotations

import pluggy

__all__ = ["hookspec", "hookimpl"]

hookspec = pluggy.HookspecMarker("rules_compact")
hookimpl = pluggy.HookimplMarker("rules_compact")


@hookspec
def rules_compact_tools():
    """Declare tool metadata: a list of ``ToolSpec`` or dicts with the keys

    * ``name``: an exact tool name or a glob (``*``, ``?``, ``[...]``);
    * ``compact``: bool, whether the tool's results may be compacted (``compactable``);
    * ``placeholder``: optional template for this tool's placeholder, with the variables
      ``{tool_name} {tool_call_id} {chars} {bytes} {tokens} {lines}``;
    * ``summarize``: optional pure function ``(content: str, call: dict | None) -> str``
      used by ``placeholder: {summary: true}``; ``call`` is the raw tool call the result
      answers (decode its arguments with ``rules_compact.plugins.call_args``).
    """


@hookspec
def rules_compact_matchers():
    """Add matcher kinds: a list of ``MatcherKind(name, compile, description, schema, history)``.

    ``compile(options, ctx, path)`` runs once per use in a rule file and returns a predicate
    ``(item, view) -> bool`` (or a ``Matcher``); ``schema`` is the JSON Schema of ``options``,
    added to the rule-file schema so that ``validate`` reports located errors in them.
    """


@hookspec
def rules_compact_actions():
    """Add action kinds: a list of ``ActionKind(name, compile, description, schema)``.

    ``compile(options, ctx, path)`` returns an ``Action(name, apply)``; ``apply(item, editor)``
    edits one item through the editor and returns a note for the report, or None.
    """


@hookspec
def rules_compact_estimators():
    """Add token estimators: a dict from a name (for ``defaults.estimator``) to a pure
    function ``estimate(text: str) -> int``, or to an ``Estimator`` that may also count
    whole messages."""


@hookspec
def rules_compact_readers():
    """Add log readers: a list of ``Reader(name, kind, detect, read)``.

    ``kind`` is what ``detect`` and ``read`` get: ``"lines"`` a whole JSONL file as
    ``[(line number, value)]``, ``"object"`` or ``"list"`` one JSON value.  ``detect(data)``
    says whether the content is the reader's; ``read(data)`` returns a list of ``Draft``
    (messages in an API format, the source format's name, notes).  Plugin readers are tried
    before the built-in ones, in plugin order.
    """


@hookspec
def rules_compact_store():
    """Supply the store that ``placeholder: {save: true}`` saves cleared results to, when the
    rule file has no ``store:`` key and ``RULES_COMPACT_STORE`` is unset: an object with
    ``save(content) -> Saved``, ``load(id) -> str | None`` and ``saved(id) -> Saved | None``
    (:class:`rules_compact.store.Store`; ids are :func:`rules_compact.store.content_id`), or
    None.  At most one plugin may supply a store.
    """

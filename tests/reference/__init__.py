"""Independent reference implementations of the original compaction systems.

Each module re-implements one original system from its own source (see each
module's docstring), stdlib only, with ``apply(messages) -> list[dict]``
returning a new deep-copied list of the same length and order.  They are test
oracles for the YAML presets and must not import anything from
``rules_compact``.  The exception is ``langchain_context_editing``: LangChain's
original is installable (``langchain`` in the test extra), so that module runs
the real ``ClearToolUsesEdit`` on converted messages instead of re-implementing
it.
"""

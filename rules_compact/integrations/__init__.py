"""Integrations with agent frameworks and SDKs: each an optional extra.

* :mod:`rules_compact.integrations.langchain` -- ``RulesCompactMiddleware`` for LangChain 1.x
  agents (``pip install 'rules-compact[langchain]'``);
* :mod:`rules_compact.integrations.pydantic_ai` -- ``history_processor`` and
  ``RulesCompactCapability`` for pydantic-ai (``[pydantic-ai]``);
* :mod:`rules_compact.integrations.openai_agents` -- ``input_filter``, a
  ``call_model_input_filter`` for the OpenAI Agents SDK (``[openai-agents]``);
* :mod:`rules_compact.integrations.litellm` -- ``RulesCompactHook``, a pre-call hook of the
  LiteLLM proxy (``[litellm]``);
* :mod:`rules_compact.integrations.sdk` -- ``compact_request`` for plain ``anthropic`` /
  ``openai`` request arguments (no dependency).

Importing this package imports no framework.  Every integration takes ``rules`` (a RuleSet, a
path, ``default``, ``preset:NAME``, YAML text, or a list of those for successive passes),
loaded once, and ``on_compact``: a callable given the :class:`rules_compact.Report` of every
call (and, when it takes two arguments, the :class:`Compaction`: integration, name, thread, run,
whether the step boundary moved, the conversation's :class:`Session`), so the host can log or
show what was cleared.  Without one, every call that changed something is logged on the
``rules_compact.integrations`` logger at INFO (:func:`describe` gives the line), so that clearing
is never silent.  Every call is also an OpenTelemetry span ``rules_compact.compact`` when
``opentelemetry-api`` is installed (``[otel]``), and ``note=True`` tells the model, in its system
prompt, that older tool results were cleared and how to get them again (:data:`MODEL_NOTE`).
"""

from ._common import MODEL_NOTE, OnCompact, describe, log_report, resolve_rules
from .tracing import Compaction, Session

__all__ = ["MODEL_NOTE", "Compaction", "OnCompact", "Session", "describe", "log_report", "resolve_rules"]

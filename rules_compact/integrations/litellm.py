"""LiteLLM proxy (gateway): ``RulesCompactHook(rules)``, a ``CustomLogger`` whose
``async_pre_call_hook`` compacts every request before LiteLLM routes it.

::

    # custom_callbacks.py, next to the proxy's config.yaml
    from rules_compact.integrations.litellm import RulesCompactHook

    proxy_handler_instance = RulesCompactHook("default")

    # config.yaml
    litellm_settings:
      callbacks: custom_callbacks.proxy_handler_instance   # or rules_compact.integrations.litellm.default_hook

The hook works on the request body as LiteLLM hands it over, through
:class:`~rules_compact.integrations.sdk.RequestCompactor`: ``/chat/completions`` (call types
``completion`` / ``acompletion``: the ``messages`` list), ``/v1/messages`` (``anthropic_messages``:
Anthropic messages, with the breakpoints of ``system`` and ``tools`` counted) and
``/v1/responses`` (``responses`` / ``aresponses``: the ``input`` list; a request with
``previous_response_id`` or ``conversation`` is left alone, its history is on the server).
Every other call type (embeddings, images, files ...) passes untouched.  A request the rules
cannot read (a shape they do not know, data that is not JSON) is sent unchanged, with one
warning line on the ``rules_compact.integrations`` logger: the hook never rejects a request.

The conversation (``thread_id`` of ``on_compact(report, compaction)`` and of
``hook.session(thread_id)``) is LiteLLM's ``litellm_session_id``, else Claude Code's
``X-Claude-Code-Session-Id`` header.  ``offload=True`` compacts in a worker thread, so a long
first compaction does not stall the proxy's other requests.

Requires ``litellm`` (``pip install 'rules-compact[litellm]'``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from ._common import OnCompact, Rules
from .sdk import RequestCompactor

__all__ = ["RulesCompactHook", "COMPACTED_CALL_TYPES"]

logger = logging.getLogger("rules_compact.integrations")

#: The LiteLLM call types whose requests are compacted: the rest pass untouched.
COMPACTED_CALL_TYPES = frozenset({"completion", "acompletion", "anthropic_messages", "aanthropic_messages",
                                  "responses", "aresponses"})
_SERVER_HISTORY = ("previous_response_id", "conversation")


class RulesCompactHook(CustomLogger):
    """A LiteLLM ``CustomLogger`` applying ``rules`` (a RuleSet, a path, ``default``,
    ``preset:NAME``, YAML text, or a list of them, loaded once) to each request in
    ``async_pre_call_hook``.  ``on_compact``, ``name`` and ``note`` as for every integration."""

    def __init__(self, rules: Rules = None, *, on_compact: OnCompact | None = None, name: str = "rules-compact",
                 note: bool | str = False, offload: bool = False):
        super().__init__()
        self.compact_request = RequestCompactor(rules, on_compact=on_compact, name=name, note=note,
                                                integration="litellm")
        self.session = self.compact_request.session
        self.offload = offload

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: str
                                  ) -> dict | None:
        """The request with its history compacted, or None (LiteLLM keeps ``data``) when there is
        nothing this hook compacts or the rules cannot read it."""
        if call_type not in COMPACTED_CALL_TYPES or any(data.get(key) for key in _SERVER_HISTORY):
            return None
        if not isinstance(data.get("messages"), list) and not isinstance(data.get("input"), list):
            return None
        if self.offload:
            return await asyncio.to_thread(self._compacted, data)
        return self._compacted(data)

    def _compacted(self, data: dict) -> dict | None:
        """``data`` compacted, or None after one warning line when the rules cannot read it."""
        try:
            return self.compact_request(data, thread_id=_thread(data))
        except Exception as error:  # never break the gateway's request: send it as it came
            logger.warning("rules-compact: request sent uncompacted (%s)", type(error).__name__)
            return None


def _thread(data: dict) -> str | None:
    """The conversation a request belongs to, when LiteLLM or the client names it."""
    session = data.get("litellm_session_id")
    if session:
        return str(session)
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, dict) else None
    if isinstance(headers, dict):
        found = next((v for k, v in headers.items() if k.lower() == "x-claude-code-session-id"), None)
        return str(found) if found else None
    return None


def __getattr__(name: str) -> Any:
    """``default_hook``: a hook with the default rules, made on first use, for a config.yaml's
    ``callbacks: rules_compact.integrations.litellm.default_hook``."""
    if name == "default_hook":
        hook = globals()["default_hook"] = RulesCompactHook("default")
        return hook
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""LiteLLM proxy: ``RulesCompactHook`` registered in ``litellm.callbacks`` and run by the proxy's
own pre-call hook (``ProxyLogging.pre_call_hook``, what the proxy calls for every request before
routing it), on the bodies of /chat/completions, /v1/messages and /v1/responses."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the price list at import
litellm = pytest.importorskip("litellm", reason="litellm is in the test extra")
proxy_utils = pytest.importorskip("litellm.proxy.utils", reason="the LiteLLM proxy needs fastapi (test extra)")

from litellm.caching.dual_cache import DualCache  # noqa: E402
from litellm.proxy._types import UserAPIKeyAuth  # noqa: E402
from litellm.proxy.types_utils.utils import get_instance_fn  # noqa: E402

from rules_compact import compact  # noqa: E402
from rules_compact.testing import check_api_validity  # noqa: E402
from rules_compact.integrations.litellm import RulesCompactHook  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CHAT = json.loads((EXAMPLES / "coding-session.json").read_text())["messages"]
ANTHROPIC = json.loads((EXAMPLES / "anthropic-session.json").read_text())["messages"]
RULES = "preset:keep-recent-results"


@pytest.fixture
def proxy_hook(monkeypatch):
    """``run(hook, data, call_type)``: the body LiteLLM's proxy routes after its pre-call hooks."""
    def run(hook: RulesCompactHook, data: dict, call_type: str) -> dict:
        monkeypatch.setattr(litellm, "callbacks", [hook])
        logging_obj = proxy_utils.ProxyLogging(user_api_key_cache=DualCache())
        return asyncio.run(logging_obj.pre_call_hook(UserAPIKeyAuth(api_key="sk-test"), data, call_type))
    return run


def _responses_items(messages: list) -> list:
    """The Chat example as Responses input items: calls and their outputs."""
    items = []
    for msg in messages:
        if msg["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": msg["tool_call_id"], "output": msg["content"]})
        elif msg["role"] == "assistant" and msg.get("tool_calls"):
            items += [{"type": "function_call", "call_id": c["id"], "name": c["function"]["name"],
                       "arguments": c["function"]["arguments"]} for c in msg["tool_calls"]]
        elif isinstance(msg.get("content"), str):
            items.append({"role": msg["role"], "content": msg["content"]})
    return items


def test_chat_completion_request_is_compacted_as_compact_does(proxy_hook):
    data = {"model": "gpt-4.1", "messages": copy.deepcopy(CHAT), "litellm_session_id": "s1"}
    hook = RulesCompactHook(RULES)
    out = proxy_hook(hook, data, "acompletion")
    expected = compact(CHAT, RULES).messages
    assert out["messages"] == expected != CHAT
    assert out["model"] == "gpt-4.1" and out["litellm_session_id"] == "s1"
    assert data["messages"] == CHAT  # the body LiteLLM was given is not mutated
    check_api_validity(CHAT, out["messages"])
    assert hook.session("s1").items_cleared > 0 and hook.session().compactions == 0


MARK_AT_STEP = """
version: 1
name: mark
step: {unit: tool_results, every: 2}
rules:
  - {name: mark, match: {at_step_boundary: true}, action: cache-breakpoint}
"""


def _reads(n: int) -> list:
    """An Anthropic conversation of ``n`` read calls and their results."""
    messages = [{"role": "user", "content": "go"}]
    for i in range(n):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"x{i}", "name": "read", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"x{i}", "content": "out"}]}]
    return messages


@pytest.mark.parametrize("in_system", [2, 3])
def test_anthropic_messages_never_hold_more_than_four_breakpoints(proxy_hook, in_system):
    cache = {"type": "ephemeral"}
    system = [{"type": "text", "text": f"part {i}", "cache_control": cache} for i in range(in_system)]
    tools = [{"name": "read", "input_schema": {"type": "object"}, "cache_control": cache}]
    data = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "system": system, "tools": tools,
            "messages": _reads(3)}
    out = proxy_hook(RulesCompactHook(MARK_AT_STEP), data, "anthropic_messages")
    assert out["system"] == system and out["tools"] == tools
    added = json.dumps(out["messages"]).count("cache_control")
    assert added == (1 if in_system == 2 else 0)  # the step boundary's, while the request holds fewer than 4
    check_api_validity(data["messages"], out["messages"], "anthropic", breakpoints_outside=in_system + 1)


def test_responses_input_is_compacted_unless_the_history_is_on_the_server(proxy_hook):
    items = _responses_items(CHAT)
    hook = RulesCompactHook(RULES)
    out = proxy_hook(hook, {"model": "gpt-5", "input": copy.deepcopy(items)}, "aresponses")
    assert out["input"] == compact(items, RULES, format="responses").messages != items
    stored = {"model": "gpt-5", "input": copy.deepcopy(items), "previous_response_id": "resp_1"}
    assert proxy_hook(hook, stored, "aresponses")["input"] == items


def test_other_call_types_pass_untouched(proxy_hook):
    data = {"model": "text-embedding-3-small", "input": ["x" * 5000] * 3}
    assert proxy_hook(RulesCompactHook(RULES), copy.deepcopy(data), "aembedding") == data


def test_a_request_the_rules_cannot_read_is_sent_unchanged_with_one_warning(proxy_hook, caplog):
    data = {"model": "gpt-4.1", "messages": [{"role": "user", "content": {"not": "a list of parts"}}]}
    with caplog.at_level(logging.WARNING, logger="rules_compact.integrations"):
        out = proxy_hook(RulesCompactHook(RULES), data, "acompletion")
    assert out["messages"] == data["messages"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["rules-compact: request sent uncompacted (InputError)"]


def test_claude_code_session_header_names_the_conversation_and_offload_gives_the_same(proxy_hook):
    headers = {"X-Claude-Code-Session-Id": "cc-7", "x-api-key": "sk-secret"}
    data = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "messages": copy.deepcopy(ANTHROPIC),
            "proxy_server_request": {"headers": headers}}
    hook = RulesCompactHook(RULES, offload=True)
    out = proxy_hook(hook, data, "anthropic_messages")
    assert out["messages"] == compact(ANTHROPIC, RULES).messages
    assert hook.session("cc-7").compactions == 1


def test_default_hook_loads_from_a_config_yaml_callbacks_line():
    hook = get_instance_fn("rules_compact.integrations.litellm.default_hook")
    assert isinstance(hook, RulesCompactHook)
    assert get_instance_fn("rules_compact.integrations.litellm.default_hook") is hook

"""``cache-breakpoint`` with ``provider: openai``: OpenAI's explicit ``prompt_cache_breakpoint``
(GPT-5.6 and later) in Chat Completions and Responses requests, within OpenAI's limit, in the
shapes of the installed ``openai`` SDK's request types."""

from __future__ import annotations

import typing

import pytest

from rules_compact import ConfigError, compact, load_rules
from rules_compact.formats import count_breakpoints
from rules_compact.integrations.sdk import compact_request

openai_types = pytest.importorskip("openai.types")
from openai.types.chat import ChatCompletionToolMessageParam  # noqa: E402
from openai.types.chat.chat_completion_content_part_text_param import (  # noqa: E402
    ChatCompletionContentPartTextParam, PromptCacheBreakpoint)
from openai.types.responses.response_input_item_param import FunctionCallOutput, Message  # noqa: E402
from openai.types.responses.response_input_text_content_param import ResponseInputTextContentParam  # noqa: E402
from openai.types.responses.response_input_text_param import ResponseInputTextParam  # noqa: E402


def rules(action: str):
    return load_rules(f"version: 1\nname: t\nrules:\n  - {{name: mark, match: {{role: tool}}, action: {action}}}\n")


OPENAI = rules("{cache-breakpoint: {provider: openai}}")


def chat(n: int) -> list:
    out: list = [{"role": "user", "content": "go"}]
    for i in range(n):
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"})
    return out


def responses(n: int) -> list:
    out: list = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]
    for i in range(n):
        out.append({"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": "{}"})
        out.append({"type": "function_call_output", "call_id": f"c{i}", "output": f"result {i}"})
    return out


def conforms(value: dict, typed: type) -> None:
    """``value`` holds the keys of the SDK TypedDict ``typed`` and no other, with its required ones
    and its literal values."""
    hints = typing.get_type_hints(typed)
    assert set(value) <= set(hints), f"{set(value) - set(hints)} not in {typed.__name__}"
    assert typed.__required_keys__ <= set(value), f"{typed.__name__} needs {typed.__required_keys__ - set(value)}"
    for key, hint in hints.items():
        literal = [a for a in typing.get_args(hint) if isinstance(a, str)] if typing.get_origin(hint) is typing.Literal \
            else None
        if key in value and literal:
            assert value[key] in literal, f"{typed.__name__}.{key} = {value[key]!r}, not one of {literal}"


def test_chat_tool_message_gets_an_explicit_breakpoint_on_its_text_part():
    out = compact(chat(1), [OPENAI], format="openai").messages
    tool = out[2]
    conforms(tool, ChatCompletionToolMessageParam)
    part, = tool["content"]
    conforms(part, ChatCompletionContentPartTextParam)
    conforms(part["prompt_cache_breakpoint"], PromptCacheBreakpoint)
    assert part == {"type": "text", "text": "result 0", "prompt_cache_breakpoint": {"mode": "explicit"}}


def test_responses_function_call_output_gets_an_input_text_part():
    out = compact(responses(1), [OPENAI], format="responses").messages
    item = out[2]
    conforms(item, FunctionCallOutput)
    part, = item["output"]
    conforms(part, ResponseInputTextContentParam)
    assert part == {"type": "input_text", "text": "result 0", "prompt_cache_breakpoint": {"mode": "explicit"}}


def test_a_ttl_goes_into_the_breakpoint():
    out = compact(chat(1), [rules("{cache-breakpoint: {provider: openai, ttl: 12h}}")], format="openai").messages
    assert out[2]["content"][0]["prompt_cache_breakpoint"] == {"mode": "explicit", "ttl": "12h"}
    conforms(out[2]["content"][0]["prompt_cache_breakpoint"], PromptCacheBreakpoint)


@pytest.mark.parametrize("fmt, history", [("openai", chat), ("responses", responses)])
def test_at_most_three_a_request_counting_the_callers_own(fmt, history):
    # 4 writes a request, one of them the implicit breakpoint: 3 explicit marks
    result = compact(history(5), [OPENAI], format=fmt)
    assert sum(map(count_breakpoints, (m.get("content") or m.get("output") for m in result.messages))) == 3
    notes = [d.note for d in result.report.passes[0].decisions if d.note]
    assert notes == ["left as it is: the request already holds 3 cache breakpoints (at most 3)"] * 2
    own = history(5)
    if fmt == "openai":
        own[0] = {"role": "user", "content": [{"type": "text", "text": "go", "prompt_cache_breakpoint": {"mode": "explicit"}}]}
    else:
        own[0] = {**own[0], "content": [{**own[0]["content"][0], "prompt_cache_breakpoint": {"mode": "explicit"}}]}
        conforms(own[0], Message)
        conforms(own[0]["content"][0], ResponseInputTextParam)
    marked = compact(own, [OPENAI], format=fmt).messages
    assert sum(map(count_breakpoints, (m.get("content") or m.get("output") for m in marked))) == 3
    assert marked[0] == own[0]  # the caller's stays
    outside = compact(history(5), [OPENAI], format=fmt, breakpoints_outside=2).messages
    assert sum(map(count_breakpoints, (m.get("content") or m.get("output") for m in outside))) == 1


def test_a_responses_body_counts_its_instructions_marks():
    body = {"model": "gpt-5.6", "input": responses(3),
            "instructions": [{"type": "message", "role": "developer", "content": [
                {"type": "input_text", "text": "be brief", "prompt_cache_breakpoint": {"mode": "explicit"}}]}]}
    sent = compact_request(body, rules=[OPENAI])
    assert sum(count_breakpoints(m.get("output")) for m in sent["input"]) == 2


def test_a_placeholder_keeps_the_callers_breakpoint():
    clear = rules("{placeholder: {text: '[cleared]', allow_larger: true}}")
    mark = {"prompt_cache_breakpoint": {"mode": "explicit"}}
    history = chat(1)
    history[2] = {**history[2], "content": [{"type": "text", "text": "result 0", **mark}]}
    assert compact(history, [clear], format="openai").messages[2]["content"] == [
        {"type": "text", "text": "[cleared]", **mark}]
    items = responses(1)
    items[2] = {**items[2], "output": [{"type": "input_text", "text": "result 0", **mark}]}
    out = compact(items, [clear], format="responses").messages[2]
    assert out["output"] == [{"type": "input_text", "text": "[cleared]", **mark}]
    conforms(out, FunctionCallOutput)


def test_each_provider_on_messages_that_do_not_carry_its_breakpoint():
    anthropic = [{"role": "user", "content": "go"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}]
    result = compact(anthropic, [OPENAI], format="anthropic")
    assert result.messages == anthropic
    assert [d.note for d in result.report.passes[0].decisions if d.note] == [
        "cache-breakpoint needs OpenAI prompt_cache_breakpoint, which these anthropic messages do not carry"]
    plain = compact(chat(1), [rules("cache-breakpoint")], format="openai")
    assert plain.messages == chat(1)  # the default provider, anthropic: OpenAI messages carry no cache_control


def test_a_ttl_of_the_other_provider_is_a_rule_file_error():
    with pytest.raises(ConfigError, match=r"ttl '5m' is not openai's: expected 30m or 12h"):
        rules("{cache-breakpoint: {provider: openai, ttl: 5m}}")
    with pytest.raises(ConfigError, match=r"ttl '30m' is not anthropic's: expected 5m or 1h"):
        rules("{cache-breakpoint: {ttl: 30m}}")


def test_a_chat_assistant_turn_is_marked_on_its_text_never_its_refusal():
    from openai.types.chat import ChatCompletionAssistantMessageParam

    turn = load_rules("version: 1\nname: t\nrules:\n  - {name: mark, match: {role: assistant}, "
                      "action: {cache-breakpoint: {provider: openai}}}\n")
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": [{"type": "text", "text": "no"}, {"type": "refusal", "refusal": "x"}]}]
    out = compact(history, [turn], format="openai").messages[1]
    conforms(out, ChatCompletionAssistantMessageParam)
    assert out["content"] == [{"type": "text", "text": "no", "prompt_cache_breakpoint": {"mode": "explicit"}},
                              {"type": "refusal", "refusal": "x"}]

"""recall_result: a framework agent reads back what ``placeholder: {save: true}`` cleared, in a
real loop of each integration with a scripted model, and gets bounded answers and clean errors."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from rules_compact import load_rules
from rules_compact.integrations.recall_result import (DESCRIPTION, MAX_CHARS, MAX_LINES, RecallError, recall_result,
                                                      store_of)
from rules_compact.store import FolderStore, MemoryStore, content_id

RULES = """version: 1
name: recoverable
rules:
  - name: keep-newest
    match: {age: {unit: tool_results, lt: 1}}
    action: keep
  - name: clear-old
    match: {role: tool, tool: read_file}
    action: {placeholder: {save: true}}
"""
ROUNDS = 3


def read(path: str) -> str:
    return "".join(f"{path}:{n}: def function_{n}(): return {n}\n" for n in range(1, 31))


PLACEHOLDER_ID = re.compile(r"recall_result with id ([0-9a-f]{64})")


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is in the test extra")


# -- the answers --------------------------------------------------------------------------

def test_a_range_grep_and_the_whole_result_come_back_with_a_line_saying_which():
    store = MemoryStore()
    saved = store.save(read("a.py"))
    whole = recall_result(store, saved.id)
    assert whole == f"[result {saved.id}: lines 1-30 of 30]\n" + read("a.py").rstrip("\n")
    assert recall_result(store, saved.id, start_line=29) == (f"[result {saved.id}: lines 29-30 of 30]\n"
                                                              "a.py:29: def function_29(): return 29\n"
                                                              "a.py:30: def function_30(): return 30")
    assert recall_result(store, saved.id, grep=r"function_1[0-2]\(", end_line=11) == (
        f"[result {saved.id}: 2 of lines 1-11 (of 30) match 'function_1[0-2]\\\\(']\n"
        "10: a.py:10: def function_10(): return 10\n11: a.py:11: def function_11(): return 11")


def test_answers_are_bounded_and_say_how_to_get_the_rest():
    store = MemoryStore()
    many = store.save("".join(f"line {n}\n" for n in range(1, 1001)))
    answer = recall_result(store, many.id).splitlines()
    assert len(answer) == MAX_LINES + 2
    assert answer[-1] == f"[800 more lines: call recall_result with start_line={MAX_LINES + 1}]"
    wide = store.save("x" * (MAX_CHARS * 3) + "\nnext\n")
    answer = recall_result(store, wide.id)
    assert len(answer) < MAX_CHARS + 200 and "[... 40,000 more characters]" in answer
    assert answer.endswith("[1 more lines: call recall_result with start_line=2]")
    matches = recall_result(store, many.id, grep="line").splitlines()
    assert len(matches) == MAX_LINES + 2 and matches[-1].startswith("[800 more matching lines")


def test_a_path_ending_in_the_id_is_accepted(tmp_path):
    store = FolderStore(tmp_path)
    saved = store.save("hello\n")
    assert recall_result(store, saved.path).endswith("\nhello")


@pytest.mark.parametrize("call,message", [
    (dict(id="0" * 64), "no saved result 0000000000000000000000000000000000000000000000000000000000000000: it is "
                        "unknown or has been removed from the store; call the original tool again if you need it"),
    (dict(id="nope"), "'nope' is not the id of a saved result"),
    (dict(start_line=0), "start_line must be a line number, 1 or more, got 0"),
    (dict(start_line=99), "start_line 99 is past the end: the result has 30 lines"),
    (dict(start_line=5, end_line=2), "end_line 2 is before start_line 5"),
    (dict(grep="(unclosed"), "invalid grep pattern '(unclosed'"),
])
def test_a_recall_that_cannot_be_answered_is_one_clear_error(call, message):
    store = MemoryStore()
    call = {"id": store.save(read("a.py")).id, **call}
    with pytest.raises(RecallError) as caught:
        recall_result(store, **call)
    assert str(caught.value).startswith(message)


def test_a_pruned_result_is_reported_as_removed(tmp_path):
    store = FolderStore(tmp_path, cap_bytes=1500)
    first = store.save(read("a.py"))
    store.save(read("b.py"))
    with pytest.raises(RecallError, match="has been removed from the store"):
        recall_result(store, first.id)


def test_rules_without_a_store_have_nothing_to_recall_from(monkeypatch):
    monkeypatch.delenv("RULES_COMPACT_STORE", raising=False)
    with pytest.raises(RecallError, match="these rules have no store"):
        store_of("default")
    store = MemoryStore()
    assert store_of(load_rules(RULES, store=store)) is store


# -- in a real loop of each integration -----------------------------------------------------

def _id_in(text: str) -> str:
    found = PLACEHOLDER_ID.search(text)
    assert found, f"no recall_result id in {text[:300]!r}"
    return found.group(1)


def test_langchain_agent_recalls_a_cleared_result():
    _needs("langchain")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool

    from rules_compact.integrations.langchain import RulesCompactMiddleware, recall_tool

    store = MemoryStore()
    ruleset = load_rules(RULES, store=store)
    seen: list = []

    class Recording(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, *args, **kwargs):
            seen.append(messages)
            return super()._generate(messages, *args, **kwargs)

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return read(path)

    wanted = content_id(read("f0.py"))
    script = [AIMessage(content="", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"c{i}",
                                                 "type": "tool_call"}]) for i in range(ROUNDS)]
    script += [AIMessage(content="", tool_calls=[{"name": "recall_result", "id": "r1", "type": "tool_call",
                                                  "args": {"id": wanted, "grep": "function_7\\b"}}]),
               AIMessage(content="", tool_calls=[{"name": "recall_result", "id": "r2", "type": "tool_call",
                                                  "args": {"id": "f" * 64}}]),
               AIMessage(content="done")]
    agent = create_agent(Recording(messages=iter(script)), [read_file, recall_tool(store)],
                         middleware=[RulesCompactMiddleware(rules=ruleset, on_compact=lambda report: None)])
    state = agent.invoke({"messages": [{"role": "user", "content": "read f0.py to f2.py"}]}, {"recursion_limit": 50})
    shown = [m.content for m in seen[ROUNDS] if isinstance(m, ToolMessage)]
    assert _id_in(shown[0]) == wanted  # the model saw the placeholder naming the id it recalls
    recalled = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert recalled["r1"].content == (f"[result {wanted}: 1 of lines 1-30 (of 30) match 'function_7\\\\b']\n"
                                      "7: f0.py:7: def function_7(): return 7")
    assert recalled["r2"].status == "error" and "has been removed from the store" in recalled["r2"].content
    assert recall_tool(store).description == DESCRIPTION


def test_pydantic_ai_agent_recalls_a_cleared_result():
    _needs("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from rules_compact.integrations.pydantic_ai import RulesCompactCapability, recall_tool

    store = MemoryStore()
    returns: list = []

    def scripted(messages, info: AgentInfo) -> ModelResponse:
        rounds = sum(isinstance(m, ModelResponse) for m in messages)
        parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        if rounds < ROUNDS:
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": f"f{rounds}.py"}, tool_call_id=f"c{rounds}")])
        if rounds == ROUNDS:  # recall what the first placeholder names, as the model read it
            return ModelResponse(parts=[ToolCallPart("recall_result", {"id": _id_in(str(parts[0].content)),
                                                                       "start_line": 30}, tool_call_id="r1")])
        returns.append(parts[-1].content)
        return ModelResponse(parts=[TextPart("done")])

    compactor = RulesCompactCapability(load_rules(RULES, store=store), on_compact=lambda report: None)
    agent = Agent(FunctionModel(scripted), tools=[recall_tool(store)], capabilities=[compactor])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return read(path)

    assert agent.run_sync("read f0.py to f2.py").output == "done"
    assert returns == [f"[result {content_id(read('f0.py'))}: lines 30-30 of 30]\n"
                       "f0.py:30: def function_30(): return 30"]
    assert recall_tool(store).function_schema.json_schema["required"] == ["id"]


def test_openai_agents_sdk_agent_recalls_a_cleared_result():
    _needs("agents")
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from rules_compact.integrations.openai_agents import input_filter, recall_tool

    store = MemoryStore()

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return read(path)

    wanted = content_id(read("f0.py"))
    steps = [[function_call("read_file", {"path": f"f{i}.py"}, call_id=f"c{i}")] for i in range(ROUNDS)]
    steps += [[function_call("recall_result", {"id": wanted, "start_line": 1, "end_line": 2, "grep": None},
                             call_id="r1")],
              [function_call("recall_result", {"id": "0" * 64, "start_line": None, "end_line": None, "grep": None},
                             call_id="r2")],
              [assistant_message("done")]]
    model = ScriptedModel(steps)
    config = RunConfig(call_model_input_filter=input_filter(load_rules(RULES, store=store),
                                                            on_compact=lambda report: None),
                       tracing_disabled=True)
    agent = Agent(name="reader", model=model, tools=[read_file, recall_tool(store)])
    Runner.run_sync(agent, "read f0.py to f2.py", run_config=config, max_turns=20)
    sent = json.dumps(model.calls[ROUNDS].input, default=str)
    assert _id_in(sent) == wanted  # the model saw the placeholder naming the id it recalls
    outputs = {item["call_id"]: item["output"] for item in model.calls[-1].input
               if isinstance(item, dict) and item.get("type") == "function_call_output"}
    assert outputs["r1"] == (f"[result {wanted}: lines 1-2 of 30]\n"
                             "f0.py:1: def function_1(): return 1\nf0.py:2: def function_2(): return 2")
    assert outputs["r2"].startswith("Error: no saved result 0000") and "removed from the store" in outputs["r2"]

"""RulesCompactMiddleware inside LangChain's own agent loop (create_agent), driven by
langchain_core's GenericFakeChatModel through several tool rounds."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware.types", reason="langchain is in the test extra")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware.context_editing import ClearToolUsesEdit, ContextEditingMiddleware  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from rules_compact import compact, load_rules  # noqa: E402
from rules_compact.integrations.langchain import RulesCompactMiddleware, apply_changes, to_openai, translated  # noqa: E402
from rules_compact.readers import read_conversations  # noqa: E402
from reference.langchain_context_editing import to_langchain  # noqa: E402

RULES = load_rules("""
version: 1
name: keep-one
defaults: {placeholder: "[Previous: used {tool_name}]"}
rules:
  - {name: keep-errors, match: {is_error: true}, action: keep}
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 1}}, action: keep}
  - {name: clear-old, match: {role: tool}, action: placeholder}
  - name: strip-old-reasoning
    match: {role: assistant, has_tool_calls: true, age: {unit: tool_results, gte: 1}}
    action: {strip-text: {keep_text: true}}
""")

PAGES = {name: f"contents of {name}\n" + "x" * 400 for name in ("a.py", "b.py", "c.py")}
MORE_PAGES = {name: f"contents of {name}\n" + "y" * 300 for name in ("a.py", "b.py", "c.py", "d.py", "e.py")}


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return {**MORE_PAGES, **PAGES}[path]


class ToolCallingFake(GenericFakeChatModel):
    """langchain_core's fake chat model; create_agent needs bind_tools (the fake's answers
    are scripted, so binding changes nothing)."""

    def bind_tools(self, tools: Any, **kwargs: Any):
        return self


class Recorder(BaseCallbackHandler):
    """Records the messages each chat-model call received (LangChain's own callback)."""

    def __init__(self):
        self.calls: list[list] = []

    def on_chat_model_start(self, serialized, messages, **kwargs):
        self.calls.append(list(messages[0]))


def script(pages) -> list[AIMessage]:
    steps = [AIMessage(content=f"reading {path}", id=f"ai-{i}",
                       tool_calls=[{"name": "read_file", "args": {"path": path}, "id": f"call-{i}",
                                    "type": "tool_call"}],
                       additional_kwargs={"reasoning_content": f"I should look at {path}"})
             for i, path in enumerate(pages)]
    return steps + [AIMessage(content="done", id="ai-final")]


def run_agent(middleware, use_async: bool = False, pages=PAGES):
    model = ToolCallingFake(messages=iter(script(pages)))
    agent = create_agent(model, [read_file], middleware=[middleware], system_prompt="You read files.")
    recorder = Recorder()
    payload = {"messages": [HumanMessage(content="read the three files", id="human-1")]}
    config = {"callbacks": [recorder]}
    state = asyncio.run(agent.ainvoke(payload, config)) if use_async else agent.invoke(payload, config)
    return state, recorder.calls


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_model_gets_compacted_messages_and_state_keeps_originals(use_async):
    reports = []
    state, calls = run_agent(RulesCompactMiddleware(rules=RULES, on_compact=reports.append), use_async)
    assert len(calls) == 4 and len(reports) == 4

    # the state: every original message, untouched
    msgs = state["messages"]
    tools = [m for m in msgs if isinstance(m, ToolMessage)]
    assert [t.content for t in tools] == list(PAGES.values())
    assert [m.additional_kwargs.get("reasoning_content") for m in msgs if isinstance(m, AIMessage)][:3] == \
        [f"I should look at {p}" for p in PAGES]

    # the last model call: old results are placeholders, the newest is whole
    last = calls[-1]
    assert last[0].type == "system" and last[0].content == "You read files."
    seen_tools = [m for m in last if isinstance(m, ToolMessage)]
    assert [t.content for t in seen_tools] == ["[Previous: used read_file]"] * 2 + [PAGES["c.py"]]
    # ids, tool-call ids and names survive
    assert [t.tool_call_id for t in seen_tools] == ["call-0", "call-1", "call-2"]
    assert [t.id for t in seen_tools] == [t.id for t in tools]
    seen_ai = [m for m in last if isinstance(m, AIMessage)]
    assert [m.id for m in seen_ai] == ["ai-0", "ai-1", "ai-2"]
    assert [c["id"] for m in seen_ai for c in m.tool_calls] == ["call-0", "call-1", "call-2"]
    assert [c["args"] for m in seen_ai for c in m.tool_calls] == [{"path": p} for p in PAGES]
    # old reasoning is stripped from what the model sees, text kept; the newest turn keeps it
    assert [m.additional_kwargs.get("reasoning_content") for m in seen_ai] == [None, None, "I should look at c.py"]
    assert [m.content for m in seen_ai] == [f"reading {p}" for p in PAGES]

    # the callback saw each call's decisions
    assert [r.items_changed for r in reports] == [0, 0, 2, 4]
    cleared = [(d.tool, d.rule) for d in reports[-1].passes[0].decisions if d.changed and d.role == "tool"]
    assert cleared == [("read_file", "clear-old")] * 2


def test_default_callback_logs_what_was_cleared(caplog):
    caplog.set_level("INFO", logger="rules_compact.integrations")
    run_agent(RulesCompactMiddleware(rules=RULES))
    lines = [r.getMessage() for r in caplog.records if r.name == "rules_compact.integrations"]
    assert len(lines) == 2  # the two calls that changed something
    assert lines[-1].startswith("rules-compact: 4 items changed")
    assert "clear-old (placeholder): read_file x2" in lines[-1]


def test_same_as_context_editing_middleware():
    """The langchain-clear-tool-uses preset (trigger lowered to fit a short test) through our
    middleware gives the model what LangChain's own ContextEditingMiddleware gives it with the
    same trigger, in the same agent loop."""
    rules = load_rules("version: 1\nname: low-trigger\nextends: preset:langchain-clear-tool-uses\n"
                       "trigger: {tokens_over: 300}\n")
    _, theirs = run_agent(ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=300)]), pages=MORE_PAGES)
    _, ours = run_agent(RulesCompactMiddleware(rules=rules, on_compact=lambda r: None), pages=MORE_PAGES)

    def shown(calls):
        return [[(m.type, m.content, getattr(m, "tool_call_id", None)) for m in call] for call in calls]

    assert shown(ours) == shown(theirs)
    assert [m.content for m in ours[-1] if isinstance(m, ToolMessage)].count("[cleared]") == 2


def test_thinking_and_reasoning_blocks_in_ai_messages_are_thinking():
    """Anthropic thinking blocks and LangChain v1 reasoning blocks inside AIMessage.content are
    stripped from old turns like any thinking, count in sizes, and stay in the latest turn."""
    strip = load_rules("version: 1\nname: s\nrules:\n  - {name: s, match: {role: assistant, has_thinking: true}, "
                       "action: {strip-text: {keep_text: true}}}\n")
    messages = [HumanMessage("go")]
    for i, block in enumerate([{"type": "thinking", "thinking": "hmm " * 50, "signature": "s"},
                               {"type": "reasoning", "reasoning": "hmm " * 50, "id": "rs_1"},
                               {"type": "redacted_thinking", "data": "opaque"},
                               {"type": "reasoning", "reasoning": "the latest " * 5}]):
        messages += [AIMessage([block, {"type": "text", "text": f"step {i}"}],
                               tool_calls=[{"name": "f", "args": {}, "id": f"c{i}", "type": "tool_call"}]),
                     ToolMessage("ok", tool_call_id=f"c{i}")]
    out = translated(strip, on_compact=lambda r: None)(messages)
    assert [m.content for m in out[1:7:2]] == [[{"type": "text", "text": f"step {i}"}] for i in range(3)]
    assert out[7] is messages[7]  # the latest turn keeps its reasoning
    assert compact([to_openai(m) for m in messages], strip).report.tokens_before > \
        compact([to_openai(m) for m in messages], strip).report.tokens_after + 100


def test_conversion_keeps_what_rules_need():
    ai = AIMessage(content=[{"type": "text", "text": "hi"}, {"type": "thinking", "thinking": "t", "signature": "s"}],
                   tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1", "type": "tool_call"}], name="bot")
    assert to_openai(ai) == {"role": "assistant", "name": "bot", "content": ai.content, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]}
    err = ToolMessage(content="boom", tool_call_id="c1", status="error")
    assert to_openai(err) == {"role": "tool", "content": "boom", "tool_call_id": "c1", "is_error": True}


TRACE = Path(__file__).parent / "data" / "traces" / "mini-swe-agent" / \
    "deepseek_lite_dev__marshmallow-code__marshmallow-1343.traj.json"


def expected(messages: list, rules) -> list:
    """What the model should get: the engine's one-off result on fresh conversions."""
    dicts = [to_openai(m) for m in messages]
    after = compact(dicts, rules, format="openai").messages
    return [m if a is d else apply_changes(m, d, a) for m, d, a in zip(messages, dicts, after)]


@pytest.mark.parametrize("rules", ["default", "preset:keep-recent-results"])
def test_rounds_reuse_conversions_and_notice_edits(rules, monkeypatch):
    """Round after round on a real trace the model gets what a one-off compaction gives; each
    message is converted once; a message whose attributes are reassigned, or whose content
    list grows in place, is converted again and compacted as it now is."""
    messages = [to_langchain(m) for m in read_conversations(TRACE.read_bytes(), TRACE.name)[0].messages]
    ends = [i + 1 for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
    compact_round = translated(rules, on_compact=lambda r: None)
    converted = []
    monkeypatch.setattr(compact_round, "to_dict", lambda m: converted.append(m) or to_openai(m))
    changed_rounds = 0
    for end in ends:
        out = compact_round(messages[:end])
        assert out == expected(messages[:end], rules)
        changed_rounds += any(a is not b for a, b in zip(out, messages))
    assert changed_rounds > len(ends) // 2
    assert len(converted) == len(messages[:ends[-1]]) == len({id(m) for m in converted})

    history = messages[:ends[-1]]
    old = next(i for i, m in enumerate(history) if isinstance(m, ToolMessage))
    before = compact_round(history)
    assert before[old].content != history[old].content  # cleared, so an edit shows only if noticed
    history[old].content = [{"type": "text", "text": "ok"}]  # reassigned: now small, so kept
    after = compact_round(history)
    assert after == expected(history, rules)
    assert after[old].content == [{"type": "text", "text": "ok"}]
    history[old].content.append({"type": "text", "text": "more " * 400})  # grown in place: cleared again
    after = compact_round(history)
    assert after == expected(history, rules)
    assert after[old].content != history[old].content


def run_traced(middleware: list, thread_id: str = "thread-1", run_id: str = "5f0c6c1e-0000-4000-8000-000000000001"):
    """The agent loop with a checkpointer, so that LangGraph tells the thread and the run."""
    from langgraph.checkpoint.memory import InMemorySaver

    model = ToolCallingFake(messages=iter(script(PAGES)))
    agent = create_agent(model, [read_file], middleware=middleware, system_prompt="You read files.",
                         checkpointer=InMemorySaver())
    recorder = Recorder()
    config = {"callbacks": [recorder], "configurable": {"thread_id": thread_id}, "run_id": run_id}
    state = agent.invoke({"messages": [HumanMessage(content="read the three files", id="human-1")]}, config)
    return state, recorder.calls


def test_compacted_messages_carry_context_editing_marks():
    """What the model got is marked as LangChain's ContextEditingMiddleware marks its own
    edits (response_metadata["context_editing"]), so LangSmith runs show what was cleared."""
    state, calls = run_agent(RulesCompactMiddleware(rules=RULES, on_compact=lambda r: None))
    last = calls[-1]
    marks = [(type(m).__name__, m.response_metadata.get("context_editing")) for m in last
             if isinstance(m, (ToolMessage, AIMessage))]
    cleared = {"cleared": True, "strategy": "rules-compact"}
    assert marks == [("AIMessage", cleared), ("ToolMessage", cleared), ("AIMessage", cleared),
                     ("ToolMessage", cleared), ("AIMessage", None), ("ToolMessage", None)]
    # the state's messages are not marked
    assert not any("context_editing" in m.response_metadata for m in state["messages"]
                   if isinstance(m, (ToolMessage, AIMessage)))


def test_cleared_tool_inputs_are_marked_as_context_editing_marks_them():
    rules = load_rules("""
version: 1
name: clear-inputs
rules:
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 1}}, action: keep}
  - {name: clear-old, match: {role: tool}, action: [placeholder, clear-inputs]}
""")
    _, calls = run_agent(RulesCompactMiddleware(rules=rules, on_compact=lambda r: None))
    ai = [m for m in calls[-1] if isinstance(m, AIMessage)]
    assert [m.response_metadata.get("context_editing") for m in ai] == \
        [{"cleared_tool_inputs": ["call-0"]}, {"cleared_tool_inputs": ["call-1"]}, None]


def test_on_compact_gets_thread_and_run_and_old_callbacks_still_work():
    seen, reports = [], []
    middleware = RulesCompactMiddleware(rules=RULES, on_compact=lambda report, where: seen.append((report, where)))
    run_traced([middleware])
    assert len(seen) == 4
    where = seen[-1][1]
    assert (where.integration, where.name) == ("langchain", "RulesCompactMiddleware")
    assert where.thread_id == "thread-1" and where.run_id == "5f0c6c1e-0000-4000-8000-000000000001"
    assert where.session is middleware.session("thread-1")
    assert str(where.session).startswith("cleared 4 items (") and where.session.compactions == 4
    run_traced([RulesCompactMiddleware(rules=RULES, on_compact=reports.append)])
    assert [r.items_changed for r in reports] == [0, 0, 2, 4]


def test_several_instances_in_one_agent_each_with_its_name():
    first, second = [], []
    keep_all = load_rules("version: 1\nname: keep-all\nrules:\n  - {name: all, match: {role: tool}, action: keep}\n")
    middleware = [RulesCompactMiddleware(rules=keep_all, name="first", on_compact=lambda r, w: first.append(w)),
                  RulesCompactMiddleware(rules=RULES, name="second", on_compact=lambda r, w: second.append(w))]
    _, calls = run_traced(middleware)
    assert len(first) == len(second) == 4
    assert {w.name for w in first} == {"first"} and {w.name for w in second} == {"second"}
    assert [t.content for t in calls[-1] if isinstance(t, ToolMessage)] == \
        ["[Previous: used read_file]"] * 2 + [PAGES["c.py"]]
    with pytest.raises(AssertionError, match="duplicate middleware"):
        create_agent(ToolCallingFake(messages=iter([])), [read_file],
                     middleware=[RulesCompactMiddleware(rules=RULES), RulesCompactMiddleware(rules=RULES)])


def test_each_model_call_is_an_otel_span(otel_spans):
    from rules_compact.integrations.tracing import SPAN_NAME

    run_traced([RulesCompactMiddleware(rules=RULES, name="compact-old", on_compact=lambda r: None)])
    spans = [s for s in otel_spans.get_finished_spans() if s.name == SPAN_NAME]
    assert [s.attributes["rules_compact.items_changed"] for s in spans] == [0, 0, 2, 4]
    last = spans[-1].attributes
    assert last["rules_compact.name"] == "compact-old" and last["gen_ai.conversation.id"] == "thread-1"
    assert last["rules_compact.changed.clear-old"] == 2 and last["rules_compact.changed.strip-old-reasoning"] == 2
    assert last["rules_compact.tokens_before"] > last["rules_compact.tokens_after"]


def test_the_note_is_in_the_system_message_once_something_was_cleared():
    from rules_compact.integrations import MODEL_NOTE

    _, calls = run_agent(RulesCompactMiddleware(rules=RULES, note=True, on_compact=lambda r: None))
    assert [c[0].content for c in calls] == ["You read files."] * 2 + [f"You read files.\n\n{MODEL_NOTE}"] * 2
    _, calls = run_agent(RulesCompactMiddleware(rules=RULES, on_compact=lambda r: None))
    assert [c[0].content for c in calls] == ["You read files."] * 4


def _outside_the_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


def test_offload_compacts_outside_the_event_loop_with_the_same_result():
    inside, outside = [], []
    _, plain = run_agent(RulesCompactMiddleware(rules=RULES, on_compact=lambda r: inside.append(_outside_the_loop())),
                         use_async=True)
    _, offloaded = run_agent(RulesCompactMiddleware(rules=RULES, offload=True,
                                                    on_compact=lambda r: outside.append(_outside_the_loop())),
                             use_async=True)
    assert inside == [False] * 4 and outside == [True] * 4
    assert [[(type(m), m.content) for m in call] for call in offloaded] == \
        [[(type(m), m.content) for m in call] for call in plain]

"""input_filter inside the OpenAI Agents SDK's own run loop, driven by the SDK's test model
(agents.testing.ScriptedModel) through several tool rounds."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("agents.testing", reason="openai-agents is in the test extra")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from openai.types.responses import ResponseReasoningItem  # noqa: E402
from openai.types.responses.response_reasoning_item import Summary  # noqa: E402

from rules_compact import load_rules  # noqa: E402
from rules_compact.integrations.openai_agents import input_filter  # noqa: E402

from conftest import STEPPED_DEFAULT  # noqa: E402

RULES = load_rules("""
version: 1
name: keep-one
defaults: {placeholder: "[Previous: used {tool_name}]"}
rules:
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 1}}, action: keep}
  - {name: clear-old, match: {role: tool}, action: [placeholder, clear-inputs]}
  - name: strip-old-turns
    match: {role: assistant, has_tool_calls: true, age: {unit: tool_results, gte: 2}}
    action: {strip-text: {marker: "[text removed]"}}
""")

PAGES = {name: f"contents of {name}\n" + "x" * 400 for name in ("a.py", "b.py", "c.py")}


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return PAGES[path]


def script() -> list:
    steps = []
    for i, path in enumerate(PAGES):
        steps.append([
            ResponseReasoningItem(id=f"rs_{i}", type="reasoning", encrypted_content=f"opaque-{i}",
                                  summary=[Summary(type="summary_text", text=f"look at {path}")]),
            assistant_message(f"reading {path}", item_id=f"msg_{i}"),
            function_call("read_file", {"path": path}, call_id=f"call-{i}", item_id=f"fc_{i}"),
        ])
    steps.append([assistant_message("done", item_id="msg_final")])
    return steps


def run(filter_):
    model = ScriptedModel(script())
    agent = Agent(name="reader", instructions="You read files.", model=model, tools=[read_file])
    config = RunConfig(call_model_input_filter=filter_, tracing_disabled=True)
    result = Runner.run_sync(agent, "read the three files", run_config=config)
    model.assert_complete()
    return result, model.calls


def by_type(items, kind):
    return [it for it in items if isinstance(it, dict) and it.get("type") == kind]


def test_model_gets_compacted_items_and_run_keeps_originals():
    reports = []
    result, calls = run(input_filter(RULES, on_compact=reports.append))
    _, plain = run(None)
    assert result.final_output == "done" and len(calls) == 4 and len(reports) == 4

    last, original = calls[-1].input, plain[-1].input
    assert len(last) == len(original)  # never an item removed or added
    assert [it.get("type") for it in last] == [it.get("type") for it in original]
    outputs = by_type(last, "function_call_output")
    assert [o["output"] for o in outputs] == ["[Previous: used read_file]"] * 2 + [PAGES["c.py"]]
    assert [o["call_id"] for o in outputs] == ["call-0", "call-1", "call-2"]
    # reasoning items are never altered
    assert by_type(last, "reasoning") == by_type(original, "reasoning")
    assert [r["encrypted_content"] for r in by_type(last, "reasoning")] == ["opaque-0", "opaque-1", "opaque-2"]
    # calls keep their ids; the cleared ones lose their arguments
    calls_seen = by_type(last, "function_call")
    assert [(c["id"], c["call_id"], c["name"]) for c in calls_seen] == \
        [(f"fc_{i}", f"call-{i}", "read_file") for i in range(3)]
    assert [c["arguments"] for c in calls_seen] == ["{}", "{}", '{"path":"c.py"}']
    # the old turns' text became the marker; ids stay
    texts = [(m.get("id"), m["content"][0]["text"]) for m in last
             if m.get("type") == "message" and m.get("role") == "assistant"]
    assert texts == [("msg_0", "[text removed]"), ("msg_1", "[text removed]"), ("msg_2", "reading c.py")]

    # the run keeps the originals
    kept = result.to_input_list()
    assert [o["output"] for o in by_type(kept, "function_call_output")] == list(PAGES.values())
    assert [c["arguments"] for c in by_type(kept, "function_call")] == \
        ['{"path":"a.py"}', '{"path":"b.py"}', '{"path":"c.py"}']
    assert [r.items_changed for r in reports] == [0, 0, 2, 4]


def test_unchanged_items_are_the_same_objects():
    from agents.run_config import CallModelData, ModelInputData

    items = [{"role": "user", "content": "hi"},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "id": "fc_1"},
             {"type": "function_call_output", "call_id": "c1", "output": "x" * 100},
             {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}", "id": "fc_2"},
             {"type": "function_call_output", "call_id": "c2", "output": "y"}]
    snapshot = copy.deepcopy(items)
    data = CallModelData(model_data=ModelInputData(input=items, instructions="be brief"), agent=None, context=None)
    out = input_filter(RULES, on_compact=lambda r: None)(data)
    assert isinstance(out, ModelInputData) and out.instructions == "be brief"
    assert items == snapshot
    assert [a is b for a, b in zip(out.input, items)] == [True, True, False, True, True]
    assert out.input[2]["output"] == "[Previous: used f]"


def test_default_callback_logs(caplog):
    caplog.set_level("INFO", logger="rules_compact.integrations")
    run(input_filter(RULES))
    lines = [r.getMessage() for r in caplog.records if r.name == "rules_compact.integrations"]
    assert len(lines) == 2
    assert lines[-1].startswith("rules-compact: 4 items changed")


def test_filtered_input_is_a_valid_responses_request():
    """What the filter hands the SDK is still valid ``responses.create(input=...)`` input."""
    pytest.importorskip("anthropic", reason="the type check lives in test_integrations_sdk")
    from openai.types.responses import ResponseInputParam
    from test_integrations_sdk import conforms

    _, calls = run(input_filter(RULES, on_compact=lambda r: None))
    for call in calls:
        assert conforms(call.input, ResponseInputParam), call.input


def test_rebuilt_items_each_call():
    """The SDK builds new item objects for every call: each call still gets what a one-off
    compaction gives (also when an earlier item differs from the previous call's), and every
    item no rule changed is the object that call passed in."""
    from rules_compact import compact
    from rules_compact.integrations._common import Hook
    from rules_compact.integrations.openai_agents import _SameItems

    items = [{"type": "message", "role": "user", "content": "read every file"}]
    for i in range(30):
        items += [{"type": "reasoning", "id": f"rs_{i}", "encrypted_content": f"opaque-{i}", "summary": []},
                  {"type": "message", "role": "assistant", "id": f"msg_{i}",
                   "content": [{"type": "output_text", "text": f"reading file {i} " + "because " * 40}]},
                  {"type": "function_call", "call_id": f"call-{i}", "name": "read_file",
                   "arguments": f'{{"path": "f{i}.py"}}'},
                  {"type": "function_call_output", "call_id": f"call-{i}", "output": f"file {i}\n" + "x" * 400}]
    compact_round = _SameItems(Hook(STEPPED_DEFAULT, lambda report: None))
    for end in range(5, len(items) + 1, 4):
        passed = copy.deepcopy(items[:end])
        if end == 65:  # an earlier item differs in this call only
            passed[4]["output"] = "short"
        out = compact_round(passed)[0]
        assert out == compact(copy.deepcopy(passed), STEPPED_DEFAULT, format="responses").messages
        assert all(after is item or after != item for after, item in zip(out, passed))
    assert sum(after != item for after, item in zip(out, passed)) > 20


class SpanRecorder:
    """An Agents SDK trace processor that keeps the spans and traces it is given."""

    def __init__(self):
        self.spans, self.traces = [], []

    def on_trace_start(self, trace):
        self.traces.append(trace)

    def on_trace_end(self, trace):
        pass

    def on_span_start(self, span):
        pass

    def on_span_end(self, span):
        self.spans.append(span)

    def shutdown(self):
        pass

    def force_flush(self):
        pass


@pytest.fixture
def agents_trace():
    from agents.tracing import get_trace_provider, set_trace_processors

    provider = get_trace_provider()
    kept = provider._multi_processor._processors if hasattr(provider, "_multi_processor") else None
    recorder = SpanRecorder()
    set_trace_processors([recorder])  # not the default exporter: nothing leaves the machine
    yield recorder
    set_trace_processors(list(kept or ()))


def run_traced(filter_, **config):
    model = ScriptedModel(script())
    agent = Agent(name="reader", instructions="You read files.", model=model, tools=[read_file])
    run_config = RunConfig(call_model_input_filter=filter_, group_id="chat-7", **config)
    result = Runner.run_sync(agent, "read the three files", run_config=run_config)
    model.assert_complete()
    return result, model.calls


def test_each_model_call_is_a_custom_span_in_the_run_trace(agents_trace):
    seen = []
    filter_ = input_filter(RULES, name="compact-old", on_compact=lambda report, where: seen.append(where))
    run_traced(filter_)
    spans = [s for s in agents_trace.spans if s.span_data.type == "custom" and s.span_data.name == "compact-old"]
    assert len(spans) == 4
    data = [s.span_data.data for s in spans]
    assert [d["rules_compact.items_changed"] for d in data] == [0, 0, 2, 4]
    assert data[-1]["rules_compact.changed.clear-old"] == 2 and data[-1]["rules_compact.changed.strip-old-turns"] == 2
    assert data[-1]["rules_compact.tokens_before"] > data[-1]["rules_compact.tokens_after"]
    assert data[-1]["rules_compact.boundary_moved"] is False and data[-1]["rules_compact.over_budget"] is False
    [trace] = agents_trace.traces
    assert {s.trace_id for s in spans} == {trace.trace_id}
    assert data[-1]["gen_ai.conversation.id"] == "chat-7" and data[-1]["rules_compact.run_id"] == trace.trace_id
    assert [w.thread_id for w in seen] == ["chat-7"] * 4
    assert str(filter_.session("chat-7")).startswith("cleared 4 items (")


def test_the_note_is_in_the_instructions_once_something_was_cleared():
    from rules_compact.integrations import MODEL_NOTE

    _, calls = run(input_filter(RULES, note=True, on_compact=lambda r: None))
    assert [c.system_instructions for c in calls] == \
        ["You read files."] * 2 + [f"You read files.\n\n{MODEL_NOTE}"] * 2


def test_offload_compacts_outside_the_event_loop_in_the_same_trace(agents_trace):
    import asyncio

    def outside_the_loop() -> bool:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return True
        return False

    where = []
    filter_ = input_filter(RULES, offload=True, on_compact=lambda report: where.append(outside_the_loop()))
    _, calls = run_traced(filter_)
    _, plain = run(input_filter(RULES, on_compact=lambda r: None))
    assert where == [True] * 4
    assert [c.input for c in calls] == [c.input for c in plain]
    spans = [s for s in agents_trace.spans if s.span_data.type == "custom" and s.span_data.name == "rules-compact"]
    [trace] = agents_trace.traces
    assert len(spans) == 4 and {s.trace_id for s in spans} == {trace.trace_id}

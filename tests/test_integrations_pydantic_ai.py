"""pydantic-ai integration inside pydantic-ai's own agent loop, driven by its FunctionModel
through several tool rounds."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim is in the test extra")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from rules_compact import load_rules  # noqa: E402
from rules_compact.integrations.pydantic_ai import (  # noqa: E402
    RulesCompactCapability,
    compact_history,
    history_processor,
    to_anthropic,
    translated,
)

try:
    from pydantic_ai.capabilities import ProcessHistory
except ImportError:  # pydantic-ai 1.x
    ProcessHistory = None

RULES = load_rules("""
version: 1
name: keep-one
defaults: {placeholder: "[Previous: used {tool_name}]"}
rules:
  - {name: keep-errors, match: {is_error: true}, action: keep}
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 1}}, action: keep}
  - {name: clear-old, match: {role: tool}, action: placeholder}
  - name: strip-old-turns
    match: {role: assistant, has_tool_calls: true, age: {unit: tool_results, gte: 2}}
    action: {strip-text: {marker: "[reasoning removed]"}}
""")

PAGES = {name: f"contents of {name}\n" + "x" * 400 for name in ("a.py", "b.py", "c.py")}


class Script:
    """A FunctionModel function: one tool call per round, then an answer; records what it got."""

    def __init__(self):
        self.seen: list[list] = []

    def __call__(self, messages, info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        rounds = sum(isinstance(m, ModelResponse) for m in messages)
        paths = list(PAGES)
        if rounds < len(paths):
            return ModelResponse(parts=[
                ThinkingPart(content=f"I should read {paths[rounds]}"),
                TextPart(content=f"reading {paths[rounds]}"),
                ToolCallPart(tool_name="read_file", args={"path": paths[rounds]}, tool_call_id=f"call-{rounds}"),
            ])
        return ModelResponse(parts=[TextPart(content="done")])


def make_agent(script, **kwargs) -> Agent:
    agent = Agent(FunctionModel(script), **kwargs)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return PAGES[path]

    return agent


def returns(messages) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def check_last_request(seen):
    last = seen[-1]
    assert [p.content for p in returns(last)] == ["[Previous: used read_file]"] * 2 + [PAGES["c.py"]]
    assert [p.tool_call_id for p in returns(last)] == ["call-0", "call-1", "call-2"]
    responses = [m for m in last if isinstance(m, ModelResponse)]
    # old turns: thinking and text gone, a marker in their place, the call kept with its id and args
    for m in responses[:2]:
        kinds = [type(p).__name__ for p in m.parts]
        assert kinds == ["TextPart", "ToolCallPart"], kinds
        assert m.parts[0].content == "[reasoning removed]"
    assert [p.args for m in responses for p in m.parts if isinstance(p, ToolCallPart)] == \
        [{"path": p} for p in PAGES]
    # the newest turn is whole
    assert [type(p).__name__ for p in responses[2].parts] == ["ThinkingPart", "TextPart", "ToolCallPart"]


@pytest.mark.skipif(RulesCompactCapability is None, reason="pydantic-ai without capabilities")
def test_capability_model_gets_compacted_and_run_keeps_originals():
    script, reports = Script(), []
    agent = make_agent(script, capabilities=[RulesCompactCapability(RULES, on_compact=reports.append)])
    result = agent.run_sync("read the three files")
    assert result.output == "done"
    assert len(script.seen) == 4 and len(reports) == 4
    check_last_request(script.seen)
    # the run's history keeps every original
    history = result.all_messages()
    assert [p.content for p in returns(history)] == list(PAGES.values())
    assert [type(p).__name__ for m in history if isinstance(m, ModelResponse) for p in m.parts][:3] == \
        ["ThinkingPart", "TextPart", "ToolCallPart"]
    assert [r.items_changed for r in reports] == [0, 0, 2, 4]


@pytest.mark.skipif(ProcessHistory is None, reason="pydantic-ai 1.x: history_processors=")
def test_history_processor_is_written_back_by_pydantic_ai():
    """What pydantic-ai does with a processed history: ProcessHistory writes it back into the
    run's message history, so all_messages() holds the compacted messages."""
    script, reports = Script(), []
    agent = make_agent(script, capabilities=[ProcessHistory(history_processor(RULES, on_compact=reports.append))])
    result = agent.run_sync("read the three files")
    assert result.output == "done" and len(reports) == 4
    check_last_request(script.seen)
    history = result.all_messages()
    assert [p.content for p in returns(history)] == ["[Previous: used read_file]"] * 2 + [PAGES["c.py"]]
    # written back every round, then compacted again: idempotent, so nothing is cleared twice
    assert [r.items_changed for r in reports] == [0, 0, 2, 2]


def test_default_callback_logs(caplog):
    caplog.set_level("INFO", logger="rules_compact.integrations")
    script = Script()
    compact = history_processor(RULES)
    agent = make_agent(script)
    result = agent.run_sync("read the three files")
    out = compact(result.all_messages())
    assert [p.content for p in returns(out)][:2] == ["[Previous: used read_file]"] * 2
    lines = [r.getMessage() for r in caplog.records if r.name == "rules_compact.integrations"]
    assert lines and "clear-old (placeholder): read_file x2" in lines[-1]


def test_pinned_reasoning_and_errors():
    """A ThinkingPart with an id (an OpenAI reasoning item) is never removed, not even by
    drop_other_blocks; an error outcome is an error result."""
    rules = load_rules("""
version: 1
name: strip-all
rules:
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 1}}, action: keep}
  - {name: clear, match: {role: tool, is_error: true}, action: {placeholder: {allow_larger: true}}}
  - name: strip
    match: {role: assistant}
    action: {strip-text: {marker: "[removed]", drop_other_blocks: true, tool_turns_only: false}}
""")
    pinned = ThinkingPart(content="", id="rs_1", signature="enc", provider_name="openai")
    messages = [
        ModelRequest(parts=[UserPromptPart(content="go")]),
        ModelResponse(parts=[pinned, TextPart(content="hm", id="msg_1", provider_name="openai"),
                             ToolCallPart(tool_name="t", args='{"a": 1}', tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart(tool_name="t", content="boom", tool_call_id="c1", outcome="failed")]),
        ModelResponse(parts=[ToolCallPart(tool_name="t", args={}, tool_call_id="c2")]),
        ModelRequest(parts=[ToolReturnPart(tool_name="t", content="ok", tool_call_id="c2")]),
    ]
    assert to_anthropic(messages[2])["content"][0]["is_error"] is True
    out = compact_history(messages, rules)
    assert out[0] is messages[0] and out[4] is messages[4]
    assert out[1].parts[0] is pinned
    assert [type(p).__name__ for p in out[1].parts] == ["ThinkingPart", "TextPart", "ToolCallPart"]
    assert out[1].parts[1].content == "[removed]" and out[1].parts[1].id is None
    assert out[2].parts[0].content == "[Previous: used t]" and out[2].parts[0].outcome == "failed"
    assert dataclasses.replace(messages[1]).parts == messages[1].parts  # the input is untouched
    assert messages[1].parts[1].content == "hm"


def test_rounds_notice_edits_to_parts():
    """The history processor converts each message once; a part replaced in a message's part
    list (here by an error result) is noticed on the next call and compacted as it now is."""
    messages = [ModelRequest(parts=[UserPromptPart(content="go")])]
    for n in range(3):
        messages += [ModelResponse(parts=[ToolCallPart(tool_name="read_file", args={"n": n}, tool_call_id=f"c{n}")]),
                     ModelRequest(parts=[ToolReturnPart(tool_name="read_file", content="x" * 500, tool_call_id=f"c{n}")])]
    process = translated(RULES, on_compact=lambda r: None)
    first = process(messages)
    assert [p.content for m in first[2::2] for p in m.parts] == ["[Previous: used read_file]"] * 2 + ["x" * 500]
    assert process(messages)[2] is first[2]  # the compacted copy is made once
    messages[2].parts[0] = ToolReturnPart(tool_name="read_file", content="boom", tool_call_id="c0", outcome="failed")
    assert process(messages) == compact_history(messages, RULES)
    assert process(messages)[2].parts[0].content == "boom"  # an error result: kept


@pytest.mark.skipif(RulesCompactCapability is None, reason="pydantic-ai without capabilities")
@pytest.mark.parametrize("offload", [False, True], ids=["in-the-loop", "offload"])
def test_compaction_spans_sit_in_the_instrumented_run(offload):
    """With the agent instrumented (what Logfire's instrument_pydantic_ai does), each request's
    compaction is a span of the run's own tracer, in the run's trace; also when it runs in a
    worker thread (offload), outside the event loop."""
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is in the test extra")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai.models.instrumented import InstrumentationSettings

    from rules_compact.integrations.tracing import SPAN_NAME

    exporter, provider = InMemorySpanExporter(), sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen = []
    loops = []

    def on_compact(report, where):
        seen.append(where)
        try:
            loops.append(asyncio.get_running_loop() is not None)
        except RuntimeError:
            loops.append(False)

    agent = make_agent(Script(), capabilities=[RulesCompactCapability(RULES, name="compact-old", offload=offload,
                                                                      on_compact=on_compact)])
    agent.instrument = InstrumentationSettings(tracer_provider=provider)
    result = agent.run_sync("read the three files", conversation_id="conv-9")
    spans = exporter.get_finished_spans()
    ours = [s for s in spans if s.name == SPAN_NAME]
    assert [s.attributes["rules_compact.items_changed"] for s in ours] == [0, 0, 2, 4]
    [run] = [s for s in spans if s.parent is None]
    assert {s.context.trace_id for s in ours} == {run.context.trace_id}
    last = ours[-1].attributes
    assert last["rules_compact.integration"] == "pydantic-ai" and last["rules_compact.name"] == "compact-old"
    assert last["gen_ai.conversation.id"] == "conv-9" and last["rules_compact.run_id"] == result.run_id
    assert last["rules_compact.changed.clear-old"] == 2 and last["rules_compact.changed.strip-old-turns"] == 2
    assert [w.thread_id for w in seen] == ["conv-9"] * 4
    assert loops == [not offload] * 4


@pytest.mark.skipif(RulesCompactCapability is None, reason="pydantic-ai without capabilities")
def test_capability_from_an_agent_spec():
    script = Script()
    agent = Agent.from_spec({"model": "test", "capabilities": [
        {"RulesCompactCapability": {"rules": "preset:keep-recent-results", "name": "from-spec", "note": True}}]},
        custom_capability_types=[RulesCompactCapability])
    [capability] = [c for c in agent.root_capability.capabilities if isinstance(c, RulesCompactCapability)]
    assert capability.name == "from-spec" and capability.note is True
    assert capability._hook.rulesets[0].name == "keep-recent-results"
    with agent.override(model=FunctionModel(script)):
        @agent.tool_plain
        def read_file(path: str) -> str:
            """Read a file."""
            return PAGES[path]

        assert agent.run_sync("read the three files").output == "done"


@pytest.mark.skipif(RulesCompactCapability is None, reason="pydantic-ai without capabilities")
def test_the_note_is_an_instruction_once_something_was_cleared():
    from rules_compact.integrations import MODEL_NOTE

    got = []

    def model(messages, info: AgentInfo):
        got.append(info.instructions)
        return Script.__call__(script, messages, info)

    script = Script()
    agent = make_agent(model, instructions="You read files.",
                       capabilities=[RulesCompactCapability(RULES, note=True, on_compact=lambda r: None)])
    agent.run_sync("read the three files")
    assert [g.endswith(MODEL_NOTE) for g in got] == [False, False, True, True]
    assert all(g.startswith("You read files.") for g in got)


@pytest.mark.skipif(ProcessHistory is None, reason="pydantic-ai 1.x: history_processors=")
def test_written_back_history_adds_up_in_the_session():
    processor = history_processor(RULES, on_compact=lambda r: None)
    make_agent(Script(), capabilities=[ProcessHistory(processor)]).run_sync("read the three files")
    session = processor.session()
    assert session.compactions == 4 and session.items_cleared == 4  # 2 + 2, each cleared once
    assert str(session).startswith("cleared 4 items (")

"""Requests a model API accepts, built the way users build them: the Anthropic SDK with
RequestCompactor, LangChain's ChatAnthropic inside create_agent, pydantic-ai's AnthropicModel
and the OpenAI Agents SDK, each in its own loop over a fake transport, so that what is checked
is the request body the framework's own code sends.

Covered: Anthropic's limit of 4 cache breakpoints (counting system, tools and every message);
the default's step-boundary breakpoint reaching the wire; no empty text block (an empty strip
marker removes the block); thinking blocks inside LangChain messages; breakpoints that survive
the edits that remove their block; the Responses format's old assistant messages stripped to
the marker.  (Server tool blocks kept by ``drop_other_blocks``: tests/test_presets.py.)"""

from __future__ import annotations

import copy
import http.server
import importlib
import importlib.util
import json
import threading

import pytest

from rules_compact import Compactor, compact, load_rules, parse_rules
from rules_compact.kinds.actions.strip_text import DEFAULT_MARKER as DEFAULT_STRIP_MARKER
from rules_compact.formats import count_breakpoints
from rules_compact.testing import check_api_validity, check_invariants

from conftest import STEPPED_DEFAULT

anthropic = pytest.importorskip("anthropic", reason="anthropic is in the test extra")
http_ = importlib.import_module("httpx2" if importlib.util.find_spec("httpx2") else "httpx")

BP = {"type": "ephemeral"}
DEFAULT = load_rules("default")
STEPPED = load_rules(STEPPED_DEFAULT)  # what these tests need of the default: its breakpoint at a step boundary


def request_breakpoints(body: dict) -> int:
    """Every cache breakpoint of an Anthropic request body: top level, system, tools, messages
    (their blocks and the blocks inside tool results)."""
    blocks = [b for m in body["messages"] if isinstance(m.get("content"), list) for b in m["content"]]
    inner = [b.get("content") for b in blocks if b.get("type") == "tool_result"]
    return (count_breakpoints({"cache_control": body.get("cache_control")}) + count_breakpoints(body.get("system"))
            + count_breakpoints(body.get("tools")) + count_breakpoints(blocks) + sum(map(count_breakpoints, inner)))


def tool_round(i: int, text: str = "") -> list[dict]:
    """One Anthropic tool round: the assistant's reasoning and call, then its result."""
    return [{"role": "assistant", "content": [
                {"type": "text", "text": text or f"step {i}: " + "I should look further. " * 12},
                {"type": "tool_use", "id": f"toolu_{i:02}", "name": "bash", "input": {"command": f"cat f{i}.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:02}",
                                          "content": f"f{i}.py\n" + "line of output\n" * 40}]}]


def session(rounds: int) -> list[dict]:
    return [{"role": "user", "content": "Fix the failing test."}] + [m for i in range(rounds) for m in tool_round(i)]


def mark_last(messages: list, count: int) -> list:
    """The messages, the last block of each of the last ``count`` carrying a breakpoint (as an
    application marks its newest turns); copies, the input is left alone."""
    out = list(messages)
    for i in range(len(out) - count, len(out)):
        blocks = list(out[i]["content"])
        blocks[-1] = {**blocks[-1], "cache_control": BP}
        out[i] = {**out[i], "content": blocks}
    return out


SYSTEM = [{"type": "text", "text": "You fix bugs.", "cache_control": BP}]
TOOLS = [{"name": "bash", "description": "Run a command.", "input_schema": {"type": "object"}, "cache_control": BP}]


# -- the limit, with RequestCompactor and compact() ----------------------------------------------

def test_system_tools_and_the_last_two_messages_stay_four():
    from rules_compact.integrations.sdk import RequestCompactor

    request = {"model": "claude-x", "max_tokens": 100, "system": SYSTEM, "tools": TOOLS,
               "messages": mark_last(session(25), 2)}
    assert request_breakpoints(request) == 4
    reports = []
    sent = RequestCompactor(STEPPED, on_compact=reports.append)(request)
    assert request_breakpoints(sent) == 4  # the default's own breakpoint stood back
    assert sent["messages"][-2:] == request["messages"][-2:]  # the caller's are never removed
    stood = [d for d in reports[0].passes[0].decisions if d.rule == "cache-breakpoint-at-step"]
    assert [d.note for d in stood] == ["left as it is: the request already holds 4 cache breakpoints (at most 4)"]
    # with room, the default puts its breakpoint at the step boundary
    plain_tools = [{k: v for k, v in tool.items() if k != "cache_control"} for tool in TOOLS]
    roomy = RequestCompactor(STEPPED, on_compact=lambda r: None)({**request, "tools": plain_tools})
    assert request_breakpoints(roomy) == 4
    assert sum(map(count_breakpoints, (m["content"] for m in roomy["messages"]))) == 3


@pytest.mark.parametrize("outside", [
    {"system": [{"type": "text", "text": f"part {i}", "cache_control": BP} for i in range(4)]},
    {"system": SYSTEM + [{"type": "text", "text": "more"}], "tools": TOOLS * 2, "cache_control": BP},
], ids=["four-on-system", "system-tools-and-top-level"])
def test_apply_counts_a_bodys_breakpoints_outside_its_messages(tmp_path, outside):
    """``rules-compact apply`` on a request body counts its system, tools and top-level
    breakpoints, as RequestCompactor does (it wrote a 5th)."""
    from rules_compact.cli import main

    body = {"model": "claude-x", "max_tokens": 100, "messages": session(25)}
    (tmp_path / "plain.json").write_text(json.dumps(body))
    (tmp_path / "full.json").write_text(json.dumps({**body, **outside}))
    for name in ("plain", "full"):
        assert main(["apply", str(tmp_path / f"{name}.json"), "-r", str(STEPPED_DEFAULT),
                     "-o", str(tmp_path / f"{name}-out.json")]) == 0
    assert request_breakpoints(json.loads((tmp_path / "plain-out.json").read_text())) == 1  # the default's own
    assert request_breakpoints(json.loads((tmp_path / "full-out.json").read_text())) == 4


def test_forty_rounds_through_the_anthropic_sdk_never_go_over_four():
    """An agent loop on the real client: each round the application marks its system prompt,
    its tools and its newest one or two messages (3 or 4 breakpoints); with the default's at
    the step boundary, no request the SDK sends ever holds more than 4, and the default's does
    reach the wire whenever there is room."""
    from rules_compact.integrations.sdk import RequestCompactor, compact_request

    bodies: list[dict] = []

    def answer(request):
        bodies.append(json.loads(request.content))
        return http_.Response(200, json={
            "id": f"msg_{len(bodies)}", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}})

    client = anthropic.Anthropic(api_key="test", http_client=http_.Client(transport=http_.MockTransport(answer)),
                                 max_retries=0)
    compact_request_ = RequestCompactor(STEPPED, on_compact=lambda report: None)
    history = session(0)
    for i in range(40):
        history += tool_round(i)
        request = {"model": "claude-x", "max_tokens": 100, "system": SYSTEM, "tools": TOOLS,
                   "messages": mark_last(history, 1 + i % 2)}
        sent = compact_request_(request)
        assert sent == compact_request(request, STEPPED, on_compact=lambda report: None)  # reuse is exact
        client.messages.create(**sent)
    assert len(bodies) == 40
    assert max(map(request_breakpoints, bodies)) == 4
    ours = [i for i, body in enumerate(bodies) if any(
        b.get("cache_control") for m in body["messages"][:-2] for b in m["content"] if isinstance(b, dict))]
    assert ours == list(range(10, 40, 2))  # the step-boundary breakpoint, from the 10th result, when there is room


def test_a_bare_message_list_counts_its_own_breakpoints():
    messages = mark_last(session(25), 4)
    out = compact(messages, STEPPED)
    assert sum(map(count_breakpoints, (m["content"] for m in out.messages))) == 4
    check_api_validity(messages, out.messages, "anthropic")
    # two more outside the messages (system, tools): none added, the caller's 4 kept as they are
    two = mark_last(session(25), 2)
    assert sum(map(count_breakpoints, (m["content"] for m in compact(two, STEPPED).messages))) == 3
    out = compact(two, STEPPED, breakpoints_outside=2)
    assert sum(map(count_breakpoints, (m["content"] for m in out.messages))) == 2
    check_api_validity(two, out.messages, "anthropic", breakpoints_outside=2)
    with pytest.raises(AssertionError, match="5 cache breakpoints in the request"):
        check_api_validity(two, compact(two, STEPPED).messages, "anthropic", breakpoints_outside=2)


def test_a_request_already_over_the_limit_keeps_its_own_and_gets_none():
    messages = mark_last(session(25), 6)
    out = compact(messages, "default").messages
    assert sum(map(count_breakpoints, (m["content"] for m in out))) == 6
    assert [i for i, m in enumerate(out) if count_breakpoints(m["content"])] == list(range(45, 51))


def test_a_compactor_follows_the_breakpoints_the_request_holds():
    """Reused decisions depend on how many breakpoints the rest of the request holds: when that
    changes between calls, the Compactor still gives what compact() gives."""
    compactor = Compactor("default")
    history = session(0)
    for i in range(30):
        history += tool_round(i)
        request = mark_last(history, i % 3)
        outside = (0, 2, 3, 1)[i % 4]
        got = compactor(request, breakpoints_outside=outside)
        want = compact(request, "default", breakpoints_outside=outside)
        assert got.messages == want.messages
        assert got.report.to_dict() == want.report.to_dict()
        check_api_validity(request, got.messages, "anthropic", outside)


# -- empty markers, and breakpoints on what an action removes ------------------------------------

def strip_rules(**options) -> object:
    return parse_rules(json.dumps({"version": 1, "name": "strip", "rules": [
        {"name": "strip", "match": {"role": "assistant"}, "action": {"strip-text": options}}]}))


@pytest.mark.parametrize("marker", ["", " ", "\n"])
def test_a_blank_marker_removes_the_block(marker):
    messages = session(2) + [{"role": "assistant", "content": [{"type": "text", "text": "Done."}]}]
    out = check_invariants(messages, strip_rules(marker=marker), "anthropic").messages
    assert out[1]["content"] == [messages[1]["content"][1]]  # the tool call alone: no empty text block
    assert out[3]["content"] == [messages[3]["content"][1]]
    assert out[5] is messages[5]  # no tool calls: not stripped (tool_turns_only)


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_stripping_all_a_message_holds_writes_the_marker(fmt):
    """A turn without tool calls (tool_turns_only: false) whose text all goes: the marker stands
    in, the default one when the rule gives none or a blank one; a message is never emptied."""
    text = "A long final answer. " * 20
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "text", "text": text}] if fmt == "anthropic" else text},
                {"role": "user", "content": "more"}, {"role": "assistant", "content": "ok"}]
    for options in ({}, {"marker": ""}, {"marker": "[gone]"}):
        out = check_invariants(messages, strip_rules(tool_turns_only=False, **options), fmt).messages
        marker = options.get("marker") or DEFAULT_STRIP_MARKER
        assert out[1]["content"] == ([{"type": "text", "text": marker}] if fmt == "anthropic" else marker)


@pytest.mark.parametrize("kind", ["thinking", "reasoning"])
def test_the_marker_goes_after_the_thinking_the_latest_turn_keeps(kind):
    """OpenAI/LangChain content ``[thinking, text]`` on the latest assistant turn: its thinking
    stays and must come first, so the marker goes after it (it went first)."""
    thinking = ({"type": "thinking", "thinking": "Let me look.", "signature": "sig"} if kind == "thinking"
                else {"type": "reasoning", "reasoning": "Let me look."})
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [thinking, {"type": "text", "text": "I will read it. " * 20}],
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "text"}]
    out = check_invariants(messages, strip_rules(marker="[gone]"), "openai").messages
    assert out[1]["content"] == [thinking, {"type": "text", "text": "[gone]"}]
    check_api_validity(messages, out, "openai")


def test_a_breakpoint_on_a_stripped_block_moves_to_a_block_that_stays():
    messages = session(25)
    messages[1] = {**messages[1], "content": [{**messages[1]["content"][0], "cache_control": BP},
                                              messages[1]["content"][1]]}
    out = check_invariants(messages, strip_rules(), "anthropic").messages  # the text goes
    assert out[1]["content"] == [{**messages[1]["content"][1], "cache_control": BP}]  # now on the tool_use
    # a text-only turn: the marker carries it
    lone = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "x" * 300, "cache_control": BP}]},
            {"role": "user", "content": "more"}, {"role": "assistant", "content": "ok"}]
    out = check_invariants(lone, strip_rules(tool_turns_only=False, keep_max_chars=200), "anthropic").messages
    assert out[1]["content"] == [{"type": "text", "text": DEFAULT_STRIP_MARKER, "cache_control": BP}]


@pytest.mark.parametrize("text", ["[cleared]", ""])
def test_a_breakpoint_inside_a_cleared_result_moves_onto_its_block(text):
    """A placeholder written as a string (as_string), or an empty one (no empty text block may
    be written), replaces a content list whose block carried a breakpoint: the breakpoint moves
    onto the tool_result block."""
    messages = session(3)
    messages[2] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_00", "content": [
        {"type": "text", "text": "x" * 500, "cache_control": BP}, {"type": "text", "text": "tail"}]}]}
    rules = parse_rules(json.dumps({"version": 1, "name": "clear", "defaults": {"placeholder": text}, "rules": [
        {"name": "clear", "match": {"role": "tool", "age": {"unit": "tool_results", "gte": 1}},
         "action": {"placeholder": {"as_string": bool(text)}}}]}))
    out = check_invariants(messages, rules, "anthropic").messages
    assert out[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_00", "content": text,
                                  "cache_control": BP}]


# -- LangChain: ChatAnthropic in create_agent ------------------------------------------------------

class FakeAnthropicServer:
    """A local HTTP server answering /v1/messages from a script of responses; records each body."""

    def __init__(self, replies: list[dict]):
        self.replies, self.bodies = list(replies), []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                owner.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                reply = json.dumps(owner.replies.pop(0)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def anthropic_reply(n: int, content: list, stop: str) -> dict:
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-x", "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def thinking_turns(calls: int, start: int = 0) -> list[dict]:
    """Replies: ``calls`` rounds of thinking, text and a read_file call, then a final answer."""
    replies = [anthropic_reply(start + i, [
        {"type": "thinking", "thinking": f"I need file {start + i}. " * 8, "signature": f"sig{start + i}"},
        {"type": "text", "text": f"Reading f{start + i}.py."},
        {"type": "tool_use", "id": f"toolu_{start + i:03}", "name": "read_file",
         "input": {"path": f"f{start + i}.py"}}], "tool_use") for i in range(calls)]
    return replies + [anthropic_reply(start + calls, [{"type": "text", "text": "Done."}], "end_turn")]


@pytest.fixture
def langchain_agent(monkeypatch):
    pytest.importorskip("langchain_anthropic", reason="langchain-anthropic is in the test extra")
    from langchain.agents import create_agent
    from langchain_anthropic import ChatAnthropic
    from langchain_core.tools import tool

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    servers = []

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}\n" + "some code line\n" * 40

    def make(replies, middleware):
        server = FakeAnthropicServer(replies)
        servers.append(server)
        model = ChatAnthropic(model="claude-x", base_url=server.url, api_key="test", max_retries=0)
        return create_agent(model, [read_file], middleware=middleware, system_prompt="You read files."), server

    yield make
    for server in servers:
        server.close()


def test_langchain_thinking_blocks_are_stripped_on_the_wire(langchain_agent):
    """Three user turns of tool rounds through ChatAnthropic with anthropic-clear-thinking: the
    requests carry thinking only in the latest thinking turn (before: every old turn kept it)."""
    from langchain_core.messages import HumanMessage

    from rules_compact.integrations.langchain import RulesCompactMiddleware

    replies = thinking_turns(4) + thinking_turns(4, 10) + thinking_turns(4, 20)
    agent, server = langchain_agent(replies, [RulesCompactMiddleware("preset:anthropic-clear-thinking",
                                                                     on_compact=lambda r: None)])
    messages: list = []
    for turn in range(3):
        messages = agent.invoke({"messages": messages + [HumanMessage(f"turn {turn}: read the files")]})["messages"]
    assert len(server.bodies) == 15

    def turns_with_thinking(body):  # per user turn (a user message with text), whether it holds thinking
        turns: list[bool] = []
        for m in body["messages"]:
            blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text"}]
            if m["role"] == "user" and any(b.get("type") == "text" for b in blocks):
                turns.append(False)
            elif m["role"] == "assistant" and any(b.get("type") == "thinking" for b in blocks):
                turns[-1] = True
        return turns

    last = server.bodies[-1]
    assert turns_with_thinking(last) == [False, False, True]
    assert sum(b.get("type") == "thinking" for m in last["messages"] for b in m["content"]
               if isinstance(m["content"], list)) == 4  # the latest turn's, sent back unchanged
    # only the latest turn that has thinking keeps it (a new turn's first request has none yet)
    assert [turns_with_thinking(b) for b in server.bodies[4:11]] == [
        [True], [True, False], [False, True], [False, True], [False, True], [False, True], [False, True, False]]


def test_langchain_default_breakpoint_reaches_the_wire_within_four(langchain_agent):
    """The default's step-boundary breakpoint goes out on the tool_result ChatAnthropic builds,
    and with AnthropicPromptCachingMiddleware (system, tools and a top-level breakpoint) no
    request holds more than 4."""
    from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware

    from rules_compact.integrations.langchain import RulesCompactMiddleware

    for middleware, most in (([], 1), ([AnthropicPromptCachingMiddleware()], 4)):
        agent, server = langchain_agent(thinking_turns(24), [*middleware, RulesCompactMiddleware(
            STEPPED, on_compact=lambda r: None)])
        agent.invoke({"messages": [{"role": "user", "content": "read the files"}]})
        marked = [[j for j, m in enumerate(body["messages"]) for b in m["content"] if isinstance(b, dict)
                   and b.get("type") == "tool_result" and b.get("cache_control")] for body in server.bodies]
        assert [bool(m) for m in marked] == [False] * 10 + [True] * 15  # from the 10th result on
        assert marked[10] == [20] and marked[-1] == [40]  # the message holding the 10th, then the 20th result
        assert max(map(request_breakpoints, server.bodies)) == most


def test_langchain_openai_models_get_no_cache_control():
    pytest.importorskip("langchain.agents.middleware.types")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from rules_compact.integrations.langchain import RulesCompactMiddleware

    messages = [HumanMessage("go")]
    for i in range(12):
        messages += [AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": f"c{i}", "type": "tool_call"}]),
                     ToolMessage("x" * 500, tool_call_id=f"c{i}")]
    middleware = RulesCompactMiddleware("default", on_compact=lambda r: None)
    assert not any(isinstance(m.content, list) for m in middleware.compact(messages))


# -- pydantic-ai: AnthropicModel -------------------------------------------------------------------

def test_pydantic_ai_default_breakpoint_reaches_the_wire_within_four():
    pytest.importorskip("pydantic_ai.models.anthropic", reason="pydantic-ai-slim and anthropic are in the test extra")
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from rules_compact.integrations.pydantic_ai import RulesCompactCapability

    for settings, most in (({}, 1), ({"anthropic_cache_instructions": True, "anthropic_cache_tool_definitions": True,
                                      "anthropic_cache_messages": True}, 4)):
        replies, bodies = thinking_turns(24), []

        def answer(request):
            bodies.append(json.loads(request.content))
            return http_.Response(200, json=replies.pop(0))

        client = anthropic.AsyncAnthropic(api_key="test", max_retries=0,
                                          http_client=http_.AsyncClient(transport=http_.MockTransport(answer)))
        model = AnthropicModel("claude-x", provider=AnthropicProvider(anthropic_client=client))
        agent = Agent(model, instructions="You read files.", model_settings=settings,
                      capabilities=[RulesCompactCapability(STEPPED, on_compact=lambda r: None)])

        @agent.tool_plain
        def read_file(path: str) -> str:
            """Read a file."""
            return f"contents of {path}\n" + "some code line\n" * 40

        assert agent.run_sync("read the files").output == "Done."
        marked = [[j for j, m in enumerate(body["messages"][:-1]) for b in m["content"] if isinstance(b, dict)
                   and b.get("type") == "tool_result" and b.get("cache_control")] for body in bodies]
        assert marked[:11] == [[]] * 11  # (the 11th request's breakpoint is on its last message)
        assert marked[11:20] == [[20]] * 9 and marked[-1] == [40]  # the message of the 10th, then the 20th result
        assert max(map(request_breakpoints, bodies)) == most


# -- the OpenAI Agents SDK: old assistant messages are stripped to the marker ----------------------

def test_openai_agents_old_long_messages_become_the_marker():
    pytest.importorskip("agents.testing", reason="openai-agents is in the test extra")
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from rules_compact.integrations.openai_agents import input_filter

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}\n" + "some code line\n" * 40

    steps = [[assistant_message(f"Reading f{i}.py, because " + "the bug may be there. " * 12, item_id=f"msg_{i}"),
              function_call("read_file", {"path": f"f{i}.py"}, call_id=f"call-{i}", item_id=f"fc_{i}")]
             for i in range(24)] + [[assistant_message("Done.", item_id="msg_final")]]

    def run(filter_):
        model = ScriptedModel(copy.deepcopy(steps))
        agent = Agent(name="reader", instructions="You read files.", model=model, tools=[read_file])
        Runner.run_sync(agent, "read the files", max_turns=50,
                        run_config=RunConfig(call_model_input_filter=filter_, tracing_disabled=True))
        return model.calls[-1].input

    from rules_compact.formats import RESPONSES

    notes = parse_rules(json.dumps({"version": 1, "name": "strip-old-notes", "rules": [
        {"name": "keep-recent", "match": {"age": {"unit": "tool_results", "lt": 8}}, "action": "keep"},
        {"name": "strip", "match": {"role": "assistant", "has_tool_calls": True},
         "action": {"strip-text": {"keep_max_chars": 200}}}]}))
    last, plain = run(input_filter(notes, on_compact=lambda r: None)), run(None)
    texts = [m["content"][0]["text"] for m in last if m.get("type") == "message" and m.get("role") == "assistant"]
    stripped = texts.count(DEFAULT_STRIP_MARKER)
    assert stripped >= 14 and texts[:stripped] == [DEFAULT_STRIP_MARKER] * stripped  # their text was all they held
    assert texts[stripped:] == [m["content"][0]["text"] for m in plain if m.get("role") == "assistant"][stripped:]

    def read(items):  # what the model reads: texts, call names and arguments, outputs
        return sum(len(piece) for item in items for piece in RESPONSES.message_pieces(item))

    # as much goes as from the same conversation in Chat Completions messages (LangChain's view)
    chat = [{"role": "user", "content": "read the files"}] + [m for i in range(24) for m in (
        {"role": "assistant", "content": f"Reading f{i}.py, because " + "the bug may be there. " * 12,
         "tool_calls": [{"id": f"call-{i}", "type": "function",
                         "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{i}.py"})}}]},
        {"role": "tool", "tool_call_id": f"call-{i}", "content": f"contents of f{i}.py\n" + "some code line\n" * 40})]
    chat_share = compact(chat, notes).report.chars_after / compact(chat, notes).report.chars_before
    assert read(last) / read(plain) == pytest.approx(chat_share, abs=0.03)


def test_an_openai_result_cut_to_nothing_keeps_its_breakpoint():
    # no part can carry the mark once the content is empty (an empty text part is invalid), so
    # the result stays as it is rather than lose the breakpoint (the thorough profile found it)
    marked = {"role": "tool", "tool_call_id": "orphan_0",
              "content": [{"type": "text", "text": "0", "cache_control": {"type": "ephemeral"}}]}
    messages = [{"role": "user", "content": "ok"}, marked]
    rules = parse_rules("version: 1\nname: cut\nrules:\n  - name: r0\n    match: {}\n"
                        "    action: {truncate: {head: 0, marker: ''}}\n", "cut.yaml")
    result = check_invariants(messages, [rules], "openai")
    assert result.messages[1] == marked

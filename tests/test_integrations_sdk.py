"""Plain SDK requests: compacted arguments of anthropic messages.create, openai
chat.completions.create and responses.create, checked against the SDKs' own request types
(their TypedDicts: required keys, no unknown key, literal types, recursively) and sent through
the real clients over an in-memory HTTP transport."""

from __future__ import annotations

import collections.abc
import copy
import importlib.util
import json
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import pytest

anthropic = pytest.importorskip("anthropic", reason="anthropic is in the test extra")
openai = pytest.importorskip("openai", reason="openai is in the test extra")

from anthropic.types import MessageParam  # noqa: E402
from openai.types.chat import ChatCompletionMessageParam  # noqa: E402
from openai.types.responses import ResponseInputParam  # noqa: E402
import typing_extensions  # noqa: E402

from rules_compact import load_rules  # noqa: E402
from rules_compact.errors import InputError  # noqa: E402
from rules_compact.integrations import describe  # noqa: E402
from rules_compact.integrations.sdk import RequestCompactor, compact_request  # noqa: E402

REQUIRED = {getattr(typing, "Required", typing_extensions.Required), typing_extensions.Required}
NOT_REQUIRED = {getattr(typing, "NotRequired", typing_extensions.NotRequired), typing_extensions.NotRequired}


def _fields(td):
    hints = typing_extensions.get_type_hints(td, include_extras=True)
    fields, required = {}, set()
    for key, hint in hints.items():
        origin = get_origin(hint)
        if origin in REQUIRED or (td.__total__ and origin not in NOT_REQUIRED):
            required.add(key)
        fields[key] = get_args(hint)[0] if origin in REQUIRED | NOT_REQUIRED else hint
    return fields, required


def conforms(value, tp, depth=0) -> bool:
    """Whether ``value`` is a valid ``tp`` (an SDK TypedDict, union, literal, list ...)."""
    if depth > 30 or tp is Any or tp is object:
        return True
    origin = get_origin(tp)
    if origin is typing_extensions.Annotated or origin is typing.Annotated:
        return conforms(value, get_args(tp)[0], depth + 1)
    if origin in (Union, types.UnionType):
        return any(conforms(value, a, depth + 1) for a in get_args(tp))
    if origin in (Literal, typing_extensions.Literal):
        return value in get_args(tp)
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return False
        fields, required = _fields(tp)
        return (required <= value.keys() <= fields.keys()
                and all(conforms(value[k], fields[k], depth + 1) for k in value))
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence):
        (item,) = get_args(tp) or (Any,)
        return isinstance(value, list) and all(conforms(v, item, depth + 1) for v in value)
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, dict)
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(tp, type) and origin is None:
        return isinstance(value, tp)
    return True


def check_request_type(value, tp) -> None:
    assert conforms(value, tp), f"not a valid {tp}: {json.dumps(value)[:2000]}"


http = importlib.import_module("httpx2" if importlib.util.find_spec("httpx2") else "httpx")

RULES = load_rules("""
version: 1
name: keep-one
defaults: {placeholder: "[Previous: used {tool_name}]"}
rules:
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 1}}, action: keep}
  - {name: clear-old, match: {role: tool}, action: [placeholder, clear-inputs]}
""")
BIG = "line\n" * 200


def anthropic_messages() -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": "read a and b"}]
    for i, path in enumerate(["a.py", "b.py"]):
        msgs.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": f"need {path}", "signature": f"sig{i}"},
            {"type": "text", "text": f"reading {path}"},
            {"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {"path": path}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}",
             "content": [{"type": "text", "text": BIG, "cache_control": {"type": "ephemeral"}}]}]})
    return msgs


def openai_messages() -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You read files."}, {"role": "user", "content": "read a and b"}]
    for i, path in enumerate(["a.py", "b.py"]):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": "read", "arguments": json.dumps({"path": path})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": BIG})
    return msgs


def responses_input() -> list[dict]:
    items: list[dict] = [{"role": "user", "content": [{"type": "input_text", "text": "read a and b"}]}]
    for i, path in enumerate(["a.py", "b.py"]):
        items += [
            {"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": f"enc{i}"},
            {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": "read",
             "arguments": json.dumps({"path": path})},
            {"type": "function_call_output", "call_id": f"call_{i}", "output": BIG},
        ]
    return items


class Capture:
    """An in-memory HTTP transport: records each request body and answers with ``reply``."""

    def __init__(self, reply: dict):
        self.reply = reply
        self.bodies: list[dict] = []

    def __call__(self, request):
        self.bodies.append(json.loads(request.content))
        return http.Response(200, json=self.reply)

    def client(self):
        return http.Client(transport=http.MockTransport(self))


def test_anthropic_messages_create():
    messages = anthropic_messages()
    snapshot = copy.deepcopy(messages)
    reports = []
    compactor = RequestCompactor(RULES, on_compact=reports.append)
    request = compactor({"model": "claude-x", "max_tokens": 100, "system": "You read files.", "messages": messages})
    assert messages == snapshot  # the caller's list is untouched
    check_request_type(request["messages"], list[MessageParam])

    cleared = request["messages"][2]["content"][0]
    assert cleared["content"] == [
        {"type": "text", "text": "[Previous: used read]", "cache_control": {"type": "ephemeral"}}]
    assert request["messages"][1]["content"][2]["input"] == {}
    assert request["messages"][1]["content"][0] == messages[1]["content"][0]  # thinking untouched
    assert request["messages"][4] is messages[4]
    assert reports[0].format == "anthropic" and reports[0].items_changed == 1
    assert describe(reports[0]).startswith("rules-compact: 1 item changed")

    capture = Capture({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                       "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})
    client = anthropic.Anthropic(api_key="test", http_client=capture.client(), max_retries=0)
    reply = client.messages.create(**request)
    assert reply.content[0].text == "ok"
    assert capture.bodies[0]["messages"] == request["messages"]
    assert capture.bodies[0]["system"] == "You read files."


def test_openai_chat_completions_create():
    messages = openai_messages()
    request = compact_request({"model": "gpt-x", "messages": messages}, RULES, on_compact=lambda r: None)
    check_request_type(request["messages"], list[ChatCompletionMessageParam])
    assert request["messages"][3] == {"role": "tool", "tool_call_id": "call_0", "content": "[Previous: used read]"}
    assert request["messages"][2]["tool_calls"][0]["function"] == {"name": "read", "arguments": "{}"}
    assert request["messages"][5]["content"] == BIG

    capture = Capture({"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-x", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]})
    client = openai.OpenAI(api_key="test", http_client=capture.client(), max_retries=0)
    reply = client.chat.completions.create(**request)
    assert reply.choices[0].message.content == "ok"
    assert capture.bodies[0]["messages"] == request["messages"]


def test_openai_responses_create():
    items = responses_input()
    request = compact_request({"model": "gpt-x", "input": items}, RULES, on_compact=lambda r: None)
    check_request_type(request["input"], ResponseInputParam)
    assert [it.get("type") for it in request["input"]] == [it.get("type") for it in items]
    assert request["input"][3]["output"] == "[Previous: used read]"
    assert request["input"][2]["arguments"] == "{}"
    assert [request["input"][i] is items[i] for i in (1, 4)] == [True, True]  # reasoning: the same objects

    capture = Capture({"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-x", "status": "completed",
                       "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                                   "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
                       "parallel_tool_calls": True, "tool_choice": "auto", "tools": []})
    client = openai.OpenAI(api_key="test", http_client=capture.client(), max_retries=0)
    reply = client.responses.create(**request)
    assert reply.output_text == "ok"
    assert capture.bodies[0]["input"] == request["input"]


def test_request_without_messages():
    with pytest.raises(InputError, match="no 'messages' list"):
        compact_request({"model": "x", "input": "a string"}, RULES)


def test_the_type_check_rejects_what_the_sdks_reject():
    assert not conforms([{"role": "tool", "content": "x"}], list[ChatCompletionMessageParam])  # no tool_call_id
    assert not conforms([{"role": "user", "content": [{"type": "tool_result"}]}], list[MessageParam])
    assert not conforms([{"role": "user", "content": [{"type": "text", "text": "x", "bogus": 1}]}], list[MessageParam])
    assert not conforms([{"type": "message", "role": "assistant", "id": "m", "status": "completed",
                          "content": [{"type": "output_text", "text": "x"}]}], ResponseInputParam)  # annotations
    for good in (anthropic_messages(), openai_messages()):
        assert conforms(good, list[MessageParam]) or conforms(good, list[ChatCompletionMessageParam])
    assert conforms(responses_input(), ResponseInputParam)


# -- the documented examples, unchanged, against a local server that plays the APIs ---------------

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
REPLIES = {
    "/v1/messages": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                     "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                     "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}},
    "/v1/chat/completions": {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-x", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]},
}


def sdk_examples() -> list:
    """The ``python`` blocks that send a request through RequestCompactor, in docs/integrations.md
    and (once it shows them) README.md."""
    import re

    found = []
    for doc in ("docs/integrations.md", "README.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        for i, block in enumerate(re.findall(r"```py(?:thon)?\n(.*?)```", text, re.S)):
            if "RequestCompactor(" in block and ".create(" in block:
                found.append(pytest.param(block, id=f"{doc}#{i}"))
    return found


@pytest.fixture
def fake_api(monkeypatch):
    """A local HTTP server answering as the Anthropic and OpenAI APIs; records each request."""
    import http.server
    import threading

    received: list[tuple[str, dict]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((self.path, body))
            reply = json.dumps(REPLIES[self.path]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for key, value in {"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": url, "OPENAI_API_KEY": "test",
                       "OPENAI_BASE_URL": f"{url}/v1", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}.items():
        monkeypatch.setenv(key, value)
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("block", sdk_examples())
def test_documented_example_sends_a_valid_compacted_request(block, fake_api, monkeypatch, capsys):
    from rules_compact import compact

    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(block, "example", "exec"), namespace)
    quoted = [line.removeprefix("# prints: ") for line in block.splitlines() if line.startswith("# prints: ")]
    assert capsys.readouterr().out.splitlines() == quoted  # the example prints what it quotes
    assert len(fake_api) == 1
    path, body = fake_api[0]
    messages = namespace["messages"]
    result = compact(messages, "default")
    expected = result.messages
    assert body["messages"] == expected  # the SDK sent the compacted messages
    # compaction did something, or on a session too short for its moves to pay back, says why not
    assert expected != messages or "no step boundary yet: nothing decided" in result.report.passes[0].reason
    kind = MessageParam if path == "/v1/messages" else ChatCompletionMessageParam
    for i, (before, after) in enumerate(zip(messages, body["messages"])):
        # the example data may hold vendor fields (DeepSeek's reasoning_content): compaction
        # never turns a valid message into an invalid one
        assert conforms(after, kind) or not conforms(before, kind), f"message {i} became invalid"
    if path == "/v1/messages":
        check_request_type(body["messages"], list[MessageParam])


def test_the_documented_examples_are_found():
    assert {p.id.split("#")[0] for p in sdk_examples()} == {"docs/integrations.md", "README.md"}
    assert all(any("# prints: " in p.values[0] for p in sdk_examples() if p.id.startswith(doc))
               for doc in ("docs/integrations.md", "README.md"))
    assert len([p for p in sdk_examples() if p.id.startswith("docs/")]) == 2


ANTHROPIC_REPLY = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                   "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                   "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def test_each_request_is_a_span_with_what_was_cleared(otel_spans):
    from rules_compact.integrations.tracing import SPAN_NAME

    compactor = RequestCompactor(RULES, name="reader", on_compact=lambda r: None)
    request = compactor({"model": "claude-x", "max_tokens": 100, "messages": anthropic_messages()},
                        thread_id="thread-1", run_id="run-1")
    capture = Capture(ANTHROPIC_REPLY)
    anthropic.Anthropic(api_key="test", http_client=capture.client(), max_retries=0).messages.create(**request)

    [span] = [s for s in otel_spans.get_finished_spans() if s.name == SPAN_NAME]
    attrs = dict(span.attributes)
    assert span.name == SPAN_NAME
    assert attrs["rules_compact.integration"] == "sdk" and attrs["rules_compact.name"] == "reader"
    assert attrs["rules_compact.rule_sets"] == ("keep-one",)
    assert attrs["rules_compact.items_changed"] == 1 and attrs["rules_compact.changed.clear-old"] == 1
    assert attrs["rules_compact.tokens_before"] > attrs["rules_compact.tokens_after"] > 0
    assert attrs["rules_compact.boundary_moved"] is False and attrs["rules_compact.over_budget"] is False
    assert attrs["gen_ai.conversation.id"] == "thread-1" and attrs["rules_compact.run_id"] == "run-1"
    assert attrs["rules_compact.session"] == str(compactor.session("thread-1"))
    assert str(compactor.session("thread-1")).startswith("cleared 1 item (")
    assert str(compactor.session("other")) == "nothing cleared this session; 0 boundary moves"


@pytest.mark.parametrize("kind", ["anthropic", "chat", "responses"])
def test_the_note_reaches_the_model_only_when_something_was_cleared(kind):
    from rules_compact.integrations import MODEL_NOTE

    requests = {"anthropic": {"model": "claude-x", "max_tokens": 100, "system": "You read files.",
                              "messages": anthropic_messages()},
                "chat": {"model": "gpt-x", "messages": openai_messages()},
                "responses": {"model": "gpt-x", "instructions": "You read files.", "input": responses_input()}}
    request = requests[kind]
    key = "input" if kind == "responses" else "messages"
    noted = RequestCompactor(RULES, note=True, on_compact=lambda r: None)(request)
    plain = RequestCompactor(RULES, on_compact=lambda r: None)(request)
    nothing = RequestCompactor(RULES, note=True, on_compact=lambda r: None)({**request, key: request[key][:2]})
    prompt = {"anthropic": lambda r: r.get("system"), "chat": lambda r: r["messages"][0]["content"],
              "responses": lambda r: r.get("instructions")}[kind]
    assert prompt(noted) == "You read files.\n\n" + MODEL_NOTE
    assert prompt(plain) == prompt(nothing) == "You read files."
    assert noted[key][1:] == plain[key][1:]  # the note changes the system prompt only


"""``rules-compact serve``: the official SDKs through the proxy to a scripted upstream
(tests/fake_upstream.py), all on 127.0.0.1."""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("starlette", reason="starlette is in the serve and test extras")
pytest.importorskip("uvicorn", reason="uvicorn is in the serve and test extras")
anthropic = pytest.importorskip("anthropic", reason="anthropic is in the test extra")
openai = pytest.importorskip("openai", reason="openai is in the test extra")

import httpx  # noqa: E402

from conftest import ROOT, STEPPED_DEFAULT, TRACES  # noqa: E402
from fake_upstream import FakeUpstream, Reply, Served  # noqa: E402
from rules_compact import compact, load_rules  # noqa: E402
from rules_compact.batch import read_file  # noqa: E402
from rules_compact.cli import main  # noqa: E402
from rules_compact.serve import Proxy, ServeConfig  # noqa: E402
from rules_compact.serve.sessions import Sessions  # noqa: E402

KEEP_ONE = load_rules("""
version: 1
name: keep-one
defaults: {placeholder: "[Previous: used {tool_name}]"}
rules:
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 1}}, action: keep}
  - {name: clear-old, match: {role: tool}, action: placeholder}
""")
BIG = "line\n" * 200
SECRET = "sk-ant-secret-123"


def anthropic_messages(n: int = 2) -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": "read the files"}]
    for i in range(n):
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": f"reading f{i}.py"},
            {"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {"path": f"f{i}.py"}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": BIG + f"end of f{i}"}]})
    return msgs


def chat_messages(n: int = 2) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You read files."}, {"role": "user", "content": "read them"}]
    for i in range(n):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": BIG + f"end of f{i}"})
    return msgs


def responses_input(n: int = 2) -> list[dict]:
    items: list[dict] = [{"role": "user", "content": [{"type": "input_text", "text": "read them"}]}]
    for i in range(n):
        items += [{"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": f"enc{i}"},
                  {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": "read",
                   "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"call_{i}", "output": BIG + f"end of f{i}"}]
    return items


@pytest.fixture(scope="module")
def fake():
    with FakeUpstream() as upstream:
        yield upstream


@pytest.fixture
def upstream(fake):
    fake.requests.clear()
    fake.replies.clear()
    fake.answer, fake.cancelled = None, 0
    return fake


@pytest.fixture
def start(upstream):
    """``start(rules=..., **config)``: a proxy in this process before ``upstream``; its URL."""
    running = []

    def run(rules=(KEEP_ONE,), **config):
        settings = {"anthropic_upstream": upstream.url, "openai_upstream": upstream.url + "/oa/v1", **config}
        proxy = Proxy(ServeConfig(**settings), list(rules))
        served = Served(proxy.app()).__enter__()
        running.append(served)
        served.proxy = proxy
        return served
    yield run
    for served in running:
        served.__exit__(None, None, None)


@pytest.fixture
def proxy(start):
    return start()


def metric(served, name: str, **labels) -> float:
    text = httpx.get(served.url + "/metrics").text
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pattern = rf"^{re.escape(name)}(?:\{{{re.escape(want)}\}})? (\S+)$" if want else rf"^{re.escape(name)} (\S+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found[1]) if found else 0.0


def eventually(value):
    """``value()`` once it is truthy (the proxy logs and counts after the client has its answer),
    or its last value after 10 seconds."""
    deadline = time.monotonic() + 10
    while not (found := value()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def test_anthropic_sdk_through_the_proxy_streamed_and_not(proxy, upstream):
    client = anthropic.Anthropic(base_url=proxy.url, api_key=SECRET, max_retries=0,
                                 default_headers={"anthropic-beta": "context-management-2025-06-27"})
    reply = client.messages.create(model="claude-x", max_tokens=10, messages=anthropic_messages())
    assert reply.content[0].text == "ok"
    upstream.script(Reply(text="streamed"))
    with client.messages.stream(model="claude-x", max_tokens=10, messages=anthropic_messages(3)) as stream:
        assert stream.get_final_message().content[0].text == "streamed"

    first, second = upstream.requests
    assert first.json["messages"][2]["content"][0]["content"] == "[Previous: used read]"
    assert first.json["messages"][4] == anthropic_messages()[4]  # the newest result arrives whole
    assert second.json["stream"] is True and second.json["messages"][4]["content"][0]["content"] \
        == "[Previous: used read]"
    assert SECRET in (first.header("x-api-key") or first.header("authorization"))  # as the SDK sends it
    assert first.header("anthropic-beta") == "context-management-2025-06-27"
    assert int(first.header("content-length")) == len(first.body)


def test_request_headers_go_upstream_as_sent(proxy, upstream):
    headers = {"x-api-key": SECRET, "authorization": "Bearer oauth-token", "anthropic-version": "2023-06-01",
               "anthropic-beta": "a,b", "x-claude-code-session-id": "s", "connection": "keep-alive, x-hop",
               "x-hop": "1", "x-other": "2"}
    httpx.post(proxy.url + "/v1/messages", json={"model": "m", "messages": []}, headers=headers)
    got = dict(upstream.requests[0].headers)
    for name in ("x-api-key", "authorization", "anthropic-version", "anthropic-beta", "x-claude-code-session-id",
                 "x-other"):
        assert got[name] == headers[name]
    assert "x-hop" not in got and got.get("connection", "keep-alive") == "keep-alive"


def test_openai_sdk_chat_and_responses_streamed_and_not(proxy, upstream):
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=SECRET, max_retries=0,
                           default_headers={"OpenAI-Beta": "x", "OpenAI-Organization": "org"})
    assert client.chat.completions.create(model="gpt", messages=chat_messages()).choices[0].message.content == "ok"
    chunks = list(client.chat.completions.create(model="gpt", messages=chat_messages(), stream=True))
    assert chunks[0].choices[0].delta.content == "ok"
    assert client.responses.create(model="gpt", input=responses_input()).output_text == "ok"
    with client.responses.stream(model="gpt", input=responses_input()) as stream:
        assert stream.get_final_response().output_text == "ok"

    chat, chat_streamed, responses, responses_streamed = upstream.requests
    assert [r.path for r in upstream.requests] == ["/oa/v1/chat/completions"] * 2 + ["/oa/v1/responses"] * 2
    for r in (chat, chat_streamed):
        assert r.json["messages"][3]["content"] == "[Previous: used read]"
        assert r.json["messages"][5]["content"].endswith("end of f1")
    for r in (responses, responses_streamed):
        items = r.json["input"]
        assert items[3]["output"] == "[Previous: used read]" and items[6]["output"].endswith("end of f1")
        assert items[1] == responses_input()[1]  # encrypted reasoning untouched
    assert chat.header("authorization") == f"Bearer {SECRET}"
    assert chat.header("openai-beta") == "x" and chat.header("openai-organization") == "org"


def test_unchanged_bodies_arrive_byte_for_byte(proxy, upstream):
    body = ('{ "model" : "claude-x",\n "max_tokens": 5, "messages": [{"role": "user", "content": "h\\u00e9llo '
            'caf\u00e9"}], "extra": 1.50 }').encode()
    gzipped = gzip.compress(body, mtime=0)
    headers = {"x-api-key": SECRET, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    httpx.post(proxy.url + "/v1/messages?beta=true", content=body, headers=headers)
    httpx.post(proxy.url + "/v1/messages", content=gzipped, headers={**headers, "content-encoding": "gzip"})
    plain, compressed = upstream.requests
    assert plain.body == body and plain.query == "beta=true"
    assert compressed.body == gzipped and compressed.header("content-encoding") == "gzip"


def test_a_changed_gzip_body_arrives_inflated_with_its_own_length(proxy, upstream):
    request = {"model": "claude-x", "max_tokens": 5, "messages": anthropic_messages()}
    headers = {"anthropic-version": "2023-06-01", "content-encoding": "gzip", "content-type": "application/json"}
    httpx.post(proxy.url + "/v1/messages", content=gzip.compress(json.dumps(request).encode()), headers=headers)
    got, = upstream.requests
    assert got.header("content-encoding") is None and int(got.header("content-length")) == len(got.body)
    assert got.json["messages"][2]["content"][0]["content"] == "[Previous: used read]"


def test_changed_bodies_are_the_same_bytes_every_time(start, upstream):
    request = {"model": "claude-x", "max_tokens": 5, "messages": anthropic_messages()}
    one, two = start(), start()
    for served in (one, two, one):
        httpx.post(served.url + "/v1/messages", json=request, headers={"anthropic-version": "2023-06-01"})
    bodies = {r.body for r in upstream.requests}
    assert len(bodies) == 1 and bodies.pop() != json.dumps(request).encode()


def test_count_tokens_counts_the_request_as_compacted(proxy, upstream):
    client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
    messages = anthropic_messages()
    client.messages.create(model="claude-x", max_tokens=10, messages=messages)
    counted = client.messages.count_tokens(model="claude-x", messages=messages)
    created, count = upstream.requests
    assert count.path == "/v1/messages/count_tokens" and count.json["messages"] == created.json["messages"]
    assert counted.input_tokens == max(1, len(count.body) // 4)


def test_errors_come_back_as_the_api_sent_them(proxy, upstream):
    client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
    upstream.script(Reply(status=429, headers={"retry-after": "7", "request-id": "req_1"}), Reply(status=529))
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(model="claude-x", max_tokens=10, messages=anthropic_messages())
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.response.headers["request-id"] == "req_1"
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        client.messages.create(model="claude-x", max_tokens=10, messages=anthropic_messages())
    assert overloaded.value.status_code == 529 and overloaded.value.body["error"]["type"] == "overloaded_error"
    chat = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
    upstream.script(Reply(status=400))
    with pytest.raises(openai.BadRequestError):
        chat.chat.completions.create(model="gpt", messages=chat_messages())


def test_an_unreachable_upstream_is_a_502_in_the_api_shape(start):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: refused
    try:
        served = start(anthropic_upstream=url, openai_upstream=url + "/v1")
        with pytest.raises(anthropic.APIStatusError) as down:
            anthropic.Anthropic(base_url=served.url, api_key="k", max_retries=0).messages.create(
                model="claude-x", max_tokens=10, messages=anthropic_messages())
        assert down.value.status_code == 502 and down.value.body["type"] == "error"
        assert down.value.body["error"]["type"] == "api_error"
        with pytest.raises(openai.APIStatusError) as chat_down:
            openai.OpenAI(base_url=served.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
                model="gpt", messages=chat_messages())
        assert chat_down.value.status_code == 502 and "unreachable" in chat_down.value.body["message"]
    finally:
        closed.close()


def test_an_upstream_that_does_not_answer_in_time_is_a_504(start, upstream):
    served = start(read_timeout=0.3)
    upstream.script(Reply(hang=True))
    with pytest.raises(anthropic.APIStatusError) as late:
        anthropic.Anthropic(base_url=served.url, api_key="k", max_retries=0).messages.create(
            model="claude-x", max_tokens=10, messages=anthropic_messages())
    assert late.value.status_code == 504 and late.value.body["error"]["message"] == \
        "the upstream did not answer in time"
    assert metric(served, "rules_compact_serve_upstream_errors_total", route="messages", status="504") == 1


def test_a_stream_is_relayed_as_it_comes_and_a_client_leaving_cancels_it(proxy, upstream):
    upstream.script(Reply(hang=True))  # two events, then nothing until the client goes away
    client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
    stream = client.messages.create(model="claude-x", max_tokens=10, messages=anthropic_messages(), stream=True)
    events = iter(stream)
    assert next(events).type == "message_start"  # arrived while the upstream still streams
    stream.close()
    assert eventually(lambda: upstream.cancelled) == 1


def test_a_stream_the_upstream_breaks_off_is_broken_off_for_the_client(proxy, upstream):
    upstream.script(Reply(cut=True))
    client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
    sdk_http = importlib.import_module("httpx2" if importlib.util.find_spec("httpx2") else "httpx")  # the SDK's
    with pytest.raises((anthropic.APIError, sdk_http.HTTPError)):
        with client.messages.stream(model="claude-x", max_tokens=10, messages=anthropic_messages()) as stream:
            stream.get_final_message()


def test_a_client_leaving_before_the_answer_cancels_the_upstream_request(proxy, upstream, caplog):
    upstream.script(Reply(hang=True))  # no answer at all until the client goes away
    body = {"model": "claude-x", "max_tokens": 5, "messages": anthropic_messages()}
    with caplog.at_level(logging.INFO, "rules_compact.serve"):
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(proxy.url + "/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"},
                       timeout=0.5)
        assert eventually(lambda: upstream.cancelled) == 1
        assert eventually(lambda: "ended='client disconnected before the answer'" in caplog.text)


@pytest.mark.parametrize("body, reason", [
    (b"{not json", "not_json"),
    (b"[1, 2]", "shape"),
    (b'{"model": "m", "messages": "hello"}', "shape"),
    (b'{"model": "m", "messages": [{"role": "user", "content": 5}]}', "compaction_error"),
])
def test_what_cannot_be_compacted_goes_upstream_unchanged(proxy, upstream, caplog, body, reason):
    with caplog.at_level(logging.INFO, "rules_compact.serve"):
        httpx.post(proxy.url + "/v1/messages", content=body, headers={"anthropic-version": "2023-06-01"})
    assert upstream.requests[0].body == body
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"fail-open ({reason})" in warnings[0].getMessage()
    assert metric(proxy, "rules_compact_serve_fail_opens_total", reason=reason) == 1


def test_a_body_over_the_input_limit_goes_upstream_unchanged(proxy, upstream, monkeypatch):
    monkeypatch.setenv("RULES_COMPACT_MAX_INPUT_BYTES", "1K")
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": anthropic_messages()}).encode()
    httpx.post(proxy.url + "/v1/messages", content=body, headers={"anthropic-version": "2023-06-01"})
    assert upstream.requests[0].body == body
    assert metric(proxy, "rules_compact_serve_fail_opens_total", reason="too_large") == 1


def test_a_result_check_api_validity_rejects_goes_upstream_unchanged(proxy, upstream, monkeypatch):
    def reject(*args, **kwargs):
        raise AssertionError("message 2: left without content")
    monkeypatch.setattr("rules_compact.testing.ValidityCheck.__call__", reject)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": anthropic_messages()}).encode()
    httpx.post(proxy.url + "/v1/messages", content=body, headers={"anthropic-version": "2023-06-01"})
    assert upstream.requests[0].body == body
    assert metric(proxy, "rules_compact_serve_fail_opens_total", reason="invalid_result") == 1


def test_stateful_responses_and_unknown_items_pass_untouched(proxy, upstream):
    stateful = json.dumps({"model": "gpt", "previous_response_id": "resp_1", "input": responses_input()}).encode()
    httpx.post(proxy.url + "/v1/responses", content=stateful)
    unknown = [{"type": "compaction", "encrypted_content": "xyz"}, {"type": "future_item", "data": [1]}]
    body = {"model": "gpt", "store": False, "input": unknown + responses_input()}
    httpx.post(proxy.url + "/v1/responses", json=body)
    first, second = upstream.requests
    assert first.body == stateful
    assert second.json["input"][:2] == unknown and second.json["input"][5]["output"] == "[Previous: used read]"


def test_breakpoints_never_exceed_four_and_the_clients_stay(start, upstream):
    served = start(rules=[load_rules(STEPPED_DEFAULT)])
    messages = anthropic_messages(12)
    messages[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    ephemeral = {"type": "ephemeral"}
    request = {"model": "claude-x", "max_tokens": 5, "messages": messages,
               "system": [{"type": "text", "text": "a", "cache_control": ephemeral},
                          {"type": "text", "text": "b", "cache_control": ephemeral}],
               "tools": [{"name": "read", "input_schema": {"type": "object"}, "cache_control": ephemeral}]}
    httpx.post(served.url + "/v1/messages", json=request, headers={"anthropic-version": "2023-06-01"})
    sent = upstream.requests[0].json
    assert sent != request  # compacted
    assert upstream.requests[0].body.count(b'"cache_control"') == 4
    assert sent["messages"][-1]["content"][0]["cache_control"] == ephemeral


def test_a_claude_code_shaped_request_is_compacted(proxy, upstream):
    ephemeral = {"type": "ephemeral"}
    messages = anthropic_messages(3)
    messages.insert(3, {"role": "system", "content": "a mid-conversation system entry"})
    messages[-1]["content"][0]["cache_control"] = ephemeral
    request = {"model": "claude-x", "max_tokens": 5, "stream": True,
               "thinking": {"type": "enabled", "budget_tokens": 1024},
               "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
               "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": ephemeral},
                          {"type": "text", "text": "env", "cache_control": ephemeral}],
               "messages": messages}
    httpx.post(proxy.url + "/v1/messages?beta=true", json=request,
               headers={"anthropic-version": "2023-06-01", "x-claude-code-session-id": "s1"})
    got, = upstream.requests
    assert got.query == "beta=true" and got.body.count(b'"cache_control"') == 3
    sent = got.json
    assert sent["messages"][2]["content"][0]["content"] == "[Previous: used read]"
    assert sent["messages"][3] == messages[3] and sent["messages"][-1] == messages[-1]
    assert {k: v for k, v in sent.items() if k != "messages"} == {k: v for k, v in request.items() if k != "messages"}


def test_other_paths_pass_through_to_the_fixed_upstream(proxy, upstream):
    httpx.get(proxy.url + "/v1/models?limit=3", headers={"anthropic-version": "2023-06-01", "host": "evil.example"})
    httpx.get(proxy.url + "/v1/models", headers={"authorization": "Bearer x"})
    httpx.post(proxy.url + "/v1/files", content=b"\x00" * 100_000, headers={"authorization": "Bearer x"})
    with socket.create_connection(("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))) as raw:
        raw.sendall(b"GET http://evil.example/v1/models HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 400")
    anthropic_models, openai_models, upload = upstream.requests
    assert (anthropic_models.path, anthropic_models.query) == ("/v1/models", "limit=3")
    assert openai_models.path == "/oa/v1/models"
    assert upload.path == "/oa/v1/files" and upload.body == b"\x00" * 100_000


def test_a_large_body_is_compacted(proxy, upstream):
    messages = anthropic_messages()
    messages[2]["content"][0]["content"] = "x" * 12_000_000
    httpx.post(proxy.url + "/v1/messages", json={"model": "m", "max_tokens": 5, "messages": messages},
               headers={"anthropic-version": "2023-06-01"}, timeout=60)
    assert upstream.requests[0].json["messages"][2]["content"][0]["content"] == "[Previous: used read]"


def test_metrics_count_tokens_and_the_upstreams_cache_usage(proxy, upstream):
    client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
    upstream.script(Reply(usage={"cache_read": 100, "cache_creation": 20}),
                    Reply(usage={"cache_read": 300, "cache_creation": 0}))
    client.messages.create(model="claude-x", max_tokens=10, messages=anthropic_messages())
    with client.messages.stream(model="claude-x", max_tokens=10, messages=anthropic_messages()) as stream:
        stream.get_final_message()
    chat = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
    upstream.script(Reply(usage={"cache_read": 64}, gzip=True), Reply(usage={"cache_read": 32}))
    chat.chat.completions.create(model="gpt", messages=chat_messages())
    with chat.responses.stream(model="gpt", input=responses_input()) as stream:
        stream.get_final_response()
    usage = "rules_compact_serve_upstream_usage_tokens_total"
    assert eventually(lambda: metric(proxy, usage, route="responses", kind="cached")) == 32  # response.completed
    assert metric(proxy, usage, route="chat_completions", kind="cached") == 64  # a gzip answer, read
    assert metric(proxy, usage, route="messages", kind="cache_read") == 400  # streamed and not
    assert metric(proxy, usage, route="messages", kind="cache_creation") == 20
    assert metric(proxy, "rules_compact_serve_requests_total", route="messages", outcome="compacted") == 2
    before = metric(proxy, "rules_compact_serve_estimated_tokens_before_total", route="messages")
    assert before > metric(proxy, "rules_compact_serve_estimated_tokens_after_total", route="messages") > 0
    assert metric(proxy, "rules_compact_serve_compaction_seconds_count", route="messages") == 2
    sessions = httpx.get(proxy.url + "/rules-compact/sessions").json()["sessions"]
    assert len(sessions) == 3 and sessions[2]["requests"] == 2 and sessions[2]["items_changed"] == 1


def test_the_log_has_one_line_per_request_and_no_secret_or_content(proxy, upstream, caplog):
    client = anthropic.Anthropic(base_url=proxy.url, api_key=SECRET, max_retries=0)
    with caplog.at_level(logging.INFO, "rules_compact.serve"):
        client.messages.create(model="claude-x", max_tokens=10, messages=anthropic_messages())
        lines = eventually(lambda: [r.getMessage() for r in caplog.records if r.name == "rules_compact.serve"])
    assert len(lines) == 1
    assert re.search(r"messages status=200 session=\w{16} model=claude-x tokens=[\d,]+->[\d,]+ changed=1 "
                     r"boundary_moved=(yes|no) compaction_ms=", lines[0])
    assert SECRET not in caplog.text and "read the files" not in caplog.text and "f0.py" not in caplog.text


def test_each_compaction_is_an_otel_span_of_the_serve_integration(proxy, otel_spans):
    anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0).messages.create(
        model="claude-x", max_tokens=10, messages=anthropic_messages())
    [span] = [s for s in otel_spans.get_finished_spans() if s.name == "rules_compact.compact"]
    assert span.attributes["rules_compact.integration"] == "serve"
    assert span.attributes["rules_compact.items_changed"] == 1


def rounds(path, every: int = 1):
    """The request bodies of a logged conversation, round by round (each ends on a user turn)."""
    (conversation, fmt), = read_file(str(path), None, lambda _: None)
    messages = conversation.messages
    ends = [k for k in range(1, len(messages) + 1) if messages[k - 1].get("role") == "user"][::every]
    return fmt, [{"model": "claude-x", "max_tokens": 5, "system": "You are Claude Code.",
                  "messages": messages[:k]} for k in ends]


def test_a_sessions_compactor_gives_what_compact_gives_every_round(start, upstream):
    rules = load_rules(STEPPED_DEFAULT)
    served = start(rules=[rules])
    fmt, bodies = rounds(TRACES / "claude-code" / "agent-a2898e3.jsonl")
    for body in bodies:
        httpx.post(served.url + "/v1/messages", json=body,
                   headers={"anthropic-version": "2023-06-01", "x-claude-code-session-id": "s1"})
    assert len(upstream.requests) == len(bodies) > 8
    for body, got in zip(bodies, upstream.requests):
        assert got.json["messages"] == compact(body["messages"], [rules], format=fmt).messages
    moved = metric(served, "rules_compact_serve_boundary_moves_total", route="messages")
    assert moved >= 1 and len(httpx.get(served.url + "/rules-compact/sessions").json()["sessions"]) == 1


def test_sessions_are_bounded_and_evicted_when_idle():
    now = [0.0]
    sessions = Sessions([KEEP_ONE], max_sessions=2, idle_seconds=60, clock=lambda: now[0])
    a = sessions.get("a")
    sessions.get("b")
    assert sessions.get("a") is a
    sessions.get("c")  # evicts b, the least recently used
    assert [s["session"] for s in sessions.summary()] == ["c", "a"] and sessions.evicted == 1
    now[0] = 61
    assert sessions.summary() == [] and sessions.evicted == 3


def spawn(upstream_url: str, *args: str, count: int = 1) -> list[tuple[subprocess.Popen, str]]:
    """``count`` ``rules-compact serve`` processes (started together) on free ports, with their URLs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = [subprocess.Popen([sys.executable, "-m", "rules_compact", "serve", "--port", "0",
                                   "--anthropic-upstream", upstream_url, *args],
                                  stderr=subprocess.PIPE, text=True, env=env) for _ in range(count)]
    out = []
    for process in processes:
        line = process.stderr.readline()
        found = re.search(r"serving on (http://\S+)", line)
        assert found, line
        out.append((process, found[1]))
    return out


def test_two_processes_alternating_one_sessions_rounds_send_the_same_bytes(start, upstream):
    fmt, bodies = rounds(TRACES / "claude-code" / "agent-a2898e3.jsonl")
    rules = [load_rules(STEPPED_DEFAULT)]
    every_round = start(rules=rules)  # sees them all, in this process
    processes = spawn(upstream.url, "-r", STEPPED_DEFAULT, count=2)
    try:
        for i, body in enumerate(bodies):  # odd rounds to one process, even ones to the other
            for url in (processes[i % 2][1], every_round.url):
                httpx.post(url + "/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
    finally:
        for process, _ in processes:
            process.terminate()
            process.wait(10)
    sent = [r.body for r in upstream.requests]
    assert len(sent) == 2 * len(bodies)
    assert sent[0::2] == sent[1::2]
    assert [json.loads(b)["messages"] for b in sent[0::2]] == [compact(b["messages"], rules, format=fmt).messages
                                                              for b in bodies]


def test_sighup_reloads_valid_rules_and_sigterm_lets_a_stream_finish(upstream, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("version: 1\nname: first\nrules: []\n")
    [(process, url)] = spawn(upstream.url, "-r", str(rules), "--grace", "20")
    try:
        rules.write_text("version: 1\nname: second\nrules: [{name: x, match: {nope: 1}, action: keep}]\n")
        process.send_signal(signal.SIGHUP)
        assert "reload failed, the running rules stay: " + str(rules) in process.stderr.readline()
        rules.write_text("version: 1\nname: third\nrules: []\n")
        process.send_signal(signal.SIGHUP)
        assert "reloaded the rules: third" in process.stderr.readline()
        upstream.script(Reply(delay=0.1))
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        with client.messages.stream(model="claude-x", max_tokens=10, messages=anthropic_messages()) as stream:
            events = iter(stream)
            next(events)
            process.send_signal(signal.SIGTERM)
            assert stream.get_final_message().content[0].text == "ok"
        assert process.wait(20) == 128 + signal.SIGTERM
    finally:
        process.kill()
        process.wait()


def test_start_up_errors_are_one_line_with_apply_s_exit_codes(tmp_path, capsys, monkeypatch):
    assert main(["serve", "-r", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nname: bad\nrules: [{name: x, match: {nope: 1}, action: keep}]\n")
    assert main(["serve", "-r", str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"{bad}:")
    assert main(["serve", "--host", "0.0.0.0", "--port", "70000"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "warning: --host 0.0.0.0: listening beyond this machine" in err[0] and "--port 70000" in err[1]
    for name in [m for m in sys.modules if m.startswith("rules_compact.serve")]:
        monkeypatch.delitem(sys.modules, name)
    for name in [m for m in sys.modules if m == "starlette" or m.startswith("starlette.")]:
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["serve"]) == 2
    assert capsys.readouterr().err == ("rules-compact: error: serve needs the serve extra (starlette is not "
                                       "installed): pip install 'rules-compact[serve]'\n")


def test_a_cleared_results_saved_path_is_readable_beside_the_proxy_and_holds_exactly_the_original(
        start, upstream, tmp_path):
    rules = load_rules(f"""
version: 1
name: recoverable
store: {tmp_path / 'saved'}
rules:
  - {{name: keep-newest, match: {{age: {{unit: tool_results, lt: 1}}}}, action: keep}}
  - {{name: clear-old, match: {{role: tool}}, action: {{placeholder: {{save: true}}}}}}
""")
    served = start(rules=(rules,))
    client = anthropic.Anthropic(base_url=served.url, api_key=SECRET, max_retries=0)
    for rounds in (2, 3):  # a later round names the same file: the prompt prefix stays byte-stable
        client.messages.create(model="claude-x", max_tokens=10, messages=anthropic_messages(rounds))
    first, second = upstream.requests
    placeholder = first.json["messages"][2]["content"][0]["content"]
    found = re.search(r"saved in (\S+\.txt): read that file", placeholder)
    assert found and placeholder.startswith("[read result cleared to save space (201 lines)")
    with open(found[1], encoding="utf-8") as fh:
        assert fh.read() == BIG + "end of f0"
    assert second.json["messages"][2] == first.json["messages"][2]
    assert sorted(os.listdir(tmp_path / "saved")) == sorted(os.path.basename(re.search(
        r"saved in (\S+\.txt)", m["content"][0]["content"])[1]) for m in second.json["messages"][2:5:2])

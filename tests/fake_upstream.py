"""A scripted stand-in for the Anthropic and OpenAI APIs, on 127.0.0.1, for tests of
``rules-compact serve`` (and of anything else that talks to those APIs).

::

    from fake_upstream import FakeUpstream, Reply

    with FakeUpstream() as upstream:                   # listens on a free port, in a thread
        upstream.script(Reply(text="hello"),           # the next requests' answers, in order;
                        Reply(tool=("bash", {"command": "ls"})),   # a tool call
                        Reply(status=429, headers={"retry-after": "7"}))  # an error
        ...  # point a client (or the proxy) at upstream.url
        upstream.requests[0].json["messages"]          # what arrived: method, path, query,
        upstream.requests[0].header("x-api-key")       # headers, raw body bytes (as sent)

Each request takes the next scripted :class:`Reply`; once the script is used up, each gets
``upstream.default`` (``Reply()``, text ``"ok"``) or, when set, ``upstream.answer(request)``,
a function of the :class:`Recorded` request that returns a Reply (to answer every round of
an agent's session).  A reply is written in the shape of the path it answers:

* ``POST /v1/messages``: an Anthropic message, or its SSE stream when the body says
  ``"stream": true`` (message_start ... message_stop, with ``usage`` holding ``input_tokens``,
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` from ``Reply.usage``);
* ``POST /v1/messages/count_tokens``: ``{"input_tokens": N}``, N the body's bytes / 4;
* ``POST /v1/chat/completions``: a chat.completion, or its chunks (``data: [DONE]`` last; the
  usage chunk when ``stream_options.include_usage``);
* ``POST /v1/responses``: a response object, or its events (``response.created`` ...
  ``response.completed``, usage in ``input_tokens_details.cached_tokens``);
* any other path: ``Reply.body`` (default ``{"ok": true}``) as JSON.

``Reply(raw=b"...")`` answers those bytes exactly; ``status`` >= 400 answers ``error`` (or the
API's error shape).  ``delay`` seconds pass before each stream event; ``hang=True`` streams
the first events (unstreamed: sends nothing) and then waits until the client goes away,
which ``upstream.cancelled`` counts; ``cut=True`` streams the first events and then drops
the connection.  ``gzip=True`` compresses the answer (with ``Content-Encoding: gzip``).

:class:`Served` runs any ASGI app the same way; the proxy in front of the fake::

    from rules_compact.serve import Proxy, ServeConfig

    config = ServeConfig(anthropic_upstream=upstream.url, openai_upstream=upstream.url + "/v1")
    with Served(Proxy(config).app()) as proxy:       # proxy.url: the agent's base URL
        ...                                          # (OpenAI clients: proxy.url + "/v1")
"""

from __future__ import annotations

import asyncio
import gzip as gzip_module
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import uvicorn

__all__ = ["FakeUpstream", "Reply", "Recorded", "Served", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """An ASGI app served by uvicorn on 127.0.0.1 in a thread of its own: ``url`` while inside
    the ``with`` block."""

    def __init__(self, app: Any):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, lifespan="auto",
                                timeout_graceful_shutdown=2, server_header=False, date_header=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "Served":
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@dataclass
class Reply:
    """One scripted answer (see the module's docstring)."""

    text: str = "ok"
    tool: tuple[str, dict] | None = None  # (name, arguments): answer with a tool call instead
    status: int = 200
    headers: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)  # cache_read / cache_creation / input / output
    error: dict | None = None
    body: Any = None  # other paths: the JSON answered
    raw: bytes | None = None
    delay: float = 0.0
    hang: bool = False
    cut: bool = False  # stream the first events, then drop the connection
    gzip: bool = False


@dataclass
class Recorded:
    """One request as it arrived: ``body`` the bytes on the wire; ``json`` them read (gunzipped)."""

    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name.lower()), None)

    @property
    def json(self) -> Any:
        data = self.body
        if (self.header("content-encoding") or "").lower() == "gzip":
            data = gzip_module.decompress(data)
        return json.loads(data)


class FakeUpstream:
    """The scripted API (see the module's docstring); use it as a context manager."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: list[Reply] = []
        self.default = Reply()
        self.answer: Callable[[Recorded], Reply] | None = None
        self.cancelled = 0
        self.served: Served | None = None
        self._lock = threading.Lock()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    @property
    def url(self) -> str:
        assert self.served is not None, "use FakeUpstream as a context manager"
        return self.served.url

    def __enter__(self) -> "FakeUpstream":
        self.served = Served(self).__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.served.__exit__(*exc)

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.pop(0)
        return self.answer(recorded) if self.answer is not None else self.default

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        recorded = Recorded(scope["method"], scope["path"], scope["query_string"].decode("latin-1"),
                            [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]], b"".join(chunks))
        with self._lock:
            self.requests.append(recorded)
        reply = self._next(recorded)
        try:
            body = recorded.json if recorded.body else {}
        except ValueError:
            body = {}
        stream = isinstance(body, dict) and body.get("stream") is True
        events = _answer(recorded.path, body if isinstance(body, dict) else {}, reply, len(recorded.body))
        if reply.hang and not stream:
            await self._hang(receive)
        elif reply.raw is not None or reply.status >= 400 or not stream:
            await self._whole(send, reply, events, recorded.path)
        else:
            await self._stream(send, receive, reply, events)

    async def _hang(self, receive) -> None:
        """Answer nothing more until the client goes away."""
        while (await receive())["type"] != "http.disconnect":
            pass
        self.cancelled += 1

    async def _whole(self, send, reply: Reply, events: list, path: str) -> None:
        if reply.raw is not None:
            data = reply.raw
        elif reply.status >= 400:
            data = json.dumps(reply.error or _error(path, reply.status)).encode()
        else:
            data = json.dumps(events[-1][1] if events else {}).encode()
        headers = {"content-type": "application/json", **reply.headers}
        if reply.gzip:
            data, headers["content-encoding"] = gzip_module.compress(data, mtime=0), "gzip"
        headers["content-length"] = str(len(data))
        await send({"type": "http.response.start", "status": reply.status,
                    "headers": [(k.encode(), str(v).encode()) for k, v in headers.items()]})
        await send({"type": "http.response.body", "body": data})

    async def _stream(self, send, receive, reply: Reply, events: list) -> None:
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache", **reply.headers}
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(k.encode(), str(v).encode()) for k, v in headers.items()]})
        frames = [e[0] for e in events if e[0] is not None]
        try:
            for i, frame in enumerate(frames):
                if reply.hang and i == 2:
                    await self._hang(receive)
                    return
                if reply.cut and i == 2:
                    return  # the response is left incomplete: the server drops the connection
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except (asyncio.CancelledError, OSError):
            self.cancelled += 1
            raise


def _error(path: str, status: int) -> dict:
    kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
            529: "overloaded_error"}.get(status, "api_error")
    if "/v1/messages" in path:
        return {"type": "error", "error": {"type": kind, "message": f"scripted {status}"}}
    return {"error": {"message": f"scripted {status}", "type": kind, "param": None, "code": None}}


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data) if not isinstance(data, str) else data}\n\n".encode()


def _answer(path: str, body: dict, reply: Reply, size: int) -> list[tuple[bytes | None, Any]]:
    """The answer as (SSE frame, event) pairs; the last event is the non-streamed answer.
    ``path`` is read from its ``/v1/`` on (an OpenAI base may have a prefix)."""
    path = path[path.find("/v1/"):] if "/v1/" in path else path
    if path == "/v1/messages/count_tokens":
        return [(None, {"input_tokens": max(1, size // 4)})]
    if path == "/v1/messages":
        return _anthropic(body, reply, size)
    if path == "/v1/chat/completions":
        return _chat(body, reply, size)
    if path == "/v1/responses":
        return _responses(body, reply, size)
    return [(None, reply.body if reply.body is not None else {"ok": True})]


def _anthropic(body: dict, reply: Reply, size: int) -> list:
    u = reply.usage
    usage = {"input_tokens": u.get("input", max(1, size // 4)), "output_tokens": u.get("output", 5),
             "cache_read_input_tokens": u.get("cache_read", 0),
             "cache_creation_input_tokens": u.get("cache_creation", 0)}
    if reply.tool:
        name, args = reply.tool  # ids from the request's size: a new one each round of a growing history
        block = {"type": "tool_use", "id": f"toolu_{size:010d}", "name": name, "input": args}
        start, delta = {**block, "input": {}}, {"type": "input_json_delta", "partial_json": json.dumps(args)}
        stop = "tool_use"
    else:
        block, start, delta = {"type": "text", "text": reply.text}, {"type": "text", "text": ""}, \
            {"type": "text_delta", "text": reply.text}
        stop = "end_turn"
    message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "claude-fake"),
               "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
    frames = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None,
                                                                 "usage": {**usage, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": usage["output_tokens"]}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return [(_sse(name, data), data) for name, data in frames] + [(None, message)]


def _chat(body: dict, reply: Reply, size: int) -> list:
    u = reply.usage
    usage = {"prompt_tokens": u.get("input", max(1, size // 4)), "completion_tokens": u.get("output", 5),
             "total_tokens": u.get("input", max(1, size // 4)) + u.get("output", 5),
             "prompt_tokens_details": {"cached_tokens": u.get("cache_read", 0)}}
    base = {"id": "chatcmpl-fake", "created": 1, "model": body.get("model", "gpt-fake")}
    if reply.tool:
        name, args = reply.tool
        call = {"id": f"call_{size}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        delta = {"role": "assistant", "tool_calls": [{"index": 0, **call}]}
    else:
        message, finish = {"role": "assistant", "content": reply.text}, "stop"
        delta = {"role": "assistant", "content": reply.text}
    chunk = {**base, "object": "chat.completion.chunk"}
    frames = [{**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    if (body.get("stream_options") or {}).get("include_usage"):
        frames.append({**chunk, "choices": [], "usage": usage})
    whole = {**base, "object": "chat.completion", "usage": usage,
             "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    return [(_sse(None, f), f) for f in frames] + [(_sse(None, "[DONE]"), None), (None, whole)]


def _responses(body: dict, reply: Reply, size: int) -> list:
    u = reply.usage
    usage = {"input_tokens": u.get("input", max(1, size // 4)), "output_tokens": u.get("output", 5),
             "total_tokens": u.get("input", max(1, size // 4)) + u.get("output", 5),
             "input_tokens_details": {"cached_tokens": u.get("cache_read", 0)},
             "output_tokens_details": {"reasoning_tokens": 0}}
    if reply.tool:
        name, args = reply.tool
        item = {"type": "function_call", "id": f"fc_{size}", "call_id": f"call_{size}", "name": name,
                "arguments": json.dumps(args), "status": "completed"}
    else:
        item = {"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
    response = {"id": "resp_fake", "object": "response", "created_at": 1, "model": body.get("model", "gpt-fake"),
                "status": "completed", "output": [item], "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": [], "usage": usage}
    frames = [("response.created", {"type": "response.created", "sequence_number": 0,
                                    "response": {**response, "status": "in_progress", "output": [], "usage": None}}),
              ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                              "output_index": 0, "item": {**item, "status": "in_progress"}}),
              ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 2,
                                             "output_index": 0, "item": item}),
              ("response.completed", {"type": "response.completed", "sequence_number": 3, "response": response})]
    return [(_sse(name, data), data) for name, data in frames] + [(None, response)]

"""Which API a request is for, where it goes, and what the proxy compacts of it.

The upstream of every route is fixed when the proxy starts: the request's path (and query) is
appended to it, and nothing in a request (a header, an absolute URL in the request line) can
name another host, so the proxy is no open proxy."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from ..jsontext import dumps_data

__all__ = ["ANTHROPIC_UPSTREAM", "OPENAI_UPSTREAM", "Route", "route_of", "upstream_url", "error_body",
           "HOP_BY_HOP", "forwarded_headers"]

ANTHROPIC_UPSTREAM = "https://api.anthropic.com"
OPENAI_UPSTREAM = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Route:
    """What the proxy does with one path: ``api`` says where it goes and how errors look;
    ``format`` is the message format it compacts (None: passes through); ``key``: the body's
    list of messages (``messages``) or items (``input``); ``name`` labels logs and metrics."""

    name: str
    api: str  # "anthropic" or "openai"
    format: str | None = None
    key: str = "messages"


MESSAGES = Route("messages", "anthropic", "anthropic")
COUNT_TOKENS = Route("count_tokens", "anthropic", "anthropic")
CHAT = Route("chat_completions", "openai", "openai")
RESPONSES = Route("responses", "openai", "responses", "input")
ANTHROPIC_OTHER = Route("other", "anthropic")
OPENAI_OTHER = Route("other", "openai")

_COMPACTED = {"/v1/messages": MESSAGES, "/v1/messages/count_tokens": COUNT_TOKENS,
              "/v1/chat/completions": CHAT, "/v1/responses": RESPONSES}
_ANTHROPIC_ONLY = ("/v1/messages", "/v1/complete")


def route_of(method: str, path: str, anthropic_version: bool) -> Route:
    """The route of a request.  Paths both APIs have (``/v1/models``, ``/v1/files``, unknown
    ones) go to Anthropic when the request carries an ``anthropic-version`` header, as
    Anthropic's SDKs and agents always send, else to OpenAI: either way to an upstream the
    operator configured."""
    found = _COMPACTED.get(path) if method == "POST" else None
    if found is not None:
        return found
    if anthropic_version or any(path == p or path.startswith(p + "/") for p in _ANTHROPIC_ONLY):
        return ANTHROPIC_OTHER
    return OPENAI_OTHER


def upstream_url(base: httpx.URL, api: str, raw_path: bytes, query: bytes) -> httpx.URL:
    """``base`` with the request's path appended (OpenAI's base ends in ``/v1``: ``/v1/X`` goes
    to its ``/X``); scheme, host and port are always ``base``'s.  ``raw_path`` starts with ``/``."""
    if api == "openai" and (raw_path == b"/v1" or raw_path.startswith(b"/v1/")):
        raw_path = raw_path[3:]
    path = base.raw_path.split(b"?", 1)[0].rstrip(b"/") + raw_path
    return base.copy_with(raw_path=path + (b"?" + query if query else b""))


def error_body(api: str, kind: str, message: str) -> bytes:
    """An error in the API's own shape, so that the client's SDK reads it as one of its errors."""
    if api == "anthropic":
        return dumps_data({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return dumps_data({"error": {"message": message, "type": kind, "param": None, "code": kind}}).encode()


#: Headers that belong to one connection (RFC 9110, 7.6.1), never forwarded; ``host`` is the upstream's.
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
                        b"trailer", b"trailers", b"transfer-encoding", b"upgrade", b"host", b"proxy-connection",
                        b"expect"})  # Expect: 100-continue is answered by this server, not relayed


def forwarded_headers(headers: list[tuple[bytes, bytes]], drop: frozenset = frozenset()) -> list[tuple[bytes, bytes]]:
    """``headers`` as they came, minus hop-by-hop ones, those the ``Connection`` header names,
    and ``drop`` (lower-case names)."""
    named = {name.strip().lower() for key, value in headers if key.lower() == b"connection"
             for name in value.split(b",")}
    skip = HOP_BY_HOP | named | drop
    return [(key, value) for key, value in headers if key.lower() not in skip]

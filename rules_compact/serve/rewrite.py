"""What the proxy sends upstream for one request body: the library decides, this module only
reads the body, hands its messages to the conversation's Compactor and writes the result.

Whatever goes wrong (a body too large, not JSON, of a shape we do not know, a compaction
that raises, a result ``check_api_validity`` rejects), the original bytes go upstream: an
agent is never broken by its proxy.  Unchanged bodies go as the client sent them, byte for
byte; changed ones are written deterministically (compact JSON, keys in the client's order),
so the same history gives the same bytes in every round, process and replica."""

from __future__ import annotations

import json
import operator
import time
import zlib
from dataclasses import dataclass

from .. import jsontext
from ..integrations.sdk import breakpoints_outside
from ..limits import max_input_bytes
from .routes import Route
from .sessions import Sessions, session_key

__all__ = ["Rewritten", "FailOpen", "rewrite"]


class FailOpen(Exception):
    """Why a body goes upstream uncompacted: ``reason`` labels the metric, the message says more."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Rewritten:
    """The outcome for one body: ``body`` the bytes to send instead (None: the client's own).
    ``untouched`` says why a body we read was left alone (a stateful Responses request ...);
    ``fail_open`` and ``message`` why one we could not compact was."""

    body: bytes | None = None
    session: str | None = None
    model: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    items_changed: int = 0
    boundary_moved: bool = False
    seconds: float = 0.0
    untouched: str | None = None
    fail_open: str | None = None
    message: str | None = None


def rewrite(route: Route, raw: bytes, encoding: str | None, session_id: str | None, sessions: Sessions) -> Rewritten:
    """The bytes to send upstream for ``raw`` (sent with Content-Encoding ``encoding``)."""
    start = time.perf_counter()
    body = None
    try:
        body = _read(raw, encoding)
        return _compacted(route, body, session_id, sessions, start)
    except FailOpen as exc:
        return Rewritten(model=_model(body), seconds=time.perf_counter() - start, fail_open=exc.reason,
                         message=str(exc))
    except Exception as exc:  # noqa: BLE001 - whatever a compaction raises, the agent gets its request through
        return Rewritten(model=_model(body), seconds=time.perf_counter() - start, fail_open="compaction_error",
                         message=f"the compaction raised {type(exc).__name__}: {exc}")


def _model(body) -> str | None:
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None


def _read(raw: bytes, encoding: str | None) -> dict:
    limit = max_input_bytes()
    if len(raw) > limit:
        raise FailOpen("too_large", f"the body is {len(raw):,} bytes, over RULES_COMPACT_MAX_INPUT_BYTES ({limit:,})")
    encoding = (encoding or "identity").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        raw = _inflated(raw, limit)
    elif encoding != "identity":
        raise FailOpen("encoding", f"a body in Content-Encoding {encoding!r} (gzip and deflate are read)")
    try:
        body = jsontext.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FailOpen("not_json", f"the body is not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise FailOpen("not_json", f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(body, dict):
        raise FailOpen("shape", f"the body is a JSON {type(body).__name__}, not an object")
    return body


def _inflated(raw: bytes, limit: int) -> bytes:
    """A gzip or deflate body, inflated to at most ``limit`` bytes."""
    inflater = zlib.decompressobj(47)  # 32 + 15: gzip or zlib, told by its header
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise FailOpen("encoding", f"the compressed body does not inflate: {exc}") from None
    if len(out) > limit:
        raise FailOpen("too_large", f"the body inflates to over RULES_COMPACT_MAX_INPUT_BYTES ({limit:,})")
    return out


def _compacted(route: Route, body: dict, session_id: str | None, sessions: Sessions, start: float) -> Rewritten:
    model = _model(body)
    if route.format == "responses" and (body.get("previous_response_id") is not None
                                        or body.get("conversation") is not None):
        return Rewritten(model=model, untouched="stateful: previous_response_id or conversation")
    items = body.get(route.key)
    if isinstance(items, str) and route.format == "responses":
        return Rewritten(model=model, untouched="input is a string")
    if not isinstance(items, list):
        raise FailOpen("shape", f"the body has no {route.key!r} list")
    key = session_key(route.format, body, session_id)
    conversation = sessions.get(key)
    with conversation.lock:
        given = conversation.reuse(items)
        out = conversation.compact_request({**body, route.key: given})
        conversation.previous = given
        conversation.requests += 1
        report, where = conversation.report, conversation.where
        after = out[route.key]
        unchanged = len(after) == len(given) and all(map(operator.is_, after, given))
        try:
            if not unchanged:
                conversation.check(given, after, route.format, breakpoints_outside(body))
            rejected = None
        except AssertionError as exc:
            rejected = exc
    done = dict(session=key, model=model, tokens_before=report.tokens_before, tokens_after=report.tokens_after,
                items_changed=report.items_changed, boundary_moved=where.boundary_moved)
    if unchanged:
        return Rewritten(**done, seconds=time.perf_counter() - start)
    if rejected is not None:
        sent = {**done, "tokens_after": report.tokens_before, "items_changed": 0}  # the original goes
        return Rewritten(**sent, seconds=time.perf_counter() - start, fail_open="invalid_result",
                         message=f"check_api_validity rejected the compacted request: {rejected}")
    text = json.dumps(out, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return Rewritten(text.encode("utf-8", "backslashreplace"), **done, seconds=time.perf_counter() - start)

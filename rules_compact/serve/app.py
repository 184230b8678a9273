"""The HTTP shell: an ASGI app (starlette) that relays each request to its fixed upstream with
httpx, the body compacted (rewrite.py) on the routes that carry a conversation.

Headers go both ways as they came, hop-by-hop ones aside; a rewritten body gets its own
``Content-Length`` and no ``Content-Encoding``.  Answers are relayed chunk by chunk as they
arrive (their bytes as the upstream sent them, compressed or not), and a client that goes
away cancels the upstream request.  Nothing here logs a header value or a message."""

from __future__ import annotations

import logging
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Sequence

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route as Path

from ..errors import ConfigError, RulesCompactError
from ..language.loader import load_rules
from ..language.model import RuleSet
from .metrics import Metrics, UsageMeter
from .rewrite import Rewritten, rewrite
from .routes import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM, Route, error_body, forwarded_headers, route_of, upstream_url
from .sessions import Sessions

__all__ = ["ServeConfig", "Proxy"]

logger = logging.getLogger("rules_compact.serve")


@dataclass(frozen=True)
class ServeConfig:
    """How the proxy runs: ``rules`` as given (``-r``: reloaded from there on SIGHUP), the two
    upstreams, the session bounds and the upstream timeouts (seconds)."""

    rules: tuple[str, ...] = ("default",)
    anthropic_upstream: str = ANTHROPIC_UPSTREAM
    openai_upstream: str = OPENAI_UPSTREAM
    max_sessions: int = 256
    session_idle_seconds: float = 3600.0
    connect_timeout: float = 10.0
    read_timeout: float = 600.0


class Proxy:
    """The proxy: ``app()`` is its ASGI application; ``reload()`` reads the rule files again."""

    def __init__(self, config: ServeConfig, rulesets: Sequence[RuleSet] | None = None):
        self.config = config
        self.sessions = Sessions(rulesets if rulesets is not None else [load_rules(r) for r in config.rules],
                                 config.max_sessions, config.session_idle_seconds)
        self.metrics = Metrics()
        self.bases = {"anthropic": httpx.URL(config.anthropic_upstream), "openai": httpx.URL(config.openai_upstream)}
        self.client: httpx.AsyncClient | None = None
        self._reloading = threading.Lock()

    def app(self) -> Starlette:
        app = Starlette(routes=[Path("/metrics", self._metrics, methods=["GET"]),
                                Path("/rules-compact/sessions", self._sessions, methods=["GET"])],
                        lifespan=self._lifespan)
        app.router.default = self._proxy  # every other path: relayed
        return app

    @asynccontextmanager
    async def _lifespan(self, app):
        timeout = httpx.Timeout(self.config.read_timeout, connect=self.config.connect_timeout, pool=None)
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False,
                                     limits=httpx.Limits(max_connections=None, max_keepalive_connections=64)) as client:
            self.client = client
            yield
        self.client = None

    def reload(self) -> bool:
        """Load the rule files again; the running rules stay when one is missing or invalid."""
        with self._reloading:
            try:
                rulesets = [load_rules(r) for r in self.config.rules]
            except ConfigError as exc:
                more = f" (and {len(exc.problems) - 1} more problems)" if len(exc.problems) > 1 else ""
                logger.error("reload failed, the running rules stay: %s%s", exc.problems[0], more)
            except RulesCompactError as exc:
                logger.error("reload failed, the running rules stay: %s", exc)
            else:
                self.sessions.replace_rules(rulesets)
                self.metrics.reloads.labels("ok").inc()
                logger.info("reloaded the rules: %s", ", ".join(r.name for r in rulesets))
                return True
            self.metrics.reloads.labels("failed").inc()
            return False

    async def _metrics(self, request: Request) -> Response:
        self._count_sessions()
        return Response(self.metrics.text(), media_type="text/plain; version=0.0.4; charset=utf-8")

    async def _sessions(self, request: Request) -> Response:
        return JSONResponse({"sessions": self.sessions.summary(), "max_sessions": self.sessions.max_sessions,
                             "evicted": self.sessions.evicted})

    def _count_sessions(self) -> None:
        self.metrics.sessions.set(len(self.sessions))
        self.metrics.sessions_evicted.set(self.sessions.evicted)

    async def _proxy(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        raw_path = scope.get("raw_path") or scope["path"].encode()
        anthropic_version = any(k == b"anthropic-version" for k, _ in scope["headers"])
        route = route_of(request.method, scope["path"], anthropic_version)
        if not raw_path.startswith(b"/"):  # an absolute URL in the request line: never followed
            await _send_error(send, route.api, 400, "invalid_request_error", "the request target must be a path")
            return
        url = upstream_url(self.bases[route.api], route.api, raw_path, scope.get("query_string", b""))
        rewritten, content, headers = None, None, forwarded_headers(scope["headers"])
        if route.format is not None:
            try:
                content = await request.body()
            except ClientDisconnect:  # gone before its body was in: nothing to relay
                return
            rewritten = await anyio.to_thread.run_sync(
                rewrite, route, content, request.headers.get("content-encoding"),
                request.headers.get("x-claude-code-session-id"), self.sessions)
            self._count(route, rewritten)
            if rewritten.body is not None:
                content = rewritten.body
                headers = forwarded_headers(scope["headers"], frozenset({b"content-length", b"content-encoding"}))
                headers.append((b"content-length", str(len(content)).encode()))
        elif "content-length" in request.headers or "transfer-encoding" in request.headers:
            content = request.stream()  # relayed as it comes (uploads)
        upload = content is not None and not isinstance(content, bytes)
        await self._exchange(httpx.Request(request.method, url, headers=headers, content=content), upload, receive,
                             send, route, rewritten)

    async def _exchange(self, upstream_request: httpx.Request, upload: bool, receive, send, route: Route,
                        rewritten: Rewritten | None) -> None:
        """Send the request upstream and relay its answer; a client that goes away (noticed from
        the moment its body is read: at once, or after an ``upload`` is relayed) cancels both."""
        started, gone, upstream = time.perf_counter(), [], None
        async with anyio.create_task_group() as group:
            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone.append(True)
                group.cancel_scope.cancel()
            if not upload:
                group.start_soon(watch)
            upstream = await self._send(upstream_request, send, route, rewritten)
            if upstream is not None:
                if upload:
                    group.start_soon(watch)
                await self._relay(upstream, send, route, rewritten, upstream_request.method, started)
            group.cancel_scope.cancel()
        if gone and upstream is None:
            _log(upstream_request.method, route, rewritten, 0, {}, "client disconnected before the answer",
                 time.perf_counter() - started)

    async def _send(self, upstream_request: httpx.Request, send, route: Route, rewritten: Rewritten | None
                    ) -> httpx.Response | None:
        """The upstream's answer (its headers; the body still to come), or None when it failed
        (the client then has its 502 or 504) or the client went away during its upload."""
        try:
            return await self.client.send(upstream_request, stream=True)
        except ClientDisconnect:  # the client went away during its upload
            return None
        except httpx.TimeoutException:
            await self._upstream_failed(send, route, rewritten, 504, "the upstream did not answer in time")
        except httpx.HTTPError as exc:
            await self._upstream_failed(send, route, rewritten, 502,
                                        f"the upstream is unreachable ({type(exc).__name__})")
        return None

    async def _relay(self, upstream: httpx.Response, send, route: Route, rewritten: Rewritten | None,
                     method: str, started: float) -> None:
        """The upstream's answer, chunk by chunk as it comes, until it ends (or the exchange is
        cancelled: the client went away)."""
        meter = UsageMeter(upstream.headers.get("content-type"), upstream.headers.get("content-encoding"))
        ended = "client disconnected"  # until the last chunk is sent
        try:
            await send({"type": "http.response.start", "status": upstream.status_code,
                        "headers": forwarded_headers(upstream.headers.raw)})
            async for chunk in upstream.aiter_raw():
                meter.feed(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            ended = "complete"
        except OSError:  # the client went away while a chunk was sent
            pass
        except httpx.HTTPError as exc:
            ended = f"upstream broke off ({type(exc).__name__})"
        finally:
            with anyio.CancelScope(shield=True):
                await upstream.aclose()
            usage = meter.finish()
            for kind, tokens in usage.items():
                self.metrics.usage.labels(route.name, kind).inc(tokens)
            self.metrics.responses.labels(route.name, str(upstream.status_code)).inc()
            _log(method, route, rewritten, upstream.status_code, usage, ended, time.perf_counter() - started)

    async def _upstream_failed(self, send, route: Route, rewritten: Rewritten | None, status: int, message: str
                               ) -> None:
        self.metrics.upstream_errors.labels(route.name, str(status)).inc()
        await _send_error(send, route.api, status, "api_error" if route.api == "anthropic" else "upstream_error",
                          message)
        _log("", route, rewritten, status, {}, message, 0.0)

    def _count(self, route: Route, rewritten: Rewritten) -> None:
        m = self.metrics
        if rewritten.fail_open is not None:
            outcome = "fail_open"
            m.fail_opens.labels(rewritten.fail_open).inc()
            logger.warning("fail-open (%s): %s; the request goes upstream unchanged", rewritten.fail_open,
                           rewritten.message)
        elif rewritten.untouched is not None:
            outcome = "untouched"
        else:
            outcome = "compacted" if rewritten.body is not None else "unchanged"
            m.compaction_seconds.labels(route.name).observe(rewritten.seconds)
            m.tokens_before.labels(route.name).inc(rewritten.tokens_before or 0)
            m.tokens_after.labels(route.name).inc(rewritten.tokens_after or 0)
            if rewritten.boundary_moved:
                m.boundary_moves.labels(route.name).inc()
        m.requests.labels(route.name, outcome).inc()
        self._count_sessions()


async def _send_error(send, api: str, status: int, kind: str, message: str) -> None:
    body = error_body(api, kind, message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _log(method: str, route: Route, r: Rewritten | None, status: int, usage: dict, ended: str, seconds: float) -> None:
    """The request's one INFO line: what was decided and measured, never a header value or content."""
    if not logger.isEnabledFor(logging.INFO):
        return
    parts = [f"{route.name}", f"status={status}"]
    if r is not None:
        parts += [f"session={r.session or '-'}", f"model={r.model or '-'}"]
        if r.tokens_before is not None:
            parts += [f"tokens={r.tokens_before:,}->{r.tokens_after:,}", f"changed={r.items_changed}",
                      f"boundary_moved={'yes' if r.boundary_moved else 'no'}"]
        parts.append(f"compaction_ms={r.seconds * 1000:.1f}")
        if r.untouched:
            parts.append(f"untouched={r.untouched!r}")
        if r.fail_open:
            parts.append(f"fail_open={r.fail_open}")
    if usage:
        parts.append("usage=" + ",".join(f"{k}:{v}" for k, v in sorted(usage.items())))
    if ended != "complete":
        parts.append(f"ended={ended!r}")
    parts.append(f"upstream_s={seconds:.2f}")
    logger.info("%s", " ".join(parts))

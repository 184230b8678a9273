"""What ``GET /metrics`` serves (Prometheus text, through ``prometheus_client``), and the
usage the upstream reports, read from its answers as they are relayed (streamed or not)."""

from __future__ import annotations

import json
import zlib
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics", "UsageMeter", "USAGE_KINDS"]

#: The usage fields counted, by kind: Anthropic's, Chat Completions' and Responses' names.
USAGE_KINDS = {
    "input": ("input_tokens", "prompt_tokens"),
    "output": ("output_tokens", "completion_tokens"),
    "cache_read": ("cache_read_input_tokens",),
    "cache_creation": ("cache_creation_input_tokens",),
}
_DETAILS = ("prompt_tokens_details", "input_tokens_details")  # OpenAI: {"cached_tokens": N}
_MAX_JSON = 8 * 1024 ** 2  # a non-streamed answer larger than this is relayed but not read for usage
_MAX_LINE = 1024 ** 2


class Metrics:
    """The proxy's counters, in a registry of their own (so that two proxies in one process
    keep theirs apart)."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        p = "rules_compact_serve_"
        self.requests = Counter(p + "requests", "Requests, by route and outcome (compacted, unchanged, "
                                "untouched, fail_open, passed: a route that is not compacted)",
                                ["route", "outcome"], registry=r)
        self.tokens_before = Counter(p + "estimated_tokens_before", "Estimated prompt tokens of the requests "
                                     "as the client sent them", ["route"], registry=r)
        self.tokens_after = Counter(p + "estimated_tokens_after", "Estimated prompt tokens of the requests "
                                    "as sent upstream", ["route"], registry=r)
        self.usage = Counter(p + "upstream_usage_tokens", "Tokens the upstream reported in its answers, by kind: "
                             "input, output, cache_read, cache_creation (Anthropic), cached (OpenAI)",
                             ["route", "kind"], registry=r)
        self.compaction_seconds = Histogram(p + "compaction_seconds", "Time to read, compact and write a body",
                                            ["route"], registry=r,
                                            buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10))
        self.fail_opens = Counter(p + "fail_opens", "Bodies sent uncompacted because compacting them failed, "
                                  "by reason", ["reason"], registry=r)
        self.boundary_moves = Counter(p + "boundary_moves", "Compactions whose step boundary moved "
                                      "(the cached prefix is rewritten once)", ["route"], registry=r)
        self.upstream_errors = Counter(p + "upstream_errors", "Requests the upstream did not answer "
                                       "(unreachable: 502, timed out: 504)", ["route", "status"], registry=r)
        self.responses = Counter(p + "responses", "Upstream answers relayed, by status", ["route", "status"],
                                 registry=r)
        self.sessions = Gauge(p + "sessions", "Conversations held", registry=r)
        self.sessions_evicted = Gauge(p + "sessions_evicted", "Conversations evicted so far (LRU or idle)",
                                      registry=r)
        self.reloads = Counter(p + "rule_reloads", "SIGHUP reloads, by result (ok, failed)", ["result"], registry=r)

    def text(self) -> bytes:
        return generate_latest(self.registry)


class UsageMeter:
    """Reads the ``usage`` of one answer from the bytes relayed (gzip or deflate inflated,
    other encodings skipped): every SSE ``data:`` line that holds one, or the whole JSON
    body.  A stream reports usage more than once (Anthropic: at its start and end), with
    totals so far: the largest value of each field is the answer's."""

    def __init__(self, content_type: str | None, content_encoding: str | None):
        self.stream = (content_type or "").startswith("text/event-stream")
        encoding = (content_encoding or "identity").strip().lower()
        self.inflater = zlib.decompressobj(47) if encoding in ("gzip", "x-gzip", "deflate") else None
        self.readable = encoding in ("identity", "gzip", "x-gzip", "deflate")
        self.pending = b""
        self.found: dict[str, int] = {}

    def feed(self, chunk: bytes) -> None:
        if not self.readable:
            return
        try:
            data = self.inflater.decompress(chunk) if self.inflater is not None else chunk
        except zlib.error:
            self.readable = False
            return
        if not self.stream:
            self.pending += data
            if len(self.pending) > _MAX_JSON:
                self.readable = False
            return
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()
        if len(self.pending) > _MAX_LINE:
            self.pending = b""
        for line in lines:
            if line.startswith(b"data:") and b'"usage"' in line:
                self._read(line[5:])

    def finish(self) -> dict[str, int]:
        """The usage found, by kind (``USAGE_KINDS`` and ``cached``)."""
        if self.readable and self.pending:
            self._read(self.pending[5:] if self.stream and self.pending.startswith(b"data:") else self.pending)
            self.pending = b""
        return self.found

    def _read(self, text: bytes) -> None:
        try:
            event = json.loads(text)
        except ValueError:
            return
        usage = _usage_of(event)
        if usage is None:
            return
        for kind, names in USAGE_KINDS.items():
            for name in names:
                value = usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    self.found[kind] = max(self.found.get(kind, 0), value)
        for name in _DETAILS:
            details = usage.get(name)
            value = details.get("cached_tokens") if isinstance(details, dict) else None
            if isinstance(value, int) and not isinstance(value, bool):
                self.found["cached"] = max(self.found.get("cached", 0), value)


def _usage_of(event: Any) -> dict | None:
    """The usage an answer or event carries: its own, or its ``message``'s (Anthropic's
    ``message_start``) or ``response``'s (Responses' ``response.completed``)."""
    if not isinstance(event, dict):
        return None
    for holder in (event, event.get("message"), event.get("response")):
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
            return holder["usage"]
    return None

"""The conversations the proxy has seen: one incremental Compactor each, in a bounded LRU.

A conversation is recognised by what stays the same from round to round: Claude Code's
``X-Claude-Code-Session-Id`` header where present, with the system prompt and the first user
turn (cache breakpoints left out, as they move).  The Compactor's output is a pure function
of the history, so a conversation that is evicted, or whose next round lands on another
replica, is compacted to the very same bytes, only more slowly."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..engine.report import Report
from ..integrations.sdk import RequestCompactor
from ..integrations.tracing import Compaction
from ..language.model import RuleSet
from ..testing import ValidityCheck

__all__ = ["Conversation", "Sessions", "session_key"]


def session_key(route_format: str, body: dict, header_id: str | None) -> str:
    """The conversation a request belongs to, as 16 hex digits (never the header's value)."""
    key = body.get("input" if route_format == "responses" else "messages")
    items = key if isinstance(key, list) else []
    if route_format == "anthropic":
        system = body.get("system")
    elif route_format == "responses":
        system = body.get("instructions")
    else:
        system = [m for m in items[:2] if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    first_user = next((m for m in items if isinstance(m, dict) and m.get("role") == "user"), None)
    text = json.dumps([route_format, header_id, _without_breakpoints(system), _without_breakpoints(first_user)],
                      ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _without_breakpoints(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_breakpoints(v) for v in value]
    return value


@dataclass
class Conversation:
    """One conversation: its Compactor (in a RequestCompactor, which counts the breakpoints
    outside the messages), the messages of its previous round (so that the next round's equal
    messages are handed over as the same objects, which is what lets the Compactor reuse its
    decisions; parsed from a request and never edited, so identity is all it checks), what
    the latest compaction did, and the check of its results (which looks again only at what
    changed since the previous round)."""

    key: str
    compact_request: RequestCompactor
    last_used: float
    requests: int = 0
    previous: list = field(default_factory=list)
    report: Report | None = None
    where: Compaction | None = None
    check: ValidityCheck = field(default_factory=ValidityCheck)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def noted(self, report: Report, where: Compaction) -> None:
        self.report, self.where = report, where

    def reuse(self, messages: list) -> list:
        """``messages`` with its leading run equal to the previous round's replaced by those
        very objects (a new list; the request's is untouched).  Equal as Python compares
        values: a message re-sent with ``1.0`` for ``1`` (or ``1`` for ``true``) keeps the
        previous round's (a client that re-sends its history as it sent it never does that)."""
        previous, out = self.previous, list(messages)
        for i, (old, new) in enumerate(zip(previous, messages)):
            if old is new:
                continue
            if old != new:
                break
            out[i] = old
        return out

    def summary(self, now: float) -> dict:
        report, where = self.report, self.where
        return {"session": self.key, "requests": self.requests, "idle_seconds": round(now - self.last_used, 1),
                "summary": str(where.session) if where else None,
                "tokens_before": report.tokens_before if report else None,
                "tokens_after": report.tokens_after if report else None,
                "items_changed": report.items_changed if report else None,
                "boundary_moves": where.session.boundary_moves if where else 0}


class Sessions:
    """At most ``max_sessions`` conversations, least recently used evicted first, and none
    idle for more than ``idle_seconds``."""

    def __init__(self, rules: Sequence[RuleSet], max_sessions: int, idle_seconds: float,
                 clock: Callable[[], float] = time.monotonic):
        self.rules = list(rules)
        self.max_sessions, self.idle_seconds, self.clock = max_sessions, idle_seconds, clock
        self.evicted = 0
        self._by_key: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Conversation:
        """The conversation ``key``, made when new; it becomes the most recently used."""
        now = self.clock()
        with self._lock:
            self._evict_idle(now)
            found = self._by_key.get(key)
            if found is None:
                found = Conversation(key, None, now)  # type: ignore[arg-type]
                found.compact_request = RequestCompactor(self.rules, on_compact=found.noted, integration="serve",
                                                         name="rules-compact serve", verify=False)
                self._by_key[key] = found
                while len(self._by_key) > self.max_sessions:
                    self._by_key.popitem(last=False)
                    self.evicted += 1
            else:
                self._by_key.move_to_end(key)
            found.last_used = now
            return found

    def _evict_idle(self, now: float) -> None:
        while self._by_key:
            oldest = next(iter(self._by_key.values()))
            if now - oldest.last_used <= self.idle_seconds:
                break
            self._by_key.popitem(last=False)
            self.evicted += 1

    def replace_rules(self, rules: Sequence[RuleSet]) -> None:
        """Compact with ``rules`` from now on (every conversation starts afresh)."""
        with self._lock:
            self.rules = list(rules)
            self._by_key.clear()

    def __len__(self) -> int:
        return len(self._by_key)

    def summary(self) -> list[dict]:
        now = self.clock()
        with self._lock:
            self._evict_idle(now)
            found = list(self._by_key.values())
        return [c.summary(now) for c in reversed(found)]

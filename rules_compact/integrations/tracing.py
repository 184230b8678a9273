"""What a compaction tells the host: where it ran, the conversation's running summary, the
attributes of its trace span, and the OpenTelemetry span itself (a no-op without
``opentelemetry-api``: ``pip install 'rules-compact[otel]'``)."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from ..engine.report import Report
from ..resources import bundled_name

__all__ = ["Compaction", "Session", "SPAN_NAME", "attributes", "otel_span", "tokens_text"]

SPAN_NAME = "rules_compact.compact"


def tokens_text(tokens: int) -> str:
    """``812``, ``4.2k``, ``140k``, ``1.3M``."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 10_000:
        return f"{tokens / 1000:.1f}k"
    if tokens < 1_000_000:
        return f"{tokens // 1000}k"
    return f"{tokens / 1_000_000:.1f}M"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class Session:
    """One conversation's compactions so far, for a host to show its user (``str(session)``):
    ``cleared 33 items (140k tokens) this session; 2 boundary moves``.

    When the host keeps the original history and the model gets a compacted copy (every
    integration but ``history_processor``), what is cleared is what the latest compaction
    cleared (its tokens measured when read, or when another conversation's call comes, so that
    only the latest conversation's messages are held); when the compacted history is written back, an
    item is cleared once, so the compactions' counts add up.  A boundary move is a compaction
    whose stepped rule set decided another number of leading messages than the previous one
    did (it reached its next step), which rewrites the prompt prefix a provider had cached."""

    def __init__(self, written_back: bool = False):
        self.written_back = written_back
        self.compactions = 0
        self.boundary_moves = 0
        self._boundaries: tuple = ()  # the previous compaction's PassReport.boundary per pass
        self._latest: Report | None = None  # kept only while nothing is written back
        self._items = self._tokens = 0  # what was written back, added up
        self._lock = threading.Lock()

    def add(self, report: Report) -> bool:
        """Count one compaction in; whether its step boundary moved."""
        boundaries = tuple(p.boundary for p in report.passes)
        saved = report.tokens_before - report.tokens_after if self.written_back and report.items_changed else 0
        with self._lock:
            previous = self._boundaries or (0,) * len(boundaries)
            moved = len(previous) == len(boundaries) and any(
                b is not None and b != (a or 0) for a, b in zip(previous, boundaries))
            self.compactions += 1
            self.boundary_moves += moved
            self._boundaries = boundaries
            if self.written_back:
                self._items += report.items_changed
                self._tokens += saved
            else:
                self._latest = report
        return moved

    def release(self) -> None:
        """Measure the latest compaction now and let go of it (and of the messages it holds)."""
        with self._lock:
            latest, self._latest = self._latest, None
            if latest is not None:
                self._items = latest.items_changed
                self._tokens = latest.tokens_before - latest.tokens_after if latest.items_changed else 0

    @property
    def items_cleared(self) -> int:
        latest = self._latest
        return self._items if latest is None else latest.items_changed

    @property
    def tokens_saved(self) -> int:
        latest = self._latest
        if latest is None:
            return self._tokens
        return latest.tokens_before - latest.tokens_after if latest.items_changed else 0

    def __str__(self) -> str:
        items = self.items_cleared
        cleared = (f"cleared {_plural(items, 'item')} ({tokens_text(self.tokens_saved)} tokens)"
                   if items else "nothing cleared")
        return f"{cleared} this session; {_plural(self.boundary_moves, 'boundary move')}"

    def __repr__(self) -> str:
        return f"<Session: {self}>"


@dataclass(frozen=True)
class Compaction:
    """Where one compaction ran, given to an ``on_compact(report, compaction)`` callback."""

    integration: str  # langchain, pydantic-ai, openai-agents, litellm, sdk, serve
    name: str  # the middleware's, capability's or filter's name
    thread_id: str | None  # the conversation (LangGraph thread, pydantic-ai conversation, Agents trace group)
    run_id: str | None
    boundary_moved: bool
    session: Session


def attributes(report: Report, where: Compaction) -> dict[str, Any]:
    """The span attributes of one compaction (OpenTelemetry-typed values): the rule files,
    tokens before and after, items changed in total and per rule, whether the step boundary
    moved and whether the result is over a rule file's ``over_budget_tokens``."""
    per_rule: dict[str, int] = {}
    if report.items_changed:
        for p in report.passes:
            for rule, n in p.changed_by_rule().items():
                per_rule[rule] = per_rule.get(rule, 0) + n
    out: dict[str, Any] = {
        "rules_compact.integration": where.integration,
        "rules_compact.name": where.name,
        "rules_compact.format": report.format,
        "rules_compact.rule_sets": [p.ruleset for p in report.passes],
        "rules_compact.rule_files": [bundled_name(p.source) or p.source for p in report.passes],
        "rules_compact.tokens_before": report.tokens_before,
        "rules_compact.tokens_after": report.tokens_after,
        "rules_compact.items_changed": report.items_changed,
        "rules_compact.boundary_moved": where.boundary_moved,
        "rules_compact.over_budget": report.over_budget,
        "rules_compact.session": str(where.session),
        **{f"rules_compact.changed.{rule}": n for rule, n in per_rule.items()},
    }
    if where.thread_id is not None:
        out["gen_ai.conversation.id"] = where.thread_id
    if where.run_id is not None:
        out["rules_compact.run_id"] = where.run_id
    return out


def _default_tracer():
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer("rules_compact")


@contextlib.contextmanager
def otel_span(tracer: Any = None) -> Iterator[Any]:
    """An OpenTelemetry span named ``rules_compact.compact`` around the block, from ``tracer``
    (else the global provider's); ``None`` when ``opentelemetry-api`` is not installed."""
    tracer = tracer if tracer is not None else _default_tracer()
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(SPAN_NAME) as span:
        yield span

"""What every integration shares: loading the rules once, and telling the host what was cleared."""

from __future__ import annotations

import inspect
import logging
import os
import threading
from typing import Any, Callable, Sequence, Union

from ..incremental import Compactor
from ..engine import Result, resolve_rules
from ..formats import Format
from ..language.model import RuleSet
from ..engine.report import NO_BOUNDARY, Report
from .tracing import Compaction, Session, attributes, otel_span

__all__ = ["OnCompact", "Rules", "resolve_rules", "describe", "log_report", "Hook", "Translated", "MODEL_NOTE"]

logger = logging.getLogger("rules_compact.integrations")

OnCompact = Union[Callable[[Report], None], Callable[[Report, Compaction], None]]
Rules = Union[RuleSet, str, "os.PathLike[str]", Sequence[Union[RuleSet, str, "os.PathLike[str]"]], None]



def describe(report: Report) -> str:
    """One line: what was cleared, by which rule, and the estimated tokens before and after;
    when nothing was, why each pass cleared nothing (``default: no step boundary yet: nothing
    decided``)."""
    changed = [(d.tool or d.role, d.rule, d.action, d.saved)
               for p in report.passes for d in p.decisions if d.changed]
    before, after = report.tokens_before, report.tokens_after
    head = f"rules-compact: {len(changed)} item{'s' if len(changed) != 1 else ''} changed, " \
           f"{before:,} -> {after:,} estimated tokens"
    if not changed:
        return f"{head} ({'; '.join(f'{p.ruleset}: {_why_nothing(p)}' for p in report.passes)})" \
            if report.passes else head
    by_rule: dict[tuple[str | None, str], list[str]] = {}
    for what, rule, action, _ in changed:
        by_rule.setdefault((rule, action), []).append(what)
    parts = [f"{rule} ({action}): {', '.join(sorted(set(whats)))} x{len(whats)}"
             for (rule, action), whats in by_rule.items()]
    return head + "; " + "; ".join(parts)


def _why_nothing(p) -> str:
    """Why a pass changed nothing: it did not run (``not triggered: …``), it has no step
    boundary yet, or no rule changed an item."""
    if not p.ran:
        return p.reason
    if p.boundary == 0:
        return NO_BOUNDARY
    return "no rule changed an item"


def log_report(report: Report, where: Compaction | None = None) -> None:
    """The default ``on_compact``: log :func:`describe` at INFO when something changed, with the
    integration's name, the thread and the conversation's summary so far."""
    if report.items_changed and logger.isEnabledFor(logging.INFO):
        if where is None:
            logger.info("%s", describe(report))
        else:
            thread = f" thread {where.thread_id}" if where.thread_id is not None else ""
            logger.info("%s [%s%s: %s]", describe(report), where.name, thread, where.session)


MODEL_NOTE = ("Older tool results in this conversation were replaced by short placeholders to keep the "
              "context small. The tools still work: call a tool again if you need a result that was cleared.")


def noted(system: Any, note: str) -> Any:
    """A system prompt (text, or a list of content blocks) with ``note`` after it."""
    if isinstance(system, list):
        return [*system, {"type": "text", "text": note}]
    return f"{system}\n\n{note}" if isinstance(system, str) and system else note


def _takes_where(on_compact: Callable) -> bool:
    """Whether ``on_compact`` takes ``(report, compaction)``, not only ``(report)``."""
    try:
        inspect.signature(on_compact).bind(None, None)
    except (TypeError, ValueError):  # ValueError: no signature to read (some builtins)
        return False
    return True


class Hook:
    """The rules, loaded once, and what tells the host: ``run(messages, format)`` compacts in an
    OpenTelemetry span, counts the compaction into its conversation's :class:`Session` and
    calls ``on_compact(report)`` or ``on_compact(report, compaction)``.

    A :class:`~rules_compact.Compactor` does the work, so a host that hands over the same
    message objects round after round gets the previous round's decisions reused.
    ``verify=False`` when the messages are the integration's own dicts (see Translated).
    ``note``: a line for the model (True: :data:`MODEL_NOTE`) that the integration adds to the
    system prompt of a request in which something was cleared.  ``written_back``: the host keeps
    the compacted history (see Session)."""

    def __init__(self, rules: Rules = None, on_compact: OnCompact | None = None, verify: bool = True, *,
                 integration: str = "sdk", name: str = "rules-compact", note: bool | str = False,
                 written_back: bool = False):
        self.compactor = Compactor(rules, verify=verify)
        self.rulesets = self.compactor.rulesets
        self.on_compact = on_compact if on_compact is not None else log_report
        self._with_where = _takes_where(self.on_compact)
        self.integration, self.name, self.written_back = integration, name, written_back
        self.note = MODEL_NOTE if note is True else (note or None)
        self._sessions: dict[str | None, Session] = {}
        self._current: Session | None = None  # the session of the latest call
        self._lock = threading.Lock()

    def session(self, thread_id: str | None = None) -> Session:
        """The summary of the conversation ``thread_id`` (None: calls without one)."""
        with self._lock:
            found = self._sessions.get(thread_id)
            if found is None:
                found = self._sessions[thread_id] = Session(written_back=self.written_back)
            return found

    def _switch(self, session: Session) -> None:
        """Make ``session`` the current one; the previous one lets go of its messages."""
        with self._lock:
            previous, self._current = self._current, session
        if previous is not None and previous is not session:
            previous.release()

    def run(self, messages: list, format: str | Format, breakpoints_outside: int = 0, *,
            thread_id: str | None = None, run_id: str | None = None, tracer: Any = None
            ) -> tuple[Result, Compaction]:
        """Compact ``messages``; ``breakpoints_outside``: the request's cache breakpoints outside
        them (its system prompt and tools), counted with theirs against the provider's limit;
        ``thread_id`` / ``run_id``: the conversation and run, when the framework tells them;
        ``tracer``: the OpenTelemetry tracer to use instead of the global one."""
        with otel_span(tracer) as span:
            result = self.compactor(messages, format=format, breakpoints_outside=breakpoints_outside)
            session = self.session(thread_id)
            self._switch(session)
            where = Compaction(self.integration, self.name, thread_id, run_id, session.add(result.report), session)
            if span is not None and span.is_recording():
                span.set_attributes(attributes(result.report, where))
            if self._with_where:
                self.on_compact(result.report, where)
            else:
                self.on_compact(result.report)
        return result, where

    def note_for(self, report: Report) -> str | None:
        """The line for the model when this compaction cleared something and a note is on."""
        return self.note if self.note is not None and report.items_changed else None


class Translated:
    """A framework's message objects as the dicts the rules see, and back, remembered between
    calls.

    A framework hands over the same message objects round after round: each is converted once,
    and its compacted form is rebuilt only when compaction hands back a new dict for it, so
    the Compactor's reuse carries through to the framework's objects.  A message whose
    attributes were reassigned since the previous call, or whose list attributes changed, is
    converted again (compared by identity); an edit made in place deeper down (inside a dict
    or a part) is not seen: replace the message, as LangChain's and pydantic-ai's own
    histories do."""

    def __init__(self, hook: Hook, format: str | Format, to_dict: Callable[[Any], dict],
                 from_dict: Callable[[Any, dict, dict], Any]):
        self.hook, self.format, self.to_dict, self.from_dict = hook, format, to_dict, from_dict
        self._entries: dict[int, _Entry] = {}  # by id() of the message
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence, format: str | Format | None = None, breakpoints_outside: int = 0
                 ) -> list:
        """The compacted copy of ``messages`` (in ``format``, else the Translated's): unchanged
        messages are the same objects.  ``breakpoints_outside`` as for :meth:`Hook.run`."""
        return self.compact(messages, format, breakpoints_outside)[0]

    def compact(self, messages: Sequence, format: str | Format | None = None, breakpoints_outside: int = 0,
                **where: Any) -> tuple[list, Result, Compaction]:
        """:meth:`__call__`, with the Result and the Compaction; ``where``: ``thread_id``,
        ``run_id``, ``tracer`` as for :meth:`Hook.run`."""
        with self._lock:
            return self._compact(messages, format or self.format, breakpoints_outside, where)

    def _compact(self, messages: Sequence, format: str | Format, breakpoints_outside: int, where: dict
                 ) -> tuple[list, Result, Compaction]:
        previous, entries, rows = self._entries, {}, []
        for msg in messages:
            state = _state(msg)
            entry = previous.get(id(msg))
            if entry is None or entry.message is not msg or entry.state != state:
                entry = _Entry(msg, state, self.to_dict(msg))
            entries[id(msg)] = entry
            rows.append(entry)
        self._entries = entries
        result, compaction = self.hook.run([row.before for row in rows], format, breakpoints_outside, **where)
        for row, after in zip(rows, result.messages):
            if after is not row.after:
                row.after = after
                row.output = row.message if after is row.before else self.from_dict(row.message, row.before, after)
        return [row.output for row in rows], result, compaction


class _Entry:
    """One message object: its state and dict when converted, its last compacted dict and the
    framework object made from it."""

    __slots__ = ("message", "state", "before", "after", "output")

    def __init__(self, message: Any, state: Any, before: dict):
        self.message, self.state, self.before = message, state, before
        self.after, self.output = None, message


def _state(msg: Any) -> Any:
    """What tells a message object edited since it was converted: its attribute values (a
    list's as a tuple of its items); a fresh object, never equal, when it has no ``__dict__``."""
    fields = getattr(msg, "__dict__", None)
    if fields is None:
        return object()
    return tuple(tuple(v) if type(v) is list else v for v in fields.values())

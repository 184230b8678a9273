"""Compaction inside an agent loop: reuse what the previous call decided while it still holds."""

from __future__ import annotations

import operator
import os
import threading
from dataclasses import dataclass, replace
from typing import Any, Sequence

from .engine import Pass, Result, check_messages, finish, report_details, resolve_rules, run_pass, step_boundary
from .formats import Format
from .model import RuleSet
from .view import Sizes, View

__all__ = ["Compactor"]


class Compactor:
    """``compact`` for successive versions of one conversation, as an agent loop sends them.

    Each round the history comes back with a few messages appended.  Two things carry over:
    a stepped rule set's decided prefix, which between boundaries equals the previous round's
    and is handed back without evaluating a rule; and the decisions the rules have settled
    (``RuleSet.finality``, resume.py), after which the next call starts evaluating.  The
    result is always the one ``compact(messages, rules)`` gives.

    Reuse needs the decided messages to be the very objects of the previous call and, with
    ``verify=True`` (the default), equal to copies of their dicts and lists taken then, so an
    edit made in place to an earlier message is noticed and the pass decides anew.
    ``verify=False`` checks identity only: for loops that never edit a message once sent.
    The returned messages that a rule changed are shared between calls: treat them as
    read-only, as you would the unchanged messages the output shares with your input.
    Threads may share a Compactor: its calls run one at a time.
    """

    def __init__(self, rules: RuleSet | str | os.PathLike | Sequence | None = None,
                 format: str | None = None, verify: bool = True):
        self.rulesets = resolve_rules(rules)
        self.format = format
        self.verify = verify
        self._memos: list[_Memo | None] = [None] * len(self.rulesets)
        self._lock = threading.Lock()

    def __call__(self, messages: list, format: str | Format | None = None, *, breakpoints_outside: int = 0
                 ) -> Result:
        """Compact ``messages`` (in ``format``, else the Compactor's, else detected);
        ``breakpoints_outside`` as for ``compact``."""
        name, fmt = check_messages(messages, format or self.format)
        current, passes = messages, []
        with self._lock:
            if not self.rulesets:
                fmt.check(messages)
            for index, ruleset in enumerate(self.rulesets):
                done = self._pass(index, current, ruleset, fmt, breakpoints_outside)
                current = done.messages
                passes.append(done.report)
        return finish(messages, current, name, self.rulesets, passes)

    def reset(self) -> None:
        """Forget the previous call (and release the messages it holds)."""
        with self._lock:
            self._memos = [None] * len(self.rulesets)

    def _pass(self, index: int, messages: list, ruleset: RuleSet, fmt: Format, outside: int) -> Pass:
        memo = self._memos[index]
        held = memo is not None and memo.fmt is fmt and memo.verified(messages, self.verify)
        if index == 0:  # the input: the messages a previous call checked and verified are valid
            fmt.check(messages, memo.boundary if held else 0)
        if not held:
            done = run_pass(messages, ruleset, fmt, breakpoints_outside=outside)
        else:
            sizes = memo.sizes + Sizes.of(messages[memo.boundary:], fmt, ruleset, memo.boundary)
            boundary = step_boundary(ruleset.step, sizes) if ruleset.step else len(messages)
            budget_moved = ruleset.budget.stop_at_tokens is not None and sizes.total_tokens != memo.total
            breakpoints_moved = memo.done.held is not None and memo.done.held != outside + sum(
                map(fmt.breakpoints, messages[boundary:]))
            if boundary == memo.boundary and not budget_moved and not breakpoints_moved:
                return memo.reuse(messages, sizes, ruleset)
            done = run_pass(messages, ruleset, fmt, sizes, memo.done.resume, outside)
        # Copies are taken from the second call of a conversation on (its first message is the
        # same object), so callers that build new messages on every call pay nothing for them.
        same_conversation = memo is not None and bool(messages) and memo.first is messages[0]
        kept = memo.snapshot if held and memo.snapshot is not None else []
        self._memos[index] = _Memo.of(done, messages, fmt, kept, self.verify and same_conversation)
        return done


def _copy(value):
    """A copy of the dicts and lists in ``value``; everything else is shared."""
    if isinstance(value, dict):
        return {k: v if type(v) in _ATOMS else _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _ATOMS else _copy(v) for v in value]
    return value


_ATOMS = frozenset({str, int, float, bool, type(None)})


@dataclass(frozen=True)
class _Memo:
    """A pass's decided prefix: its input messages (and a copy), its output, its report."""

    fmt: Format
    boundary: int
    inputs: list
    snapshot: list | None
    outputs: list
    sizes: Sizes  # of the inputs
    total: int  # tokens of the whole input (a stop_at_tokens budget depends on it)
    done: Pass
    first: Any  # the first message of the call (to tell a conversation's later calls)

    @classmethod
    def of(cls, done: Pass, messages: list, fmt: Format, kept: list, copy: bool) -> _Memo:
        """``kept``: copies of the leading messages, verified unchanged since they were taken;
        ``copy``: whether to copy the rest (without copies, only identity can be checked)."""
        boundary = done.boundary
        inputs = messages[:boundary]
        snapshot = kept[:boundary] + [_copy(m) for m in inputs[len(kept):]] if copy else None
        return cls(fmt, boundary, inputs, snapshot, done.messages[:boundary], done.sizes.head(boundary),
                   done.sizes.total_tokens, done, messages[0] if messages else None)

    def verified(self, messages: list, verify: bool) -> bool:
        """Whether ``messages`` starts with the messages the pass decided on, unchanged (the
        settled decisions hold only for a history that extends them)."""
        count = self.boundary
        if len(messages) < count or (verify and self.snapshot is None):
            return False
        return all(map(operator.is_, messages, self.inputs)) and (
            not verify or messages[:count] == self.snapshot)

    def reuse(self, messages: list, sizes: Sizes, ruleset: RuleSet) -> Pass:
        """The remembered pass, with the messages after the boundary appended as they are."""
        old, fmt, boundary = self.done, self.fmt, self.boundary
        added_tokens = sum(sizes.tokens[boundary:]) - sum(old.sizes.tokens[boundary:])
        added_chars = sum(sizes.chars[boundary:]) - sum(old.sizes.chars[boundary:])
        was = old.report
        details = report_details(old.decided, lambda: View(messages, fmt, ruleset, sizes)) if was.ran else None
        report = replace(was, tokens_before=was.tokens_before + added_tokens, tokens_after=was.tokens_after + added_tokens,
                         chars_before=was.chars_before + added_chars, chars_after=was.chars_after + added_chars,
                         details=details)
        return Pass(self.outputs + messages[boundary:], report, boundary, sizes, old.decided)

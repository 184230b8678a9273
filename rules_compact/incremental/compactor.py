"""Compaction inside an agent loop: reuse what the previous call decided while it still holds."""

from __future__ import annotations

import operator
import os
import threading
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, Sequence

from ..engine import Result, check_messages, collector_paused, finish, resolve_rules
from ..engine.facts import Facts
from ..engine.stepping import Walk
from ..engine.interpreter import (Decided, Input, Outside, Pass, Sizes, boundary_of, content_rules, evaluate,
                                  pay_back_walk, run_pass, skipped)
from ..engine.report import not_run, ran
from ..formats import Format, Scan
from ..formats.base import deep_copy
from ..kinds.actions import BUILTIN_ACTIONS
from ..kinds.estimators import ESTIMATORS
from ..kinds.matchers import BUILTIN_MATCHERS
from ..language.model import RuleSet
from ..lazy import quick_init
from .held import Held, Prior, change_nodes
from .settle import Settled, rule_nodes, settling_of
from .sweep import Sweep

__all__ = ["Compactor", "compacted_prefixes"]

HOLD_FROM = 32  # items a call decides from which it holds the previous call's decisions (below, that costs more)


class Compactor:
    """``compact`` for successive versions of one conversation, as an agent loop sends them.

    Each round the history comes back with a few messages appended.  Three things carry over:
    a stepped rule set's decided prefix, which between boundaries equals the previous round's
    and is handed back without evaluating a rule; the decisions the rules have settled
    (settle.py), after which the next call starts evaluating; and of the items it evaluates
    again, the decisions that still hold (held.py, from ``HOLD_FROM`` items).  The result is
    always the one ``compact(messages, rules)`` gives; ``reuse=False`` computes it afresh every
    call.

    Reuse needs the earlier messages to be the very objects of the previous call and, with
    ``verify=True`` (the default), equal to copies taken then of what the rules read of them,
    so an edit made in place to an earlier message is noticed and the pass decides anew.
    ``verify=False`` checks identity only: for loops that never edit a message once sent.
    The copies are compared with ``==``, as Python compares values, so an edit in place to a
    value that compares equal (``True`` to ``1``, ``1`` to ``1.0``) is not noticed: the
    earlier decision is kept, where ``compact()`` may decide anew.  Build a new message for
    such an edit, or call ``reset()``.  The returned messages that a rule changed are shared between calls: treat them as
    read-only, as you would the unchanged messages the output shares with your input.
    Threads may share a Compactor: its calls run one at a time.
    """

    def __init__(self, rules: RuleSet | str | os.PathLike | Sequence | None = None,
                 format: str | None = None, verify: bool = True, reuse: bool = True):
        self.rulesets = resolve_rules(rules)
        self.format = format
        self.verify = verify
        self.reuse = reuse
        self._memos: list[_Memo | None] = [None] * len(self.rulesets)
        self._known: dict[tuple, tuple] = {}
        self._prefixes: dict[int, Compactor] = {}  # per pass with a pay-back step: its prefixes' Compactor
        self._lock = threading.Lock()

    def __call__(self, messages: list, format: str | Format | None = None, *, breakpoints_outside: int = 0
                 ) -> Result:
        """Compact ``messages`` (in ``format``, else the Compactor's, else detected);
        ``breakpoints_outside`` as for ``compact``."""
        name, fmt = check_messages(messages, format or self.format)
        current, passes = messages, []
        with self._lock, collector_paused():
            first = self._memos[0]
            held = first is not None and first.fmt is fmt and first.holds(messages, self.verify)
            fmt.check(messages, first.upto if held else 0)  # the messages relied on were checked before
            for index, ruleset in enumerate(self.rulesets):
                try:
                    done = (self._pass(index, current, ruleset, fmt, breakpoints_outside, held if index == 0 else None)
                            if self.reuse else run_pass(current, ruleset, fmt, breakpoints_outside))
                except BaseException:
                    self._memos[index] = None  # a half-made memory is never used
                    raise
                current = done.messages
                passes.append(done.report)
        return finish(messages, current, name, self.rulesets, passes)

    def reset(self) -> None:
        """Forget the previous call (and release the messages it holds)."""
        with self._lock:
            self._memos = [None] * len(self.rulesets)
            self._prefixes.clear()

    def _pass(self, index: int, messages: list, ruleset: RuleSet, fmt: Format, outside: int,
              held: bool | None = None) -> Pass:
        """One pass; ``outside``: the request's breakpoints outside the messages; ``held``: whether
        the memo holds for ``messages``, when the caller knows."""
        memo = self._memos[index]
        if held is None:
            held = memo is not None and memo.fmt is fmt and memo.holds(messages, self.verify)
        given = Input(messages, fmt, ruleset, memo.sizes, memo.upto) if held else Input(messages, fmt, ruleset)
        walk = None
        if ruleset.step is not None and ruleset.step.pay_back is not None:
            walk = self._walk(index, given, ruleset, memo if held else None)
            boundary = walk.boundary
        else:
            boundary = boundary_of(ruleset, given)
        skip = skipped(ruleset, given, boundary)
        if skip:
            self._memos[index] = None if walk is None else self._remember(
                index, messages, ruleset, fmt, given, memo if held else None, walk, 0, [], None, None, None)
            return Pass(messages, not_run(ruleset, skip, given), boundary)
        if (held and memo.decided is not None and ruleset.step is not None and boundary == memo.boundary
                and (ruleset.budget.stop_at_tokens is None or sum(given.tokens()) == memo.total)
                and (memo.held is None or memo.held == outside + sum(map(fmt.breakpoints, messages[boundary:])))):
            out = memo.outputs + messages[boundary:]  # between boundaries: the decided prefix as it was
            if walk is not None:  # the walk went on: remember where
                self._memos[index] = self._remember(index, messages, ruleset, fmt, given, memo, walk, boundary,
                                                    memo.outputs, memo.decided, memo.settled, memo.held, memo.prior)
            return Pass(out, ran(ruleset, memo.decided, given, boundary, out), boundary, memo.decided)
        settling, _, nodes = self._knowledge(index, ruleset, fmt)
        settled, facts, prior = _resumed(memo if held else None, messages, boundary, fmt, ruleset, settling)
        total = lambda: sum(given.tokens())  # noqa: E731
        fresh = facts is None
        if fresh:
            facts = Facts(messages if boundary == len(messages) else messages[:boundary], fmt, ruleset)
            around = Outside(outside, fmt, messages, boundary)
        else:
            around = Outside(outside, fmt, messages, boundary, partial(settled.store.breakpoints_in, fmt))
        reuse = Held(prior, facts, nodes) if settling is not None and len(facts) >= HOLD_FROM else None
        decided = evaluate(facts, ruleset, total, around, reuse)
        if fresh:
            joined, settled = decided, Settled.empty() if settling is not None else None
        else:
            joined = Joined(settled, decided)
        if settling is not None and not decided.unapplied:
            settled = settled.extend(facts, decided, settling)
        else:
            settled = None
        prefix = joined.out
        out = prefix + messages[boundary:] if boundary < len(messages) else prefix
        done = Pass(out, ran(ruleset, joined, given, boundary, out), boundary, joined, around.held)
        prior = Prior(facts, decided, reuse, prefix) if settled is not None and reuse is not None else None
        self._memos[index] = self._remember(index, messages, ruleset, fmt, given, memo if held else None, walk,
                                            boundary, prefix, joined, settled, around.held, prior)
        return done

    def _remember(self, index: int, messages: list, ruleset: RuleSet, fmt: Format, given: Input, held: _Memo | None,
                  walk: Walk | None, boundary: int, prefix: list, decided, settled: Settled | None,
                  counted: int | None, prior: Prior | None = None) -> _Memo:
        """The memo of a call: the decisions hold for histories that extend the decided one, so
        it relies on all of that; a pay-back walk read every message (its prefixes' Compactor
        relies on them too)."""
        keep = boundary if walk is None else len(messages)
        previous = self._memos[index]  # copies are kept from a conversation's second call on
        same = previous is not None and bool(messages) and previous.first is messages[0]
        snapshot = self._knowledge(index, ruleset, fmt)[1]
        return _Memo.of(fmt, ruleset, messages, keep, given, boundary, prefix, decided, settled, counted, held,
                        snapshot if self.verify and same else None, walk, prior)

    def _walk(self, index: int, given: Input, ruleset: RuleSet, memo: _Memo | None) -> Walk:
        """The pay-back walk, resuming the previous call's (but for its last round, the end of that
        history) and compacting the prefixes with a Compactor of the content rules."""
        prefixes = self._prefixes.get(index)
        walked = memo.walk if memo is not None else None
        resume = walked.upto(walked.ends[-1] - 1) if walked is not None and walked.ends else None
        if prefixes is None or resume is None:
            prefixes = self._prefixes[index] = Compactor([content_rules(ruleset)], given.fmt.name, verify=False)
        messages, fmt = given.messages, given.fmt
        return pay_back_walk(ruleset, given, lambda b: prefixes(messages[:b], fmt).messages, resume)

    def _knowledge(self, index: int, ruleset: RuleSet, fmt: Format):
        """What settles the pass's items, and how to copy what its rules read of a message."""
        key = (index, fmt.name)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = (settling_of(ruleset, fmt),
                                        deep_copy if reads_whole_messages(ruleset) else fmt.snapshot,
                                        change_nodes(ruleset))
        return found


def _resumed(memo: _Memo | None, messages: list, boundary: int, fmt: Format, ruleset: RuleSet, settling
             ) -> tuple[Settled | None, Facts | None, Prior | None]:
    """Where a call resumes: the settled prefix of the previous call (``memo``, when it holds),
    the facts of the messages after it up to ``boundary``, and what the previous call decided
    on them; the first two None when it decides from the start.  A later message that links
    into the prefix decides anew; a repeated call reopens it from the result it repeats, or
    from an earlier call that a result after that point answers (a late result of another span)."""
    prior = memo.prior if memo is not None else None
    settled = memo.settled if memo is not None and memo.settled is not None and memo.settled.start <= boundary else None
    if settled is None or not settled.start:
        return None, None, prior
    facts = Facts(messages[settled.start:boundary], fmt, ruleset, settled.origin)
    if settled.crosses(facts):
        return None, None, None
    start = settled.reopen(facts, settling)
    while start < settled.start:
        if not start:
            return None, None, prior
        cut = settled.cut(start)
        facts = Facts(messages[start:boundary], fmt, ruleset, cut.origin)
        if not cut.crosses(facts):
            return cut, facts, prior
        start = cut.first_call_answered(facts)
        if start is None:  # a later turn repeats a call id of the prefix
            return None, None, None
    return settled, facts, prior


def compacted_prefixes(messages: list, content: RuleSet, fmt: Format, scan: Scan | None = None):
    """A pay-back walk's prefix compaction: a sweep (sweep.py) where the rule file and the
    history allow, else one Compactor over the growing prefixes, so each prefix's settled
    decisions carry over to the next (the same messages as fresh passes; ``scan``: the
    format's scan of ``messages``, if the caller has it)."""
    sweep = Sweep.of(messages, content, fmt, scan)
    if sweep is not None:
        return sweep
    compactor = Compactor([content], fmt.name, verify=False)
    return lambda b: compactor(messages[:b], fmt).messages


def reads_whole_messages(ruleset: RuleSet) -> bool:
    """Whether the rules may read more of a message than its format does: a ``where``, a plugin's
    matcher, action or estimator."""
    builtin = set(map(id, BUILTIN_MATCHERS.values())) - {id(BUILTIN_MATCHERS["where"])}
    if ruleset.estimator is not ESTIMATORS.get(ruleset.estimator_name) or ruleset.estimator.message is not None:
        return True
    if any(node.kind is not None and id(node.kind) not in builtin for node in rule_nodes(ruleset)):
        return True
    actions = set(map(id, BUILTIN_ACTIONS.values()))
    return any(action.kind is None or id(action.kind) not in actions for rule in ruleset.rules for action in rule.actions)


class Joined:
    """What the rules decided on a settled prefix and on the messages evaluated after it, as
    one Decided (built when a report reads it)."""

    gate = None
    unapplied = None
    asked = None

    def __init__(self, settled: Settled, decided: Decided):
        self.settled, self.region = settled, decided
        self.out = settled.outputs + decided.out
        self.changed = settled.changed + decided.changed

    @cached_property
    def _whole(self) -> Decided:
        settled, region = self.settled.decided(), self.region
        items, messages = self.settled.items, self.settled.start
        notes = {**settled.notes, **{items + i: n for i, n in region.notes.items()}}
        log = settled.log + [(items + i, messages + index, before) for i, index, before in region.log]
        return Decided(self.out, settled.chosen + region.chosen, notes, log)

    @property
    def chosen(self) -> list:
        return self._whole.chosen

    @property
    def notes(self) -> dict:
        return self._whole.notes

    @property
    def log(self) -> list:
        return self._whole.log

    @property
    def versions(self) -> dict:
        return self._whole.versions

    def saved(self, measure) -> tuple[int, int]:
        return self._whole.saved(measure)


@quick_init
@dataclass(frozen=True, eq=False)
class _Memo:
    """What one pass remembers of the previous call: the leading messages it relies on (and
    copies of what the rules read of them), their sizes, the decided prefix and the settled one."""

    fmt: Format
    inputs: list  # the messages [:upto] it relies on
    snapshots: list | None  # copies of them, to notice edits in place
    upto: int
    sizes: Sizes  # the previous input's sizes (not the input: that refers to the one before)
    total: int | None  # its tokens, when a stop_at_tokens budget reads them
    boundary: int
    outputs: list  # the decided prefix's output
    decided: Any  # Decided or Joined
    settled: Settled | None
    held: int | None  # when a decision read the request's breakpoints: those outside and after the boundary
    first: Any  # the first message of the call (tells a conversation's later calls)
    walk: Walk | None = None  # the pay-back walk that put the boundary
    prior: Prior | None = None  # what the call decided on the items it evaluated (held.py)

    @classmethod
    def of(cls, fmt, ruleset, messages, upto, given, boundary, outputs, decided, settled, counted, held, snapshot,
           walk=None, prior=None):
        """``held``: the previous memo, when this call extends what it relied on (its copies are
        kept); ``snapshot``: how to copy a message, None to keep no copies."""
        inputs = messages[:upto]
        snapshots = None
        if snapshot is not None:
            kept = held.snapshots if held is not None and held.snapshots is not None else []
            kept = kept[:upto]
            snapshots = kept + [snapshot(m) for m in inputs[len(kept):]]
        total = sum(given.tokens()) if ruleset.budget.stop_at_tokens is not None else None
        return cls(fmt, inputs, snapshots, upto, given.measured, total, boundary, outputs, decided, settled, counted,
                   messages[0] if messages else None, walk, prior)

    def holds(self, messages: list, verify: bool) -> bool:
        """Whether ``messages`` starts with the messages relied on, unchanged."""
        upto = self.upto
        if len(messages) < upto or (verify and self.snapshots is None and upto):
            return False
        if not all(map(operator.is_, messages, self.inputs)):  # (up to the shorter: the inputs)
            return False
        return not verify or (messages[:upto] if len(messages) > upto else messages) == self.snapshots

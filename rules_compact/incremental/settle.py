"""Settling: the decisions no appended message can change, and the settled prefix that the
next call of an agent loop resumes after.

Each matcher kind declares how its answer can change as the history grows (``History``).
From the kinds a rule file uses, ``settling_of`` works out what settles an item: every
``age`` bound once the age passes it, ``in_tail`` once false; the last item and the last
assistant turn never settle.  A later call that repeats an earlier result's call
(``superseded``) reopens the history from that result; a later message that links to an
earlier call or result makes the pass decide everything anew.  Budgets, actions that edit
messages outside the item's span, and kinds that do not say how they change settle nothing
(a span is settled whole, and a result outside a span whose call is settled reopens the pass:
``Settled.crosses``).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Iterable

from ..engine.facts import Facts, Origin, signature
from ..engine.interpreter import Decided, versions
from ..formats import Format
from ..kinds.ages import AGE_UNITS
from ..kinds.base import History, Matcher
from ..kinds.matchers.age import Age
from ..language.model import RuleSet
from ..lazy import quick_init

__all__ = ["Settling", "settling_of", "Settled", "rule_nodes"]


@dataclass(frozen=True)
class Settling:
    """What settles an item of one rule file."""

    ages: tuple[tuple[tuple, int], ...]  # ((unit, among, include_self), saturation)
    superseded: tuple  # the keys of the superseded matchers (None: the whole arguments)
    in_tail: bool

    def first_open(self, facts: Facts) -> int:
        """The first item of the facts that is not final (``len(facts)`` when none is): the
        last item, the last assistant turn, an item in the tail, an age below its bound."""
        scan = facts.scan
        first = len(scan) - 1  # the last item never settles
        if first < 0:
            return 0
        msg, last = scan.msg, scan.last_assistant
        if last is not None:  # nor does the last assistant turn
            is_turn = scan.is_turn
            for i in range(bisect_left(msg, last, hi=first), first):
                if msg[i] != last:
                    break
                if is_turn[i]:
                    first = i
                    break
        if self.in_tail:
            user_turns = scan.user_turns
            if user_turns:
                first = min(first, bisect_left(msg, user_turns[-1], hi=first))
            elif facts.origin.user_turn_before:
                return 0
        for key, saturation in self.ages:
            ages = facts.ages(*key)
            if AGE_UNITS[key[0]].at is not None:  # ages that never grow along the items: bisect
                first = bisect_left(range(first), True, key=lambda i: ages[i] < saturation)
                continue
            for i, age in enumerate(ages[:first]):
                if age < saturation:
                    first = i
                    break
        return first

    def cut(self, facts: Facts) -> int:
        """How many leading messages of the facts hold only settled items (a span is kept whole)."""
        first = self.first_open(facts)
        return facts.scan.span_start(first) if first < len(facts.scan) else len(facts.messages)


def _nodes(matcher: Matcher) -> Iterable[Matcher]:
    for node in matcher.nodes():
        yield node
        if isinstance(node.data, Age) and node.data.among is not None:
            yield from _nodes(node.data.among)


def rule_nodes(ruleset: RuleSet) -> Iterable[Matcher]:
    """Every compiled matcher of a rule file: its rules', its error_when's, the ages' among."""
    for rule in ruleset.rules:
        yield from _nodes(rule.matcher)
    if ruleset.error_when is not None:
        yield from _nodes(ruleset.error_when)


def _static(matcher: Matcher) -> bool:
    return all(node.kind is None or node.kind.history is History.ITEM for node in _nodes(matcher))


def settling_of(ruleset: RuleSet, fmt: Format) -> Settling | None:
    """What settles the rule file's items in this format, or None when nothing ever does."""
    budget = ruleset.budget
    if not fmt.resumable or (budget.min_cleared_tokens is not None or budget.stop_at_tokens is not None
                             or budget.stop_after_cleared_tokens is not None):
        return None
    if any(action.kind is None or not (action.kind.item_only or action.kind.span_only)
           for rule in ruleset.rules for action in rule.actions):
        return None
    if ruleset.error_when is not None and not _static(ruleset.error_when):
        return None
    ages: dict[tuple, int] = {}
    superseded: dict[int, object] = {}
    in_tail = False
    for rule in ruleset.rules:
        for node in _nodes(rule.matcher):
            history = node.kind.history if node.kind is not None else History.ITEM
            if history is None:
                return None
            if history is History.AGE:
                if node.data.among is not None and not _static(node.data.among):
                    return None
                ages[node.data.key] = max(node.data.saturation, ages.get(node.data.key, 0))
            elif history is History.LATER:
                superseded[id(node.data)] = node.data
            elif history is History.TAIL:
                in_tail = True
    return Settling(tuple(ages.items()), tuple(superseded.values()), in_tail)


@dataclass
class _Store:
    """The settled prefix's records, append-only so that earlier reports' slices stay true.
    Lists are per message (``outputs``) or per item; ``calls``, ``answered`` and ``latest``
    grow in place and belong to the newest prefix."""

    outputs: list = field(default_factory=list)
    chosen: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)  # item -> note
    log: list = field(default_factory=list)  # (item, message index, the message as it was)
    msg_of: list = field(default_factory=list)  # per item: its message
    first_user_turn: int | None = None  # the message index of the first user turn
    counted: int = 0  # the leading outputs whose cache breakpoints were counted (when first asked)
    breakpoints: int = 0  # the cache breakpoints those hold
    calls: dict = field(default_factory=dict)  # every call id of its turns -> the turn's message
    answered: dict = field(default_factory=dict)  # every call id its results answer -> the result's message
    latest: dict = field(default_factory=dict)  # superseded key -> {signature: message to reopen from}

    def breakpoints_in(self, fmt: Format) -> int:
        """The cache breakpoints its outputs hold (counted when an action first asks)."""
        if self.counted < len(self.outputs):
            self.breakpoints += sum(map(fmt.breakpoints, self.outputs[self.counted:]))
            self.counted = len(self.outputs)
        return self.breakpoints


@quick_init
@dataclass(frozen=True)
class Settled:
    """Messages ``[:start]`` of a pass's input are settled: what the pass made of them."""

    store: _Store
    start: int
    items: int
    logged: int  # entries of the store's log that are this prefix's
    changed: int = 0  # its items that an action changed

    @classmethod
    def empty(cls) -> Settled:
        return cls(_Store(), 0, 0, 0)

    @property
    def user_turn(self) -> bool:
        first = self.store.first_user_turn
        return first is not None and first < self.start

    @property
    def origin(self) -> Origin:
        return Origin(self.start, self.items, self.user_turn)

    @property
    def outputs(self) -> list:
        outputs = self.store.outputs
        return outputs if len(outputs) == self.start else outputs[:self.start]

    def decided(self) -> Decided:
        store = self.store
        notes = {i: n for i, n in store.notes.items() if i < self.items}
        return Decided(store.outputs[:self.start], store.chosen[:self.items], notes, store.log[:self.logged])

    def crosses(self, facts: Facts) -> bool:
        """Whether an item after the settled prefix links to a call or a result in it."""
        calls, answered, scan = self.store.calls.keys(), self.store.answered.keys(), facts.scan
        if not calls.isdisjoint(scan.call_id):  # a result's (a turn's is None)
            return True
        made = scan.call_at  # every call of the later turns
        return not calls.isdisjoint(made) or not answered.isdisjoint(made)

    def first_call_answered(self, facts: Facts) -> int | None:
        """The message of the earliest call in the prefix that a result of ``facts`` answers
        (None when none does)."""
        calls = self.store.calls
        found = calls.keys() & facts.scan.call_id
        return min(calls[cid] for cid in found) if found else None

    def reopen(self, facts: Facts, settling: Settling) -> int:
        """Where to resume so that every settled result a later call repeats is decided again."""
        start = self.start
        for key in settling.superseded:
            table = self.store.latest.get(key)
            if table:
                for i in facts.scan.turns:
                    for _, name, call in facts.turn_calls(i):
                        at = table.get(signature(name, call, key))
                        if at is not None and at < start:
                            start = at
        return start

    def cut(self, start: int) -> Settled:
        """The same prefix, settled only up to message ``start``, in a store of its own."""
        store = self.store
        # ``start`` is where a span (or an item outside one) starts: its first item is the first at or after it
        items = bisect_left(store.msg_of, start, hi=self.items)
        kept = _Store(
            store.outputs[:start], store.chosen[:items], {i: n for i, n in store.notes.items() if i < items},
            [entry for entry in store.log[:self.logged] if entry[0] < items], store.msg_of[:items],
            first if (first := store.first_user_turn) is not None and first < start else None,
            0, 0, {cid: at for cid, at in store.calls.items() if at < start},
            {cid: at for cid, at in store.answered.items() if at < start},
            {key: {sig: at for sig, at in table.items() if at < start} for key, table in store.latest.items()})
        return Settled(kept, start, items, len(kept.log), len({entry[0] for entry in kept.log}))

    def extend(self, facts: Facts, decided: Decided, settling: Settling) -> Settled:
        """This prefix followed by the leading settled messages of ``facts`` (evaluated after it)."""
        store = self.store
        if len(store.outputs) != self.start or len(store.chosen) != self.items or len(store.log) != self.logged:
            raise AssertionError("only the newest settled prefix grows")
        cut = settling.cut(facts)
        scan = facts.scan
        if decided.asked is not None:  # a decision that read the whole request's breakpoints stays open
            cut = min(cut, scan.span_start(decided.asked))
        done = bisect_left(scan.msg, cut)  # the items before the cut
        offset, items = self.start, self.items
        for key in settling.superseded:
            table = store.latest.setdefault(key, {})
            repeated = facts.superseded(key)
            for i in range(done):
                link = facts.links[i]
                if not scan.is_turn[i] and link[0] is not None and i not in repeated:
                    found = signature(link[2], link[0], key)
                    if found is not None and found not in table:
                        table[found] = offset + scan.span_start(i)
        store.outputs += decided.out[:cut]
        store.chosen += decided.chosen[:done]
        for i, note in decided.notes.items():
            if i < done:
                store.notes[items + i] = note
        logged = [(items + i, offset + index, before) for i, index, before in decided.log if i < done]
        if logged:
            store.log += logged
        store.msg_of += [offset + m for m in scan.msg[:done]]
        calls, answered = store.calls, store.answered
        for cid, (_, at, _) in scan.call_at.items():
            if at < cut and cid not in calls:
                calls[cid] = offset + at
        for cid, at in zip(scan.call_id[:done], scan.msg):
            if cid is not None and cid not in answered:  # a turn's is None, and a result's that answers no call
                answered[cid] = offset + at
        if store.first_user_turn is None and scan.user_turns and scan.user_turns[0] < cut:
            store.first_user_turn = offset + scan.user_turns[0]
        changed = self.changed + len({entry[0] for entry in logged}) if logged else self.changed
        return Settled(store, offset + cut, items + done, self.logged + len(logged), changed)


__all__ += ["versions"]

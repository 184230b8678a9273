"""Age units: how many of something are newer than an item.  One entry per unit in
``AGE_UNITS``; each computes the age of every item of a pass at once."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from operator import not_
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..engine.facts import Facts

__all__ = ["AgeUnit", "AGE_UNITS", "register_age_unit"]


@dataclass(frozen=True)
class AgeUnit:
    """``compute(facts, among, include_self)``: the age of every item.  ``among``: whether the
    unit can count only what a sub-matcher matches.  ``stable``: whether compacting the
    history leaves the ages as they are (token ages move once content shrinks).  ``at``, when
    given: ``at(facts, include_self)`` is a function giving one item's age (without ``among``),
    and ages never grow along the items, so a bound keeps a run of them (found by bisection)."""

    name: str
    compute: Callable[["Facts", object, bool], list[int]]
    description: str
    among: bool = False
    stable: bool = True
    at: Callable[["Facts", bool], Callable[[int], int]] | None = None


def _suffix_sums(values: list[int]) -> list[int]:
    """``out[i]`` is the sum of ``values[i:]``; ``out[len]`` is 0."""
    out = list(accumulate(reversed(values), initial=0))
    out.reverse()
    return out


def _suffix_after(length: int, positions) -> list[int]:
    """``out[i]`` is how many of ``positions`` are strictly greater than ``i``."""
    marks = [0] * (length + 1)
    for p in positions:
        marks[p] += 1
    after = _suffix_sums(marks)
    return after[1:length + 1]


def _by_item(weights: list[int], include_self: bool) -> list[int]:
    after = _suffix_sums(weights)
    if include_self:
        return after[:-1]
    return after[1:]


def _messages(facts: Facts, among, include_self: bool) -> list[int]:
    last = len(facts.messages) - 1 + (1 if include_self else 0)
    return [last - m for m in facts.scan.msg]


def _user_turns(facts: Facts, among, include_self: bool) -> list[int]:
    scan = facts.scan
    turns = scan.user_turns
    counted = None
    if among is not None:
        counted = facts.counted(among)
        starts = {facts.turn_start(m) for m, c in zip(scan.msg, counted) if c}
        starts.discard(None)
        turns = sorted(starts)
    per_message = _suffix_after(len(facts.messages), turns)
    ages = [per_message[m] for m in scan.msg]
    if include_self and counted is not None:
        ages = [a + 1 if c else a for a, c in zip(ages, counted)]
    return ages


def _messages_at(facts: Facts, include_self: bool) -> Callable[[int], int]:
    last, msg = len(facts.messages) - 1 + (1 if include_self else 0), facts.scan.msg
    return lambda i: last - msg[i]


def _tool_calls(facts: Facts, among, include_self: bool) -> list[int]:
    """Calls newer than the item's own call (its last one, for a turn), in call order."""
    scan = facts.scan
    order: dict[str, int] = {}  # a call id's position among all calls
    per_message = [0] * (len(facts.messages) + 1)
    seen = 0
    for i in scan.turns:
        ids = facts.call_ids[i]
        for cid in ids:
            order.setdefault(cid, seen)
            seen += 1
        per_message[scan.msg[i] + 1] += len(ids)
    through = list(accumulate(per_message))  # calls in messages up to each index
    count = through[-1]
    own = 1 if include_self else 0
    ages = []
    for i, (turn, cid) in enumerate(zip(scan.is_turn, scan.call_id)):
        if not turn and cid in order:
            ages.append(count - 1 - order[cid] + own)
        else:
            ages.append(count - through[scan.msg[i] + 1] + (own if turn and scan.calls[i] else 0))
    return ages


def _tool_results(facts: Facts, among, include_self: bool) -> list[int]:
    is_turn = facts.scan.is_turn
    if among is None:
        weights = list(map(not_, is_turn))  # True counts 1
    else:
        weights = [1 if c and not t else 0 for t, c in zip(is_turn, facts.counted(among))]
    return _by_item(weights, include_self)


def _tool_results_at(facts: Facts, include_self: bool) -> Callable[[int], int]:
    results, is_turn = facts.scan.results, facts.scan.is_turn
    count = len(results)
    if include_self:
        return lambda i: count - bisect_right(results, i) + (0 if is_turn[i] else 1)
    return lambda i: count - bisect_right(results, i)


def _tokens(facts: Facts, among, include_self: bool) -> list[int]:
    item_tokens = facts.item_tokens
    if among is not None:
        weights = [t if c else 0 for t, c in zip(item_tokens, facts.counted(among))]
        return _by_item(weights, include_self)
    msg = facts.scan.msg
    after = _suffix_sums(facts.message_tokens)
    later = [0] * len(msg)  # the tokens of the items after it in the same message
    for i in range(len(msg) - 2, -1, -1):
        if msg[i + 1] == msg[i]:
            later[i] = later[i + 1] + item_tokens[i + 1]
    return [after[m + 1] + lt + (t if include_self else 0) for m, lt, t in zip(msg, later, item_tokens)]


def _spans(facts: Facts, among, include_self: bool) -> list[int]:
    scan = facts.scan
    span_starts = scan.span_starts
    counted = facts.counted(among)
    span_counted = [False] * len(span_starts)
    for span, c in zip(scan.span, counted):
        if c and span is not None:
            span_counted[span] = True
    starts = [s for s, c in zip(span_starts, span_counted) if c]
    after = _suffix_after(len(facts.messages), starts)
    ages = []
    for span, m in zip(scan.span, scan.msg):
        if span is None:
            ages.append(after[m])
        else:
            ages.append(after[span_starts[span]] + (1 if include_self and span_counted[span] else 0))
    return ages


AGE_UNITS: dict[str, AgeUnit] = {}


def register_age_unit(unit: AgeUnit) -> None:
    AGE_UNITS[unit.name] = unit


for _unit in (
    AgeUnit("tool_results", _tool_results, "tool results after the item", among=True, at=_tool_results_at),
    AgeUnit("tool_calls", _tool_calls,
            "calls after the item's call, in call order, dangling calls included (for a turn: after its last call)"),
    AgeUnit("spans", _spans, "spans that start after the item's span (or after the item, outside a span)",
            among=True),
    AgeUnit("messages", _messages, "messages after the item's message", at=_messages_at),
    AgeUnit("user_turns", _user_turns, "user turns after the item's message (0: the item is in the protected tail)",
            among=True),
    AgeUnit("tokens", _tokens, "estimated tokens of everything after the item (later blocks of its own message "
            "included)", among=True, stable=False),
):
    register_age_unit(_unit)

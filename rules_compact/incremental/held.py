"""Held decisions: what an earlier evaluation decided on the items an evaluation decides again,
kept where nothing the rules read of them can have changed.

An item's decision depends on the answers of the rule file's matchers.  Those of
``History.ITEM`` kinds stay as they were for the same message; the others (ages against their
bounds, ``superseded``, ``in_tail``, ``at_step_boundary``) make up the item's *change key*.
An item whose key is the one the earlier evaluation found gets the rule it had.  The kinds
that settle edit nothing outside an item's span, so a span whose items all keep their rules
keeps its output messages, notes and log entries; only the items of the other spans are chosen
for and acted on.  Spans linked by a result that answers a call outside its own span are held
or decided together (``linked_groups``).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Iterable

from ..kinds.base import History, Matcher
from ..language.model import RuleSet
from .settle import rule_nodes

if TYPE_CHECKING:
    from ..engine.facts import Facts
    from ..engine.interpreter import Decided

__all__ = ["change_nodes", "linked_groups", "Held", "Prior"]

CHANGING = (History.AGE, History.LAST, History.TAIL, History.LATER)


def change_nodes(ruleset: RuleSet) -> tuple[Matcher, ...]:
    """The matchers of a rule file whose answer for an item can change as the history grows
    (an ``age`` with ``among`` counts as one: settling requires its ``among`` to be static)."""
    found: dict[int, Matcher] = {}
    for node in rule_nodes(ruleset):
        if node.kind is not None and node.kind.history in CHANGING:
            found.setdefault(id(node), node)
    return tuple(found.values())


class Prior:
    """What one evaluation decided on its facts' items: their rules and change keys, its notes
    and log (indices local to the facts, which start at ``origin``), its output messages
    (``outputs[origin.messages + m]`` for the facts' message ``m``), and its ``latest`` items
    (the last one and the last assistant turn: actions read that, ``strip-text`` keeps the
    latest turn's thinking, so they are decided again once others follow), and those whose
    rule reads the whole request."""

    __slots__ = ("origin", "chosen", "keys", "notes", "log", "outputs", "latest", "requests")

    def __init__(self, facts: Facts, decided: Decided, held: Held, outputs: list):
        self.origin, self.keys, self.outputs, self.latest = facts.origin, held.keys, outputs, _latest(facts)
        self.chosen, self.notes, self.log = decided.chosen, decided.notes, decided.log
        self.requests = held.requests  # the items whose rule reads the request: decided again every time


def _latest(facts: Facts) -> tuple[int, ...]:
    """The last item and the last assistant turn of the facts."""
    turns = facts.scan.turns
    return (len(facts) - 1, *turns[-1:]) if len(facts) else ()


KEYED = 32  # items to check from which change keys pick those to choose for


class Held:
    """One evaluation's held items.  ``open_turns`` and ``open_results`` are chosen for; of
    those, the items of spans where a rule changed are acted on (``merge``).  Every other item
    keeps its rule and output messages from ``prior`` (and, with ``records``, its notes and log
    entries).

    The items before ``check_from`` keep their rules, but for ``changed`` (items known to have
    changed otherwise) and ``again``: the latest items then and now, and those whose rule read
    the request then (their decisions are never kept).  From ``check_from`` on, when there
    are ``KEYED`` items or more, their change keys are worked out and those whose key changed
    are chosen for; fewer are all chosen for (a key costs about what a choice does there).
    ``linked``: the facts' ``linked_groups``, when the caller has them."""

    def __init__(self, prior: Prior | None, facts: Facts, nodes: tuple[Matcher, ...], check_from: int = 0,
                 changed: Iterable[int] = (), records: bool = True, linked: dict | None = None):
        self.prior, self.facts, self.records = prior, facts, records
        self.linked = linked_groups(facts) if linked is None else linked
        count = len(facts)
        offset = self.offset = 0 if prior is None else facts.origin.items - prior.origin.items
        keyed = count - check_from >= KEYED
        fresh = _keys(facts, nodes, check_from) if keyed else [None] * (count - check_from)  # None: not known
        self.keys = (_slice(prior.keys, offset, check_from) if prior is not None else [None] * check_from) + fresh
        self.again = [*_latest(facts), *(j - offset for j in (*prior.latest, *prior.requests)
                                         if 0 <= j - offset < count)] if prior else []
        self.requests: list[int] = []
        if prior is None:
            self.open = list(range(count))
        else:
            opened = {*changed, *self.again}
            if keyed:
                decided, prior_keys = len(prior.keys), prior.keys
                opened.update(i for i, key in enumerate(fresh, check_from)
                              if not 0 <= i + offset < decided or prior_keys[i + offset] != key)
            else:
                opened.update(range(check_from, count))
            self.open = sorted(opened)
        self.acting = self.open
        scan = facts.scan
        if len(self.open) == count:
            self.open_turns, self.open_results = scan.turns, scan.results
        else:
            is_turn = scan.is_turn
            self.open_turns = [i for i in self.open if is_turn[i]]
            self.open_results = [i for i in self.open if not is_turn[i]]

    def merge(self, chosen: list, todo: list, by_rule: dict) -> tuple[list, list, dict]:
        """The evaluation's rules (``chosen``'s for the open items, the prior's for the others)
        and what it acts on (as ``choose`` gives them: the items whose rule does more than keep,
        and those by rule): the items of the spans where an item has no prior rule, another
        rule, or one that reads the request, and of ``again`` (the latest items then and now,
        and those whose rule read the request then)."""
        prior = self.prior
        if prior is None:
            self.requests = [i for i in todo if chosen[i].reads_request]
            return chosen, todo, by_rule
        offset, decided = self.offset, len(prior.chosen)
        merged = _slice(prior.chosen, offset, len(chosen), None)
        seeds = list(self.again)
        for i in self.open:
            rule = chosen[i]
            if not 0 <= i + offset < decided or rule is not merged[i] or (rule is not None and rule.reads_request):
                seeds.append(i)
            merged[i] = rule
        self.acting = _spans_of(self.facts, seeds, self.linked)
        todo, by_rule = [], {}
        for i in self.acting:  # an open item's rule or, for the rest of its span, the prior's
            rule = merged[i]
            if rule is not None and not rule.keeps:
                todo.append(i)
                by_rule.setdefault(rule, []).append(i)
        self.requests = [i for i in todo if merged[i].reads_request]
        return merged, todo, by_rule

    def acting_results(self) -> list[int]:
        """The results acted on (after ``merge``): the evaluation works out their notes, the
        others' are restored from the prior."""
        scan = self.facts.scan
        if len(self.acting) == len(scan):
            return scan.results
        is_turn = scan.is_turn
        return [i for i in self.acting if not is_turn[i]]

    def outputs(self) -> list:
        """The messages an evaluation starts from: the prior's outputs of the held items, the
        input of the items acted on."""
        facts = self.facts
        if self.prior is None:
            return list(facts.messages)
        start = facts.origin.messages
        messages, outputs = facts.messages, self.prior.outputs
        out = outputs[start:start + len(messages)]
        if len(out) < len(messages):
            out += messages[len(out):]
        msg = facts.scan.msg
        for i in self.acting:
            out[msg[i]] = messages[msg[i]]
        return out

    def restore(self, log: list, notes: dict) -> None:
        """The held items' log entries and notes (with ``records``), into the evaluation's."""
        prior = self.prior
        if not self.records or prior is None or len(self.acting) == len(self.facts):
            return
        offset = self.offset
        moved = self.facts.origin.messages - prior.origin.messages  # prior's local message index - ours
        acting = set(self.acting)
        count = len(self.facts)
        log += [(item - offset, index - moved, before) for item, index, before in prior.log
                if 0 <= item - offset < count and item - offset not in acting]
        for item, note in prior.notes.items():
            if 0 <= item - offset < count and item - offset not in acting:
                notes[item - offset] = note


def _slice(values: list, offset: int, count: int, fill=()) -> list:
    """``values[offset:offset + count]``, with ``fill`` where that runs outside ``values``."""
    end = offset + count
    out = [fill] * min(max(-offset, 0), count) + (values[max(offset, 0):end] if end > 0 else [])
    return out + [fill] * (count - len(out))


def _keys(facts: Facts, nodes: tuple[Matcher, ...], start: int) -> list[tuple]:
    """Per item from ``start`` on: its answers to ``nodes`` (one shared tuple per distinct answer)."""
    items = list(range(start, len(facts)))
    if not nodes:
        return [()] * len(items)
    hits = [set(node.select(items, facts)) for node in nodes]
    shared: dict[tuple, tuple] = {}
    return [shared.setdefault(key, key) for key in zip(*([i in h for i in items] for h in hits))]


def _group(scan, item: int) -> int:
    """The item's span, or for an item outside spans its message (as ``-1 - message``)."""
    span = scan.span[item]
    return span if span is not None else -1 - scan.msg[item]


def _spans_of(facts: Facts, seeds: Iterable[int], linked: dict) -> list[int]:
    """Every item of the spans (or, outside a span, the messages) of ``seeds``, and of the
    spans ``linked`` to those, in order."""
    scan, count = facts.scan, len(facts)
    msg, starts = scan.msg, scan.span_starts
    groups = {_group(scan, i) for i in seeds}
    todo = list(groups)
    while todo:
        for other in linked.get(todo.pop(), ()):
            if other not in groups:
                groups.add(other)
                todo.append(other)
    opened: list[int] = []
    for group in groups:
        if group >= 0 and group >= len(starts):  # a span that starts past the facts' end
            continue
        first = bisect_left(msg, starts[group] if group >= 0 else -1 - group)
        while first < count and _group(scan, first) == group:
            opened.append(first)
            first += 1
    opened.sort()
    return opened


def linked_groups(facts: Facts) -> dict:
    """The spans (or messages) linked to each other by a result that answers a call outside its
    own span: the call's turn and the result decide together (the result's actions edit the
    call)."""
    scan, links = facts.scan, facts.links
    span, starts = scan.span, scan.span_starts
    linked: dict[int, set] = {}
    for i in scan.results:
        at = links[i][1]
        if at is None or (span[i] is not None and at == starts[span[i]]):
            continue
        a, b = _group(scan, bisect_left(scan.msg, at)), _group(scan, i)
        if a != b:
            linked.setdefault(a, set()).add(b)
            linked.setdefault(b, set()).add(a)
    return linked

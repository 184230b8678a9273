"""The sweep: a pay-back walk's prefix compactions, each decided from the one before.

A walk compacts the prefixes ``messages[:end]`` of one history, for growing ``end``.  Facts of
a prefix share the whole history's item columns (its scan, texts, links, sizes: an item's are
the same in every prefix that holds it), and work out what depends on where the prefix ends
(ages, the tail, the last item; ``superseded`` from where each result's call is first
repeated).  Each prefix holds the previous one's decisions (held.py) but for the items that can
have changed: those that were not final then (``Settling.first_open``), the new ones, and the
results a new call supersedes.  The outputs are those of a fresh pass on each prefix
(tests/test_sweep.py checks it on generated histories and rule files).
"""

from __future__ import annotations

from bisect import bisect_left

from ..engine.facts import Facts, signature
from ..engine.interpreter import evaluate, skipped
from ..formats import Format, Scan
from ..language.model import RuleSet
from ..lazy import lazy, once_per
from .held import Held, Prior, change_nodes, linked_groups
from .settle import settling_of

__all__ = ["Sweep"]

class PrefixFacts(Facts):
    """Facts of a history's first ``end`` messages, reading the whole history's item columns."""

    def __init__(self, sweep: Sweep, end: int):
        whole = sweep.whole
        super().__init__(whole.messages[:end], whole.fmt, whole.ruleset, scan=whole.scan.prefix(end))
        self._whole, self._sweep = whole, sweep

    def texts_of(self, items) -> list[str]:
        return self._whole.texts_of(items)

    def text(self, item: int) -> str:
        return self._whole.text(item)

    @lazy
    def texts(self) -> list[str]:
        return self._whole.texts[:len(self)]

    @lazy
    def _links(self) -> tuple[list, list]:  # every call comes before its results (Sweep.of checks)
        links, names = self._whole._links
        return links[:len(self)], names[:len(self)]

    @lazy
    def orphans(self) -> list[bool]:
        return self._whole.orphans[:len(self)]

    @lazy
    def observations(self) -> list[bool]:
        return self._whole.observations[:len(self)]

    @lazy
    def call_ids(self) -> list[tuple[str, ...]]:
        return self._whole.call_ids[:len(self)]

    @lazy
    def call_names(self) -> list[tuple[str, ...]]:
        return self._whole.call_names[:len(self)]

    @lazy
    def errors(self) -> list[bool]:  # error_when is decided by the item alone (settling requires it)
        return self._whole.errors[:len(self)]

    @lazy
    def item_tokens(self) -> list[int]:
        return self._whole.item_tokens[:len(self)]

    def _measure_all(self) -> tuple[list[int], list[int]]:
        if self._sizes is None:
            tokens, chars = self._whole._measure_all()
            end = len(self.messages)
            self._sizes = tokens[:end], chars[:end]
        return self._sizes

    def superseded(self, key) -> _Repeated:
        return _Repeated(self._sweep.repeats(key), len(self))


class _Repeated:
    """The results of a prefix whose call a later call in it repeats: those whose call is first
    repeated by a turn before the prefix's end (``at``: per item of the whole history)."""

    __slots__ = ("at", "count")

    def __init__(self, at: list, count: int):
        self.at, self.count = at, count

    def __contains__(self, item: int) -> bool:
        return self.at[item] < self.count


_KNOWN: dict = {}  # per content rule set and format: its settling and change nodes


class Sweep:
    """``sweep(end)``: the content rules' compaction of ``messages[:end]``, for growing ``end``
    (a smaller one starts afresh).  :meth:`of` gives one when the rule file and the history
    allow it, else None."""

    def __init__(self, content: RuleSet, settling, nodes: tuple, whole: Facts):
        self.content, self.settling, self.nodes, self.whole = content, settling, nodes, whole
        self.linked = linked_groups(whole)
        self._repeats: dict = {}  # superseded key -> (per item, the turn first repeating it; turn -> those items)
        self._results: list[int] | None = None
        self.prior: Prior | None = None
        self.end = self.items = self.open_from = 0  # the previous prefix: its messages, items, first open item
        self.acting = 0  # the items the latest prefix acted on (the others held what they had)

    @classmethod
    def of(cls, messages: list, content: RuleSet, fmt: Format, scan: Scan | None = None) -> Sweep | None:
        settling, nodes = once_per(_KNOWN, content, lambda: (settling_of(content, fmt), change_nodes(content)), fmt.name)
        if settling is None:
            return None
        whole = Facts(messages, fmt, content, scan=scan)
        links, msg = whole.links, whole.scan.msg
        if any(links[i][1] is not None and links[i][1] > msg[i] for i in whole.scan.results):
            return None  # a result before its call: a prefix's links are not the whole history's
        return cls(content, settling, nodes, whole)

    def __call__(self, end: int) -> list:
        if skipped(self.content, self, end):  # as a fresh pass: the prefix as it is
            return self.whole.messages[:end]
        if end < self.end:
            self.prior, self.end, self.items, self.open_from = None, 0, 0, 0
        facts = PrefixFacts(self, end)
        count = len(facts)
        changed = self._superseded_by(self.items, count) if self.prior is not None else ()
        held = Held(self.prior, facts, self.nodes, self.open_from, changed, records=False, linked=self.linked)
        decided = evaluate(facts, self.content, None, lambda: 0, held)
        self.prior = Prior(facts, decided, held, decided.out)
        self.end, self.items, self.open_from = end, count, self.settling.first_open(facts)
        self.acting = len(held.acting)
        return decided.out

    def tokens(self) -> list[int]:
        """Per message of the whole history, its tokens (what ``skipped`` sums for a trigger)."""
        return self.whole.message_tokens

    def results(self) -> list[int]:
        """Per message of the whole history, its tool results."""
        if self._results is None:
            scan = self.whole.scan
            self._results = [0] * len(self.whole.messages)
            for i in scan.results:
                self._results[scan.msg[i]] += 1
        return self._results

    def repeats(self, key) -> list[int]:
        """Per item of the whole history: for a result, the first later turn that repeats its
        call (same tool, same arguments or value at ``key``); past the end when none does."""
        return self._repeated(key)[0]

    def _repeated(self, key) -> tuple[list[int], dict[int, list[int]]]:
        found = self._repeats.get(key)
        if found is None:
            whole = self.whole
            scan, links, count = whole.scan, whole.links, len(whole)
            at, by_turn = [count + 1] * count, {}
            first: dict = {}  # signature -> the earliest turn after the item being read that calls it
            for i in range(count - 1, -1, -1):
                if scan.is_turn[i]:
                    for _, name, call in (scan.calls[i] if whole.fmt.own_calls else whole.turn_calls(i)):
                        called = signature(name, call, key)
                        if called is not None:
                            first[called] = i
                elif links[i][0] is not None:
                    call, _, name = links[i]
                    turn = first.get(signature(name, call, key))
                    if turn is not None:
                        at[i] = turn
                        by_turn.setdefault(turn, []).append(i)
            found = self._repeats[key] = at, by_turn
        return found

    def _superseded_by(self, start: int, end: int) -> list[int]:
        """The results that the turns among items ``[start:end]`` are the first to repeat."""
        turns = self.whole.scan.turns
        new = turns[bisect_left(turns, start):bisect_left(turns, end)]
        out: list[int] = []
        for key in self.settling.superseded:
            by_turn = self._repeated(key)[1]
            for turn in new:
                out += by_turn.get(turn, ())
        return out

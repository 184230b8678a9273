"""Where a stepped pass puts its boundary: how many leading messages the rules decide on.

Without ``pay_back`` the boundary is the latest step boundary.  With it the boundary moves to
the latest step boundary only once the move has paid for itself (a ski-rental rule): walking
the history's rounds (its assistant turns, and its end) from the first, each round where the
latest step boundary lies beyond the current one compares the two prompts of that round:

* ``saving``: the tokens the move takes off the prompt;
* ``extra``: what the move costs more than staying, in cached-token prices: the tokens of the
  previous prompt that the move makes the provider write anew (its cache breaks at the first
  message that changes), at ``price_ratio - 1`` each, less ``price_ratio`` times the saving.

A move with no extra cost is made at once, one that saves nothing never; otherwise the round's
saving is added to the rent, and the boundary moves once the rent reaches ``factor`` times the
extra cost (then the rent starts again from 0).  The prompts are the content rules' compaction
of the prefix before each boundary (the rule file without its step, run on that prefix alone)
followed by the rest as it is, so the boundary is a pure function of the history.  The walk
compacts one prefix per step boundary it meets (``growth`` keeps a long history's few), and
the rest of a round costs a few additions.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate, compress, count
from operator import is_not
from typing import Callable, Iterable, Sequence

from ..formats import Format
from ..language.model import Step

__all__ = ["step_boundary", "Walk", "walk_pay_back"]


def step_boundary(step: Step, results_per_message: Callable[[], list[int]],
                  tokens_per_message: Callable[[], list[int]], count: int) -> int:
    """The latest step boundary of the history's first ``count`` messages.

    A pure function of that history, so between boundaries the decided prefix, and with it the
    prompt prefix a provider caches, stays byte-identical."""
    if step.unit == "messages":
        return _reached(step, count)
    per = results_per_message() if step.unit == "tool_results" else tokens_per_message()
    return _boundary_in(step, list(accumulate(per[:count])), count)


def _reached(step: Step, units: int) -> int:
    """The units up to the latest step boundary of a history of ``units`` units."""
    if not step.growth:
        return units // step.every * step.every
    found = _GROWN.setdefault((step.every, step.growth), [0])
    while found[-1] <= units:  # the next gap: every units, or growth x the units so far if more
        found.append(found[-1] + max(step.every, int(found[-1] * step.growth)))
    return found[bisect_right(found, units) - 1]


_GROWN: dict[tuple[int, float], list[int]] = {}  # (every, growth) -> the boundaries' units so far


def _boundary_in(step: Step, through: Sequence[int], count: int) -> int:
    """The latest step boundary of the first ``count`` messages, from ``through``: the units in
    the messages up to each index (tool results or tokens)."""
    limit = _reached(step, through[count - 1] if count else 0)
    if step.unit == "tool_results":  # just after the message holding the limit-th result
        return bisect_right(through, limit - 1, 0, count) + 1 if limit else 0
    return bisect_right(through, limit, 0, count)


@dataclass(frozen=True)
class Walk:
    """The pay-back walk after some rounds: per round (its prompt end), the boundary and rent
    after it; and the content rules' compaction of the prefix before the last boundary with
    its tokens before each message (``through[i]``: of ``decided[:i]``)."""

    ends: tuple[int, ...]
    boundaries: tuple[int, ...]
    rents: tuple[float, ...]
    decided: list | None  # None: to be compacted again
    through: list | None
    candidate: _Candidate | None = None  # the latest step boundary beyond the last boundary, when one was met

    @property
    def boundary(self) -> int:
        return self.boundaries[-1] if self.boundaries else 0

    def upto(self, end: int) -> Walk | None:
        """The walk's first rounds, those ending at or before ``end`` (None when there are none);
        ``decided`` and the candidate hold only if the boundary is unchanged (else they are
        compacted again); a candidate met in a later round is kept, as the history it was
        compacted from is the same (a resumed walk meets it again at the history's old end)."""
        kept = bisect_right(self.ends, end)
        if kept == len(self.ends):
            return self
        if not kept:
            return None
        same = self.boundaries[kept - 1] == self.boundary
        candidate = self.candidate if same else None  # a pure function of the messages before it, as ``decided``
        return Walk(self.ends[:kept], self.boundaries[:kept], self.rents[:kept],
                    self.decided if same else None, self.through if same else None, candidate)


@dataclass
class _Candidate:
    """The latest step boundary beyond the current one: its prefix's compaction and its tokens,
    and where that compaction first differs from the current prompt."""

    boundary: int
    decided: list
    total: int
    first: int


def walk_pay_back(step: Step, messages: list, fmt: Format, tokens: Sequence[int], results: Sequence[int],
                  prefix_of: Callable[[int], list], size_of: Callable[[object], int],
                  resume: Walk | None = None) -> Walk:
    """The pay-back walk over every round of ``messages`` (``tokens`` and ``results``: per
    message), resuming after the rounds of ``resume`` (which must hold for these messages);
    ``prefix_of(b)``: the content rules' compaction of ``messages[:b]``; ``size_of``: the
    tokens of a compacted message."""
    ratio, factor = step.pay_back.price_ratio, step.pay_back.factor
    raw = _totals(accumulate(tokens, initial=0))
    through_units = None if step.unit == "messages" else \
        _totals(accumulate(results if step.unit == "tool_results" else tokens))

    def latest(count: int) -> int:
        return _reached(step, count) if through_units is None else _boundary_in(step, through_units, count)

    sizes = _Sizes(messages, tokens, size_of)

    ends, boundaries, rents = (list(resume.ends), list(resume.boundaries), list(resume.rents)) if resume \
        else ([], [], [])
    j = resume.boundary if resume else 0
    rent = rents[-1] if rents else 0.0
    decided = resume.decided if resume else []
    if decided is None:
        decided = prefix_of(j)
    through = resume.through if resume and resume.through is not None else sizes.through(decided)
    previous = ends[-1] if ends else None
    candidate = resume.candidate if resume else None
    starts = fmt.response_starts(messages)
    for end in [*starts[bisect_right(starts, previous) if previous is not None else 0:], len(messages)]:
        if previous is not None and end <= previous:
            continue
        target = latest(end)
        if target > j:
            if candidate is None or candidate.boundary != target:
                moved = prefix_of(target)
                candidate = _Candidate(target, moved, sizes.total(moved),
                                       _first_change(decided, moved, messages, j, target))
            saving = through[-1] + raw[target] - raw[j] - candidate.total
            if saving > 0:
                extra = _extra_cost(ratio, saving, previous, candidate.first, j, through, raw)
                go = extra <= 0
                if not go:
                    rent += saving
                    go = rent >= factor * extra
                if go:
                    j, rent, decided, through = target, 0.0, candidate.decided, sizes.through(candidate.decided)
                    candidate = None
        ends.append(end)
        boundaries.append(j)
        rents.append(rent)
        previous = end
    return Walk(tuple(ends), tuple(boundaries), tuple(rents), decided, through, candidate)


class _Sizes:
    """Tokens of compacted messages: a message as it was has its measured tokens, a changed one
    is estimated once (the walk's prefixes share their settled messages)."""

    def __init__(self, messages: list, tokens: Sequence[int], size_of: Callable[[object], int]):
        self.messages, self.tokens, self.size_of = messages, tokens, size_of
        self.known: dict[int, tuple[object, int]] = {}  # id -> (compacted message, its tokens)
        self.last: tuple[list, int] = ([], 0)  # the latest compaction totalled, and its total

    def of(self, i: int, m) -> int:
        if m is self.messages[i]:
            return self.tokens[i]
        found = self.known.get(id(m))
        if found is None or found[0] is not m:
            found = self.known[id(m)] = (m, self.size_of(m))
        return found[1]

    def through(self, compacted: list) -> Sequence[int]:
        """The tokens of ``compacted[:i]`` for every i."""
        return _totals(accumulate((self.of(i, m) for i, m in enumerate(compacted)), initial=0))

    def total(self, compacted: list) -> int:
        """The tokens of ``compacted``: the latest total, corrected where the two differ (found in
        a C loop: the walk's prefixes share most of their messages)."""
        last, total = self.last
        of = self.of
        for i in compress(count(), map(is_not, last, compacted)):
            total += of(i, compacted[i]) - of(i, last[i])
        shared = min(len(last), len(compacted))
        total += sum(of(i, compacted[i]) for i in range(shared, len(compacted)))
        total -= sum(of(i, last[i]) for i in range(shared, len(last)))
        self.last = compacted, total
        return total


def _totals(values: Iterable[int]) -> Sequence[int]:
    """Running totals as 8-byte integers (a list of Python ints takes 36 bytes an entry, and a
    long history's walk holds several); a list when a total is not such an integer."""
    totals = list(values)
    try:
        return array("q", totals)
    except (TypeError, OverflowError):  # a plugin's estimator may give floats
        return totals


def _extra_cost(ratio: float, saving: int, previous: int | None, first: int, boundary: int, through: list,
                raw: list) -> float:
    """What moving costs more than staying, in cached-token prices: the previous round's prompt
    from the move's first change on, written anew at ``ratio - 1`` a token, less ``ratio`` x the
    saving (before the first round nothing is cached, so a move only saves)."""
    if previous is None:
        return -ratio * saving
    first = min(first, previous)
    here = through[-1]
    held = here + raw[previous] - raw[boundary]  # the previous prompt, all cached when staying
    kept = through[first] if first <= boundary else here + raw[first] - raw[boundary]
    return (ratio - 1) * (held - kept) - ratio * saving


def _first_change(decided: list, moved: list, messages: list, boundary: int, limit: int) -> int:
    """The first position before ``limit`` where ``decided + messages[boundary:]`` and ``moved``
    differ (``limit`` when they agree before it)."""
    first = _first_difference(decided, moved, 0, min(boundary, limit))
    return first if first < min(boundary, limit) else _first_difference(messages, moved, first, limit)


def _first_difference(a: list, b: list, start: int, limit: int) -> int:
    """The first index in ``[start, limit)`` where ``a`` and ``b`` hold unequal messages
    (``limit`` when none): found by identity, then checked by value, in C loops."""
    while start < limit:
        start = next(compress(count(start), map(is_not, a[start:limit], b[start:limit])), limit)
        if start == limit or a[start] != b[start]:
            return start
        start += 1
    return limit

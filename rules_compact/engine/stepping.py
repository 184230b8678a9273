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
followed by the rest as it is, so the boundary is a pure function of the history.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Callable, Sequence

from ..formats import Format
from ..language.model import RuleSet, Step

__all__ = ["step_boundary", "Walk", "walk_pay_back"]


def step_boundary(step: Step, results_per_message: Callable[[], list[int]],
                  tokens_per_message: Callable[[], list[int]], count: int) -> int:
    """The latest step boundary: the history up to the latest multiple of ``every`` units.

    A pure function of that history, so between boundaries the decided prefix, and with it the
    prompt prefix a provider caches, stays byte-identical."""
    if step.unit == "messages":
        return count // step.every * step.every
    if step.unit == "tool_results":
        through = list(accumulate(results_per_message()[:count]))  # results in messages up to each index
        reached = (through[-1] if through else 0) // step.every * step.every
        return bisect_right(through, reached - 1) + 1 if reached else 0
    cumulative = list(accumulate(tokens_per_message()[:count]))
    limit = (cumulative[-1] if cumulative else 0) // step.every * step.every
    return bisect_right(cumulative, limit)


@dataclass(frozen=True)
class Walk:
    """The pay-back walk after some rounds: per round (its prompt end), the boundary and rent
    after it; and the content rules' compaction of the prefix before the last boundary."""

    ends: tuple[int, ...]
    boundaries: tuple[int, ...]
    rents: tuple[float, ...]
    decided: list  # the compacted messages before boundaries[-1] ([] before the first round)
    sizes: list  # their tokens

    @property
    def boundary(self) -> int:
        return self.boundaries[-1] if self.boundaries else 0

    def upto(self, end: int) -> Walk | None:
        """The walk's first rounds, those ending at or before ``end`` (None when there are none);
        ``decided`` holds only if the boundary is unchanged (else it is recomputed)."""
        kept = bisect_right(self.ends, end)
        if kept == len(self.ends):
            return self
        if not kept:
            return None
        boundary = self.boundaries[kept - 1]
        same = boundary == self.boundary
        return Walk(self.ends[:kept], self.boundaries[:kept], self.rents[:kept],
                    self.decided if same else None, self.sizes if same else None)


def walk_pay_back(step: Step, ruleset: RuleSet, messages: list, fmt: Format, tokens: Sequence[int],
                  results: Sequence[int], prefix_of: Callable[[int], list], resume: Walk | None = None) -> Walk:
    """The pay-back walk over every round of ``messages`` (``tokens`` and ``results``: per message),
    resuming after the rounds of ``resume`` (which must hold for these messages);
    ``prefix_of(b)``: the content rules' compaction of ``messages[:b]``."""
    pay_back = step.pay_back
    ratio, factor = pay_back.price_ratio, pay_back.factor
    n = len(messages)
    raw = [0, *accumulate(tokens)]
    estimate, pieces_of = ruleset.estimator, fmt.message_pieces

    def measure(compacted: list) -> list[int]:
        return [tokens[i] if m is messages[i] else estimate.of_message(m, pieces_of(m)) for i, m in enumerate(compacted)]

    ends = fmt.response_starts(messages) + [n]
    done_ends, boundaries, rents = (list(resume.ends), list(resume.boundaries), list(resume.rents)) if resume \
        else ([], [], [])
    j = resume.boundary if resume else 0
    rent = rents[-1] if rents else 0.0
    decided = resume.decided if resume else []
    if decided is None:
        decided = prefix_of(j) if j else []
    sizes = (resume.sizes if resume and resume.sizes is not None else measure(decided))
    previous = done_ends[-1] if done_ends else None
    latest_seen: tuple[int, list, list] | None = None
    for end in ends[bisect_right(ends, previous) if previous is not None else 0:]:
        latest = step_boundary(step, lambda: results, lambda: tokens, end)
        if latest > j:
            if latest_seen is None or latest_seen[0] != latest:
                moved = prefix_of(latest)
                latest_seen = (latest, moved, measure(moved))
            _, moved, moved_sizes = latest_seen
            here = sum(sizes)
            saving = here + raw[latest] - raw[j] - sum(moved_sizes)
            if saving > 0:
                if previous is None:
                    extra = -ratio * saving
                else:
                    first = _first_change(decided, moved, messages, j, min(previous, latest))
                    held = here + raw[previous] - raw[j]  # the previous prompt, all cached when staying
                    kept = (sum(sizes[:first]) if first <= j else here + raw[first] - raw[j])
                    extra = (ratio - 1) * (held - kept) - ratio * saving
                go = extra <= 0
                if not go:
                    rent += saving
                    go = rent >= factor * extra
                if go:
                    j, rent, decided, sizes = latest, 0.0, moved, moved_sizes
        done_ends.append(end)
        boundaries.append(j)
        rents.append(rent)
        previous = end
    return Walk(tuple(done_ends), tuple(boundaries), tuple(rents), decided, sizes)


def _first_change(decided: list, moved: list, messages: list, boundary: int, limit: int) -> int:
    """The first position before ``limit`` where ``decided + messages[boundary:]`` and ``moved``
    differ (``limit`` when they agree before it)."""
    for i in range(limit):
        a = decided[i] if i < boundary else messages[i]
        b = moved[i]
        if a is not b and a != b:
            return i
    return limit


"""What a compaction decided: per item, per pass, and in total."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Callable

from ..lazy import quick_init

__all__ = ["Decision", "PassReport", "Report"]


@dataclass(frozen=True, slots=True)
class Decision:
    """The rule that decided one item, and what its actions did.

    ``chars`` counts a result's text, or a turn's text and reasoning (``reasoning`` of them);
    ``chars_after`` and ``reasoning_after`` the same after the actions.  ``ages``: the item's
    age in each unit the rule file's ``age`` matchers count (counting every item)."""

    item: int
    message: int
    block: int | None
    role: str
    tool: str | None
    tool_call_id: str | None
    chars: int
    tokens_before: int
    tokens_after: int
    age: int  # tool results newer than this item
    rule: str | None
    source: str | None
    action: str
    changed: bool
    error: bool = False
    orphan: bool = False
    note: str | None = None
    reasoning: int = 0
    chars_after: int = 0
    reasoning_after: int = 0
    ages: dict[str, int] = field(default_factory=dict)

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict:
        """JSON-ready form: every field, and ``saved``."""
        return {**asdict(self), "saved": self.saved}


Details = tuple[tuple[Decision, ...], tuple[int, ...], tuple[str, ...]]


Totals = tuple[int, int, int, int]  # tokens before, tokens after, chars before, chars after


@quick_init
@dataclass(frozen=True)
class PassReport:
    """One rule file's pass over the conversation.

    The totals and ``decisions``, ``orphans`` and ``dangling`` are computed on first access:
    an agent loop that only uses the messages does not pay for measuring them."""

    ruleset: str
    source: str
    ran: bool
    reason: str
    changed: int = 0  # items whose message an action changed
    gate: str | None = None
    unapplied: str | None = None  # why a pass that ran changed nothing it decided (a failed minimum gate)
    over_budget_tokens: int | None = None
    idempotent: bool = True
    boundary: int | None = None  # with a step: how many leading messages the rules decided on
    totals: Callable[[], Totals] = field(default=lambda: (0, 0, 0, 0), repr=False, compare=False)
    details: Callable[[], Details] | None = field(default=None, repr=False, compare=False)
    by_rule: Callable[[], dict[str, int]] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def _totals(self) -> Totals:
        return self.totals()

    @property
    def tokens_before(self) -> int:
        return self._totals[0]

    @property
    def tokens_after(self) -> int:
        return self._totals[1]

    @property
    def chars_before(self) -> int:
        return self._totals[2]

    @property
    def chars_after(self) -> int:
        return self._totals[3]

    @cached_property
    def _details(self) -> Details:
        return self.details() if self.details is not None else ((), (), ())

    @property
    def decisions(self) -> tuple[Decision, ...]:
        return self._details[0]

    @property
    def orphans(self) -> tuple[int, ...]:
        """Item indices of results that answer no call."""
        return self._details[1]

    @property
    def dangling(self) -> tuple[str, ...]:
        """Ids of calls that no result answers."""
        return self._details[2]

    @property
    def over_budget(self) -> bool:
        return self.over_budget_tokens is not None and self.tokens_after > self.over_budget_tokens

    def changed_by_rule(self) -> dict[str, int]:
        """How many items each rule's actions changed (cheaper than reading ``decisions``)."""
        if self.by_rule is not None:
            return self.by_rule()
        out: dict[str, int] = {}
        for d in self.decisions:
            if d.changed and d.rule:
                out[d.rule] = out.get(d.rule, 0) + 1
        return out

    def saved_by_rule(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.decisions:
            if d.changed and d.rule:
                out[d.rule] = out.get(d.rule, 0) + d.saved
        return out

    def to_dict(self) -> dict:
        return {"ruleset": self.ruleset, "source": self.source, "ran": self.ran, "reason": self.reason,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "chars_before": self.chars_before, "chars_after": self.chars_after,
                **{f.name: getattr(self, f.name) for f in fields(self)
                   if f.name not in ("ruleset", "source", "ran", "reason", "totals", "details", "by_rule")},
                "orphans": list(self.orphans), "dangling": list(self.dangling),
                "over_budget": self.over_budget, "saved_by_rule": self.saved_by_rule(),
                "decisions": [d.to_dict() for d in self.decisions]}


@quick_init
@dataclass(frozen=True)
class Report:
    """Every pass, with totals across them."""

    format: str
    passes: tuple[PassReport, ...] = field(default_factory=tuple)
    checks: Callable[[], tuple[tuple[str, int, int], ...]] = field(default=tuple, repr=False, compare=False)

    @cached_property
    def budget_checks(self) -> tuple[tuple[str, int, int], ...]:
        """``(rule set, final tokens, threshold)`` for every rule file with ``over_budget_tokens``."""
        return self.checks()

    @property
    def items_changed(self) -> int:
        return sum(p.changed for p in self.passes)

    @property
    def tokens_before(self) -> int:
        return self.passes[0].tokens_before if self.passes else 0

    @property
    def tokens_after(self) -> int:
        return self.passes[-1].tokens_after if self.passes else 0

    @property
    def chars_before(self) -> int:
        return self.passes[0].chars_before if self.passes else 0

    @property
    def chars_after(self) -> int:
        return self.passes[-1].chars_after if self.passes else 0

    @property
    def over_budget(self) -> bool:
        """Whether the final output is over any rule file's ``over_budget_tokens``."""
        return any(tokens > limit for _, tokens, limit in self.budget_checks)

    def to_dict(self) -> dict:
        """JSON-ready form, as written by ``apply --report``."""
        return {
            "format": self.format,
            "items_changed": self.items_changed,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
            "over_budget": self.over_budget,
            "budget_checks": [{"ruleset": n, "tokens": t, "over_budget_tokens": lim}
                              for n, t, lim in self.budget_checks],
            "passes": [p.to_dict() for p in self.passes],
        }

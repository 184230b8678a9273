"""What a compaction decided: per item, per pass, and in total."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable

from ..formats import Format
from ..kinds.base import History
from ..kinds.ages import AGE_UNITS
from ..language.model import Rule, RuleSet
from ..lazy import once_per, quick_init
from .facts import Facts

if TYPE_CHECKING:
    from .interpreter import Decided, Input

__all__ = ["Decision", "PassReport", "Report", "ran", "not_run", "decisions", "age_units", "AFTER_BOUNDARY", "NO_BOUNDARY"]


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


# -- a pass's report, from what it decided ---------------------------------------------------

AFTER_BOUNDARY = "after the step boundary: left as it is"
NO_BOUNDARY = "no step boundary yet: nothing decided"

_BASES: dict = {}  # per rule file: its report fields


def _base(ruleset: RuleSet) -> dict:
    """The report fields that come from the rule file alone (worked out once per rule file)."""
    return once_per(_BASES, ruleset, lambda: dict(
        ruleset=ruleset.name, source=ruleset.source, over_budget_tokens=ruleset.over_budget_tokens,
        idempotent=ruleset.idempotent))


def not_run(ruleset: RuleSet, why: str, given: Input) -> PassReport:
    def totals():
        tokens, chars = given.measure()
        return sum(tokens), sum(tokens), sum(chars), sum(chars)

    return PassReport(ran=False, reason=why, totals=totals, boundary=0 if ruleset.step else None, **_base(ruleset))


def ran(ruleset: RuleSet, decided: Decided, given: Input, boundary: int, out: list) -> PassReport:
    """The report of a pass that ran: its totals and records are worked out when read, from the
    input, the output and what was decided on the messages before the boundary."""
    messages, fmt = given.messages, given.fmt

    def totals():
        tokens, chars = given.measure()
        before_tokens, before_chars = sum(tokens), sum(chars)
        if decided.unapplied:
            return before_tokens, before_tokens, before_chars, before_chars
        saved_tokens, saved_chars = decided.saved(_measurer(fmt, ruleset))
        return before_tokens, before_tokens - saved_tokens, before_chars, before_chars - saved_chars

    def details():
        facts = Facts(messages[:boundary], fmt, ruleset)
        whole = facts if boundary == len(messages) else Facts(messages, fmt, ruleset)
        made = decisions(facts, decided, ruleset)
        units = age_units(ruleset)
        after = tuple(_decision(whole, i, None, 0, False, AFTER_BOUNDARY, units) for i in range(len(made), len(whole)))
        answered = whole.answered
        dangling = tuple(cid for i in whole.turns if whole.dangling[i]
                         for cid in whole.call_ids[i] if cid not in answered)
        return made + after, tuple(i for i in whole.results if whole.orphans[i]), dangling

    def by_rule():
        out: dict[str, int] = {}
        if not decided.unapplied:
            chosen = decided.chosen
            for item in sorted({entry[0] for entry in decided.log}):
                if chosen[item] is not None:
                    out[chosen[item].name] = out.get(chosen[item].name, 0) + 1
        return out

    return PassReport(ran=True, reason=_reason(ruleset, boundary), changed=decided.changed, gate=decided.gate,
                      unapplied=decided.unapplied, boundary=boundary if ruleset.step else None, totals=totals,
                      details=details, by_rule=by_rule, **_base(ruleset))


def _measurer(fmt: Format, ruleset: RuleSet):
    estimate, pieces_of = ruleset.estimator, fmt.message_pieces

    def measure(msg) -> tuple[int, int]:
        pieces = list(pieces_of(msg))
        return estimate.of_message(msg, pieces), sum(map(len, pieces))

    return measure


def decisions(facts: Facts, decided: Decided, ruleset: RuleSet) -> tuple[Decision, ...]:
    """A Decision per item of ``facts``, from what was decided on them."""
    measure = _measurer(facts.fmt, ruleset)
    units = age_units(ruleset)
    made = []
    for i, rule in enumerate(decided.chosen):
        changes = decided.versions.get(i, ())
        saved = sum(measure(old)[0] - measure(new)[0] for _, old, new in changes)
        after = None if decided.unapplied else next((new for at, _, new in changes if at == facts.scan.msg[i]), None)
        decision = _decision(facts, i, rule, saved, bool(changes), decided.notes.get(i), units, after)
        if decided.unapplied and decision.changed:
            decision = replace(decision, changed=False, tokens_after=decision.tokens_before, note=decided.unapplied)
        made.append(decision)
    return tuple(made)


def age_units(ruleset: RuleSet) -> tuple[str, ...]:
    """The units the rule file's age matchers count, in ``AGE_UNITS`` order."""
    matchers = [rule.matcher for rule in ruleset.rules] + ([ruleset.error_when] if ruleset.error_when else [])
    used = {node.data.key[0] for m in matchers for node in m.nodes()
            if node.kind is not None and node.kind.history is History.AGE}
    return tuple(unit for unit in AGE_UNITS if unit in used)


def _decision(facts: Facts, i: int, rule: Rule | None, saved: int, changed: bool, note: str | None,
              units: tuple[str, ...] = (), after: Any = None) -> Decision:
    """``after``: the item's message after the actions, when they replaced it."""
    scan, fmt = facts.scan, facts.fmt
    before = facts.item_tokens[i]
    turn = scan.is_turn[i]
    text = len(facts.texts[i])
    if turn:
        reasoning = len(fmt.reasoning_text(facts.messages[scan.msg[i]]))
        text_after, reasoning_after = ((text, reasoning) if after is None
                                       else (len(fmt.assistant_text(after)), len(fmt.reasoning_text(after))))
    else:
        reasoning = reasoning_after = 0
        text_after = text if after is None else len(fmt.result_text(after, scan.block[i]))
    return Decision(
        item=i, message=scan.msg[i], block=scan.block[i], role="assistant" if turn else "tool",
        tool=",".join(facts.call_names[i]) or None if turn else facts.tool_names[i],
        tool_call_id=scan.call_id[i], chars=text + reasoning, tokens_before=before, tokens_after=before - saved,
        age=facts.ages("tool_results", None, False)[i], rule=rule.name if rule else None,
        source=rule.source if rule else None, action=rule.action_names if rule else "none",
        changed=changed, error=facts.errors[i], orphan=facts.orphans[i], note=note, reasoning=reasoning,
        chars_after=text_after + reasoning_after, reasoning_after=reasoning_after,
        ages={unit: facts.ages(unit, None, False)[i] for unit in units})


def _reason(ruleset: RuleSet, boundary: int) -> str:
    step = ruleset.step
    if step is None:
        return ruleset.trigger.describe()
    where = f"rules decide messages 0-{boundary - 1}" if boundary else NO_BOUNDARY
    how = ", moved once paid back" if step.pay_back else ""
    return f"{ruleset.trigger.describe()}; step every {step.every} {step.unit}{how}: {where}"

"""What rule sets do to whole conversations: per-conversation stats and decision diffs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .engine import compact
from .formats import FORMATS
from .language.model import RuleSet
from .engine.report import Report

__all__ = ["ConversationStats", "conversation_stats", "DecisionChange", "decision_changes"]


@dataclass(frozen=True)
class ConversationStats:
    name: str
    messages: int
    tool_results: int
    report: Report

    @property
    def saved_by_rule(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.report.passes:
            for rule, saved in p.saved_by_rule().items():
                out[rule] = out.get(rule, 0) + saved
        return out


def conversation_stats(name: str, messages: list, rulesets: Sequence[RuleSet], fmt: str | None) -> ConversationStats:
    result = compact(messages, list(rulesets), format=fmt)
    items = FORMATS[result.report.format].items(messages)
    return ConversationStats(name, len(messages), sum(1 for it in items if it.kind == "tool_result"),
                             result.report)


@dataclass(frozen=True)
class DecisionChange:
    """An item whose outcome differs between two rule sets.  ``old`` and ``new`` are each side's
    ``rule: action`` as displayed; ``old_rule`` / ``old_action`` / ``old_changed`` and the
    ``new_`` ones the same as fields (rule and action None where no rule decided the item;
    ``changed``: its content changes); ``reason``: why a side leaves the item as it is, when it
    says (``not triggered: 44,174 tokens ≤ 100,000``, ``after the step boundary: left as it is``)."""

    item: int
    message: int
    role: str
    tool: str | None
    old: str
    new: str
    old_rule: str | None = None
    old_action: str | None = None
    new_rule: str | None = None
    new_action: str | None = None
    old_changed: bool = False
    new_changed: bool = False
    reason: str | None = None


def _label(decision, why: str | None) -> str:
    if decision is None or decision.rule is None:
        return f"unchanged ({why})" if why else "unchanged (no rule)"
    action = decision.action if decision.changed or decision.action == "keep" else f"{decision.action}, no change"
    return f"{decision.rule}: {action}"


def _why(decision, not_run: str | None) -> str | None:
    """Why a side leaves an item as it is: its pass did not run, or the decision's note."""
    if decision is None:
        return not_run
    return None if decision.changed else decision.note


def _fields(decision) -> tuple[str | None, str | None]:
    """The rule that decided an item and its action, or None twice."""
    if decision is None or decision.rule is None:
        return None, None
    return decision.rule, decision.action


def _outcome(decision) -> tuple[bool, str | None]:
    """What happened to the item: left as it was, or changed by which action."""
    changed = decision is not None and decision.changed
    return changed, decision.action if changed else None


def decision_changes(old: Report, new: Report) -> list[DecisionChange]:
    """Items whose outcome differs (kept vs changed, or another action), comparing the last
    pass of each report that ran."""
    def last(report: Report) -> tuple[dict, str | None]:
        ran = [p for p in report.passes if p.ran]
        if ran:
            return {d.item: d for d in ran[-1].decisions}, None
        return {}, "; ".join(p.reason for p in report.passes) or None

    (before, old_why), (after, new_why) = last(old), last(new)
    changes = []
    for index in sorted(set(before) | set(after)):
        a, b = before.get(index), after.get(index)
        if _outcome(a) != _outcome(b):
            ref = a or b
            why_a, why_b = _why(a, old_why), _why(b, new_why)
            changes.append(DecisionChange(
                index, ref.message, ref.role, ref.tool, _label(a, why_a), _label(b, why_b),
                *_fields(a), *_fields(b), _outcome(a)[0], _outcome(b)[0], why_a or why_b))
    return changes

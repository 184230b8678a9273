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
    """An item whose deciding rule or action differs between two rule sets."""

    item: int
    message: int
    role: str
    tool: str | None
    old: str
    new: str


def _label(decision) -> str:
    if decision is None or decision.rule is None:
        return "unchanged (no rule)" if decision is None or not decision.note else f"unchanged ({decision.note})"
    action = decision.action if decision.changed or decision.action == "keep" else f"{decision.action}, no change"
    return f"{decision.rule}: {action}"


def _outcome(decision) -> tuple[bool, str | None]:
    """What happened to the item: left as it was, or changed by which action."""
    changed = decision is not None and decision.changed
    return changed, decision.action if changed else None


def decision_changes(old: Report, new: Report) -> list[DecisionChange]:
    """Items whose outcome differs (kept vs changed, or another action), comparing the last
    pass of each report that ran."""
    def last(report: Report) -> dict:
        ran = [p for p in report.passes if p.ran]
        return {d.item: d for d in ran[-1].decisions} if ran else {}

    before, after = last(old), last(new)
    changes = []
    for index in sorted(set(before) | set(after)):
        a, b = before.get(index), after.get(index)
        if _outcome(a) != _outcome(b):
            ref = a or b
            changes.append(DecisionChange(index, ref.message, ref.role, ref.tool, _label(a), _label(b)))
    return changes

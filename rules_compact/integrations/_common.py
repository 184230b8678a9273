"""What every integration shares: loading the rules once, and telling the host what was cleared."""

from __future__ import annotations

import logging
import os
from typing import Callable, Sequence, Union

from ..compactor import Compactor
from ..engine import Result, resolve_rules
from ..model import RuleSet
from ..report import Report

__all__ = ["OnCompact", "Rules", "resolve_rules", "describe", "log_report", "Hook"]

logger = logging.getLogger("rules_compact.integrations")

OnCompact = Callable[[Report], None]
Rules = Union[RuleSet, str, "os.PathLike[str]", Sequence[Union[RuleSet, str, "os.PathLike[str]"]], None]



def describe(report: Report) -> str:
    """One line: what was cleared, by which rule, and the estimated tokens before and after."""
    changed = [(d.tool or d.role, d.rule, d.action, d.saved)
               for p in report.passes for d in p.decisions if d.changed]
    before, after = report.tokens_before, report.tokens_after
    head = f"rules-compact: {len(changed)} item{'s' if len(changed) != 1 else ''} changed, " \
           f"{before:,} -> {after:,} estimated tokens"
    if not changed:
        return head
    by_rule: dict[tuple[str | None, str], list[str]] = {}
    for what, rule, action, _ in changed:
        by_rule.setdefault((rule, action), []).append(what)
    parts = [f"{rule} ({action}): {', '.join(sorted(set(whats)))} x{len(whats)}"
             for (rule, action), whats in by_rule.items()]
    return head + "; " + "; ".join(parts)


def log_report(report: Report) -> None:
    """The default ``on_compact``: log :func:`describe` at INFO when something changed."""
    if report.items_changed and logger.isEnabledFor(logging.INFO):
        logger.info("%s", describe(report))


class Hook:
    """The rules, loaded once, and the callback: ``run(messages, format)`` compacts and notifies.

    A :class:`~rules_compact.Compactor` does the work, so a host that hands over the same
    message objects round after round gets the previous round's decisions reused."""

    def __init__(self, rules: Rules = None, on_compact: OnCompact | None = None):
        self.compactor = Compactor(rules)
        self.rulesets = self.compactor.rulesets
        self.on_compact = on_compact if on_compact is not None else log_report

    def run(self, messages: list, format: str) -> Result:
        result = self.compactor(messages, format=format)
        self.on_compact(result.report)
        return result

"""The engine: ``compact`` runs rule files as successive passes over a message list."""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import InputError, type_name
from ..formats import FORMATS, Format, Item, detect_format
from ..lazy import quick_init
from ..language.loader import load_rules
from ..language.model import RuleSet
from .interpreter import Pass, run_pass
from .report import PassReport, Report

__all__ = ["compact", "Result", "resolve_rules", "check_messages", "finish", "iter_items", "run_pass", "Pass",
           "collector_paused"]


@quick_init
@dataclass(frozen=True)
class Result:
    """The compacted messages (a new list; unchanged messages are shared) and the report."""

    messages: list
    report: Report

    @property
    def over_budget(self) -> bool:
        return self.report.over_budget


RULES_ARGUMENT = "a RuleSet, a path, 'default', 'preset:NAME', rule-file text or a list of those"


def resolve_rules(rules) -> list[RuleSet]:
    """RuleSets from a RuleSet, a path or name, a list of those, or None (the bundled default)."""
    if rules is None:
        return [load_rules("default")]
    if isinstance(rules, (RuleSet, str, os.PathLike)):
        rules = [rules]
    elif not isinstance(rules, Sequence) or isinstance(rules, (bytes, bytearray)):
        raise InputError(f"rules must be {RULES_ARGUMENT}, or None for the default; got {type_name(rules)}")
    out = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, (RuleSet, str, os.PathLike)):
            raise InputError(f"rules[{i}] must be a RuleSet, a path, 'default', 'preset:NAME' or rule-file text; "
                             f"got {type_name(rule)}")
        out.append(rule if isinstance(rule, RuleSet) else load_rules(rule))
    return out


def compact(messages: list, rules: RuleSet | str | os.PathLike | Sequence | None = None,
            format: str | Format | None = None, *, breakpoints_outside: int = 0) -> Result:
    """Apply one rule set, or several as successive passes, to a message list.

    The input is never mutated.  ``rules`` may be a RuleSet, a path or ``preset:NAME``,
    or a list of those; None means the bundled default rules.  ``breakpoints_outside``: the
    cache breakpoints the request holds outside ``messages`` (in its system prompt and tools,
    see ``count_breakpoints``), which the ``cache-breakpoint`` action counts with the messages'
    own.  Messages a model API would reject for their shape raise InputError.
    """
    name, fmt = check_messages(messages, format)
    rulesets = resolve_rules(rules)
    current, passes = messages, []
    with collector_paused():
        scan = fmt.checked_scan(messages)
        for ruleset in rulesets:
            done = run_pass(current, ruleset, fmt, breakpoints_outside, scan if current is messages else None)
            current = done.messages
            passes.append(done.report)
    return finish(messages, current, name, rulesets, passes)


class collector_paused:
    """Pause Python's cyclic garbage collector during the scan and the passes.  A pass makes many small
    containers and no reference cycles; with a long history alive, the collections that those
    allocations trigger would walk it again and again (10 times the messages took 15 times
    as long).  (A class, not a generator: entered on every call.)"""

    __slots__ = ("paused",)

    def __enter__(self) -> None:
        self.paused = gc.isenabled()
        if self.paused:
            gc.disable()

    def __exit__(self, *exc) -> None:
        if self.paused:
            gc.enable()


def check_messages(messages: list, format: str | Format | None) -> tuple[str, Format]:
    """The format's name and object (``format`` may be a Format); InputError for a non-list or
    an unknown format."""
    if not isinstance(messages, list):
        raise InputError(f"messages must be a list, got {type(messages).__name__}")
    if isinstance(format, Format):
        return format.name, format
    name = format or detect_format(messages)
    fmt = FORMATS.get(name)
    if fmt is None:
        raise InputError(f"unknown format {name!r}; allowed: {', '.join(FORMATS)}")
    return name, fmt


def finish(messages: list, current: list, format_name: str, rulesets: Sequence[RuleSet],
           passes: list[PassReport]) -> Result:
    """The Result of successive passes: a new list, and the final budget checks (measured
    when read)."""
    fmt = FORMATS[format_name]
    if current is messages:
        current = list(messages)
    out = current

    def checks():
        return tuple((r.name, passes[-1].tokens_after if r is rulesets[-1] else _tokens(fmt, out, r),
                      r.over_budget_tokens) for r in rulesets if r.over_budget_tokens is not None)

    return Result(current, Report(format_name, tuple(passes), checks))


def _tokens(fmt: Format, messages: list, ruleset: RuleSet) -> int:
    estimate = ruleset.estimator
    return sum(estimate.of_message(m, fmt.message_pieces(m)) for m in messages)


def iter_items(messages: list, format: str | None = None) -> Iterable[Item]:
    """The items rules decide on, for tools that inspect conversations."""
    return FORMATS[format or detect_format(messages)].items(messages)

"""The interpreter: run each rule file's chain over a message list, copy-on-write."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from .errors import InputError
from .formats import FORMATS, Format, Item, detect_format, parts_text
from .model import RuleSet, Step
from .report import Decision, PassReport, Report
from .view import View

__all__ = ["compact", "Result", "resolve_rules"]


@dataclass(frozen=True)
class Result:
    """The compacted messages (a new list; unchanged messages are shared) and the report."""

    messages: list
    report: Report

    @property
    def over_budget(self) -> bool:
        return self.report.over_budget


class _Editor:
    """Copy-on-write view of the output; records which messages an action touched."""

    def __init__(self, messages: list, view: View):
        self.out = list(messages)
        self.view = view
        self.touched: set[int] = set()

    def message(self, index: int) -> dict:
        return self.out[index]

    def replace(self, index: int, message: dict) -> None:
        if message is not self.out[index]:
            self.out[index] = message
            self.touched.add(index)

    def result_text(self, item: Item) -> str:
        return parts_text(self.view.fmt.result_content(self.out[item.msg_index], item))

    def set_result_text(self, item: Item, text: str, as_string: bool = False) -> None:
        message = self.view.fmt.set_result_content(self.out[item.msg_index], item, text, as_string)
        self.replace(item.msg_index, message)


def _first_rule(ruleset: RuleSet, item: Item, view: View):
    error = view.is_error(item)
    for rule in ruleset.rules:
        if error and not rule.matches_errors:
            continue
        if rule.matcher(item, view):
            return rule
    return None


def step_boundary(view: View, step: Step) -> int:
    """How many leading messages the rules decide on: the history up to the latest boundary.

    A pure function of that history, so between boundaries the decided prefix, and with it the
    prompt prefix a provider caches, stays byte-identical."""
    if step.unit == "messages":
        return len(view.messages) // step.every * step.every
    if step.unit == "tool_results":
        results = [it for it in view.items if it.kind == "tool_result"]
        reached = len(results) // step.every * step.every
        return results[reached - 1].msg_index + 1 if reached else 0
    limit = view.total_tokens // step.every * step.every
    running = 0
    for i, tokens in enumerate(view.message_tokens):
        running += tokens
        if running > limit:
            return i
    return len(view.messages)


def run_pass(messages: list, ruleset: RuleSet, fmt: Format) -> tuple[list, PassReport]:
    """One rule file over ``messages``: the new list and what was decided."""
    full = View(messages, fmt, ruleset)
    boundary = step_boundary(full, ruleset.step) if ruleset.step else len(messages)
    tokens = full.total_tokens  # measured once; a stepped prefix reuses the sizes
    view = full if boundary == len(messages) else full.prefix(boundary)
    chars = sum(full.message_chars)
    base = dict(ruleset=ruleset.name, source=ruleset.source, tokens_before=tokens, chars_before=chars,
                over_budget_tokens=ruleset.over_budget_tokens, idempotent=ruleset.idempotent)
    if not ruleset.enabled:
        return messages, PassReport(ran=False, reason="disabled", tokens_after=tokens, chars_after=chars, **base)
    trigger = ruleset.trigger
    decided_tokens = view.total_tokens
    if trigger.tokens_over is not None and not decided_tokens > trigger.tokens_over:
        return messages, PassReport(
            ran=False, reason=f"not triggered: {decided_tokens} tokens <= {trigger.tokens_over}",
            tokens_after=tokens, chars_after=chars, **base)
    results = view.tool_results
    if trigger.tool_results_over is not None and not results > trigger.tool_results_over:
        return messages, PassReport(
            ran=False, reason=f"not triggered: {results} tool results <= {trigger.tool_results_over}",
            tokens_after=tokens, chars_after=chars, **base)

    budget = ruleset.budget
    editor = _Editor(messages, view)
    message_tokens, message_chars = list(full.message_tokens), list(full.message_chars)
    total, cleared, removed, chars_after = tokens, 0, 0, chars
    decisions: list[Decision] = []
    for item in view.items:
        rule = _first_rule(ruleset, item, view)
        error = view.is_error(item)
        note = "error result: only rules that match is_error: true apply" if error and rule is None else None
        saved, touched = 0, set()
        if rule is not None and rule.action_names != "keep":
            if ((budget.stop_at_tokens is not None and total <= budget.stop_at_tokens)
                    or (budget.stop_after_cleared_tokens is not None
                        and cleared >= budget.stop_after_cleared_tokens)):
                note = "budget reached: left as it is"
            else:
                editor.touched = touched
                note = "; ".join(n for n in (a.apply(item, editor) for a in rule.actions) if n) or None
                for index in touched:
                    new_tokens, new_chars = view.measure(editor.out[index])
                    saved += message_tokens[index] - new_tokens
                    chars_after -= message_chars[index] - new_chars
                    message_tokens[index], message_chars[index] = new_tokens, new_chars
                total -= saved
                cleared += saved
                if touched:
                    removed += max(saved, view.item_tokens(item)) if item.kind == "tool_result" else saved
        decisions.append(_decision(item, view, rule, saved, bool(touched), error, note))
    for item in full.items[len(view.items):]:
        decisions.append(_decision(item, full, None, 0, False, full.is_error(item),
                                   "after the step boundary: left as it is"))

    out, gate = editor.out, None
    if budget.min_cleared_tokens is not None:
        measured = removed if budget.min_cleared_counts == "removed" else cleared
        gate = "passed" if measured >= budget.min_cleared_tokens else "failed"
        if gate == "failed":
            out, total, chars_after = messages, tokens, chars
            why = (f"minimum gate: would clear {measured} < {budget.min_cleared_tokens} tokens"
                   + (" (removed content)" if budget.min_cleared_counts == "removed" else ""))
            decisions = [_unapplied(d, why) if d.changed else d for d in decisions]
    answered = {it.tool_call_id for it in full.items if it.kind == "tool_result"}
    dangling = tuple(cid for it in full.items if it.dangling for cid in it.call_ids if cid not in answered)
    reason = trigger.describe() + (f"; step every {ruleset.step.every} {ruleset.step.unit}: rules decide "
                                   f"messages 0-{boundary - 1}" if ruleset.step else "")
    return out, PassReport(
        ran=True, reason=reason, tokens_after=total, chars_after=chars_after, decisions=tuple(decisions), gate=gate,
        orphans=tuple(it.index for it in full.items if it.orphan), dangling=dangling, **base)


def _decision(item: Item, view: View, rule, saved: int, changed: bool, error: bool, note: str | None) -> Decision:
    before = view.item_tokens(item)
    return Decision(
        item=item.index, message=item.msg_index, block=item.block_index, role=item.role,
        tool=item.tool_name if item.kind == "tool_result" else ",".join(item.call_names) or None,
        tool_call_id=item.tool_call_id, chars=len(item.text), tokens_before=before, tokens_after=before - saved,
        age=view.age(item, "tool_results", None, False), rule=rule.name if rule else None,
        source=rule.source if rule else None, action=rule.action_names if rule else "none",
        changed=changed, error=error, orphan=item.orphan, note=note)


def _unapplied(decision: Decision, why: str) -> Decision:
    return replace(decision, changed=False, tokens_after=decision.tokens_before, note=why)


def resolve_rules(rules) -> list[RuleSet]:
    """RuleSets from a RuleSet, a path or name, a list of those, or None (the bundled default)."""
    from .loader import load_rules

    if rules is None:
        return [load_rules("default")]
    if isinstance(rules, RuleSet):
        return [rules]
    if isinstance(rules, (str, os.PathLike)):
        return [load_rules(rules)]
    return [r if isinstance(r, RuleSet) else load_rules(r) for r in rules]


def compact(messages: list, rules: RuleSet | str | os.PathLike | Sequence | None = None,
            format: str | None = None) -> Result:
    """Apply one rule set, or several as successive passes, to a message list.

    The input is never mutated.  ``rules`` may be a RuleSet, a path or ``preset:NAME``,
    or a list of those; None means the bundled default rules.
    """
    if not isinstance(messages, list):
        raise InputError(f"messages must be a list, got {type(messages).__name__}")
    name = format or detect_format(messages)
    fmt = FORMATS.get(name)
    if fmt is None:
        raise InputError(f"unknown format {name!r}; allowed: {', '.join(FORMATS)}")
    passes = []
    current = messages
    rulesets = resolve_rules(rules)
    for ruleset in rulesets:
        current, report = run_pass(current, ruleset, fmt)
        passes.append(report)
    if current is messages:
        current = list(messages)
    checks = tuple((r.name, passes[-1].tokens_after if r is rulesets[-1] else _tokens(fmt, current, r),
                    r.over_budget_tokens) for r in rulesets if r.over_budget_tokens is not None)
    return Result(current, Report(name, tuple(passes), checks))


def _tokens(fmt: Format, messages: list, ruleset: RuleSet) -> int:
    estimate = ruleset.estimator
    return sum(estimate.of_message(m, fmt.message_pieces(m)) for m in messages)


def iter_items(messages: list, format: str | None = None) -> Iterable[Item]:
    """The items rules decide on, for tools that inspect conversations."""
    return FORMATS[format or detect_format(messages)].scan(messages).items

"""The interpreter: run each rule file's chain over a message list, copy-on-write."""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from functools import cache
from itertools import accumulate
from typing import Callable, Iterable, Sequence

from .errors import InputError, type_name
from .formats import FORMATS, Format, Item, detect_format, parts_text
from .model import RuleSet, Step
from .report import Decision, PassReport, Report
from .resume import Resume, crosses, follow, superseding_start
from .view import Sizes, View

__all__ = ["compact", "Result", "resolve_rules", "run_pass", "step_boundary", "Sizes"]


@dataclass(frozen=True)
class Result:
    """The compacted messages (a new list; unchanged messages are shared) and the report."""

    messages: list
    report: Report

    @property
    def over_budget(self) -> bool:
        return self.report.over_budget


class _Editor:
    """Copy-on-write view of the output; records which messages an action touched, and whether
    an action asked how many cache breakpoints the request holds."""

    def __init__(self, messages: list, view: View, around: Callable[[], int]):
        self.out = list(messages)
        self.view = view
        self.touched: set[int] = set()
        self.asked = False
        self._around = around  # the breakpoints outside ``out``: outside the messages, and before and after the view
        self._held: int | None = None  # once asked: the request's breakpoints, kept up to date

    def message(self, index: int) -> dict:
        return self.out[index]

    def replace(self, index: int, message: dict) -> None:
        if message is not self.out[index]:
            if self._held is not None:
                count = self.view.fmt.breakpoints
                self._held += count(message) - count(self.out[index])
            self.out[index] = message
            self.touched.add(index)

    def breakpoints(self) -> int:
        self.asked = True
        if self._held is None:
            self._held = self._around() + sum(map(self.view.fmt.breakpoints, self.out))
        return self._held

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


def step_boundary(step: Step, sizes: Sizes) -> int:
    """How many leading messages the rules decide on: the history up to the latest boundary.

    A pure function of that history, so between boundaries the decided prefix, and with it the
    prompt prefix a provider caches, stays byte-identical."""
    if step.unit == "messages":
        return len(sizes.tokens) // step.every * step.every
    if step.unit == "tool_results":
        reached = len(sizes.results) // step.every * step.every
        return sizes.results[reached - 1] + 1 if reached else 0
    limit = sum(sizes.tokens) // step.every * step.every
    return bisect_right(list(accumulate(sizes.tokens)), limit)


@dataclass(frozen=True)
class Pass:
    """One pass's output and report, and what a later call needs to reuse its decisions."""

    messages: list
    report: PassReport
    boundary: int  # messages the rules decided on
    sizes: Sizes  # of the input
    decided: Callable[[], tuple[Decision, ...]]  # the decisions on the decided prefix (memoised)
    resume: Resume | None = None  # for the same messages with more appended
    held: int | None = None  # when an action asked: the breakpoints outside and after the boundary then


def run_pass(messages: list, ruleset: RuleSet, fmt: Format, sizes: Sizes | None = None,
             resume: Resume | None = None, breakpoints_outside: int = 0) -> Pass:
    """One rule file over ``messages``: the new list and what was decided.

    With ``resume`` (from a pass of the same rule set over a shorter version of ``messages``
    that ``messages`` extends), the rules are evaluated only after ``resume.start``.
    ``breakpoints_outside``: the cache breakpoints the request holds outside the messages."""
    sizes = sizes or Sizes.of(messages, fmt, ruleset)
    boundary = step_boundary(ruleset.step, sizes) if ruleset.step else len(messages)
    tokens, chars = sizes.total_tokens, sizes.total_chars
    base = dict(ruleset=ruleset.name, source=ruleset.source, tokens_before=tokens, chars_before=chars,
                over_budget_tokens=ruleset.over_budget_tokens, idempotent=ruleset.idempotent)
    trigger = ruleset.trigger
    decided_tokens = tokens if boundary == len(messages) else sum(sizes.tokens[:boundary])
    decided_results = bisect_left(sizes.results, boundary)
    skip = ("disabled" if not ruleset.enabled
            else f"not triggered: {decided_tokens} tokens <= {trigger.tokens_over}"
            if trigger.tokens_over is not None and not decided_tokens > trigger.tokens_over
            else f"not triggered: {decided_results} tool results <= {trigger.tool_results_over}"
            if trigger.tool_results_over is not None and not decided_results > trigger.tool_results_over
            else None)
    if skip:
        report = PassReport(ran=False, reason=skip, tokens_after=tokens, chars_after=chars, **base)
        return Pass(messages, report, boundary, sizes, lambda: ())

    full = View(messages, fmt, ruleset, sizes)
    if resume is not None and resume.start <= boundary and resume.start:
        resume = resume.owned()
        view = _region(messages, ruleset, fmt, sizes, boundary, resume)
        if crosses(view, resume):
            return run_pass(messages, ruleset, fmt, sizes, breakpoints_outside=breakpoints_outside)
        start = superseding_start(view, resume, ruleset.finality)
        if start < resume.start:
            resume = resume.cut(start, sizes) if start else None
            view = _region(messages, ruleset, fmt, sizes, boundary, resume)
    else:
        resume = None
        view = full if boundary == len(messages) else _region(messages, ruleset, fmt, sizes, boundary, None)
    start = view.offset
    budget = ruleset.budget
    held: int | None = None

    def around() -> int:
        nonlocal held
        held = breakpoints_outside + sum(map(fmt.breakpoints, messages[boundary:]))
        return held + (sum(map(fmt.breakpoints, resume.outputs)) if start else 0)

    editor = _Editor(view.messages, view, around)
    open_from: int | None = None  # the first item whose decision read the breakpoint count
    message_tokens = sizes.tokens[start:boundary]  # after the actions so far
    message_chars = sizes.chars[start:boundary]
    total = tokens - (resume.saved_tokens if start else 0)
    chars_after = chars - (resume.saved_chars if start else 0)
    cleared = removed = 0
    items_before = len(resume.records) if start else 0  # items before the view
    records: list[tuple] = []  # per item of the view; Decisions are made on demand
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
                editor.touched, editor.asked = touched, False
                note = "; ".join(n for n in (a.apply(item, editor) for a in rule.actions) if n) or None
                if editor.asked and open_from is None:
                    open_from = len(records)
                for index in touched:
                    new_tokens, new_chars = view.measure(editor.out[index])
                    saved += message_tokens[index] - new_tokens
                    chars_after -= message_chars[index] - new_chars
                    message_tokens[index], message_chars[index] = new_tokens, new_chars
                total -= saved
                cleared += saved
                if touched:
                    removed += max(saved, view.item_tokens(item)) if item.kind == "tool_result" else saved
        records.append((rule, saved, bool(touched), error, note))

    out = (resume.outputs + editor.out if start else editor.out) + messages[boundary:]
    gate = unapplied = None
    if budget.min_cleared_tokens is not None:
        measured = removed if budget.min_cleared_counts == "removed" else cleared
        gate = "passed" if measured >= budget.min_cleared_tokens else "failed"
        if gate == "failed":
            out, total, chars_after = messages, tokens, chars
            unapplied = (f"minimum gate: would clear {measured} < {budget.min_cleared_tokens} tokens"
                         + (" (removed content)" if budget.min_cleared_counts == "removed" else ""))

    @cache
    def decided() -> tuple[Decision, ...]:
        decided_view = view if not start else full if boundary == len(messages) else _region(
            messages, ruleset, fmt, sizes, boundary, None)
        every = resume.records[:items_before] + records if start else records
        made = (_decision(decided_view, item, *record) for item, record in zip(decided_view.items, every))
        return tuple(_unapplied(d, unapplied) if d.changed else d for d in made) if unapplied else tuple(made)

    changed = 0 if unapplied else (resume.changed if start else 0) + sum(1 for r in records if r[2])
    report = PassReport(ran=True, reason=_reason(ruleset, boundary), tokens_after=total, chars_after=chars_after,
                        changed=changed, gate=gate, details=report_details(decided, full), **base)
    settled = None
    if ruleset.finality is not None and fmt.resumable and not unapplied:
        settled = follow(view, ruleset.finality, resume if start else None, editor.out, records,
                         message_tokens, message_chars, open_from)
    return Pass(out, report, boundary, sizes, decided, settled, held)


def _region(messages: list, ruleset: RuleSet, fmt: Format, sizes: Sizes, boundary: int,
            resume: Resume | None) -> View:
    """The view of the messages the pass evaluates: after the resume point, up to the boundary."""
    start = resume.start if resume else 0
    return View(messages[start:boundary], fmt, ruleset,
                Sizes(sizes.tokens[start:boundary], sizes.chars[start:boundary], []), offset=start,
                item_offset=len(resume.records) if resume else 0, user_turn_before=bool(resume and resume.user_turns))


def _reason(ruleset: RuleSet, boundary: int) -> str:
    step = ruleset.step
    if step is None:
        return ruleset.trigger.describe()
    where = f"rules decide messages 0-{boundary - 1}" if boundary else "no step boundary yet: nothing decided"
    return f"{ruleset.trigger.describe()}; step every {step.every} {step.unit}: {where}"


def report_details(decided: Callable[[], tuple[Decision, ...]], full: View | Callable[[], View]):
    """The report's per-item records: the decided prefix's, then the items after the boundary
    (left as they are), with the orphans and dangling calls of the whole list."""

    def details():
        view = full if isinstance(full, View) else full()
        prefix = decided()
        after = tuple(_decision(view, item, None, 0, False, view.is_error(item), AFTER_BOUNDARY)
                      for item in view.items[len(prefix):])
        answered = {it.tool_call_id for it in view.items if it.kind == "tool_result"}
        dangling = tuple(cid for it in view.items if it.dangling for cid in it.call_ids if cid not in answered)
        return prefix + after, tuple(it.index for it in view.items if it.orphan), dangling

    return details


AFTER_BOUNDARY = "after the step boundary: left as it is"


def _decision(view: View, item: Item, rule, saved: int, changed: bool, error: bool, note: str | None) -> Decision:
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


RULES_ARGUMENT = "a RuleSet, a path, 'default', 'preset:NAME', rule-file text or a list of those"


def resolve_rules(rules) -> list[RuleSet]:
    """RuleSets from a RuleSet, a path or name, a list of those, or None (the bundled default)."""
    from .loader import load_rules

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
    fmt.check(messages)
    rulesets = resolve_rules(rules)
    current, passes = messages, []
    for ruleset in rulesets:
        done = run_pass(current, ruleset, fmt, breakpoints_outside=breakpoints_outside)
        current = done.messages
        passes.append(done.report)
    return finish(messages, current, name, rulesets, passes)


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
    """The Result of successive passes: a new list, and the final budget checks."""
    fmt = FORMATS[format_name]
    if current is messages:
        current = list(messages)
    checks = tuple((r.name, passes[-1].tokens_after if r is rulesets[-1] else _tokens(fmt, current, r),
                    r.over_budget_tokens) for r in rulesets if r.over_budget_tokens is not None)
    return Result(current, Report(format_name, tuple(passes), checks))


def _tokens(fmt: Format, messages: list, ruleset: RuleSet) -> int:
    estimate = ruleset.estimator
    return sum(estimate.of_message(m, fmt.message_pieces(m)) for m in messages)


def iter_items(messages: list, format: str | None = None) -> Iterable[Item]:
    """The items rules decide on, for tools that inspect conversations."""
    return FORMATS[format or detect_format(messages)].scan(messages).items

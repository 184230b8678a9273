"""The interpreter: one rule file's pass over a message list, copy-on-write.

A pass reads top to bottom:

1. the step boundary: how many leading messages the rules decide on;
2. the trigger: whether the pass runs at all;
3. the rules: for each item the first rule that matches, chosen rule by rule over all items
   of a kind at once (``choose``);
4. the actions of the rules that change something, oldest item first, within the budget
   (``apply``);
5. the minimum gate, and a report that is measured only when it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Callable

from ..errors import InputError, type_name
from ..formats import Format, Scan
from ..kinds.base import RESULT, TURN, EditError
from ..language.model import Budget, Rule, RuleSet
from ..lazy import once_per, quick_init
from .facts import Facts, Origin
from .report import NO_BOUNDARY, PassReport, not_run, ran
from .stepping import Walk, step_boundary, walk_pay_back

__all__ = ["run_pass", "Pass", "Decided", "evaluate", "step_boundary", "boundary_of", "pay_back_walk", "content_rules",
           "fresh_prefixes", "use_prefix_compaction", "Editor"]

ERROR_WITHOUT_RULE = "error result: only rules that match is_error: true apply"
BUDGET_REACHED = "budget reached: left as it is"


class Editor:
    """The copy-on-write output of a pass; what actions read and edit.  ``facts`` describe the
    input; ``out`` holds the current version of every message; ``log`` every replacement, as
    ``(item, message index, the message as it was)``."""

    def __init__(self, facts: Facts, around: Callable[[], int] = lambda: 0, out: list | None = None):
        self.facts = facts
        self.out = list(facts.messages) if out is None else out  # ``out``: a start other than the input
        self.log: list[tuple[int, int, Any]] = []
        self.item = -1  # the item whose actions run
        self.asked: int | None = None  # the first item whose actions read the request's breakpoints
        self._around = around  # the breakpoints outside ``out``: outside the messages, before and after them
        self._held: int | None = None  # once asked: the request's breakpoints, kept up to date

    @property
    def view(self) -> Facts:  # the name plugins know
        return self.facts

    def message(self, index: int) -> dict:
        return self.out[index]

    def replace(self, index: int, message: dict) -> None:
        out = self.out
        old = out[index]
        if message is not old:
            self.log.append((self.item, index, old))
            out[index] = message
            if self._held is not None:
                count = self.facts.fmt.breakpoints
                self._held += count(message) - count(old)

    def breakpoints(self) -> int:
        """The cache breakpoints the whole request holds now (a decision that reads this is
        never kept for a later call)."""
        if self.asked is None:
            self.asked = self.item
        if self._held is None:
            self._held = self._around() + sum(map(self.facts.fmt.breakpoints, self.out))
        return self._held

    def result_content_at(self, item: int) -> Any:
        scan = self.facts.scan
        return self.facts.fmt.result_content(self.out[scan.msg[item]], scan.block[item])

    def result_text_at(self, item: int) -> str:
        facts = self.facts
        msg = facts.scan.msg[item]
        current = self.out[msg]
        if current is facts.messages[msg]:  # not edited yet: the text the matchers read
            return facts.text(item)
        return facts.fmt.result_text(current, facts.scan.block[item])

    def set_result_text_at(self, item: int, text: str, as_string: bool = False) -> None:
        scan = self.facts.scan
        msg = scan.msg[item]
        self.replace(msg, self.facts.fmt.set_result_content(self.out[msg], scan.block[item], text, as_string))

    def set_result_texts(self, texts: list[tuple[int, str]], as_string: bool = False) -> None:
        """``set_result_text_at`` for each ``(item, text)`` in turn, each the item whose actions run
        (:meth:`replace` inlined: a placeholder action writes hundreds)."""
        facts = self.facts
        msg_of, block, set_content = facts.scan.msg, facts.scan.block, facts.fmt.set_result_content
        out, log, held = self.out, self.log, self._held is not None
        for item, text in texts:
            index = msg_of[item]
            old = out[index]
            message = set_content(old, block[item], text, as_string)
            if message is not old:  # as replace() does
                log.append((item, index, old))
                out[index] = message
                if held:
                    count = facts.fmt.breakpoints
                    self._held += count(message) - count(old)
        if texts:
            self.item = texts[-1][0]

    # the Item-based names of the plugin interface
    def result_text(self, item) -> str:
        return self.result_text_at(item.index)

    def set_result_text(self, item, text: str, as_string: bool = False) -> None:
        if not isinstance(text, str):
            raise EditError(f"set a result's text to {type_name(text)}, not a string")
        self.set_result_text_at(item.index, text, as_string)


@quick_init
@dataclass(frozen=True, eq=False)
class Decided:
    """What one evaluation of the rules made of the messages of its facts."""

    out: list  # the output messages
    chosen: list  # per item: the deciding Rule, or None
    notes: dict  # item -> note for the report
    log: list  # every replacement, as (item, message index, the message as it was)
    gate: str | None = None  # "passed" | "failed" with a minimum gate
    unapplied: str | None = None  # why the changes were undone (a failed gate)
    asked: int | None = None  # the first item whose actions read the request's breakpoints

    @property
    def changed(self) -> int:
        """How many items an action changed."""
        return 0 if self.unapplied else len({entry[0] for entry in self.log})

    @cached_property
    def versions(self) -> dict[int, tuple]:
        """Item -> ``((message index, before, after), ...)``: each message its actions changed,
        as it was before them and after them."""
        return versions(self.log, self.out)

    def saved(self, measure) -> tuple[int, int]:
        """Tokens and characters the actions saved, measured with ``measure(message)``: each
        changed message as it was before the first action against as it is (the sum, per item,
        of what its actions saved: each item's change starts where the one before left off)."""
        first: dict[int, Any] = {}
        for _, index, before in self.log:
            first.setdefault(index, before)
        tokens = chars = 0
        out = self.out
        for index, before in first.items():
            (t0, c0), (t1, c1) = measure(before), measure(out[index])
            tokens += t0 - t1
            chars += c0 - c1
        return tokens, chars


def versions(log: list, out: list) -> dict[int, tuple]:
    later: dict[int, Any] = {}  # message index -> its version after the entries seen so far (backwards)
    found: dict[int, dict[int, list]] = {}
    for item, index, before in reversed(log):
        after = later.get(index, out[index]) if index not in found.get(item, {}) else None
        later[index] = before
        changes = found.setdefault(item, {})
        if index in changes:
            changes[index][0] = before  # an earlier replacement by the same item's actions
        else:
            changes[index] = [before, after]
    return {item: tuple((index, b, a) for index, (b, a) in sorted(changes.items()))
            for item, changes in sorted(found.items())}


def choose(facts: Facts, ruleset: RuleSet, turns: list[int] | None = None, results: list[int] | None = None
           ) -> tuple[list[Rule | None], list[int], dict[Rule, list[int]]]:
    """Per item (of ``turns`` and ``results``, by default all), the first rule whose matcher
    holds (error results are matched only by rules that name ``is_error: true``); the items
    whose rule does more than keep, in order; and those items by rule."""
    chosen: list[Rule | None] = [None] * len(facts)
    acted: list[int] = []
    by_rule: dict[Rule, list[int]] = {}
    turns = facts.turns if turns is None else turns
    results = facts.results if results is None else results
    for kind, items in ((TURN, turns), (RESULT, results)):  # turns first: their calls give the results' links
        remaining = items
        clean = None  # remaining items that are no error results
        chain = ruleset.chains[kind]
        for rule, matcher in chain:
            if not remaining:
                break
            if rule.matches_errors or kind == TURN:
                candidates = remaining
            else:
                if clean is None:
                    errors = facts.errors
                    clean = [i for i in remaining if not errors[i]] if True in errors else remaining
                candidates = clean
            if not candidates:
                continue
            hits = candidates if matcher is True else matcher.select(candidates, facts)
            if not hits:
                continue
            for i in hits:
                chosen[i] = rule
            if not rule.keeps:
                acted += hits
                by_rule.setdefault(rule, []).extend(hits)
            if rule is chain[-1][0]:
                break  # nothing is left to choose for
            if hits is remaining:
                remaining = []
            else:
                taken = set(hits)
                remaining = [i for i in remaining if i not in taken]
            clean = None if clean is None or hits is clean else [i for i in clean if chosen[i] is None]
    acted.sort()
    return chosen, acted, by_rule


def evaluate(facts: Facts, ruleset: RuleSet, total_tokens: Callable[[], int] | None = None,
             around: Callable[[], int] = lambda: 0, held: Any = None) -> Decided:
    """Choose a rule for every item, then apply the actions that change something, oldest
    item first, within the rule set's budget (``total_tokens``: of the whole input, which
    ``stop_at_tokens`` compares with; by default the facts' messages; ``around``: the cache
    breakpoints the request holds outside the facts' messages).  ``held``: what an earlier
    call decided that still holds (the incremental layer's ``Held``): only the items it
    leaves open are chosen for and acted on, the others keep what they had."""
    if held is None:
        chosen, todo, by_rule = choose(facts, ruleset)
        results = facts.results
    else:
        chosen, todo, by_rule = held.merge(*choose(facts, ruleset, held.open_turns, held.open_results))
        results = held.acting_results()
    notes: dict[int, str] = {}
    if results and True in facts.errors:
        errors = facts.errors
        notes = dict.fromkeys([i for i in results if errors[i] and chosen[i] is None], ERROR_WITHOUT_RULE)
    editor = Editor(facts, around, None if held is None else held.outputs())
    if held is not None:
        held.restore(editor.log, notes)
    log = editor.log
    budget = ruleset.budget
    tally = _Tally(facts, total_tokens) if _counts(budget) else None
    if tally is None and not facts.fmt.shared_messages and all(rule.item_only for rule in by_rule):
        todo = _apply_rule_by_rule(by_rule, editor, notes)  # what is left reads the whole request
    for i in _request_readers_last(todo, chosen):
        if tally is not None and tally.reached(budget):
            notes[i] = BUDGET_REACHED
            continue
        editor.item = i
        start = len(log)
        actions = chosen[i].actions
        if len(actions) == 1:
            note = actions[0].run(i, editor)
        else:
            note = "; ".join(n for n in [action.run(i, editor) for action in actions] if n)
        if note:
            notes[i] = note
        if tally is not None and len(log) > start:
            tally.add(i, versions(log[start:], editor.out)[i])
    gate = unapplied = None
    if budget.min_cleared_tokens is not None:
        measured = tally.removed if budget.min_cleared_counts == "removed" else tally.cleared
        gate = "passed" if measured >= budget.min_cleared_tokens else "failed"
        if gate == "failed":
            unapplied = (f"minimum gate: would clear {measured:,} < {budget.min_cleared_tokens:,} tokens"
                         + (" (removed content)" if budget.min_cleared_counts == "removed" else ""))
            return Decided(list(facts.messages), chosen, notes, log, gate, unapplied, editor.asked)
    return Decided(editor.out, chosen, notes, log, gate, unapplied, editor.asked)


def _apply_rule_by_rule(by_rule: dict[Rule, list[int]], editor: Editor, notes: dict) -> list[int]:
    """Each item's edits touch its own message alone: apply them rule by rule, each action on
    all the rule's items at once, and note what they say; the items whose actions read the
    whole request are left, in order, to be applied item by item."""
    left: list[int] = []
    for rule, items in by_rule.items():
        if rule.reads_request:
            left += items
            continue
        items.sort()
        said = [action.run_many(items, editor) for action in rule.actions]
        for notes_of in said:
            for i, note in notes_of.items():
                notes[i] = f"{notes[i]}; {note}" if len(said) > 1 and i in notes else note
    left.sort()
    return left


def _request_readers_last(todo: list, chosen: list) -> list:
    """``todo`` with the items whose actions read the whole request (its breakpoints) moved
    after the others, in order: they see the request as every other edit leaves it."""
    late = [i for i in todo if chosen[i].reads_request]
    if not late:
        return todo
    moved = set(late)
    return [i for i in todo if i not in moved] + late


def _counts(budget: Budget) -> bool:
    return (budget.min_cleared_tokens is not None or budget.stop_at_tokens is not None
            or budget.stop_after_cleared_tokens is not None)


class _Tally:
    """Running totals for budget conditions: the current tokens of each message and what the
    pass cleared so far."""

    def __init__(self, facts: Facts, total_tokens: Callable[[], int] | None):
        self.facts = facts
        self.tokens = list(facts.message_tokens)
        self.total = total_tokens() if total_tokens is not None else sum(self.tokens)
        self.cleared = self.removed = 0

    def reached(self, budget: Budget) -> bool:
        return ((budget.stop_at_tokens is not None and self.total <= budget.stop_at_tokens)
                or (budget.stop_after_cleared_tokens is not None and self.cleared >= budget.stop_after_cleared_tokens))

    def add(self, item: int, changes: tuple) -> None:
        saved = 0
        for index, _, new in changes:
            tokens = self.facts.measure(new)[0]
            saved += self.tokens[index] - tokens
            self.tokens[index] = tokens
        self.total -= saved
        self.cleared += saved
        is_result = not self.facts.scan.is_turn[item]
        self.removed += max(saved, self.facts.item_tokens[item]) if is_result else saved


# -- the pass ------------------------------------------------------------------------------

def boundary_of(ruleset: RuleSet, given: Input, scan: Scan | None = None) -> int:
    """How many leading messages the rules decide on (all of them without a step; ``scan``: the
    format's scan of the messages, if the caller has it)."""
    step = ruleset.step
    if step is None:
        return len(given.messages)
    if step.pay_back is None:
        return step_boundary(step, given.results, given.tokens, len(given.messages))
    return pay_back_walk(ruleset, given, scan=scan).boundary


def pay_back_walk(ruleset: RuleSet, given: Input, prefix_of: Callable[[int], list] | None = None,
                  resume: Walk | None = None, scan: Scan | None = None) -> Walk:
    """The walk that puts a ``pay_back`` step's boundary (``prefix_of``: the content rules'
    compaction of a prefix, by default the installed prefix compaction's, given ``scan``;
    ``resume``: an earlier walk that holds for these messages)."""
    fmt, messages = given.fmt, given.messages
    if prefix_of is None:
        prefix_of = _prefix_compaction[0](messages, content_rules(ruleset), fmt, scan)
    estimate, pieces = ruleset.estimator, fmt.message_pieces
    return walk_pay_back(ruleset.step, messages, fmt, given.tokens(), given.results(), prefix_of,
                         lambda m: estimate.of_message(m, pieces(m)), resume)


def fresh_prefixes(messages: list, content: RuleSet, fmt: Format, scan: Scan | None = None) -> Callable[[int], list]:
    """Each prefix of ``messages`` compacted by a pass of its own (``scan``: of ``messages``, unused)."""
    return lambda b: run_pass(messages[:b], content, fmt).messages


#: How a pay-back walk compacts its prefixes: ``[0](messages, content_rules, fmt, scan)`` gives
#: ``b -> the compaction of messages[:b]`` (``scan``: the format's scan of ``messages``, or None).  Fresh passes here; the incremental layer installs
#: a Compactor that reuses each prefix's settled decisions (the same messages: test_pay_back).
_prefix_compaction: list[Callable[[list, RuleSet, Format, Scan | None], Callable[[int], list]]] = [fresh_prefixes]


def use_prefix_compaction(make: Callable[[list, RuleSet, Format, Scan | None], Callable[[int], list]]) -> Callable:
    """Install how pay-back walks compact their prefixes; returns the one it replaces."""
    previous, _prefix_compaction[0] = _prefix_compaction[0], make
    return previous


_CONTENT: dict = {}  # per rule file: it without its step


def content_rules(ruleset: RuleSet) -> RuleSet:
    """The rule file without its step (what decides the prefix before any boundary)."""
    return once_per(_CONTENT, ruleset, lambda: replace(ruleset, step=None))


@quick_init
@dataclass(frozen=True, eq=False)
class Pass:
    """One pass's output and report, and what it decided (None when it did not run).
    ``held``: when an action read the request's breakpoints, those outside the messages and
    after the boundary then (a later call reuses the decisions only while they stay)."""

    messages: list
    report: PassReport
    boundary: int
    decided: Decided | None = None
    held: int | None = None


class Sizes:
    """Per message of a pass's input: estimated tokens and characters, and tool results, each
    measured when first needed.  A later call's sizes start from the leading entries of an
    earlier call's that still hold (``known``, for messages ``[:upto]``): they share its lists,
    and never refer to the earlier input (a chain of those would keep every call's list)."""

    __slots__ = ("tokens", "chars", "results", "sized", "counted")

    def __init__(self, known: Sizes | None = None, upto: int = 0):
        self.tokens: list[int] | None = None
        self.chars: list[int] | None = None
        self.results: list[int] | None = None
        self.sized = self.counted = 0  # the leading entries of tokens (and chars), of results, that hold
        if known is not None:
            if known.tokens is not None:
                self.tokens, self.chars, self.sized = known.tokens, known.chars, min(upto, known.sized)
            if known.results is not None:
                self.results, self.counted = known.results, min(upto, known.counted)


class Input:
    """A pass's input: the messages, and their sizes measured once when something needs them
    (``known``: sizes of leading messages measured by an earlier call)."""

    def __init__(self, messages: list, fmt: Format, ruleset: RuleSet, known: Sizes | None = None, upto: int = 0):
        self.messages, self.fmt, self.ruleset = messages, fmt, ruleset
        self.measured = Sizes(known, upto)  # what a later call starts from

    def measure(self) -> tuple[list[int], list[int]]:
        sizes, count = self.measured, len(self.messages)
        if sizes.tokens is None or sizes.sized != count or len(sizes.tokens) != count:
            start = sizes.sized if sizes.tokens is not None else 0
            tokens, chars = (sizes.tokens[:start], sizes.chars[:start]) if start else ([], [])
            estimate, pieces_of = self.ruleset.estimator, self.fmt.message_pieces
            for i, msg in enumerate(self.messages[start:], start):
                try:
                    pieces = list(pieces_of(msg))
                except InputError as exc:  # data a caller built in Python (a set in a tool input)
                    raise InputError(f"message {i}: {exc}") from None
                tokens.append(estimate.of_message(msg, pieces))
                chars.append(sum(map(len, pieces)))
            sizes.tokens, sizes.chars, sizes.sized = tokens, chars, count
        return sizes.tokens, sizes.chars

    def tokens(self) -> list[int]:
        return self.measure()[0]

    def results(self) -> list[int]:
        sizes, count = self.measured, len(self.messages)
        if sizes.results is None or sizes.counted != count or len(sizes.results) != count:
            start = sizes.counted if sizes.results is not None else 0
            found = sizes.results[:start] if start else []
            sizes.results = found + list(map(self.fmt.result_count, self.messages[start:]))
            sizes.counted = count
        return sizes.results

    def sizes(self, end: int, start: int = 0) -> tuple[list[int], list[int]] | None:
        """The measured sizes of messages ``[start:end]``, if they were measured."""
        sizes = self.measured
        if sizes.tokens is None or sizes.sized != len(self.messages) or len(sizes.tokens) != sizes.sized:
            return None
        return sizes.tokens[start:end], sizes.chars[start:end]


def run_pass(messages: list, ruleset: RuleSet, fmt: Format, breakpoints_outside: int = 0,
             scan: Scan | None = None) -> Pass:
    """One rule file over ``messages``: the new list and what was decided
    (``breakpoints_outside``: the cache breakpoints the request holds outside the messages;
    ``scan``: the format's scan of ``messages``, if the caller has it)."""
    given = Input(messages, fmt, ruleset)
    boundary = boundary_of(ruleset, given, scan)
    skip = skipped(ruleset, given, boundary)
    if skip:
        return Pass(messages, not_run(ruleset, skip, given), boundary)
    prefix = messages if boundary == len(messages) else messages[:boundary]
    if scan is not None and prefix is not messages:
        scan = scan.prefix(boundary)
    facts = Facts(prefix, fmt, ruleset, message_sizes=given.sizes(boundary), scan=scan)
    outside = Outside(breakpoints_outside, fmt, messages, boundary)
    decided = evaluate(facts, ruleset, lambda: sum(given.tokens()), outside)
    out = decided.out if boundary == len(messages) else decided.out + messages[boundary:]
    return Pass(out, ran(ruleset, decided, given, boundary, out), boundary, decided, outside.held)


class Outside:
    """The cache breakpoints a pass's request holds outside the messages the rules decide on:
    outside the messages, after the boundary, and (``before()``) in a settled prefix; counted
    when an action first asks."""

    def __init__(self, outside: int, fmt: Format, messages: list, boundary: int,
                 before: Callable[[], int] | None = None):
        self.outside, self.fmt, self.messages, self.boundary, self.before = outside, fmt, messages, boundary, before
        self.held: int | None = None  # once counted: those outside and after the boundary

    def __call__(self) -> int:
        self.held = self.outside + sum(map(self.fmt.breakpoints, self.messages[self.boundary:]))
        return self.held + (self.before() if self.before is not None else 0)



def skipped(ruleset: RuleSet, given: Input, boundary: int) -> str | None:
    """Why the pass does not run (disabled, or not triggered on the decided prefix), or None."""
    trigger = ruleset.trigger
    if not ruleset.enabled:
        return "disabled"
    if trigger.tokens_over is not None:
        tokens = sum(given.tokens()[:boundary])
        if not tokens > trigger.tokens_over:
            return f"not triggered: {tokens:,} tokens ≤ {trigger.tokens_over:,}"
    if trigger.tool_results_over is not None:
        results = sum(given.results()[:boundary])
        if not results > trigger.tool_results_over:
            return f"not triggered: {results:,} tool results ≤ {trigger.tool_results_over:,}"
    return None


__all__ += ["Input", "Sizes", "Outside", "skipped", "not_run", "ran", "Origin", "NO_BOUNDARY"]

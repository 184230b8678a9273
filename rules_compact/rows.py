"""The per-conversation result rows of ``stats``, ``replay`` and ``diff``.

One row type per command, each a frozen record whose ``to_dict()`` is the command's ``--json``
line (docs/json.md documents every field); the text and Markdown tables are printed from the
same rows, and the totals are sums of them (``*_total``).  Fields are only ever added.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Sequence

from .analysis import DecisionChange, conversation_stats, decision_changes
from .engine import compact
from .formats import FORMATS
from .kinds.estimators import Estimator
from .language.model import RuleSet
from .recall import References
from .regret import Refetches
from .replay import Bill, Price, Replay, replay, round_starts

__all__ = ["StatsRow", "stats_row", "stats_total", "ReplayRow", "replays", "replay_rows", "replay_total", "DiffRow",
           "diff_row", "diff_total"]


def _share(saved: int, before: int) -> float:
    return saved / before if before else 0.0


@dataclass(frozen=True)
class StatsRow:
    """What the rule files do to one conversation (``saved_by_rule``: estimated tokens per rule)."""

    conversation: str
    format: str
    messages: int
    tool_results: int
    tokens_before: int
    tokens_after: int
    saved_by_rule: dict[str, int]
    over_budget: bool

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict:
        return {**asdict(self), "saved": self.saved, "saved_share": _share(self.saved, self.tokens_before)}


def stats_row(name: str, messages: list, rulesets: Sequence[RuleSet], fmt: str | None) -> StatsRow:
    stats = conversation_stats(name, messages, rulesets, fmt)
    report = stats.report
    return StatsRow(name, report.format, stats.messages, stats.tool_results, report.tokens_before,
                    report.tokens_after, {r: s for r, s in stats.saved_by_rule.items() if s}, report.over_budget)


def stats_total(rows: Sequence[StatsRow]) -> StatsRow:
    """The sum of ``rows``, named ``total (N)``; ``format`` is the formats seen, joined by commas."""
    by_rule: dict[str, int] = {}
    for row in rows:
        for rule, saved in row.saved_by_rule.items():
            by_rule[rule] = by_rule.get(rule, 0) + saved
    return StatsRow(f"total ({len(rows)})", ",".join(dict.fromkeys(r.format for r in rows)),
                    sum(r.messages for r in rows), sum(r.tool_results for r in rows),
                    sum(r.tokens_before for r in rows), sum(r.tokens_after for r in rows), by_rule,
                    any(r.over_budget for r in rows))


@dataclass(frozen=True)
class ReplayRow:
    """One rule set replayed over one conversation (``rule_set`` ``none``: without compaction).

    ``references``: the references the recorded responses make to earlier content;
    ``kept_references``: how many of them the compacted prompts still show;
    ``recoverable_references``: how many they show or name in a saved result.  ``cold_rounds``:
    the rounds that found the cache expired (None when the cache never expires).
    ``cleared_results``: the results some round's prompt showed cleared; ``refetched_results``:
    of them, those whose exact call the recorded agent made again while they were hidden.
    ``billed``: on the ``none`` row of a log that records what was billed (Claude Code, Codex),
    the estimate beside the bill (:class:`~rules_compact.replay.Bill`)."""

    conversation: str
    rule_set: str
    rounds: int
    prompt_tokens: int
    cached_tokens: int
    cost: float
    references: int
    kept_references: int
    cold_rounds: int | None = None
    cleared_results: int = 0
    refetched_results: int = 0
    billed: Bill | None = None
    recoverable_references: int = 0

    @property
    def recall(self) -> float:
        return self.kept_references / self.references if self.references else 1.0

    @property
    def recoverable_recall(self) -> float:
        return self.recoverable_references / self.references if self.references else 1.0

    @property
    def regret(self) -> float:
        """Re-fetch regret: ``refetched_results / cleared_results`` (0 when none was cleared)."""
        return self.refetched_results / self.cleared_results if self.cleared_results else 0.0

    def to_dict(self) -> dict:
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**row, "billed": self.billed and self.billed.to_dict(), "recall": self.recall,
                "recoverable_recall": self.recoverable_recall, "regret": self.regret}

    @classmethod
    def of(cls, name: str, r: Replay, cold: Sequence[bool] | None, billed: Bill | None = None) -> ReplayRow:
        return cls(name, r.label, r.rounds, r.total_prompt, r.total_cached, r.cost, sum(r.referenced), sum(r.kept),
                   None if cold is None else sum(cold), r.cleared, r.refetched, billed, sum(r.recoverable))


def replays(messages: list, fmt: str, sets: Sequence[tuple[str, Sequence[RuleSet] | None]],
            price: Price, cold: Sequence[bool] | None = None, estimator: Estimator | None = None) -> list[Replay]:
    """One replay per ``(label, rule files)`` (None: no compaction), sharing the references and
    the re-fetches; ``cold``: the rounds whose cache had expired; ``estimator`` counts the
    tokens (chars4 by default)."""
    form, starts = FORMATS[fmt], round_starts(messages, fmt)
    references = References(messages, form, starts)
    refetches = Refetches(messages, form, starts) if any(rules for _, rules in sets) else None
    out = [replay(messages, rules, fmt, price, label, estimator, references, refetches) for label, rules in sets]
    return out if cold is None else [r.expire(cold) for r in out]


def replay_rows(name: str, messages: list, fmt: str, sets: Sequence[tuple[str, Sequence[RuleSet] | None]],
                price: Price, cold: Sequence[bool] | None = None) -> list[ReplayRow]:
    """A row per rule set; ``cold``: per round, whether the cache had expired (``cold_rounds``)."""
    return [ReplayRow.of(name, r, cold) for r in replays(messages, fmt, sets, price, cold)]


def replay_total(rows: Sequence[ReplayRow]) -> list[ReplayRow]:
    """Per rule set (in first-seen order), the sum of its rows, named ``total (N)``."""
    labels = list(dict.fromkeys(r.rule_set for r in rows))
    out = []
    for label in labels:
        mine = [r for r in rows if r.rule_set == label]
        colds = [r.cold_rounds for r in mine if r.cold_rounds is not None]
        out.append(ReplayRow(f"total ({len(mine)})", label, sum(r.rounds for r in mine),
                             sum(r.prompt_tokens for r in mine), sum(r.cached_tokens for r in mine),
                             sum(r.cost for r in mine), sum(r.references for r in mine),
                             sum(r.kept_references for r in mine), sum(colds) if colds else None,
                             sum(r.cleared_results for r in mine), sum(r.refetched_results for r in mine),
                             recoverable_references=sum(r.recoverable_references for r in mine)))
    return out


@dataclass(frozen=True)
class DiffRow:
    """Two rule files over one conversation: the items whose decision changes, and the totals
    of each (tokens after compaction, replay cost, references kept of ``references``)."""

    conversation: str
    changes: tuple[DecisionChange, ...]
    tokens_after_old: int
    tokens_after_new: int
    cost_old: float
    cost_new: float
    references: int
    kept_old: int
    kept_new: int
    not_run_old: str | None = None  # why no pass of OLD_RULES ran ("not triggered: 4,028 tokens ≤ 100,000")
    not_run_new: str | None = None

    @property
    def recall_old(self) -> float:
        return self.kept_old / self.references if self.references else 1.0

    @property
    def recall_new(self) -> float:
        return self.kept_new / self.references if self.references else 1.0

    def to_dict(self) -> dict:
        return {**asdict(self), "decisions_changed": len(self.changes), "recall_old": self.recall_old,
                "recall_new": self.recall_new}


def diff_row(name: str, messages: list, fmt: str, old: RuleSet, new: RuleSet, price: Price) -> DiffRow:
    before = compact(messages, [old], format=fmt).report
    after = compact(messages, [new], format=fmt).report
    a, b = replays(messages, fmt, [("old", [old]), ("new", [new])], price)
    return DiffRow(name, tuple(decision_changes(before, after)), before.tokens_after, after.tokens_after,
                   a.cost, b.cost, sum(a.referenced), sum(a.kept), sum(b.kept), _not_run(before), _not_run(after))


def _not_run(report) -> str | None:
    """Why no pass of a report ran, or None when one did."""
    return None if any(p.ran for p in report.passes) else "; ".join(p.reason for p in report.passes) or None


def diff_total(rows: Sequence[DiffRow]) -> DiffRow:
    """The sum of ``rows``, named ``total (N)``, with every change."""
    return DiffRow(f"total ({len(rows)})", tuple(c for r in rows for c in r.changes),
                   sum(r.tokens_after_old for r in rows), sum(r.tokens_after_new for r in rows),
                   sum(r.cost_old for r in rows), sum(r.cost_new for r in rows), sum(r.references for r in rows),
                   sum(r.kept_old for r in rows), sum(r.kept_new for r in rows),
                   _never_run([r.not_run_old for r in rows], [r.tokens_after_old for r in rows]),
                   _never_run([r.not_run_new for r in rows], [r.tokens_after_new for r in rows]))


def _never_run(reasons: list, tokens: list[int]) -> str | None:
    """When a side ran in no conversation: why not, in the largest one."""
    if not reasons or any(r is None for r in reasons):
        return None
    return reasons[max(range(len(reasons)), key=tokens.__getitem__)]

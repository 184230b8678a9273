"""Typed, frozen objects that a rule file becomes after loading."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Callable

from ..kinds.estimators import Estimator
from .templates import Template

if TYPE_CHECKING:
    from ..kinds.base import Action, Matcher
    from ..store import Store

__all__ = ["ToolSpec", "ToolTable", "Trigger", "PayBack", "Step", "Budget", "Rule", "RuleSet"]

GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class ToolSpec:
    """Compaction metadata of a tool name or glob, and who declared it."""

    pattern: str
    compact: bool
    placeholder: Template | None = None
    source: str = ""
    summarize: Callable | None = field(default=None, compare=False)

    @property
    def is_glob(self) -> bool:
        return any(c in GLOB_CHARS for c in self.pattern)


@dataclass(frozen=True)
class ToolTable:
    """Tool metadata lookup: an exact name beats a glob; the first matching glob wins."""

    exact: dict[str, ToolSpec] = field(default_factory=dict)
    globs: tuple[ToolSpec, ...] = ()
    undeclared: str = "compact"  # "compact" | "keep"
    _seen: dict = field(default_factory=dict, compare=False, repr=False)  # name -> spec, for globs

    def lookup(self, name: str | None) -> ToolSpec | None:
        if name is None:
            return None
        spec = self.exact.get(name)
        if spec is None and self.globs:
            try:
                return self._seen[name]
            except KeyError:
                spec = next((g for g in self.globs if fnmatchcase(name, g.pattern)), None)
                if len(self._seen) < 4096:
                    self._seen[name] = spec
        return spec

    def compactable(self, name: str | None) -> bool:
        spec = self.lookup(name)
        return spec.compact if spec is not None else self.undeclared == "compact"

    @classmethod
    def of(cls, specs: list[ToolSpec], undeclared: str = "compact") -> ToolTable:
        """Earlier specs win: pass the rule file's before the plugins'."""
        first: dict[str, ToolSpec] = {}
        for spec in specs:
            first.setdefault(spec.pattern, spec)
        exact = {p: s for p, s in first.items() if not s.is_glob}
        return cls(exact, tuple(s for s in first.values() if s.is_glob), undeclared)


@dataclass(frozen=True)
class Trigger:
    """When a pass runs: always (both None), or when a count exceeds its threshold."""

    tokens_over: int | None = None
    tool_results_over: int | None = None

    def describe(self) -> str:
        if self.tokens_over is not None:
            return f"tokens > {self.tokens_over:,}"
        if self.tool_results_over is not None:
            return f"tool results > {self.tool_results_over:,}"
        return "always"


@dataclass(frozen=True)
class PayBack:
    """Cost-aware moves of a step boundary (ski rental): move once the rent, the tokens the move
    would have saved summed over the rounds since the last move, reaches ``factor`` times the
    move's extra cost in cached-token prices (``price_ratio``: uncached over cached price)."""

    price_ratio: float
    factor: float = 1.0


@dataclass(frozen=True)
class Step:
    """Decisions change only at step boundaries: every ``every`` units of history, the rules
    are evaluated on the history up to the latest boundary, and what follows it is kept.
    With ``pay_back`` the boundary moves to the latest one only once the move has paid off."""

    unit: str  # "tool_results" | "tokens" | "messages"
    every: int
    pay_back: PayBack | None = None
    growth: float = 0.0  # the gap to the next boundary: ``every`` units, or this share of the units before it if more


@dataclass(frozen=True)
class Budget:
    """Budget conditions, applied oldest item first."""

    min_cleared_tokens: int | None = None  # minimum gate: all or nothing
    stop_at_tokens: int | None = None  # stop once the total is at or under this
    stop_after_cleared_tokens: int | None = None  # stop once this many were cleared
    min_cleared_counts: str = "saved"  # "saved" (net) or "removed" (the replaced content's tokens)


@dataclass(frozen=True)
class Rule:
    """``match`` decides whether the rule applies; ``actions`` run in order."""

    name: str
    matcher: Matcher
    actions: tuple[Action, ...]
    source: str
    matches_errors: bool  # the matcher asks for ``is_error: true`` explicitly
    line: int = 0

    @property
    def action_names(self) -> str:
        return "+".join(a.name for a in self.actions)

    @cached_property
    def keeps(self) -> bool:
        """Its action is ``keep``: it stops the chain and changes nothing."""
        return len(self.actions) == 1 and self.actions[0].name == "keep"

    @cached_property
    def item_only(self) -> bool:
        """Every action edits the item's own message alone (built-in kinds that say so)."""
        return all(a.kind is not None and a.kind.item_only for a in self.actions)

    @cached_property
    def reads_request(self) -> bool:
        """An action depends on the whole request (its cache breakpoints)."""
        return any(a.kind is not None and a.kind.reads_request for a in self.actions)


@dataclass(frozen=True)
class RuleSet:
    """A compiled rule file: one pass of the engine."""

    name: str
    version: int
    description: str
    enabled: bool
    trigger: Trigger
    budget: Budget
    step: Step | None
    estimator_name: str
    estimator: Estimator
    placeholder: Template
    over_budget_tokens: int | None
    tools: ToolTable
    error_when: Matcher | None
    rules: tuple[Rule, ...]
    compacted_patterns: tuple[Callable[[str], bool], ...]  # tests for this file's own outputs
    source: str
    placeholder_allow_larger: bool = False  # a placeholder action's allow_larger where it sets none
    # per item kind: the rules that can match an item of that kind, each with its matcher
    # specialised to the kind (True: it matches every such item)
    chains: dict[str, tuple[tuple[Rule, Matcher | bool], ...]] = field(default_factory=dict, compare=False)
    # the files it was read from: its own and those it extends (none for rule-file text)
    files: tuple[str, ...] = field(default=(), compare=False)
    # where its actions with save: true save what they clear, and what reads it back
    store: Store | None = field(default=None, compare=False)

    @property
    def idempotent(self) -> bool:
        """False when a pass-relative budget ("stop after N cleared") is set, or a pay-back step
        (its walk measures the history it is given: on a compacted one, a move can pay back
        sooner, and the boundary land further along)."""
        return self.budget.stop_after_cleared_tokens is None and (self.step is None or self.step.pay_back is None)

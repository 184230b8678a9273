"""The tasks: what ``stats``, ``replay`` and ``diff`` compute per conversation, as data that
pickles, with their rule files as text (:class:`RuleSource`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Sequence

from ..documents import conversations_in
from ..errors import InputError
from ..kinds.estimators import DEFAULT_ESTIMATOR
from ..language.loader import parse_rules, read_source
from ..language.model import RuleSet
from ..plugins.manager import PluginError, registry
from ..readers import Conversation
from ..replay import Price, Replay, bill, cold_rounds, parse_price, round_starts
from ..rows import DiffRow, ReplayRow, StatsRow, diff_row, replays, stats_row

__all__ = ["RuleSource", "Task", "Stats", "Replays", "Replayed", "Diff"]

_COMPILED: dict[RuleSource, RuleSet] = {}  # per process: each rule source compiled once


@dataclass(frozen=True)
class RuleSource:
    """A rule file as data that travels to workers: its text, the texts of the files it extends,
    and the plugins (name, version) it was loaded with."""

    spec: str  # as given: a path, ``default``, ``preset:NAME``
    text: str
    file: str
    extended: tuple[tuple[str, str, str], ...]  # (extends target, text, file name), as read
    plugins: tuple[tuple[str, str], ...]

    @classmethod
    def read(cls, spec: str) -> RuleSource:
        """Read and compile ``spec`` here (ConfigError, InputError as :func:`load_rules` raises them)."""
        read: list[tuple[str, str, str]] = []

        def recording(target: str) -> tuple[str, str]:
            text, file = read_source(target)
            read.append((target, text, file))
            return text, file

        text, file = read_source(spec)
        ruleset = parse_rules(text, file, read=recording)
        source = cls(spec, text, file, tuple(read), registry().plugins)
        _COMPILED[source] = ruleset
        return source

    def load(self) -> RuleSet:
        """The compiled rule set, compiled in this process on first use."""
        ruleset = _COMPILED.get(self)
        if ruleset is None:
            here = set(registry().plugins)
            missing = [f"{name} {version}" for name, version in self.plugins if (name, version) not in here]
            if missing:
                raise PluginError(f"{self.spec}: this worker lacks plugin {', '.join(missing)}, which the rules "
                                  "were loaded with; install the same plugins on every worker")
            texts = {target: (text, file) for target, text, file in self.extended}
            ruleset = _COMPILED[self] = parse_rules(self.text, self.file, read=texts.__getitem__)
        return ruleset


class Task(ABC):
    """What one command computes per conversation; subclasses are frozen dataclasses with a
    ``format`` (None: each conversation's detected format)."""

    format: str | None

    @property
    def sources(self) -> tuple[RuleSource, ...]:
        """Every rule file the task computes with (a command refuses to write over them)."""
        return ()

    @abstractmethod
    def compute(self, conversation: Conversation, fmt: str | None = None):
        """The command's result for one conversation (a row record of :mod:`rules_compact.rows`)."""

    def records(self, result) -> list[dict]:
        """``compute``'s result as table rows (the ``--json`` objects)."""
        return [result.to_dict()]

    def rows(self, conversation: Conversation, fmt: str | None = None) -> list[dict]:
        """The table rows of one conversation."""
        return self.records(self.compute(conversation, fmt))

    def file_rows(self, path: str) -> list[dict]:
        """The rows of every conversation in a file; InputError for a bad file."""
        from .files import read_results  # files reads tasks' results: imported when used

        result = read_results(self, path)
        if result.error is not None:
            raise result.error
        return result.rows(self)

    def text_rows(self, text: str, name: str = "<text>") -> list[dict]:
        """The rows of the conversations in JSON or JSONL text (a line of ``dask.bag.read_text``)."""
        convs = conversations_in(text, name)
        return [row for conv in convs for row in self.rows(conv)]


@dataclass(frozen=True)
class Stats(Task):
    """``stats``: a :class:`~rules_compact.rows.StatsRow` per conversation."""

    passes: tuple[RuleSource, ...]
    format: str | None = None

    @classmethod
    def of(cls, rules: Sequence[str] = ("default",), format: str | None = None) -> Stats:
        return cls(tuple(RuleSource.read(r) for r in rules or ("default",)), format)

    @property
    def sources(self) -> tuple[RuleSource, ...]:
        return self.passes

    def compute(self, conversation: Conversation, fmt: str | None = None) -> StatsRow:
        return stats_row(conversation.name, conversation.messages, [p.load() for p in self.passes],
                         fmt or self.format or conversation.format)


@dataclass(frozen=True)
class Replayed:
    """One conversation replayed: a row per rule set, the replays themselves (their rounds, for
    ``--plot``), and whether the log has timestamps (without, the cache never expires)."""

    rows: tuple[ReplayRow, ...]
    replays: tuple[Replay, ...]
    timestamps: bool


@dataclass(frozen=True)
class Replays(Task):
    """``replay``: per conversation, a :class:`~rules_compact.rows.ReplayRow` per rule set,
    ``none`` (no compaction) first."""

    sets: tuple[tuple[str, tuple[RuleSource, ...] | None], ...]  # (label, passes); None: no compaction
    price: Price
    cache_expiry: bool = False
    format: str | None = None
    estimator: str = DEFAULT_ESTIMATOR  # counts the prompts' tokens

    @classmethod
    def of(cls, rules: Sequence[str] = ("default",), compare: Sequence[str] = (), price: str | Price = "anthropic",
           cache_expiry: bool = False, format: str | None = None, estimator: str = DEFAULT_ESTIMATOR) -> Replays:
        known = registry().estimators
        if estimator not in known:
            raise InputError(f"--estimator {estimator!r}: unknown; allowed: {', '.join(sorted(known))}")
        if (why := known[estimator].missing()) is not None:
            raise InputError(f"--estimator {estimator!r} {why}")
        profile = parse_price(price) if isinstance(price, str) else price
        if cache_expiry and profile.lifetime is None:
            raise InputError(f"--cache-expiry: the price {profile.name!r} has no cache lifetime; "
                             "give one as CACHED,UNCACHED,LIFETIME or use a profile")
        primary = tuple(rules or ("default",))  # as in apply: the bundled default unless -r says otherwise
        sets = [("none", None), (" + ".join(primary), tuple(RuleSource.read(r) for r in primary))]
        sets += [(name, (RuleSource.read(name),)) for name in compare]
        return cls(tuple(sets), profile, cache_expiry, format, estimator)

    @property
    def sources(self) -> tuple[RuleSource, ...]:
        return tuple(source for _, passes in self.sets for source in passes or ())

    def compute(self, conversation: Conversation, fmt: str | None = None) -> Replayed:
        fmt = fmt or self.format or conversation.format
        messages = conversation.messages
        cold = None
        if self.cache_expiry:
            cold = cold_rounds(conversation.timestamps, round_starts(messages, fmt), self.price.lifetime)
        sets = [(label, None if passes is None else [p.load() for p in passes]) for label, passes in self.sets]
        results = replays(messages, fmt, sets, self.price, cold, registry().estimators[self.estimator])
        billed = bill(results[0], conversation.usage, round_starts(messages, fmt))  # results[0]: no compaction
        rows = [ReplayRow.of(conversation.name, r, cold, billed if r is results[0] else None) for r in results]
        return Replayed(tuple(rows), tuple(results), conversation.timestamps is not None)

    def records(self, result: Replayed) -> list[dict]:
        return [row.to_dict() for row in result.rows]


@dataclass(frozen=True)
class Diff(Task):
    """``diff``: a :class:`~rules_compact.rows.DiffRow` per conversation, ``old`` against ``new``."""

    old: RuleSource
    new: RuleSource
    price: Price
    format: str | None = None

    @classmethod
    def of(cls, old: str, new: str, price: str | Price = "anthropic", format: str | None = None) -> Diff:
        old_rules, new_rules = RuleSource.read(old), RuleSource.read(new)
        return cls(old_rules, new_rules, parse_price(price) if isinstance(price, str) else price, format)

    @property
    def sources(self) -> tuple[RuleSource, ...]:
        return self.old, self.new

    def compute(self, conversation: Conversation, fmt: str | None = None) -> DiffRow:
        return diff_row(conversation.name, conversation.messages, fmt or self.format or conversation.format,
                        self.old.load(), self.new.load(), self.price)

"""Cache-aware replay: what a rule set costs over a whole conversation, round by round.

Each round's prompt is the history up to a model response, compacted with the rules. A
provider serves from cache the longest prefix identical to the previous round's prompt; the
rest is written anew. Cost weighs the two with the provider's prices (a price profile). The
cache never expires unless asked: :func:`cold_rounds` names the rounds that came more than the
profile's cache lifetime after the previous one, and :meth:`Replay.expire` empties the cache
there. Each round also counts the references of its recorded response that the compacted
prompt still shows (:mod:`rules_compact.recall`), and the cleared results its response
re-fetches (:mod:`rules_compact.regret`).

:class:`StepSchedules` gives the cost of any step schedule of a rule file's content rules, and
the cheapest one (the clairvoyant bound: every boundary chosen knowing the whole future).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

from .engine.interpreter import Input, pay_back_walk, step_boundary
from .errors import InputError
from .formats import FORMATS, Format, detect_format
from .incremental import Compactor
from .kinds.estimators import ESTIMATORS, Estimator
from .language.model import RuleSet
from .limits import MAX_PRICE
from .recall import References
from .regret import Refetches

__all__ = ["Price", "PRICES", "PRICE_HELP", "Replay", "replay", "parse_price", "round_starts", "round_tokens",
           "cold_rounds", "BilledRound", "Bill", "bill", "StepSchedules", "step_schedule"]


@dataclass(frozen=True)
class Price:
    """Cost of one token relative to an uncached, uncompacted base price of 1, and how long
    (seconds) a cache entry lives after its last use (None: for ever); ``source``: where a
    profile's numbers come from."""

    name: str
    cached: float
    uncached: float
    lifetime: float | None = None
    source: str = ""


ANTHROPIC_CACHING = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
OPENAI_CACHING = "https://developers.openai.com/api/docs/guides/prompt-caching"

#: The price profiles: a prompt's tokens not read from cache are written to it (Anthropic, up to
#: the request's last breakpoint; OpenAI GPT-5.6+, up to its implicit breakpoint at the newest
#: message), so ``uncached`` is the write price.
PRICES = {
    "anthropic": Price("anthropic", 0.1, 1.25, 300.0,
                       f"{ANTHROPIC_CACHING}: cache reads 0.1x the base input price, 5-minute cache writes 1.25x"),
    "anthropic-1h": Price("anthropic-1h", 0.1, 2.0, 3600.0,
                          f"{ANTHROPIC_CACHING}: cache reads 0.1x, 1-hour cache writes (ttl 1h) 2x"),
    "openai": Price("openai", 0.1, 1.25, 1800.0,
                    f"{OPENAI_CACHING}: GPT-5.6 and later, cache writes 1.25x the uncached input rate; cached "
                    "input 0.1x; prompt_cache_options.ttl 30m, the default and a minimum lifetime"),
    "openai-legacy": Price("openai-legacy", 0.1, 1.0, 300.0,
                           f"{OPENAI_CACHING}: models before GPT-5.6 (gpt-5 family: cached input 0.1x), cache "
                           "writes free; in-memory retention clears a cache after 5 to 10 minutes idle"),
}

#: The profiles as ``--price`` help lists them.
PRICE_HELP = ("anthropic (cached 0.1, uncached 1.25, 5-minute cache; the default), anthropic-1h (0.1, 2.0, 1 hour), "
              "openai (GPT-5.6 and later: 0.1, 1.25, 30 minutes), openai-legacy (older OpenAI models: 0.1, 1.0, "
              "5 minutes)")

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([smh]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}


def parse_price(text: str) -> Price:
    """A profile name (``anthropic``, ``anthropic-1h``, ``openai``, ``openai-legacy``) or ``CACHED,UNCACHED[,LIFETIME]``,
    e.g. ``0.1,1.25`` or ``0.1,1.25,5m`` (LIFETIME in seconds, or with ``s``, ``m`` or ``h``)."""
    if text in PRICES:
        return PRICES[text]
    parts = [p.strip() for p in text.split(",")]
    try:
        if len(parts) not in (2, 3):
            raise ValueError
        cached, uncached = float(parts[0]), float(parts[1])
        if not all(0 <= v <= MAX_PRICE for v in (cached, uncached)):  # NaN fails both
            raise ValueError
        lifetime = None
        if len(parts) == 3:
            match = _DURATION.fullmatch(parts[2])
            lifetime = float(match[1]) * _UNIT_SECONDS[match[2]] if match else 0.0
            if not 0 < lifetime < math.inf:
                raise ValueError
    except ValueError:
        raise InputError(f"--price {text!r}: expected {', '.join(PRICES)} or CACHED,UNCACHED[,LIFETIME] "
                         f"such as 0.1,1.25 or 0.1,1.25,5m, prices from 0 to {MAX_PRICE:g}") from None
    return Price(text, cached, uncached, lifetime)


@dataclass(frozen=True)
class Replay:
    """Totals of one rule set over one conversation, and per round the references of the
    recorded response (``referenced``) and how many of them the prompt still shows (``kept``);
    ``recoverable``: per round, those it shows or names in a saved result (:mod:`rules_compact.recall`);
    ``cleared``: the results some round's prompt showed cleared, ``refetched``: of them, those
    whose call a response made again while they were hidden (:mod:`rules_compact.regret`)."""

    label: str
    prompt_tokens: tuple[int, ...]  # per round
    cached_tokens: tuple[int, ...]  # per round
    price: Price
    referenced: tuple[int, ...] = ()  # per round
    kept: tuple[int, ...] = ()  # per round
    cleared: int = 0
    refetched: int = 0
    recoverable: tuple[int, ...] = ()  # per round

    @property
    def rounds(self) -> int:
        return len(self.prompt_tokens)

    @property
    def total_prompt(self) -> int:
        return sum(self.prompt_tokens)

    @property
    def total_cached(self) -> int:
        return sum(self.cached_tokens)

    @property
    def cost(self) -> float:
        cached, total = self.total_cached, self.total_prompt
        return self.price.cached * cached + self.price.uncached * (total - cached)

    @property
    def recall(self) -> float:
        """Kept references over all references; 1.0 when there are none."""
        total = sum(self.referenced)
        return sum(self.kept) / total if total else 1.0

    @property
    def recoverable_recall(self) -> float:
        """Recoverable references (kept, or in a result a placeholder names) over all; 1.0 when none."""
        total = sum(self.referenced)
        return sum(self.recoverable) / total if total else 1.0

    @property
    def regret(self) -> float:
        """Re-fetch regret: refetched over cleared results; 0.0 when none was cleared."""
        return self.refetched / self.cleared if self.cleared else 0.0

    def expire(self, cold: Sequence[bool]) -> Replay:
        """This replay with nothing read from cache at the ``cold`` rounds (:func:`cold_rounds`)."""
        return replace(self, cached_tokens=tuple(0 if c else hit for hit, c in zip(self.cached_tokens, cold)))


@dataclass(frozen=True)
class BilledRound:
    """One round's estimate beside what its log says was billed for it (``readers.Usage``)."""

    round: int  # from 0
    estimated_tokens: int
    estimated_cached: int
    billed_tokens: int
    billed_cache_read: int
    billed_cache_write: int


@dataclass(frozen=True)
class Bill:
    """A replay's estimate beside the bill, over the rounds whose usage the log records; costs
    weigh both with the replay's price (cache writes and uncached input at its uncached price)."""

    rounds: tuple[BilledRound, ...]
    of_rounds: int  # the replay's rounds, billed or not
    price: Price

    @property
    def estimated_tokens(self) -> int:
        return sum(r.estimated_tokens for r in self.rounds)

    @property
    def billed_tokens(self) -> int:
        return sum(r.billed_tokens for r in self.rounds)

    @property
    def estimated_cost(self) -> float:
        cached = sum(r.estimated_cached for r in self.rounds)
        return self.price.cached * cached + self.price.uncached * (self.estimated_tokens - cached)

    @property
    def billed_cost(self) -> float:
        cached = sum(r.billed_cache_read for r in self.rounds)
        return self.price.cached * cached + self.price.uncached * (self.billed_tokens - cached)

    @property
    def cost_error(self) -> float:
        """The estimated cost over the billed one, less 1 (0.0 when nothing was billed)."""
        return self.estimated_cost / self.billed_cost - 1 if self.billed_cost else 0.0

    @property
    def unseen_tokens(self) -> int:
        """What the first billed round was billed beyond its estimate: the system prompt and
        tool definitions, which a log does not record (0 when the estimate is larger)."""
        first = self.rounds[0]
        return max(first.billed_tokens - first.estimated_tokens, 0)

    @property
    def estimated_cost_with_unseen(self) -> float:
        """The estimated cost with the unseen tokens at the front of every round's prompt:
        written in the first billed round, read from cache after it."""
        unseen = self.unseen_tokens
        return self.estimated_cost + unseen * (self.price.uncached + self.price.cached * (len(self.rounds) - 1))

    @property
    def cost_error_with_unseen(self) -> float:
        return self.estimated_cost_with_unseen / self.billed_cost - 1 if self.billed_cost else 0.0

    def to_dict(self) -> dict:
        return {"rounds": [asdict(r) for r in self.rounds], "of_rounds": self.of_rounds,
                "estimated_tokens": self.estimated_tokens, "billed_tokens": self.billed_tokens,
                "billed_cache_read": sum(r.billed_cache_read for r in self.rounds),
                "billed_cache_write": sum(r.billed_cache_write for r in self.rounds),
                "estimated_cost": self.estimated_cost, "billed_cost": self.billed_cost, "cost_error": self.cost_error,
                "unseen_tokens": self.unseen_tokens, "estimated_cost_with_unseen": self.estimated_cost_with_unseen,
                "cost_error_with_unseen": self.cost_error_with_unseen}


def bill(result: Replay, usage: Sequence[Any] | None, starts: Sequence[int]) -> Bill | None:
    """``result`` (a replay of no compaction) beside ``usage`` (``Conversation.usage``: per
    message, the billed usage of the response starting there); None when the log has none."""
    if usage is None:
        return None
    rounds = tuple(BilledRound(k, result.prompt_tokens[k], result.cached_tokens[k], u.prompt, u.cache_read,
                               u.cache_write)
                   for k, start in enumerate(starts) if (u := usage[start]) is not None)
    return Bill(rounds, result.rounds, result.price) if rounds else None


def round_starts(messages: list, fmt: str | None = None) -> list[int]:
    """Where each round's prompt ends: before every model response (see ``Format.response_starts``)."""
    return FORMATS[fmt or detect_format(messages)].response_starts(messages)


def round_tokens(prompt: list, previous: list, tokens) -> tuple[int, int]:
    """A round's prompt tokens, and those in the longest prefix identical to the previous prompt."""
    common = 0
    for a, b in zip(prompt, previous):
        if a is not b and a != b:
            break
        common += 1
    sizes = [tokens(m) for m in prompt]
    return sum(sizes), sum(sizes[:common])


def cold_rounds(timestamps: Sequence[float | None] | None, starts: Sequence[int],
                lifetime: float | None) -> tuple[bool, ...]:
    """Per round, whether it came more than ``lifetime`` seconds after the previous round (its
    cache has expired). A round's time is its recorded response's (``timestamps[start]``); a
    round or a previous round without a time, or no lifetime, is never cold."""
    if timestamps is None or lifetime is None:
        return (False,) * len(starts)
    times = [timestamps[s] for s in starts]
    return (False,) + tuple(a is not None and b is not None and b - a > lifetime for a, b in zip(times, times[1:]))


class _Tokens:
    """Estimated tokens of a message, remembered by identity (the message is kept alive)."""

    def __init__(self, fmt: Format, estimator: Estimator | None):
        self.fmt, self.estimate = fmt, estimator or ESTIMATORS["chars4"]
        self._memo: dict[int, tuple[Any, int]] = {}

    def __call__(self, msg: Any) -> int:
        entry = self._memo.get(id(msg))
        if entry is None:
            entry = self._memo[id(msg)] = (msg, self.estimate.of_message(msg, self.fmt.message_pieces(msg)))
        return entry[1]


def replay(messages: list, rulesets: Sequence[RuleSet] | None, fmt: str, price: Price,
           label: str = "none", estimator: Estimator | None = None,
           references: References | None = None, refetches: Refetches | None = None) -> Replay:
    """Replay ``messages`` round by round with ``rulesets`` (None: no compaction).

    ``references``, ``refetches``: the conversation's (built here when not given; pass them to
    replay several rule sets on the same conversation)."""
    form: Format = FORMATS[fmt]
    tokens = _Tokens(form, estimator)
    starts = round_starts(messages, fmt)
    refs = references or References(messages, form, starts)
    fetches = (refetches or Refetches(messages, form, starts)) if rulesets else None
    prompts, cached, kept, recoverable = [], [], [], []
    cleared: set[int] = set()
    refetched: set[int] = set()
    previous: list = []
    # the rounds share their messages and nothing edits them: identity is proof enough
    compactor = Compactor(list(rulesets), format=fmt, verify=False) if rulesets else None
    for k, end in enumerate(starts):
        prompt = compactor(messages[:end]).messages if compactor else messages[:end]
        total, hit = round_tokens(prompt, previous, tokens)
        prompts.append(total)
        cached.append(hit)
        shown = refs.shown(k, prompt) if compactor else (len(refs.rounds[k]),) * 2
        kept.append(shown[0])
        recoverable.append(shown[1])
        if fetches:
            hidden, again = fetches.observe(k, prompt)
            cleared |= hidden
            refetched |= again
        previous = prompt
    return Replay(label, tuple(prompts), tuple(cached), price, tuple(len(r) for r in refs.rounds), tuple(kept),
                  len(cleared), len(refetched), tuple(recoverable))


def step_schedule(messages: list, ruleset: RuleSet, fmt: str) -> tuple[int, ...]:
    """Per round, the boundary the rule file's own step puts there (the prompt end without a step)."""
    form = FORMATS[fmt]
    starts = round_starts(messages, fmt)
    if ruleset.step is None:
        return tuple(starts)
    given = Input(messages, form, ruleset)  # each round's history is a prefix: measure the messages once
    if ruleset.step.pay_back is not None:  # the walk over the whole history passes every round's prompt end
        walk = pay_back_walk(ruleset, given)
        at = dict(zip(walk.ends, walk.boundaries))
        return tuple(at[end] for end in starts)
    results, tokens = given.results(), (given.tokens() if ruleset.step.unit == "tokens" else None)
    return tuple(step_boundary(ruleset.step, lambda: results[:end], lambda: tokens[:end], end) for end in starts)


def _common_prefix(a: tuple, b: tuple, n: int) -> int:
    """How many of the first ``n`` entries of ``a`` and ``b`` agree before the first difference."""
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


class StepSchedules:
    """Every step schedule of one rule file's content rules on one conversation, and its cost.

    The *content rules* are the rule file without its step. A *step schedule* picks for each
    round a boundary: a candidate (0, the end of any message holding a tool result, or a
    round's prompt end), no earlier than the previous round's and no later than this round's
    prompt end. The round's prompt is then the content rules' compaction of the messages before
    the boundary, followed by the rest as it is: what the engine sends when a step puts the
    boundary there. Costs use :func:`replay`'s cache model (longest identical message prefix).

    Built once per conversation: the content rules' compaction of every candidate prefix
    (``B`` compactions), every message variant interned by position. :meth:`cheapest` is a
    dynamic programme over rounds x candidates, ``O(R * B^2)`` steps for ``R`` rounds.
    """

    def __init__(self, messages: list, ruleset: RuleSet, fmt: str, estimator: Estimator | None = None,
                 only: Sequence[int] | None = None):
        """``only``: consider these boundaries only (they must be candidates), e.g. one schedule's."""
        self.messages, self.fmt = messages, fmt
        self.content = replace(ruleset, step=None)
        self.starts = round_starts(messages, fmt)
        form = FORMATS[fmt]
        tokens = _Tokens(form, estimator)
        last = self.starts[-1] if self.starts else 0
        after_results = {i + 1 for i, m in enumerate(messages) if form.result_count(m)}
        self.candidates = sorted(b for b in {0} | after_results | set(self.starts) if b <= last)
        if only is not None:
            if not set(only) <= set(self.candidates):
                raise ValueError(f"not candidates: {sorted(set(only) - set(self.candidates))}")
            self.candidates = sorted(set(only))
        self.slot = {b: j for j, b in enumerate(self.candidates)}
        variants: list[list] = [[m] for m in messages]  # per position: the distinct messages seen there
        self.decided: list[list] = []  # per candidate: the compacted messages before it
        self._codes: list[tuple[int, ...]] = []  # per candidate: the variant at each position before it
        compactor = Compactor([self.content], format=fmt, verify=False)
        for b in self.candidates:
            decided = compactor(messages[:b]).messages if b else []
            if len(decided) != b:
                raise ValueError(f"the rules changed the number of messages ({b} -> {len(decided)})")
            self.decided.append(decided)
            self._codes.append(tuple(self._intern(variants[i], m) for i, m in enumerate(decided)))
        raw = [0]
        for m in messages:
            raw.append(raw[-1] + tokens(m))
        self._prefix: list[list[int]] = []  # per candidate: tokens of its first j messages, j = 0..n
        self._moved: list[list[int]] = []  # per candidate: first position >= j whose message changed
        for b, codes in zip(self.candidates, self._codes):
            sums = [0]
            for i, code in enumerate(codes):
                sums.append(sums[-1] + tokens(variants[i][code]))
            shift = sums[-1] - raw[b]
            sums += [raw[j] + shift for j in range(b + 1, len(messages) + 1)]
            self._prefix.append(sums)
            moved = [b] * (b + 1)
            for i in range(b - 1, -1, -1):
                moved[i] = i if codes[i] else moved[i + 1]
            self._moved.append(moved)
        self._rows: dict[int, list[int]] = {}

    @staticmethod
    def _intern(seen: list, msg: Any) -> int:
        for code, known in enumerate(seen):
            if known is msg or known == msg:
                return code
        seen.append(msg)
        return len(seen) - 1

    def _common(self, earlier: int, later: int) -> int:
        """Messages the prompts of two candidates (``earlier`` <= ``later``, as slots) share
        before their first difference (``len(messages)`` when they never differ)."""
        if earlier == later:
            return len(self.messages)
        b = self.candidates[earlier]
        same = _common_prefix(self._codes[earlier], self._codes[later], b)
        if same == b:  # the earlier prompt has the raw messages from b on
            same = self._moved[later][b]
            if same == self.candidates[later]:
                same = len(self.messages)
        return same

    def replay(self, boundaries: Sequence[int], price: Price, label: str = "schedule",
               references: References | None = None, refetches: Refetches | None = None) -> Replay:
        """The replay of the schedule putting round k's boundary at ``boundaries[k]``."""
        if len(boundaries) != len(self.starts):
            raise ValueError(f"{len(boundaries)} boundaries for {len(self.starts)} rounds")
        refs = references or References(self.messages, FORMATS[self.fmt], self.starts)
        fetches = refetches or Refetches(self.messages, FORMATS[self.fmt], self.starts)
        prompts, cached, kept, recoverable = [], [], [], []
        cleared: set[int] = set()
        refetched: set[int] = set()
        previous = None
        for k, (b, end) in enumerate(zip(boundaries, self.starts)):
            slot = self.slot.get(b)
            if slot is None or b > end or (previous is not None and slot < previous):
                raise ValueError(f"round {k}: boundary {b} is not a candidate in order at or before {end}")
            sums = self._prefix[slot]
            prompts.append(sums[end])
            hit = 0 if previous is None else sums[min(self._row(slot)[previous], self.starts[k - 1])]
            cached.append(hit)
            prompt = self.decided[slot] + self.messages[b:end]
            shown = refs.shown(k, prompt)
            kept.append(shown[0])
            recoverable.append(shown[1])
            hidden, again = fetches.observe(k, prompt)
            cleared |= hidden
            refetched |= again
            previous = slot
        return Replay(label, tuple(prompts), tuple(cached), price, tuple(len(r) for r in refs.rounds), tuple(kept),
                      len(cleared), len(refetched), tuple(recoverable))

    def cheapest(self, price: Price, cold: Sequence[bool] | None = None) -> tuple[int, ...]:
        """The boundaries of the cheapest schedule (ties: the earliest boundaries). At the ``cold``
        rounds nothing is read from cache, whatever the boundary."""
        starts, candidates = self.starts, self.candidates
        if not starts:
            return ()
        cold = cold or (False,) * len(starts)
        reach = [bisect_right(candidates, end) for end in starts]  # slots allowed at each round: < reach
        saving = price.uncached - price.cached  # what a cached token saves
        cost = [price.uncached * self._prefix[j][starts[0]] for j in range(reach[0])]
        back: list[list[int]] = []
        for k in range(1, len(starts)):
            end, before = starts[k], starts[k - 1]
            new, came = [], []
            for j in range(reach[k]):
                sums, row = self._prefix[j], self._row(j)
                options = range(min(j + 1, reach[k - 1]))
                if cold[k]:
                    best_from = min(options, key=cost.__getitem__)
                    best = cost[best_from]
                else:
                    best, best_from = math.inf, -1
                    for i in options:
                        c = cost[i] - saving * sums[min(row[i], before)]
                        if c < best:
                            best, best_from = c, i
                new.append(best + price.uncached * sums[end])
                came.append(best_from)
            cost = new
            back.append(came)
        slot = min(range(len(cost)), key=cost.__getitem__)
        path = [slot]
        for came in reversed(back):
            slot = came[slot]
            path.append(slot)
        return tuple(candidates[j] for j in reversed(path))

    def _row(self, later: int) -> list[int]:
        """``_common(i, later)`` for every slot ``i <= later``."""
        row = self._rows.get(later)
        if row is None:
            row = self._rows[later] = [self._common(i, later) for i in range(later + 1)]
        return row

"""Cache-aware replay: what a rule set costs over a whole conversation, round by round.

Each round's prompt is the history up to a model response, compacted with the rules. A
provider serves from cache the longest prefix identical to the previous round's prompt; the
rest is written anew. Cost weighs the two with the provider's prices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .incremental import Compactor
from .errors import InputError
from .kinds.estimators import ESTIMATORS, Estimator
from .formats import FORMATS, Format, detect_format
from .language.model import RuleSet

__all__ = ["Price", "PRICES", "Replay", "replay", "parse_price"]


@dataclass(frozen=True)
class Price:
    """Cost of one token relative to an uncached, uncompacted base price of 1."""

    name: str
    cached: float
    uncached: float


PRICES = {
    "anthropic": Price("anthropic", 0.1, 1.25),  # cache read 0.1x, cache write 1.25x
    "openai": Price("openai", 0.5, 1.0),  # cached input at half price, no write premium
}


def parse_price(text: str) -> Price:
    """``anthropic``, ``openai``, or ``CACHED,UNCACHED`` (e.g. ``0.1,1.25``)."""
    if text in PRICES:
        return PRICES[text]
    try:
        cached, uncached = (float(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"--price {text!r}: expected anthropic, openai or CACHED,UNCACHED such as 0.1,1.25") from None
    return Price(text, cached, uncached)


@dataclass(frozen=True)
class Replay:
    """Totals of one rule set over one conversation."""

    label: str
    prompt_tokens: tuple[int, ...]  # per round
    cached_tokens: tuple[int, ...]  # per round
    price: Price

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


def replay(messages: list, rulesets: Sequence[RuleSet] | None, fmt: str, price: Price,
           label: str = "none", estimator: Estimator | None = None) -> Replay:
    """Replay ``messages`` round by round with ``rulesets`` (None: no compaction)."""
    form: Format = FORMATS[fmt]
    estimate = estimator or ESTIMATORS["chars4"]
    memo: dict[int, int] = {}

    def tokens(msg) -> int:
        key = id(msg)
        if key not in memo:
            memo[key] = estimate.of_message(msg, form.message_pieces(msg))
        return memo[key]

    prompts, cached = [], []
    previous: list = []
    keep_alive = []  # messages whose ids are memoised must outlive the memo
    # the rounds share their messages and nothing edits them: identity is proof enough
    compactor = Compactor(list(rulesets), format=fmt, verify=False) if rulesets else None
    for end in round_starts(messages, fmt):
        prompt = compactor(messages[:end]).messages if compactor else messages[:end]
        keep_alive.append(prompt)
        total, hit = round_tokens(prompt, previous, tokens)
        prompts.append(total)
        cached.append(hit)
        previous = prompt
    return Replay(label, tuple(prompts), tuple(cached), price)

"""A read-only analysis of one message list, shared by all matchers of one pass."""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Callable

import jmespath.exceptions

from .errors import InputError
from .formats import Format, Item
from .jsontext import dumps_data

if TYPE_CHECKING:
    from .model import RuleSet

Predicate = Callable[[Item, "View"], bool]


@dataclass(frozen=True)
class Sizes:
    """Per message, before a pass: estimated tokens and characters; the message index of every
    tool result, in order; and the token and character totals."""

    tokens: list[int]
    chars: list[int]
    results: list[int]
    total_tokens: int = -1  # -1: summed when made
    total_chars: int = -1

    def __post_init__(self):
        if self.total_tokens < 0:
            object.__setattr__(self, "total_tokens", sum(self.tokens))
            object.__setattr__(self, "total_chars", sum(self.chars))

    @classmethod
    def of(cls, messages: list, fmt: Format, ruleset: RuleSet, offset: int = 0) -> Sizes:
        """The sizes of ``messages``, the first of which is message ``offset`` (for errors)."""
        estimate, pieces_of, count = ruleset.estimator, fmt.message_pieces, fmt.result_count
        tokens, chars, results = [], [], []
        for i, msg in enumerate(messages):
            try:
                pieces = list(pieces_of(msg))
            except InputError as exc:
                raise InputError(f"message {i + offset}: {exc}") from None
            tokens.append(estimate.of_message(msg, pieces))
            chars.append(sum(map(len, pieces)))
            results.extend([i] * count(msg))
        return cls(tokens, chars, results)

    def head(self, count: int) -> Sizes:
        """The sizes of the first ``count`` messages."""
        if count == len(self.tokens):
            return self
        return Sizes(self.tokens[:count], self.chars[:count], self.results[:bisect_left(self.results, count)])

    def __add__(self, other: Sizes) -> Sizes:
        """The sizes of two consecutive runs of messages (``other``'s indices are shifted)."""
        offset = len(self.tokens)
        return Sizes(self.tokens + other.tokens, self.chars + other.chars,
                     self.results + [i + offset for i in other.results],
                     self.total_tokens + other.total_tokens, self.total_chars + other.total_chars)


class View:
    """Items, spans, user turns, token estimates and memoised ages of a message list."""

    def __init__(self, messages: list, fmt: Format, ruleset: RuleSet, sizes: Sizes | None = None,
                 offset: int = 0, item_offset: int = 0, user_turn_before: bool = False):
        """``offset`` and ``item_offset``: how many messages and items precede ``messages`` in
        the conversation (when a pass resumes); ``user_turn_before``: whether they hold a user turn."""
        self.messages = messages
        self.offset, self.item_offset, self.user_turn_before = offset, item_offset, user_turn_before
        self.fmt = fmt
        self.ruleset = ruleset
        self.estimate = ruleset.estimator
        self._ages: dict[tuple, list[int]] = {}
        self._memo: dict[tuple, Any] = {}
        self._item_tokens: dict[int, int] = {}
        self._message_tokens: list[int] | None = sizes.tokens if sizes else None
        self._message_chars: list[int] | None = sizes.chars if sizes else None
        self._errors: dict[int, bool] = {}
        self._roots: dict[int, dict] = {}

    @cached_property
    def _scan(self):
        return self.fmt.scan(self.messages)

    @property
    def items(self) -> tuple[Item, ...]:
        return self._scan.items

    @property
    def user_turns(self) -> tuple[int, ...]:
        return self._scan.user_turns

    @property
    def span_starts(self) -> tuple[int, ...]:
        return self._scan.span_starts

    @property
    def last_assistant(self) -> int | None:
        return self._scan.last_assistant

    # -- sizes -------------------------------------------------------------
    def tokens_of_message(self, msg: Any) -> int:
        return self.estimate.of_message(msg, self.fmt.message_pieces(msg))

    def measure(self, msg: Any) -> tuple[int, int]:
        """Estimated tokens and characters the model sees in one message."""
        pieces = list(self.fmt.message_pieces(msg))
        return self.estimate.of_message(msg, pieces), sum(map(len, pieces))

    def _measure_all(self) -> None:
        sizes = [self.measure(m) for m in self.messages]
        self._message_tokens = [t for t, _ in sizes]
        self._message_chars = [c for _, c in sizes]

    @property
    def message_tokens(self) -> list[int]:
        if self._message_tokens is None:
            self._measure_all()
        return self._message_tokens

    @property
    def message_chars(self) -> list[int]:
        if self._message_chars is None:
            self._measure_all()
        return self._message_chars

    @property
    def total_tokens(self) -> int:
        return sum(self.message_tokens)

    def item_tokens(self, item: Item) -> int:
        tokens = self._item_tokens.get(item.index)
        if tokens is None:
            if item.kind == "assistant":
                tokens = self.message_tokens[item.msg_index]
            else:
                tokens = self.estimate(item.text) if item.text else 0
            self._item_tokens[item.index] = tokens
        return tokens

    @property
    def tool_results(self) -> int:
        return sum(1 for it in self.items if it.kind == "tool_result")

    # -- facts about items ---------------------------------------------------
    def is_error(self, item: Item) -> bool:
        """The format's error flag, or the rule set's ``error_when`` matcher."""
        if item.kind != "tool_result":
            return False
        cached = self._errors.get(item.index)
        if cached is None:
            error_when = self.ruleset.error_when
            if error_when is None or item.is_error:
                cached = item.is_error
            else:
                self._errors[item.index] = False  # inside error_when (a where reads item.is_error): the flag
                cached = error_when(item, self)
            self._errors[item.index] = cached
        return cached

    def tool_spec(self, name: str | None):
        return self.ruleset.tools.lookup(name)

    def superseded(self, key) -> frozenset[int]:
        """Indices of results whose call a later call repeats: same tool, and the same
        arguments (``key`` None) or the same value of the JMESPath ``key`` in them."""
        found = self._memo.get(("superseded", key))
        if found is None:
            later: set[tuple] = set()
            hits: set[int] = set()
            for it in reversed(self.items):
                if it.kind == "assistant":
                    later.update(signature(name, call, key) for _, name, call in self.turn_calls(it))
                    later.discard(None)
                elif it.call is not None and signature(it.tool_name, it.call, key) in later:
                    hits.add(it.index)
            found = self._memo[("superseded", key)] = frozenset(hits)
        return found

    def turn_calls(self, item: Item) -> list[tuple[int, str | None, dict]]:
        """An assistant turn's calls as ``(message index, tool name, raw call)``: in its own
        message (OpenAI, Anthropic), or in items of their own (Responses)."""
        calls_of = self._scan.calls
        calls = self._memo.get(("calls",))
        if calls is None:
            calls = self._memo[("calls",)] = {}
            for i, message_calls in enumerate(calls_of):
                for cid, name, call in message_calls:
                    calls.setdefault(cid, (i, name, call))
        own = calls_of[item.msg_index]
        own_ids = {cid for cid, _, _ in own}
        return ([(item.msg_index, name, call) for _, name, call in own]
                + [calls[cid] for cid in item.call_ids if cid not in own_ids and cid in calls])

    def in_tail(self, item: Item) -> bool:
        return item.msg_index >= self.user_turns[-1] if self.user_turns else self.user_turn_before

    def jmespath_root(self, item: Item) -> dict:
        """The document a ``where`` expression sees: ``{item, message, call, args}``."""
        root = self._roots.get(item.index)
        if root is None:
            root = {
                "item": {
                    "kind": item.kind, "role": item.role, "index": item.index + self.item_offset,
                    "message_index": item.msg_index + self.offset, "tool_name": item.tool_name,
                    "tool_call_id": item.tool_call_id, "tool_names": list(item.call_names),
                    "text": item.text, "chars": len(item.text), "tokens": self.item_tokens(item),
                    "is_error": self.is_error(item), "orphan": item.orphan,
                },
                "message": self.messages[item.msg_index],
                "call": item.call,
                "args": decode_args(item.call),
            }
            self._roots[item.index] = root
        return root

    # -- ages ----------------------------------------------------------------
    def age(self, item: Item, unit: str, among: Predicate | None, include_self: bool) -> int:
        key = (unit, among, include_self)
        ages = self._ages.get(key)
        if ages is None:
            ages = self._ages[key] = self._compute_ages(unit, among, include_self)
        return ages[item.index]

    def _turn_start(self, item: Item) -> int | None:
        return _turn_start_index(self.user_turns, item.msg_index)

    def _call_ages(self, include_self: bool) -> list[int]:
        """Calls newer than the item's own call (its last one, for a turn), in call order."""
        order: dict[str, int] = {}  # a call id's position among all calls
        per_message = [0] * (len(self.messages) + 1)
        seen = 0
        for it in self.items:
            if it.kind == "assistant":
                for cid in it.call_ids:
                    order.setdefault(cid, seen)
                    seen += 1
                per_message[it.msg_index + 1] += len(it.call_ids)
        through = list(accumulate(per_message))  # calls in messages up to each index
        count = through[-1]
        own = 1 if include_self else 0
        ages = []
        for it in self.items:
            if it.kind == "tool_result" and it.tool_call_id in order:
                ages.append(count - 1 - order[it.tool_call_id] + own)
            else:
                ages.append(count - through[it.msg_index + 1] + (own if it.call_ids else 0))
        return ages

    def _compute_ages(self, unit: str, among: Predicate | None, include_self: bool) -> list[int]:
        items = self.items
        counted = [among is None or among(it, self) for it in items]
        if unit == "messages":
            last = len(self.messages) - 1
            return [last - it.msg_index + (1 if include_self else 0) for it in items]
        if unit == "user_turns":
            turns = self.user_turns
            if among is not None:
                turns = sorted({self._turn_start(it) for it, c in zip(items, counted) if c} - {None})
            per_message = _suffix_after(len(self.messages), turns)
            return [per_message[it.msg_index] + (1 if include_self and among is not None and c else 0)
                    for it, c in zip(items, counted)]
        if unit == "tool_calls":
            return self._call_ages(include_self)
        if unit == "tool_results":
            weights = [1 if c and it.kind == "tool_result" else 0 for it, c in zip(items, counted)]
            return _ages_by_item(weights, include_self)
        if unit == "tokens":
            if among is None:
                after = _suffix_sums(self.message_tokens)
                later_blocks = _later_in_message(items, [self.item_tokens(it) for it in items])
                return [after[it.msg_index + 1] + later + (self.item_tokens(it) if include_self else 0)
                        for it, later in zip(items, later_blocks)]
            weights = [self.item_tokens(it) if c else 0 for it, c in zip(items, counted)]
            return _ages_by_item(weights, include_self)
        if unit == "spans":
            span_counted = [False] * len(self.span_starts)
            for it, c in zip(items, counted):
                if c and it.span is not None:
                    span_counted[it.span] = True
            starts = [s for s, c in zip(self.span_starts, span_counted) if c]
            after = _suffix_after(len(self.messages), starts)
            ages = []
            for it in items:
                anchor = self.span_starts[it.span] if it.span is not None else it.msg_index
                own = 1 if include_self and it.span is not None and span_counted[it.span] else 0
                ages.append(after[anchor] + own)
            return ages
        raise ValueError(f"unknown age unit {unit!r}")


def _turn_start_index(user_turns: tuple[int, ...], msg_index: int) -> int | None:
    """The message index of the user turn a message belongs to, or None before the first."""
    at = bisect_right(user_turns, msg_index)
    return user_turns[at - 1] if at else None


def _suffix_sums(values: list[int]) -> list[int]:
    """``out[i]`` is the sum of ``values[i:]``; ``out[len]`` is 0."""
    out = list(accumulate(reversed(values), initial=0))
    out.reverse()
    return out


def _suffix_after(length: int, positions: tuple[int, ...] | list[int]) -> list[int]:
    """``out[i]`` is how many of ``positions`` are strictly greater than ``i``."""
    marks = [0] * (length + 1)
    for p in positions:
        marks[p] += 1
    after = _suffix_sums(marks)
    return [after[i + 1] for i in range(length)]


def _later_in_message(items, weights: list[int]) -> list[int]:
    """For each item, the weight of the items after it in the same message."""
    out = [0] * len(items)
    for i in range(len(items) - 2, -1, -1):
        if items[i + 1].msg_index == items[i].msg_index:
            out[i] = out[i + 1] + weights[i + 1]
    return out


def _ages_by_item(weights: list[int], include_self: bool) -> list[int]:
    after = _suffix_sums(weights)
    return [after[i + 1] + (weights[i] if include_self else 0) for i in range(len(weights))]


def signature(name: str | None, call: dict, key) -> tuple | None:
    """What makes two calls the same: the tool and its arguments (or one value in them)."""
    if isinstance(call, dict) and "input" not in call:
        fn = call.get("function")
        raw = fn.get("arguments") if isinstance(fn, dict) else call.get("arguments")
        if isinstance(raw, str):  # the usual case: the same text, decoded once
            return _signature_of_text(name, raw, key)
    try:
        return _signature_of(name, decode_args(call), key)
    except InputError as exc:  # data a caller built in Python
        cid = (call.get("id") or call.get("call_id")) if isinstance(call, dict) else None
        raise InputError(f"tool call {cid!r} ({name}): its arguments are {exc}") from None


@lru_cache(maxsize=8192)
def _signature_of_text(name: str | None, raw: str, key) -> tuple | None:
    try:
        args = json.loads(raw)
    except ValueError:
        args = None
    return _signature_of(name, args, key)


def _signature_of(name: str | None, args: Any, key) -> tuple | None:
    value = args if key is None else _search(key, args)
    if value is None:
        return None
    return (name, dumps_data(value, sort_keys=True))


def _search(expression, data: Any) -> Any:
    try:
        return expression.search(data)
    except jmespath.exceptions.JMESPathError:
        return None


def decode_args(call: dict | None) -> Any:
    """A call's arguments as JSON data, or None if they do not decode."""
    if not isinstance(call, dict):
        return None
    if "input" in call:
        return call["input"]
    fn = call.get("function")
    raw = fn.get("arguments") if isinstance(fn, dict) else call.get("arguments")  # Responses: top level
    if not isinstance(raw, str):
        return raw if isinstance(raw, dict) else None
    try:
        return json.loads(raw)
    except ValueError:
        return None


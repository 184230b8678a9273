"""Facts: what matchers, actions and reports read about the messages one pass decides on.

A pass looks at a run of messages: the whole list, or (in an agent loop) the part after what
earlier calls settled, up to the step boundary.  The format's scan finds the items; every
other fact is a column over the items (or the messages), computed the first time something
reads it.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import jmespath.exceptions

from ..errors import InputError
from ..formats import Format, Item, Scan, decode_args
from ..jsontext import dumps_data, loads_held
from ..lazy import lazy
from ..kinds.estimators import DEFAULT_ESTIMATOR, ESTIMATORS
from ..kinds.ages import AGE_UNITS

if TYPE_CHECKING:
    from ..language.model import RuleSet

__all__ = ["Facts", "Origin", "signature", "decode_args"]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where the facts' messages start in the conversation: how many messages and items
    precede them, and whether those hold a user turn (zero and False for a whole list)."""

    messages: int = 0
    items: int = 0
    user_turn_before: bool = False


WHOLE = Origin()
_NO_LINK = (None, None, None)


class Facts:
    """Items, turns, spans, sizes and ages of a run of messages, each computed when read.

    ``fast`` lets matchers take shortcuts that give the same answers (bisection on ages that
    never grow along the items); the tests turn it off to compare.

    Plugins see this as the ``view`` of a predicate ``(item, view)``: ``messages``, ``fmt``,
    ``ruleset``, ``estimate(text)``, ``is_error(item)``, ``tool_spec(name)`` and ``age(...)``."""

    fast = True

    def __init__(self, messages: list, fmt: Format, ruleset: RuleSet | None = None, origin: Origin = WHOLE,
                 message_sizes: tuple[list[int], list[int]] | None = None, scan: Scan | None = None):
        self.messages = messages
        self.fmt = fmt
        self.ruleset = ruleset
        self.estimate = ruleset.estimator if ruleset is not None else ESTIMATORS[DEFAULT_ESTIMATOR]
        self.origin = origin
        self.scan = scan if scan is not None else fmt.scan(messages)
        self._sizes = message_sizes
        self._memo: dict[tuple, Any] = {}
        self._items: dict[int, Item] = {}
        self._texts: list | None = None

    @classmethod
    def of(cls, messages: list, fmt: Format) -> Facts:
        return cls(messages, fmt)

    # -- the items ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.scan)

    @property
    def results(self) -> list[int]:
        return self.scan.results

    @property
    def turns(self) -> list[int]:
        return self.scan.turns

    @lazy
    def texts(self) -> list[str]:
        """Per item: its visible text (a result's content, an assistant turn's text)."""
        return self.texts_of(range(len(self.scan)))

    def text(self, item: int) -> str:
        """One item's text."""
        known = self._texts
        found = known[item] if known is not None else None
        return found if found is not None else self.texts_of((item,))[0]

    def texts_of(self, items) -> list[str]:
        """The texts of some items, in their order (each measured once per pass)."""
        known = self._texts
        if known is None:
            known = self._texts = [None] * len(self.scan)
            texts = self.fmt.item_texts(self.messages, self.scan, items)
            for i, text in zip(items, texts):
                known[i] = text
            return texts
        texts = list(map(known.__getitem__, items))
        if None in texts:
            missing = [i for i, text in zip(items, texts) if text is None]
            for i, text in zip(missing, self.fmt.item_texts(self.messages, self.scan, missing)):
                known[i] = text
            texts = list(map(known.__getitem__, items))
        return texts

    @lazy
    def links(self) -> list[tuple]:
        """Per item: ``(call, call's message index, tool name)`` of the call a result answers,
        ``(None, None, None)`` for a turn or an orphan."""
        return self._links[0]

    @lazy
    def tool_names(self) -> list:
        """Per item: the tool a result's call names, or an observation's marker names (None for a
        turn, an orphan or an observation that names none)."""
        return self._links[1]

    @lazy
    def _links(self) -> tuple[list, list]:
        call_at, call_id, none = self.scan.call_at, self.scan.call_id, _NO_LINK
        links = [none] * len(call_id)
        names = [None] * len(call_id)
        observed = self.scan.observed
        for k in self.scan.results:
            cid = call_id[k]
            if cid is not None:
                link = call_at.get(cid)
                if link is not None:
                    links[k] = link
                    names[k] = link[2]
            elif observed[k].__class__ is str:
                names[k] = observed[k]
        return links, names

    @lazy
    def observations(self) -> list[bool]:
        """Per item: a result carried in a user message (a text-action agent's observation)."""
        return [value is not False for value in self.scan.observed]

    @lazy
    def orphans(self) -> list[bool]:
        """Per item: a result that answers no call in the conversation (an observation answers none)."""
        return [not turn and link[0] is None and observed is False
                for turn, link, observed in zip(self.scan.is_turn, self.links, self.scan.observed)]

    @lazy
    def answered(self) -> set[str]:
        return {cid for cid in self.scan.call_id if cid is not None}

    @lazy
    def dangling(self) -> list[bool]:
        answered = self.answered
        return [bool(calls) and not answered.issuperset(c[0] for c in calls) for calls in self.scan.calls]

    @lazy
    def call_ids(self) -> list[tuple[str, ...]]:
        return [tuple(c[0] for c in calls) for calls in self.scan.calls]

    @lazy
    def call_names(self) -> list[tuple[str, ...]]:
        shared: dict = {}  # one tuple per distinct list of names: a long history repeats a few
        return [shared.setdefault(names, names) for names in
                (tuple(c[1] or "" for c in calls) for calls in self.scan.calls)]

    @lazy
    def errors(self) -> list[bool]:
        """Per item: a result that is an error (the format's flag, or ``error_when``)."""
        flags = list(self.scan.error_flag)
        error_when = self.ruleset.error_when if self.ruleset is not None else None
        if error_when is None:
            return flags
        self.__dict__["errors"] = flags  # inside error_when (a where reads item.is_error): the flag
        candidates = [i for i in self.scan.results if not flags[i]]
        hits = error_when.select(candidates, self) if candidates else []
        out = list(flags)
        for i in hits:
            out[i] = True
        self.__dict__["errors"] = out
        return out

    def item(self, index: int) -> Item:
        """One item as an Item record (for plugins and reports)."""
        found = self._items.get(index)
        if found is None:
            scan = self.scan
            if scan.is_turn[index]:
                found = Item(index, "assistant", scan.msg[index], None, None, None, None, None,
                             self.call_names[index], self.call_ids[index], self.texts[index], False, False,
                             self.dangling[index], scan.span[index], None, scan.thinking[index])
            else:
                call, call_msg, name = self.links[index]
                found = Item(index, "tool_result", scan.msg[index], scan.block[index], name, scan.call_id[index],
                             call, call_msg, (), (), self.texts[index], scan.error_flag[index], call is None, False,
                             scan.span[index], scan.prev_assistant[index])
            self._items[index] = found
        return found

    def all_items(self) -> tuple[Item, ...]:
        return tuple(self.item(i) for i in range(len(self.scan)))

    items = property(all_items)

    # -- sizes ----------------------------------------------------------------------
    def measure(self, msg: Any) -> tuple[int, int]:
        """Estimated tokens and characters the model sees in one message."""
        pieces = list(self.fmt.message_pieces(msg))
        return self.estimate.of_message(msg, pieces), sum(map(len, pieces))

    def _measure_all(self) -> tuple[list[int], list[int]]:
        if self._sizes is None:
            sizes = []
            for i, msg in enumerate(self.messages):
                try:
                    sizes.append(self.measure(msg))
                except InputError as exc:  # data a caller built in Python (a set in a tool input)
                    raise InputError(f"message {i + self.origin.messages}: {exc}") from None
            self._sizes = [t for t, _ in sizes], [c for _, c in sizes]
        return self._sizes

    @property
    def message_tokens(self) -> list[int]:
        return self._measure_all()[0]

    @property
    def message_chars(self) -> list[int]:
        return self._measure_all()[1]

    @property
    def total_tokens(self) -> int:
        return sum(self.message_tokens)

    @lazy
    def item_tokens(self) -> list[int]:
        estimate, msg_tokens, texts = self.estimate, None, self.texts
        out = []
        for i, turn in enumerate(self.scan.is_turn):
            if turn:
                if msg_tokens is None:
                    msg_tokens = self.message_tokens
                out.append(msg_tokens[self.scan.msg[i]])
            else:
                text = texts[i]
                out.append(estimate(text) if text else 0)
        return out

    # -- facts about items ------------------------------------------------------------
    def is_error(self, item: Item) -> bool:
        return self.errors[item.index]

    def tool_spec(self, name: str | None):
        return self.ruleset.tools.lookup(name) if self.ruleset is not None else None

    def in_tail(self, index: int) -> bool:
        user_turns = self.scan.user_turns
        return self.scan.msg[index] >= user_turns[-1] if user_turns else self.origin.user_turn_before

    def superseded(self, key) -> frozenset[int]:
        """Results whose call a later call repeats: same tool, and the same arguments (``key``
        None) or the same value of the JMESPath ``key`` in them."""
        found = self._memo.get(("superseded", key))
        if found is None:
            later: set[tuple] = set()
            hits: set[int] = set()
            scan, links = self.scan, self.links
            own = self.fmt.own_calls
            for i in range(len(scan) - 1, -1, -1):
                if scan.is_turn[i]:
                    for _, name, call in (scan.calls[i] if own else self.turn_calls(i)):
                        found = signature(name, call, key)
                        if found is not None:
                            later.add(found)
                elif later:
                    call, _, name = links[i]
                    if call is not None and signature(name, call, key) in later:
                        hits.add(i)
            found = self._memo[("superseded", key)] = frozenset(hits)
        return found

    def turn_calls(self, index: int) -> list[tuple[int, str | None, dict]]:
        """A turn's calls as ``(message index, tool name, raw call)``: in its own message
        (OpenAI, Anthropic), or in items of their own (Responses)."""
        scan = self.scan
        if self.fmt.own_calls:
            msg = scan.msg[index]
            return [(msg, name, call) for _, name, call in scan.calls[index]]
        at = self._memo.get(("calls",))
        if at is None:
            at = self._memo[("calls",)] = {}
            for i, message_calls in enumerate(scan.calls_of):
                for cid, name, call in message_calls:
                    at.setdefault(cid, (i, name, call))
        msg = scan.msg[index]
        own = scan.calls_of[msg]
        own_ids = {cid for cid, _, _ in own}
        return ([(msg, name, call) for _, name, call in own]
                + [at[cid] for cid in self.call_ids[index] if cid not in own_ids and cid in at])

    def jmespath_root(self, index: int) -> dict:
        """The document a ``where`` expression sees: ``{item, message, call, args}``, built anew
        for each search (kept for every item, the roots would outweigh the messages)."""
        scan, turn = self.scan, self.scan.is_turn[index]
        call = self.links[index][0]
        text = self.texts[index]
        return {
            "item": {
                "kind": "assistant" if turn else "tool_result", "role": "assistant" if turn else "tool",
                "index": index + self.origin.items, "message_index": scan.msg[index] + self.origin.messages,
                "tool_name": self.tool_names[index], "tool_call_id": scan.call_id[index],
                "tool_names": list(self.call_names[index]), "text": text, "chars": len(text),
                "tokens": self.item_tokens[index], "is_error": self.errors[index],
                "orphan": self.orphans[index],
            },
            "message": self.messages[scan.msg[index]],
            "call": call,
            "args": decode_args(call),
        }

    # -- ages -------------------------------------------------------------------------
    def ages(self, unit: str, among, include_self: bool) -> list[int]:
        """Per item: how many ``unit`` are newer (``among``: only those that match)."""
        key = ("age", unit, among, include_self)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = AGE_UNITS[unit].compute(self, among, include_self)
        return found

    def age(self, item: Item, unit: str, among=None, include_self: bool = False) -> int:
        return self.ages(unit, among, include_self)[item.index]

    def counted(self, among) -> list[bool]:
        """Per item: whether ``among`` holds (every item when None)."""
        if among is None:
            return [True] * len(self.scan)
        key = ("counted", among)
        found = self._memo.get(key)
        if found is None:
            hit = set(among.select(list(range(len(self.scan))), self))
            found = self._memo[key] = [i in hit for i in range(len(self.scan))]
        return found

    def turn_start(self, msg_index: int) -> int | None:
        """The message index of the user turn a message belongs to, or None before the first."""
        user_turns = self.scan.user_turns
        at = bisect_right(user_turns, msg_index)
        return user_turns[at - 1] if at else None


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
        args = loads_held(raw)
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

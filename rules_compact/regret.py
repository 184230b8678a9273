"""Re-fetch regret: how often the agent made a cleared result's call again while it was hidden.

A tool result that answers a recorded call is *cleared* in a round's compacted prompt when its
text there is not the recorded one (a placeholder, a truncation; a cache breakpoint added to it
changes no text). The round's recorded response *re-fetches* a cleared result when it makes the
result's exact call again, the same tool with the same arguments compared canonically (decoded,
keys sorted: :func:`call_key`), and the prompt shows no earlier
result of that call unhidden (with one in view, the call was not made for want of the hidden
one). Regret is the share of the results cleared in some round that were re-fetched in some
round; 0.0 when nothing was cleared.

A result whose call is not in the history (an orphan, a text-action agent's observation) is
left out: no call of it can be made again.
"""

from __future__ import annotations

from typing import Any

from .engine.facts import signature
from .formats import Format
from .jsontext import dumps_data
from .recall import response_spans

__all__ = ["Refetches", "call_key"]


def call_key(name: str | None, call: Any) -> tuple:
    """What makes two calls the same: the tool and its decoded arguments, keys sorted
    (:func:`~rules_compact.engine.facts.signature`); arguments that do not decode to a value
    compare as the call itself, its ids left out."""
    key = signature(name, call, None)
    if key is None:
        rest = {k: v for k, v in call.items() if k not in ("id", "call_id")} if isinstance(call, dict) else call
        key = (name, "raw", dumps_data(rest, sort_keys=True))
    return key


class Refetches:
    """One conversation's results with their calls, and the calls each recorded response makes.

    Built once per conversation (``starts``: where each round's prompt ends, as
    :func:`rules_compact.replay.round_starts` gives), then shown each round's compacted prompt
    (:meth:`observe`). Results are numbered in conversation order."""

    def __init__(self, messages: list, fmt: Format, starts: list[int]):
        self.fmt, self.messages = fmt, messages
        scan = fmt.scan(messages)
        self._at: dict[int, list[tuple[int, Any, str]]] = {}  # message -> (result, block, recorded text)
        self._result_msg: list[int] = []
        self._by_call: dict[tuple, list[int]] = {}  # call signature -> its results, in order
        for item in scan.results:
            cid = scan.call_id[item]
            linked = scan.call_at.get(cid) if cid is not None and scan.observed[item] is False else None
            if linked is None:
                continue
            call, _, name = linked
            key = call_key(name, call)
            number, msg, block = len(self._result_msg), scan.msg[item], scan.block[item]
            self._result_msg.append(msg)
            self._at.setdefault(msg, []).append((number, block, fmt.result_text(messages[msg], block)))
            self._by_call.setdefault(key, []).append(number)
        self.calls: list[frozenset[tuple]] = []  # per round: the signatures its response calls
        for begin, stop in response_spans(messages, fmt, starts):
            keys = {call_key(name, call) for msg in messages[begin:stop] for _, name, call in fmt.calls(msg)}
            self.calls.append(frozenset(k for k in keys if k in self._by_call))
        self.starts = starts
        self._hidden: dict[int, tuple[Any, frozenset[int]]] = {}

    def hidden(self, prompt: list) -> set[int]:
        """The results ``prompt`` shows cleared (its messages in the history's positions)."""
        out: set[int] = set()
        for i, msg in enumerate(prompt):
            if msg is self.messages[i] or i not in self._at:
                continue
            entry = self._hidden.get(id(msg))  # the entry keeps msg alive: its id stays its own
            if entry is None:
                changed = frozenset(n for n, block, text in self._at[i] if self.fmt.result_text(msg, block) != text)
                entry = self._hidden[id(msg)] = (msg, changed)
            out |= entry[1]
        return out

    def observe(self, round_index: int, prompt: list) -> tuple[set[int], set[int]]:
        """Round ``round_index``'s compacted ``prompt``: the results it shows cleared, and those of
        them its response re-fetches (makes their call again, no earlier result of it in view)."""
        hidden = self.hidden(prompt)
        end, refetched = self.starts[round_index], set()
        for key in self.calls[round_index]:
            earlier = [n for n in self._by_call[key] if self._result_msg[n] < end]
            if earlier and all(n in hidden for n in earlier):
                refetched.update(earlier)
        return hidden, refetched

"""Resuming a pass: what it decided on messages that no appended message can change.

A rule set with a ``Finality`` (see model.py) settles items as the history grows: a result 10
results old stays "older than 10 results" forever.  After a pass, ``follow`` records the leading
messages whose items are all settled, with what the pass made of them; the next pass over the
same messages with more appended evaluates the rules only after them.  Two things can still
reach back: a later message that links to an earlier call or result (``crosses``: the pass then
decides everything anew), and a later call that repeats an earlier result's call, which makes
that result superseded (``superseding_start``: the pass resumes from before that result).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import chain

from .model import Finality
from .view import Sizes, View, signature

__all__ = ["Resume", "crosses", "superseding_start", "follow"]


@dataclass(frozen=True)
class Resume:
    """Messages ``[:start]`` of a pass's input, settled, and what the pass made of them.

    The lists and sets grow in place from one call to the next (``follow``): each is owned by
    the newest Resume, and ``owned`` hands out copies when an older one is resumed from again."""

    start: int
    outputs: list  # the pass's output messages
    records: list  # (rule, saved, changed, error, note) per item
    changed: int  # items whose message an action changed
    item_messages: list[int]  # the message of each item
    tokens_after: list[int]  # per output message
    chars_after: list[int]
    saved_tokens: int  # tokens before minus tokens after, over messages [:start]
    saved_chars: int
    item_calls: list[tuple[str, ...]]  # per item: the ids of an assistant turn's calls
    item_results: list[str | None]  # per item: the call id a result answers
    call_ids: set[str]
    answered: set[str]
    user_turns: list[int]
    latest: dict  # superseded key -> {call signature: message to resume from to re-decide its result}

    lengths: tuple = field(default=(), compare=False, repr=False)  # of the above, when made

    def __post_init__(self):
        object.__setattr__(self, "lengths", self._lengths())

    def _lengths(self) -> tuple:
        return (len(self.outputs), len(self.records), len(self.item_messages), len(self.tokens_after),
                len(self.item_calls), len(self.call_ids), len(self.answered), len(self.user_turns),
                tuple((key, len(table)) for key, table in self.latest.items()))

    def cut(self, start: int, sizes: Sizes | None = None) -> Resume:
        """The same, settled only up to message ``start``, in lists of its own (``sizes``: of
        the pass's input, needed when ``start`` is earlier)."""
        n = bisect_left(self.item_messages, start)
        records, tokens_after, chars_after = self.records[:n], self.tokens_after[:start], self.chars_after[:start]
        if start == self.start:
            saved_tokens, saved_chars = self.saved_tokens, self.saved_chars
        else:
            saved_tokens = sum(sizes.tokens[:start]) - sum(tokens_after)
            saved_chars = sum(sizes.chars[:start]) - sum(chars_after)
        return Resume(
            start, self.outputs[:start], records, sum(1 for r in records if r[2]), self.item_messages[:n],
            tokens_after, chars_after, saved_tokens, saved_chars, self.item_calls[:n], self.item_results[:n],
            set(chain.from_iterable(self.item_calls[:n])), {r for r in self.item_results[:n] if r is not None},
            [u for u in self.user_turns if u < start],
            {key: {sig: at for sig, at in table.items() if at < start} for key, table in self.latest.items()})

    def owned(self) -> Resume:
        """This Resume, to grow in place, if no later one has grown its lists yet; else a copy."""
        return self if self._lengths() == self.lengths else self.cut(self.start)


def crosses(view: View, resume: Resume) -> bool:
    """Whether an item after the resume point links to a call or a result before it."""
    for item in view.items:
        if item.kind == "tool_result":
            if item.tool_call_id in resume.call_ids:
                return True
        elif not resume.call_ids.isdisjoint(item.call_ids) or not resume.answered.isdisjoint(item.call_ids):
            return True
    return False


def superseding_start(view: View, resume: Resume, finality: Finality) -> int:
    """Where to resume so that every result a later call repeats is decided again."""
    start = resume.start
    for key in finality.superseded:
        table = resume.latest.get(key)
        if table:
            for item in view.items:
                if item.kind == "assistant":
                    for _, name, call in view.turn_calls(item):
                        at = table.get(signature(name, call, key))
                        if at is not None and at < start:
                            start = at
    return start


def follow(view: View, finality: Finality, resume: Resume | None, outputs: list, records: list,
           tokens_after: list[int], chars_after: list[int], open_from: int | None = None) -> Resume:
    """The Resume after a pass that evaluated ``view`` (resuming from ``resume``): extended over
    the leading messages whose items are now all settled.  ``records``, ``tokens_after`` and
    ``chars_after``: the pass's, for the view's items and messages; ``open_from``: the first
    of the view's items whose decision read a count of the whole request (its cache
    breakpoints), which a later call may change, so it never settles.  ``resume`` grows in
    place: it must be ``owned()`` (run_pass takes it so before resuming)."""
    prev = resume if resume is not None else _empty()
    items = view.items
    unsettled = items if open_from is None else items[:open_from]
    first = next((it for it in unsettled if not finality.final(it, view)), None)
    if first is None and open_from is not None:
        first = items[open_from]
    if first is None:
        cut = len(view.messages)
    else:
        cut = view.span_starts[first.span] if first.span is not None else first.msg_index
    done = items[:next((i for i, it in enumerate(items) if it.msg_index >= cut), len(items))]
    offset = view.offset
    latest = prev.latest
    for key in finality.superseded:
        table = latest.setdefault(key, {})
        repeated = view.superseded(key)
        for it in done:
            if it.kind == "tool_result" and it.call is not None and it.index not in repeated:
                sig = signature(it.tool_name, it.call, key)
                if sig is not None and sig not in table:
                    table[sig] = offset + (view.span_starts[it.span] if it.span is not None else it.msg_index)
    settled = records[:len(done)]
    calls = [it.call_ids for it in done]
    results = [it.tool_call_id if it.kind == "tool_result" else None for it in done]
    prev.outputs.extend(outputs[:cut])
    prev.records.extend(settled)
    prev.item_messages.extend([offset + it.msg_index for it in done])
    prev.tokens_after.extend(tokens_after[:cut])
    prev.chars_after.extend(chars_after[:cut])
    prev.item_calls.extend(calls)
    prev.item_results.extend(results)
    prev.call_ids.update(*calls)
    prev.answered.update(r for r in results if r is not None)
    prev.user_turns.extend([offset + u for u in view.user_turns if u < cut])
    return Resume(
        start=offset + cut, outputs=prev.outputs, records=prev.records,
        changed=prev.changed + sum(1 for r in settled if r[2]), item_messages=prev.item_messages,
        tokens_after=prev.tokens_after, chars_after=prev.chars_after,
        saved_tokens=prev.saved_tokens + sum(view.message_tokens[:cut]) - sum(tokens_after[:cut]),
        saved_chars=prev.saved_chars + sum(view.message_chars[:cut]) - sum(chars_after[:cut]),
        item_calls=prev.item_calls, item_results=prev.item_results, call_ids=prev.call_ids,
        answered=prev.answered, user_turns=prev.user_turns, latest=latest)


def _empty() -> Resume:
    return Resume(0, [], [], 0, [], [], [], 0, 0, [], [], set(), set(), [], {})

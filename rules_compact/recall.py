"""Reference recall: how much of what the agent went on to use a compacted prompt still shows.

Each round's recorded response (its assistant message's text and tool-call arguments, never its
reasoning) names distinctive strings, those matching ``[A-Za-z_][A-Za-z0-9_./-]{7,}|\\d{4,}``.
The ones that also occur in a tool result of the history before that round are the round's
*references*: what the agent took from earlier results.  A reference is *kept* when it still
occurs in the round's compacted prompt outside reasoning (anywhere: a result, the task, an
earlier assistant turn, a placeholder).  Recall is kept / references, totalled over rounds; a
rule set that clears nothing keeps every reference (recall 1.0), and so does a conversation
without references.

A reference is *recoverable* when it is kept or occurs in a result of the history that a
placeholder in the prompt names by its content id (:func:`rules_compact.store.content_id`, in
a saved path or as a bare id): a saved result the agent can read back.  Recoverable recall is
recoverable / references; for rules that save nothing it equals recall.

"Occurs" means occurs as a substring.  Every distinctive string is made of the characters
``A-Za-z0-9_./-``, so each occurrence lies inside a maximal run of them; the runs of a text are
matched once against the conversation's strings and remembered, so a prompt is never rescanned
string by string.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from .formats import Format
from .formats import decode_args
from .formats.base import leaves
from .store import ID_PATTERN, content_id

__all__ = ["DISTINCTIVE", "References", "distinctive_strings", "response_spans", "response_text", "visible_pieces"]

DISTINCTIVE = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{7,}|\d{4,}")
_RUN = re.compile(r"[A-Za-z0-9_./-]{4,}")  # every distinctive string lies inside one such run
_HEAD = 4  # the shortest distinctive string (\d{4,})


def distinctive_strings(text: str) -> set[str]:
    return set(DISTINCTIVE.findall(text))


def _values(value: Any) -> Iterable[str]:
    """The string and number values in decoded call arguments (keys are the tool's, not the agent's)."""
    for v in leaves(value):
        if isinstance(v, str):
            yield v
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            yield str(v)


def response_text(fmt: Format, response: Iterable[Any]) -> str:
    """A recorded response's text and tool-call arguments (the values), never its reasoning."""
    pieces = []
    for msg in response:
        pieces.append(fmt.assistant_text(msg))
        for _, _, call in fmt.calls(msg):
            pieces.extend(_values(decode_args(call)))
    return "\n".join(pieces)


def _keep_all(_: str) -> bool:
    return True


def visible_pieces(fmt: Format, msg: Any) -> Iterable[str]:
    """The texts the model sees in a message, without its reasoning.

    The format strips the reasoning (nothing else); a message it cannot strip although it holds
    reasoning is reasoning through and through (a Responses ``reasoning`` item)."""
    if fmt.has_thinking(msg):
        stripped = fmt.strip_text(msg, _keep_all, None, False, False)
        if stripped is msg:
            return ()
        msg = stripped
    return fmt.message_pieces(msg)


def _is_output(fmt: Format, msg: Any) -> bool:
    return bool(fmt.calls(msg)) or fmt.has_thinking(msg) or (isinstance(msg, dict) and msg.get("role") == "assistant")


def response_spans(messages: list, fmt: Format, starts: list[int]) -> list[tuple[int, int]]:
    """Per round, ``(begin, stop)``: its recorded response, the output messages from its prompt end."""
    spans = []
    begins = set(starts)
    for end in starts:
        stop = end + 1
        while stop < len(messages) and stop not in begins and _is_output(fmt, messages[stop]):
            stop += 1
        spans.append((end, stop))
    return spans


class _Finder:
    """Which of a fixed set of strings occur in a text; each run of the text is matched once."""

    def __init__(self, strings: Iterable[str]):
        self.strings = sorted(set(strings))
        self._by_head: dict[str, list[tuple[str, int]]] = {}
        for i, s in enumerate(self.strings):
            self._by_head.setdefault(s[:_HEAD], []).append((s, i))
        self._runs: dict[str, frozenset[int]] = {}

    def __call__(self, texts: Iterable[str]) -> set[int]:
        found: set[int] = set()
        runs = self._runs
        for text in texts:
            if not text:
                continue
            for run in _RUN.findall(text):
                hit = runs.get(run)
                if hit is None:
                    hit = runs[run] = self._scan(run)
                found |= hit
        return found

    def _scan(self, run: str) -> frozenset[int]:
        by_head = self._by_head
        hits = []
        for at in range(len(run) - _HEAD + 1):
            for s, i in by_head.get(run[at:at + _HEAD], ()):
                if run.startswith(s, at):
                    hits.append(i)
        return frozenset(hits)


class References:
    """One conversation's references per round, and a memo of the strings each message shows.

    Built once per conversation (``starts``: where each round's prompt ends, as
    :func:`rules_compact.replay.round_starts` gives), then asked for each compacted prompt.
    Messages are remembered by identity and kept alive, so a message shared by many prompts is
    read once."""

    def __init__(self, messages: list, fmt: Format, starts: list[int]):
        self.fmt = fmt
        responses = [distinctive_strings(response_text(fmt, messages[begin:stop]))
                     for begin, stop in response_spans(messages, fmt, starts)]
        self._find = _Finder(s for strings in responses for s in strings)
        index = {s: i for i, s in enumerate(self._find.strings)}
        self.rounds: list[frozenset[int]] = []  # per round: the ids of its references
        seen: set[int] = set()  # strings found in the tool results so far
        self._saved: dict[str, set[int]] = {}  # content id of a result -> the strings it holds
        done = 0
        for end, strings in zip(starts, responses):
            for msg in messages[done:end]:
                for _, block, _ in fmt.results(msg):
                    text = fmt.result_text(msg, block)
                    found = self._find((text,))
                    self._saved[content_id(text)] = found
                    seen |= found
            done = max(done, end)
            self.rounds.append(frozenset(i for i in (index[s] for s in strings) if i in seen))
        self._shown: dict[int, tuple[Any, set[int]]] = {}
        self._named: dict[int, tuple[Any, set[int]]] = {}

    def strings(self, round_index: int) -> list[str]:
        """A round's references, sorted."""
        return sorted(self._find.strings[i] for i in self.rounds[round_index])

    def kept(self, round_index: int, prompt: list) -> int:
        """How many of the round's references still occur in ``prompt`` outside reasoning."""
        return len(self.rounds[round_index]) - len(self._missing(round_index, prompt))

    def shown(self, round_index: int, prompt: list) -> tuple[int, int]:
        """The round's references ``prompt`` keeps, and those it keeps or names in a saved result."""
        missing = self._missing(round_index, prompt)
        kept = len(self.rounds[round_index]) - len(missing)
        for msg in prompt:
            if not missing:
                break
            missing -= self._named_in(msg)
        return kept, len(self.rounds[round_index]) - len(missing)

    def _missing(self, round_index: int, prompt: list) -> set[int]:
        missing = set(self.rounds[round_index])
        for msg in prompt:
            if not missing:
                break
            missing -= self._strings_in(msg)
        return missing

    def _named_in(self, msg: Any) -> set[int]:
        """The strings of the results ``msg`` names by content id."""
        entry = self._named.get(id(msg))
        if entry is None:
            named = {found for piece in visible_pieces(self.fmt, msg) if piece
                     for found in ID_PATTERN.findall(piece) if found in self._saved}
            entry = self._named[id(msg)] = (msg, set().union(*(self._saved[n] for n in named)))
        return entry[1]

    def _strings_in(self, msg: Any) -> set[int]:
        entry = self._shown.get(id(msg))  # the entry keeps msg alive: its id stays its own
        if entry is None:
            entry = self._shown[id(msg)] = (msg, self._find(visible_pieces(self.fmt, msg)))
        return entry[1]

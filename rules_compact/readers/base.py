"""What every reader makes: conversations, drafts, the reader record, the error of a log, and
the helpers readers share."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, NamedTuple

from ..errors import InputError
from ..formats import breakpoints_outside


@dataclass(frozen=True)
class Usage:
    """The prompt tokens a provider billed for one request, as its log records them: read
    from cache, written to cache (Anthropic's cache creation; 0 for OpenAI) and the rest."""

    uncached: int
    cache_read: int
    cache_write: int = 0

    @property
    def prompt(self) -> int:
        return self.uncached + self.cache_read + self.cache_write


def token_count(value: Any) -> int:
    """A token count in a log: a whole number >= 0, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


@dataclass(frozen=True)
class Conversation:
    """One conversation read from a file, in an API message format.

    ``notes`` say what the conversion did that a user may want to know (lines
    skipped, responses regrouped, calls left without a result ...).  ``envelope``
    is the JSON value the messages came from when the input was already a message
    list or request body (``source_format == "messages"``), so that a result can be
    written back in the same shape; it is ``None`` for converted logs.  ``body_key``
    is the key of the messages in a request body (``messages``, or ``input`` for a
    Responses body); ``one_per_line`` is true when the file held one message per line.
    ``timestamps`` gives, per message, when the log says it was written (seconds since
    the epoch; ``None`` for a message without one), for the logs that record it (Claude
    Code, OpenHands, tau2); it is ``None`` when no message has one.  ``usage`` gives, at the
    first message of each model response, the prompt tokens billed for the request that
    produced it (:class:`Usage`; ``None`` elsewhere), for the logs that record it (Claude Code,
    Codex); it is ``None`` when the log records none.
    """

    name: str
    format: str  # "openai" | "anthropic" | "responses"
    messages: list
    source_format: str
    notes: tuple[str, ...] = ()
    envelope: Any = field(default=None, repr=False, compare=False)
    body_key: str = "messages"
    one_per_line: bool = False
    timestamps: tuple[float | None, ...] | None = field(default=None, repr=False, compare=False)
    usage: tuple[Usage | None, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def breakpoints_outside(self) -> int:
        """The cache breakpoints its request body holds outside the messages (system, tools)."""
        return breakpoints_outside(self.envelope)

    def with_messages(self, messages: list) -> Any:
        """The value to write for new ``messages``: the request body for a body, else the list.

        A converted log is never written back as a log: the result is the API
        message list.
        """
        if isinstance(self.envelope, dict):
            return {**self.envelope, self.body_key: messages}
        return messages


class LogError(InputError):
    """A problem inside a known format; becomes ``InputError("NAME: ...")`` (``NAME:LINE: ...`` in JSONL).

    The converters (``claude_code_messages`` ...) raise it unprefixed when called directly.
    """

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@dataclass
class Draft:
    messages: list
    source_format: str
    format: str
    notes: list[str] = field(default_factory=list)
    envelope: Any = None
    body_key: str = "messages"
    one_per_line: bool = False
    timestamps: tuple[float | None, ...] | None = None
    usage: tuple[Usage | None, ...] | None = None


def is_message(x: Any) -> bool:
    return isinstance(x, dict) and isinstance(x.get("role"), str)


_TYPE_NAMES = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list"}


def describe(x: Any) -> str:
    if isinstance(x, dict):
        keys = ", ".join(list(map(str, x))[:8])
        return f"an object with keys {keys}" if keys else "an empty object"
    return "null" if x is None else _TYPE_NAMES.get(type(x), f"a {type(x).__name__}")


def message_list(value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise LogError(f"{what} is {describe(value)}, not a list of messages")
    for i, msg in enumerate(value):
        if not is_message(msg):
            raise LogError(f"{what}: message {i} is not a message (an object with a string 'role'): {describe(msg)}")
    return value


def counts(counter: Counter, unit: str) -> str:
    """``"3 event_msg, 1 session_meta lines"``: a counter, largest first."""
    parts = [f"{n} {kind}" for kind, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]
    return ", ".join(parts) + f" {unit}"


class Reader(NamedTuple):
    """A source format: ``detect`` looks at the content, ``read`` converts it to drafts.

    ``kind`` is what it reads: ``lines`` a whole JSONL file (``[(line number, value)]``),
    ``object`` or ``list`` one JSON value (a file, or one line of a JSONL file of documents).
    """

    name: str
    kind: str  # "lines" | "object" | "list"
    detect: Callable[[Any], bool]
    read: Callable[[Any], list[Draft]]


def seconds(value: Any) -> float | None:
    """An ISO 8601 timestamp as seconds since the epoch (UTC when it names no zone), else None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def timestamps_of(values: Iterable[Any]) -> tuple[float | None, ...] | None:
    """Per-message times from logged timestamps; None when no message has one."""
    times = tuple(seconds(v) for v in values)
    return times if any(t is not None for t in times) else None

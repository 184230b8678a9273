"""Reading a file's bytes: JSON or JSONL, offered to each reader in turn."""

from __future__ import annotations

import json
from typing import Any, Iterator

from .. import jsontext
from ..errors import InputError
from ..formats.responses import is_responses_input
from .table import READERS
from .base import Conversation, Draft, LogError, Reader, describe, is_message
from .messages import is_item


def read_conversations(raw: bytes | str, name: str) -> list[Conversation]:
    """Parse ``raw`` (JSON or JSONL bytes, or their text from :func:`decode`) into
    conversations; ``name`` labels errors and results."""
    text = raw if isinstance(raw, str) else decode(raw, name)
    try:
        data = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        records = _jsonl_records(text, name) if exc.msg == "Extra data" else None
        if records is None:
            raise InputError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        return _finish(name, _guard(name, lambda: _from_records(records)))
    except RecursionError:
        raise InputError(f"{name}: JSON nests too deeply") from None
    return _finish(name, _guard(name, lambda: _from_value(data)))


def parse_conversations(data: Any, name: str) -> list[Conversation]:
    """Like :func:`read_conversations` for one already parsed JSON value."""
    return _finish(name, _guard(name, lambda: _from_value(data)))


def decode(raw: bytes, name: str) -> str:
    """UTF-8 text, without a byte-order mark; InputError at the first bad byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (bad byte at offset {exc.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _jsonl_records(text: str, name: str) -> list[tuple[int, Any]] | None:
    """The values of a JSONL text, or ``None`` when its first line is not a JSON value by itself."""
    records = []
    for lineno, line in enumerate(_lines(text), 1):
        if not line.strip():
            continue
        try:
            records.append((lineno, jsontext.loads(line)))
        except json.JSONDecodeError as exc:
            if not records:
                return None
            raise InputError(f"{name}:{lineno}:{exc.colno}: invalid JSON on this line of a JSONL file "
                             f"(one value per line): {exc.msg}") from None
        except RecursionError:
            raise InputError(f"{name}:{lineno}: JSON nests too deeply") from None
    return records


def _lines(text: str) -> Iterator[str]:
    """The lines of a JSONL text, split at ``\n`` alone (a JSON string may hold U+2028 and the
    other characters ``str.splitlines`` breaks at), one at a time (a list of them would copy
    the whole text)."""
    start, end = 0, len(text)
    while start < end:
        stop = text.find("\n", start)
        if stop < 0:
            stop = end
        yield text[start:stop]
        start = stop + 1


def _guard(name: str, build) -> list[Draft]:
    """Run a converter; any problem with the content becomes one ``InputError`` line."""
    try:
        return build()
    except LogError as exc:
        raise InputError(f"{name}:{exc.line}: {exc}" if exc.line is not None else f"{name}: {exc}") from None
    except RecursionError:
        raise InputError(f"{name}: JSON nests too deeply") from None
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:  # a malformed log
        raise InputError(f"{name}: malformed log ({type(exc).__name__}: {exc})") from None


def _finish(name: str, drafts: list[Draft]) -> list[Conversation]:
    many = len(drafts) > 1
    labels: dict[str, str] = {}
    for d in drafts:
        share_labels(d.messages, labels)
    return [Conversation(f"{name}#{i}" if many else name, d.format, d.messages, d.source_format,
                         tuple(d.notes), d.envelope, d.body_key, d.one_per_line, d.timestamps, d.usage)
            for i, d in enumerate(drafts, 1)]


def share_labels(messages: list, labels: dict[str, str]) -> None:
    """Make each ``role`` and ``type`` string of the messages and of their parts (content
    blocks, tool calls) one object per value, in place: each occurrence parsed is a string of
    its own, about 50 bytes, a tenth of a large conversation's memory."""
    for msg in messages:
        if type(msg) is not dict:
            continue
        for key in ("role", "type"):
            value = msg.get(key)
            if type(value) is str:
                msg[key] = labels.setdefault(value, value)
        for parts in (msg.get("content"), msg.get("tool_calls")):
            if type(parts) is list:
                for part in parts:
                    if type(part) is dict:
                        value = part.get("type")
                        if type(value) is str:
                            part["type"] = labels.setdefault(value, value)


def _readers() -> tuple[Reader, ...]:
    """The plugins' readers, then the built-in ones (READERS)."""
    from ..plugins.manager import registry  # the registry imports this package

    return registry().readers + READERS


def _from_records(records: list[tuple[int, Any]]) -> list[Draft]:
    """A JSONL file: read whole by the first ``lines`` reader that knows it, else one document per line."""
    if not records:
        raise LogError("no JSON value in the file")
    for reader in _readers():
        if reader.kind == "lines" and reader.detect(records):
            return reader.read(records)
    drafts: list[Draft] = []
    for lineno, record in records:
        try:
            drafts += _from_value(record)
        except LogError as exc:
            raise LogError(str(exc), exc.line if exc.line is not None else lineno) from None
    return drafts


def _from_value(data: Any) -> list[Draft]:
    """One JSON value: read by the first ``object`` / ``list`` reader that knows it."""
    kind = "object" if isinstance(data, dict) else "list" if isinstance(data, list) else None
    if kind is None:
        raise LogError(f"expected a list of messages or an object with a 'messages' list, got {describe(data)}")
    for reader in _readers():
        if reader.kind == kind and reader.detect(data):
            return reader.read(data)
    if kind == "object":
        keys = ", ".join(list(map(str, data))[:8]) or "none"
        raise LogError(f"expected a list of messages or an object with a 'messages' list; the object has keys: {keys}")
    if is_responses_input(data):
        i, item = next((i, m) for i, m in enumerate(data) if not is_item(m))
        raise LogError(f"a list of Responses items whose item {i} is not a Responses item (an object with a string "
                   f"'type' or 'role'): {describe(item)}")
    i, item = next((i, m) for i, m in enumerate(data) if not is_message(m))
    raise LogError(f"a list whose items are neither messages nor a known log format: item {i} is not a message "
               "(an object with a string 'role')")

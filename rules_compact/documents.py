"""Reading conversations from files or stdin, and writing results atomically."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError, kind_of

__all__ = ["Document", "read_document", "write_atomic", "MAX_INPUT_BYTES"]

MAX_INPUT_BYTES = int(os.environ.get("RULES_COMPACT_MAX_INPUT_BYTES", 256 * 1024 * 1024))


@dataclass(frozen=True)
class Document:
    """A conversation as read: its messages and the shape to write them back in."""

    name: str
    data: Any  # the parsed JSON: a list, or an object with a "messages" list
    messages: list

    def with_messages(self, messages: list) -> Any:
        if isinstance(self.data, list):
            return messages
        return {**self.data, "messages": messages}


def _read_bytes(source: str) -> bytes:
    if source == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    else:
        path = Path(source)
        try:
            if path.is_dir():
                raise InputError(f"{source}: is a directory, not a conversation file")
            with open(path, "rb") as fh:
                data = fh.read(MAX_INPUT_BYTES + 1)
        except OSError as exc:
            raise InputError(f"{source}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{source}: input is over the limit of {MAX_INPUT_BYTES} bytes "
                         "(RULES_COMPACT_MAX_INPUT_BYTES)")
    return data


def parse_document(raw: bytes, name: str) -> Document:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (bad byte at offset {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{name}: JSON nests too deeply") from None
    if isinstance(data, dict):
        messages = data.get("messages")
        if "messages" in data and not isinstance(messages, list):
            raise InputError(f"{name}: 'messages' must be a list, got {kind_of(messages)}")
        if not isinstance(messages, list):
            raise InputError(f"{name}: expected a list of messages or an object with a 'messages' list; "
                             f"the object has keys: {', '.join(list(map(str, data))[:8]) or 'none'}")
    elif isinstance(data, list):
        messages = data
    else:
        raise InputError(f"{name}: expected a list of messages or an object with a 'messages' list, "
                         f"got {kind_of(data)}")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise InputError(f"{name}: message {i} is not a message (an object with a string 'role'); "
                             "not a known conversation format")
    return Document(name, data, messages)


def read_document(source: str) -> Document:
    """Read and parse a conversation file, or ``-`` for stdin."""
    return parse_document(_read_bytes(source), "<stdin>" if source == "-" else source)


def dump_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def write_atomic(path: str, text: str) -> None:
    """Write via a temp file in the same folder and rename, so failure leaves no partial file."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass

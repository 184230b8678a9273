"""Reading conversations from files or stdin, and writing results atomically."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from .errors import InputError
from .formats import FORMATS
from .readers import Conversation, read_conversations

__all__ = ["read_conversations_from", "dump_json", "write_atomic", "MAX_INPUT_BYTES"]

MAX_INPUT_BYTES = int(os.environ.get("RULES_COMPACT_MAX_INPUT_BYTES", 256 * 1024 * 1024))


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


def read_conversations_from(source: str) -> list[Conversation]:
    """Every conversation in a file, or ``-`` for stdin: message lists, request bodies and the
    agent logs :mod:`rules_compact.readers` knows, converted to API message lists; InputError
    (``NAME: message I: ...``) for a message a model API would reject for its shape."""
    conversations = read_conversations(_read_bytes(source), "<stdin>" if source == "-" else source)
    for conv in conversations:
        try:
            FORMATS[conv.format].check(conv.messages)
        except InputError as exc:
            raise InputError(f"{conv.name}: {exc}") from None
    return conversations


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
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        _remove(tmp)
        raise


def _mode_for(target: Path) -> int:
    """The existing file's mode, or what a plain ``open`` would give (0666 less the umask)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass

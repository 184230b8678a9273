"""Reading conversations from files or stdin, and writing results atomically."""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator

from . import jsontext
from .errors import InputError
from .formats import FORMATS
from .limits import max_input_bytes, read_at_most
from .readers import Conversation, read_conversations
from .readers.reading import decode

__all__ = ["read_conversations_from", "conversations_in", "dump_json", "dump_json_pieces", "dump_json_line",
           "write_atomic", "write_text"]


def _read_bytes(source: str) -> bytes:
    limit = max_input_bytes()
    if source == "-":
        if sys.stdin is None:  # started with stdin closed (``<&-``)
            raise InputError("-: cannot read: stdin is closed")
        data = read_at_most(sys.stdin.buffer, limit + 1)
    else:
        path = Path(source)
        try:
            if path.is_dir():
                raise InputError(f"{source}: is a directory, not a conversation file")
            with open(path, "rb") as fh:
                data = read_at_most(fh, limit + 1)
        except OSError as exc:
            raise InputError(f"{source}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(f"{source}: input is over the limit of {limit} bytes "
                         "(RULES_COMPACT_MAX_INPUT_BYTES)")
    return data


#: How text is encoded when written: UTF-8, a lone surrogate as its ``\\udXXX`` escape, which is
#: what it was read from in a JSON string (see jsontext.dumps).
SURROGATES = "backslashreplace"


def read_conversations_from(source: str) -> list[Conversation]:
    """Every conversation in a file, or ``-`` for stdin: message lists, request bodies and the
    agent logs :mod:`rules_compact.readers` knows, converted to API message lists; InputError
    (``NAME: message I: ...``) for a message a model API would reject for its shape."""
    name = "<stdin>" if source == "-" else source
    return conversations_in(decode(_read_bytes(source), name), name)  # the bytes go once decoded


def conversations_in(raw: bytes | str, name: str) -> list[Conversation]:
    """Like :func:`read_conversations_from` for bytes already read (or their text), labelled ``name``."""
    conversations = read_conversations(raw, name)
    for conv in conversations:
        try:
            FORMATS[conv.format].check(conv.messages)
        except InputError as exc:
            raise InputError(f"{conv.name}: {exc}") from None
    return conversations


def dump_json(data: Any) -> str:
    """Indented JSON text and a newline (write it with ``errors=SURROGATES``)."""
    return jsontext.dumps(data) + "\n"


def dump_json_pieces(data: Any) -> Iterator[str]:
    """The text of :func:`dump_json`, in pieces (a message at a time), for large outputs."""
    yield from jsontext.dumps_pieces(data)
    yield "\n"


def dump_json_line(data: Any) -> str:
    """One JSONL line."""
    return jsontext.dumps(data, indent=None) + "\n"


def write_atomic(path: str, text: str | bytes | Iterable[str]) -> None:
    """Write ``text`` (a string, bytes, or a string's pieces) to ``path`` so that a failure, an
    interrupt or SIGTERM leaves no partial file.

    A regular file (or a new one) is written to ``.NAME.PID.XXXXXXXX.tmp`` in its folder and
    renamed over it; one left by a killed run is removed by the next write of NAME once process
    PID has ended. A symlink is followed: its target is replaced and the link stays. A device or
    a pipe (``/dev/null``, ``/dev/stdout``, a FIFO) is written to directly, never replaced."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        _write_stream(path, text)
        return
    folder = target.parent
    _remove_stale_temps(folder, target.name)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with _opened(fd, text) as fh:
            write_text(fh, text)
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        _remove(tmp)
        raise


def write_text(fh, text: str | bytes | Iterable[str]) -> None:
    """Write a string (or bytes), or a string's pieces one after the other."""
    for piece in (text,) if isinstance(text, (str, bytes)) else text:
        fh.write(piece)


def _opened(file, text: str | bytes | Iterable[str]):
    """``file`` (a path or a descriptor) open for writing ``text``: binary for bytes."""
    if isinstance(text, bytes):
        return open(file, "wb")
    return open(file, "w", encoding="utf-8", errors=SURROGATES)


def _write_stream(path: str, text: str | bytes | Iterable[str]) -> None:
    try:
        with _opened(path, text) as fh:
            write_text(fh, text)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _remove_stale_temps(folder: Path, name: str) -> None:
    """Remove the temp files ``write_atomic`` left for ``name`` in runs that were killed."""
    ours = re.compile(rf"\.{re.escape(name)}\.([0-9]+)\.[a-z0-9_]{{8}}\.tmp")
    if os.name != "posix":  # only there can a process be asked whether it runs
        return
    try:
        candidates = [e for e in os.scandir(folder) if e.name.startswith(f".{name}.") and e.name.endswith(".tmp")]
    except OSError:
        return
    for entry in candidates:
        match = ours.fullmatch(entry.name)
        if match and int(match[1]) != os.getpid() and not _running(int(match[1])):
            _remove(entry.path)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process, or not a pid we can check: leave its file alone
    return True


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

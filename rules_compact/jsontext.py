"""JSON text in and out: only values JSON allows, so that what is read can be written back.

Python's ``json`` reads ``NaN`` and ``Infinity``, turns ``1e400`` into infinity and writes all
three back as bare words no JSON parser accepts; it refuses integers of more than
``sys.get_int_max_str_digits()`` digits with a ``ValueError`` that has no position; and it
writes a lone surrogate escape (``"\\ud800"``) as a character UTF-8 cannot encode (see dumps).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, Callable, Iterator

from .errors import InputError

__all__ = ["loads", "loads_held", "TooDeep", "dumps", "dumps_pieces", "dumps_data"]

# a string (skipped), or a number or one of Python's non-JSON constants
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN|-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)', re.DOTALL)


class _Refused(ValueError):
    def __init__(self, token: str, reason: str):
        super().__init__(reason)
        self.token = token


def _constant(token: str) -> Any:
    raise _Refused(token, f"{token} is not a JSON value (JSON numbers are finite)")


def _float(token: str) -> float:
    value = float(token)
    if math.isinf(value):
        raise _Refused(token, f"{token} is too large for a 64-bit float (JSON numbers here must be finite)")
    return value


def loads(text: str) -> Any:
    """``json.loads`` refusing NaN, Infinity, a number beyond a float's range and an integer of
    more digits than Python converts: ``json.JSONDecodeError`` located at that value."""
    try:  # parse_float costs about a microsecond per float; scanning the text first costs more
        return _parsed(text, lambda: json.loads(text, parse_constant=_constant, parse_float=_float))
    except _Refused as exc:
        token = exc.token
        raise json.JSONDecodeError(str(exc), text, _position(text, lambda t: t == token)) from None
    except ValueError as exc:
        limit = sys.get_int_max_str_digits()
        if isinstance(exc, json.JSONDecodeError) or not limit or "integer string conversion" not in str(exc):
            raise
        at = _position(text, lambda t: len(t.lstrip("-")) > limit and t.lstrip("-").isdigit())
        digits = len(_TOKEN.match(text, at)[1].lstrip("-"))
        raise json.JSONDecodeError(f"an integer of {digits} digits; at most {limit} are allowed",
                                   text, at) from None


#: Frames kept spare when JSON text is parsed (the parser recurses once a level, against Python's
#: recursion limit): what is read can then be written, measured or compared, by C code that
#: recurses as the parser does, from this many frames deeper (the engine's deepest walks: about 40).
SPARE_FRAMES = 100
SHALLOW = 200  # text with at most this many brackets nests no deeper: parsed where it is
COUNTED = 20_000  # characters up to which counting brackets costs less than keeping frames spare


def with_spare_frames(frames: int, call: Callable[[], Any]) -> Any:
    """``call()``, from ``frames`` frames deeper than here."""
    return call() if frames <= 0 else with_spare_frames(frames - 1, call)


def _parsed(text: Any, parse: Callable[[], Any]) -> Any:
    """``parse()`` (of ``text``), with SPARE_FRAMES kept spare unless ``text`` is too short or
    has too few brackets to nest deeply (a JSONL line: counting costs less than the frames)."""
    if isinstance(text, str) and len(text) <= COUNTED and text.count("[") + text.count("{") <= SHALLOW:
        return parse()
    return with_spare_frames(SPARE_FRAMES, parse)


class TooDeep(ValueError):
    """JSON text that nests deeper than Python can parse where it is read."""


def loads_held(text: str) -> Any:
    """``json.loads`` of JSON text held in a value (a call's ``arguments`` string), with
    SPARE_FRAMES as ``loads`` keeps them.  A string can hold any depth, more than Python's
    recursion limit lets it parse: TooDeep (a ValueError, as for text that is no JSON) then."""
    try:
        return _parsed(text, lambda: json.loads(text))
    except RecursionError:
        raise TooDeep("JSON nests too deeply") from None


def _position(text: str, wanted) -> int:
    """Where the first number or constant outside strings for which ``wanted`` holds starts."""
    for match in _TOKEN.finditer(text):
        if match[1] is not None and wanted(match[1]):
            return match.start()
    return 0


def dumps(data: Any, indent: int | None = 2) -> str:
    """JSON text, not ASCII-escaped; NaN and infinities raise ``ValueError``.

    A lone surrogate stays a character: write the text with ``errors="backslashreplace"``,
    which writes it as the ``\\udXXX`` escape it was read from (a surrogate can only be inside a
    JSON string, where that escape is valid), at no cost for the rest of the text."""
    return json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)


def dumps_pieces(data: Any, indent: int = 2, depth: int = 0) -> Iterator[str]:
    """The text of ``dumps(data, indent)``, in pieces: the elements of a top-level list, and of
    the lists a top-level object holds (a request body's messages), one at a time, so that
    writing a large conversation never holds all of its text."""
    pad = " " * (indent * depth)
    inner = pad + " " * indent
    if isinstance(data, list) and data and depth < 2:
        yield "["
        for i, value in enumerate(data):
            yield (",\n" if i else "\n") + inner
            yield from dumps_pieces(value, indent, depth + 1)
        yield "\n" + pad + "]"
    elif isinstance(data, dict) and data and depth == 0 and all(isinstance(key, str) for key in data):
        yield "{"
        for i, (key, value) in enumerate(data.items()):
            yield (",\n" if i else "\n") + inner + dumps(key) + ": "
            yield from dumps_pieces(value, indent, depth + 1)
        yield "\n}"
    else:  # JSON strings hold no raw newline: every newline of the text starts an indented line
        yield dumps(data, indent).replace("\n", "\n" + pad) if depth else dumps(data, indent)


def dumps_data(value: Any, sort_keys: bool = False) -> str:
    """Compact JSON text of data a caller passed in Python (a tool call's input): InputError
    saying why, when it is not JSON data (a set, a circular or huge value, mixed-type keys)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
    except (TypeError, ValueError) as exc:
        reason = str(exc)
        if "not supported between instances" in reason:
            reason = "a mapping's keys are not all strings"
        elif "integer string conversion" in reason:
            reason = f"an integer of more than {sys.get_int_max_str_digits()} digits"
        raise InputError(f"not JSON data: {reason}") from None

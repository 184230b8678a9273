"""Every limit on input and rule files, in one place.

The byte limits can be changed with environment variables, read when they are used (so a bad
value is reported by the command that needs it, with exit code 2); the bounds on what a rule
file may ask for are fixed.  Every file the tool reads is read with :func:`read_at_most`, one
byte past its limit: conversations and golden cases (``max_input_bytes``), rule files and the
known-tools list (``max_rules_bytes``).
"""

from __future__ import annotations

import os
import re

from .errors import InputError

__all__ = ["max_input_bytes", "max_rules_bytes", "read_at_most", "MAX_ALIAS_NODES", "MAX_DEPTH", "MAX_TEMPLATE_CHARS",
           "MAX_FORMAT_WIDTH", "MAX_JMESPATH_CHARS", "MAX_JMESPATH_DEPTH", "MAX_PRICE"]

#: Rule files: nodes that YAML aliases may add by repeating anchored nodes (an alias bomb), and nesting.
MAX_ALIAS_NODES = 100_000
MAX_DEPTH = 100
#: Placeholder and marker templates: their length, and the width or precision of a ``{field:spec}``.
MAX_TEMPLATE_CHARS = 2_000
MAX_FORMAT_WIDTH = 100
#: ``where`` and ``key`` JMESPath expressions: their length, and how deeply they nest.
MAX_JMESPATH_CHARS = 1_000
MAX_JMESPATH_DEPTH = 100  # each level is two Python frames when evaluated
#: ``--price``: the most a token may cost (a cost is a price times a token count: far below a float's range).
MAX_PRICE = 1e6

_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
_HIGHEST = 1024 ** 4  # 1 TiB: no input or rule file can usefully be larger
_SIZE = re.compile(r"([0-9]+)([KMG]?)", re.IGNORECASE)


def max_input_bytes() -> int:
    """The largest conversation file read: RULES_COMPACT_MAX_INPUT_BYTES, default 256 MiB."""
    return _bytes_from_env("RULES_COMPACT_MAX_INPUT_BYTES", 256 * 1024 ** 2)


def max_rules_bytes() -> int:
    """The largest rule file read: RULES_COMPACT_MAX_RULES_BYTES, default 1 MiB."""
    return _bytes_from_env("RULES_COMPACT_MAX_RULES_BYTES", 1024 ** 2)


def _bytes_from_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    match = _SIZE.fullmatch(raw.strip())
    value = int(match[1]) * _UNITS[match[2].upper()] if match and len(match[1]) <= 13 else 0
    if not 1 <= value <= _HIGHEST:
        raise InputError(f"{name}={raw!r}: expected a whole number of bytes from 1 to 1 TiB, optionally "
                         f"ending in K, M or G (KiB, MiB, GiB), such as 256M; the default is {default // 1024 ** 2}M")
    return value


def read_at_most(fh, most: int) -> bytes:
    """Up to ``most`` bytes of a binary file, without allocating ``most`` bytes up front (a
    read of N bytes does): a regular file in one read of its size (and one byte more, to see
    whether it grew), anything else (a pipe, ``/dev/zero``) in growing chunks."""
    try:
        size = os.fstat(fh.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        size = 0
    chunks, total, want = [], 0, size + 1 if size else 1 << 20
    while total < most:
        chunk = fh.read(min(want, most - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = 1 << 24
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)

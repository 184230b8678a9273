"""Token estimators: a name maps to a function from text to an estimated token count."""

from __future__ import annotations

from typing import Callable

Estimator = Callable[[str], int]


def chars4(text: str) -> int:
    """Characters / 4, rounded half up (opencode's ``Token.estimate``)."""
    return (len(text) + 2) // 4


def chars4_ceil(text: str) -> int:
    """Characters / 4, rounded up."""
    return (len(text) + 3) // 4


def bytes4(text: str) -> int:
    """UTF-8 bytes / 4, rounded half up; closer for non-ASCII text."""
    return (len(text.encode("utf-8")) + 2) // 4


ESTIMATORS: dict[str, Estimator] = {
    "chars4": chars4,
    "chars4_ceil": chars4_ceil,
    "bytes4": bytes4,
}

DEFAULT_ESTIMATOR = "chars4"

"""Whether an earlier rule's match covers a later one's: every item the later rule matches, the
earlier matches too.  Decided on the match specs by bounds and sets (``size: {gt: 100}`` covers
``size: {gt: 1000}``; ``tool: "get_*"`` covers ``tool: [get_user, get_order]``), never by running
them; what it cannot decide is not covered, so ``unreachable-rule`` never warns wrongly."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any, Iterator

from ..kinds.base import RESULT, TURN, bounds, with_defaults
from .model import GLOB_CHARS

__all__ = ["covers"]

ROLE_OF = {RESULT: "tool", TURN: "assistant"}
BOUND_KEYS = frozenset(("gt", "gte", "lt", "lte"))


def covers(first: Any, later: Any, kind: str, schemas: dict[str, dict | None]) -> bool:
    """Whether every item of ``kind`` that match spec ``later`` holds for, ``first`` holds for.
    ``schemas``: each matcher kind's options schema (for the defaults of its options)."""
    have = list(_atoms(later))
    return all(_implied(key, value, have, kind, schemas) for key, value in _atoms(first))


def _atoms(spec: Any) -> Iterator[tuple[str, Any]]:
    """The conditions a spec holds all of: its keys, with ``all:`` lists opened."""
    for key, value in (spec or {}).items() if isinstance(spec, dict) else ():
        if key == "all" and isinstance(value, list):
            for sub in value:
                yield from _atoms(sub)
        else:
            yield key, value


def _implied(key: str, value: Any, have: list[tuple[str, Any]], kind: str, schemas: dict) -> bool:
    """Whether the conditions ``have`` imply the condition ``key: value`` for items of ``kind``."""
    if key == "role":
        return ROLE_OF[kind] in _as_set(value)
    if key == "any" and isinstance(value, list):
        return any(all(_implied(k, v, have, kind, schemas) for k, v in _atoms(sub)) for sub in value)
    return any(k == key and _narrower(key, v, value, schemas.get(key)) for k, v in have)


def _narrower(key: str, given: Any, wanted: Any, schema: dict | None) -> bool:
    """Whether options ``given`` of matcher ``key`` admit only what options ``wanted`` admit."""
    if given == wanted:
        return True
    if isinstance(given, dict) and isinstance(wanted, dict) and BOUND_KEYS & (given.keys() | wanted.keys()):
        rest = [{k: v for k, v in (with_defaults(o, schema) if schema else o).items() if k not in BOUND_KEYS}
                for o in (given, wanted)]
        (low, high), (low_wanted, high_wanted) = bounds(given), bounds(wanted)
        return rest[0] == rest[1] and low_wanted <= low and high <= high_wanted
    if key == "tool" and isinstance(given, (str, list)) and isinstance(wanted, (str, list)):
        return all(any(_glob_within(p, q) for q in _as_set(wanted)) for p in _as_set(given))
    return False


def _glob_within(pattern: str, glob: str) -> bool:
    """Whether every name ``pattern`` matches, ``glob`` matches."""
    if pattern == glob or glob == "*":
        return True
    return not any(c in GLOB_CHARS for c in pattern) and fnmatchcase(pattern, glob)


def _as_set(value: Any) -> set:
    if isinstance(value, str):
        return {value}
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()

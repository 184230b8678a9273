"""A bundled preset (or any rule file) with LangChain-style parameters, as ``ClearToolUsesEdit``
users write them: ``load_rules("preset:NAME", keep=5, exclude_tools=["Read"])``.

The parameters edit the file's own data, which is then validated and compiled like a file:
``keep`` moves the window of recent items its rules keep (every ``age`` bound in a count unit,
which must all be the same one number); ``exclude_tools`` puts rules first that keep those tools'
results, error results included."""

from __future__ import annotations

import copy
from typing import Any, Iterator, Sequence

import yaml

from ..errors import ConfigError, Problem
from ..resources import bundled_name
from .yamlsource import entries, load_yaml

__all__ = ["with_parameters"]

WINDOW_UNITS = ("tool_results", "tool_calls", "spans", "messages", "user_turns")  # what keep counts
LOWER, UPPER = ("gt", "gte"), ("lt", "lte")


def with_parameters(text: str, file: str, keep: Any = None, exclude_tools: Any = None) -> tuple[str, str]:
    """The rule file's text with ``keep`` and ``exclude_tools`` applied, and the name its
    problems are reported under (``preset:NAME (keep=5)``)."""
    label = f"{bundled_name(file) or file} ({', '.join(f'{k}={v!r}' for k, v in (('keep', keep), ('exclude_tools', exclude_tools)) if v is not None)})"
    data = load_yaml(text, file)[0]
    if not isinstance(data, dict):
        return text, file  # the loader reports it
    data = copy.deepcopy(data)
    if keep is not None:
        _set_keep(data, keep, label)
    if exclude_tools is not None:
        _exclude(data, exclude_tools, label)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True), label


def _windows(data: dict) -> Iterator[dict]:
    """The options of every ``age`` matcher in a count unit, in every rule's match."""
    for i, raw in enumerate(data.get("rules") or []):
        if isinstance(raw, dict):
            for _, key, value in entries(raw.get("match"), f"rules[{i}].match"):
                if key == "age" and isinstance(value, dict) and value.get("unit") in WINDOW_UNITS:
                    yield value


def _bound(options: dict) -> int | None:
    """The window an age matcher's bounds draw: items younger than it are kept (``lt: 3``,
    ``gte: 3``, ``lte: 2``, ``gt: 2`` all draw 3)."""
    for key in LOWER + UPPER:
        if isinstance(options.get(key), int):
            return options[key] + (1 if key in ("gt", "lte") else 0)
    return None


def _set_keep(data: dict, keep: Any, label: str) -> None:
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ConfigError([Problem(label, 1, 1, f"keep must be a whole number, 0 or more, got {keep!r}")])
    windows = list(_windows(data))
    drawn = sorted({b for b in map(_bound, windows) if b is not None})
    if len(drawn) != 1:
        raise ConfigError([Problem(label, 1, 1, (
            f"keep applies to rules with one window of recent items; {data.get('name', 'these rules')!r} has "
            + (f"several ({', '.join(map(str, drawn))})" if drawn else "none") + ": write a rule file instead"))])
    for options in windows:
        for key in LOWER + UPPER:
            if key in options:
                options[key] = keep - (1 if key in ("gt", "lte") else 0)
                if options[key] < 0:  # gt: -1 / lte: -1 hold for every age / none
                    del options[key]
                    options["gte" if key == "gt" else "lt"] = 0


def _exclude(data: dict, tools: Any, label: str) -> None:
    if isinstance(tools, str) or not isinstance(tools, Sequence) or not tools \
            or not all(isinstance(t, str) and t for t in tools):
        raise ConfigError([Problem(label, 1, 1, f"exclude_tools must be a non-empty list of tool names or "
                                                f"globs, got {tools!r}")])
    rules = data.get("rules") if isinstance(data.get("rules"), list) else []
    data["rules"] = [  # first among the file's own rules (after inherited ones, in a file that extends)
        {"name": "keep-excluded-tools", "match": {"role": "tool", "tool": list(tools)}, "action": "keep"},
        {"name": "keep-excluded-tools-errors", "match": {"is_error": True, "tool": list(tools)}, "action": "keep"},
    ] + rules

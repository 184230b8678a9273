"""User-facing errors: one base class, caught only by the CLI."""

from __future__ import annotations

import reprlib
from dataclasses import dataclass

__all__ = ["RulesCompactError", "ConfigError", "InputError", "PluginError", "Problem", "kind_of", "type_name"]


class RulesCompactError(Exception):
    """Base of every error caused by user input; the CLI prints it without a traceback."""

    exit_code = 2


@dataclass(frozen=True, order=True)
class Problem:
    """One located problem in a rule file: ``FILE:LINE:COL: message (at path)``."""

    file: str
    line: int
    col: int
    message: str
    path: str = ""

    def __str__(self) -> str:
        where = f" (at {self.path})" if self.path else ""
        return f"{self.file}:{self.line}:{self.col}: {self.message}{where}"


class ConfigError(RulesCompactError):
    """A rule file is invalid; carries every problem found, sorted by position."""

    exit_code = 1

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def __reduce__(self):  # pickles with its problems (a worker process or a Dask worker raising it)
        return ConfigError, (self.problems,)


def kind_of(value: object) -> str:
    """A JSON/YAML reader's name for a value's type: 'a list', 'a string', 'null'..."""
    names = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean",
             dict: "a mapping", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def type_name(value: object) -> str:
    """For messages about Python arguments: ``None``, or a type and a short repr (``int 5``)."""
    return "None" if value is None else f"{type(value).__name__} {reprlib.repr(value)}"


class InputError(RulesCompactError):
    """Unreadable or malformed input, or a usage error."""

    exit_code = 2


class PluginError(RulesCompactError):
    """A plugin failed: to load, in what it declared, or in a function it provided."""

    exit_code = 2

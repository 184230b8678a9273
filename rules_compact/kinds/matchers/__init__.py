"""The built-in matcher kinds, one module each (each declares ``KIND``).

``ORDER`` is the order the schema, the docs and "allowed:" lists show them in; a module not
named there comes after, by name.
"""

from __future__ import annotations

from importlib import import_module
from pkgutil import iter_modules

__all__ = ["BUILTIN_MATCHERS"]

ORDER = ('all', 'any', 'not', 'role', 'tool', 'compactable', 'declared', 'size', 'age', 'in_tail', 'is_error', 'has_tool_calls', 'orphan', 'observation', 'dangling', 'compacted', 'text', 'where', 'has_thinking', 'call_in_previous_assistant', 'superseded', 'at_step_boundary', 'in_span')


def _rank(module: str) -> tuple:
    return (ORDER.index(module), "") if module in ORDER else (len(ORDER), module)


BUILTIN_MATCHERS = {kind.name: kind for kind in (
    import_module(f"{__name__}.{module}").KIND
    for module in sorted((info.name for info in iter_modules(__path__)), key=_rank))}

"""The built-in matcher kinds, one module each (each declares ``KIND``)."""

from __future__ import annotations

from importlib import import_module
from pkgutil import iter_modules

__all__ = ["BUILTIN_MATCHERS"]

BUILTIN_MATCHERS = {kind.name: kind for kind in (
    import_module(f"{__name__}.{info.name}").KIND for info in sorted(iter_modules(__path__), key=lambda m: m.name))}

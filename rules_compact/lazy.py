"""Quick records: ``lazy``, ``functools.cached_property`` without its lock (as Python 3.12
made it), ``quick_init`` for frozen dataclasses the engine makes on every call, and
``once_per``, what is worked out once per compiled rule file.

Scans and facts compute their columns when first read; before 3.12, cached_property takes a
lock on each first read, which costs more than many of the columns of a short conversation.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, Callable, Generic, TypeVar

__all__ = ["lazy", "quick_init", "once_per"]

T = TypeVar("T")


class lazy(Generic[T]):
    """A property computed on first read and then stored in the instance's ``__dict__``
    (which later reads find first)."""

    def __init__(self, func: Callable[[Any], T]):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = instance.__dict__[self.name] = self.func(instance)
        return value


def quick_init(cls: type) -> type:
    """Give a frozen dataclass (without ``__slots__``) an ``__init__`` that stores its fields
    in one update of the instance's ``__dict__``, as the generated one does with an
    ``object.__setattr__`` per field, at half the cost: the engine makes several such
    records per call, which is much of a short conversation's time."""
    all_fields = fields(cls)
    if hasattr(cls, "__slots__") or hasattr(cls, "__post_init__") or not all(f.init and not f.kw_only for f in all_fields):
        raise TypeError(f"quick_init: {cls.__name__} needs the generated __init__")
    namespace: dict[str, Any] = {"MISSING": MISSING}
    params, lines = [], []
    for f in all_fields:
        if f.default is not MISSING:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=MISSING")
            lines.append(f"    if {f.name} is MISSING:\n        {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
    lines.append("    self.__dict__.update({" + ", ".join(f"{f.name!r}: {f.name}" for f in all_fields) + "})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(lines) + "\n", namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls


def once_per(cache: dict, owner: Any, make: Callable[[], T], key: Any = None) -> T:
    """``make()`` for ``owner`` (a compiled rule file, told apart by identity) and ``key``,
    worked out once and kept in ``cache`` (emptied when it holds 256: rule files are few)."""
    found = cache.get((id(owner), key))
    if found is None or found[0] is not owner:
        if len(cache) > 256:
            cache.clear()
        found = cache[id(owner), key] = (owner, make())
    return found[1]

"""``lazy``: ``functools.cached_property`` without its lock (as Python 3.12 made it).

Scans and facts compute their columns when first read; before 3.12, cached_property takes a
lock on each first read, which costs more than many of the columns of a short conversation.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

__all__ = ["lazy"]

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

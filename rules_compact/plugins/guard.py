"""How a plugin's functions fail: every kind, estimator and reader a plugin adds is wrapped once,
when the registry is built, so that whatever one of its functions raises (SystemExit too),
or returns that the engine cannot use, is one PluginError (exit 2) naming the plugin and
where the function ran::

    plugin NAME: rule RULE: matcher KIND raised RuntimeError: ...

Built-in kinds and estimators are never wrapped: they pay nothing for it.
"""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral
from typing import Any, Callable

from ..errors import PluginError, type_name
from ..formats import FORMATS
from ..kinds.base import Action, ActionKind, Matcher, MatcherKind, predicate_matcher
from ..kinds.estimators import Estimator
from ..readers.base import Draft, LogError, Reader

__all__ = ["FAILURES", "failure", "guarded", "matcher_kind", "action_kind", "estimator", "reader", "READER_KINDS"]

FAILURES = (Exception, SystemExit)  # what a plugin's function raising is its failure (Ctrl-C is not)
READER_KINDS = ("lines", "object", "list")


def failure(exc: BaseException) -> str:
    """What a function raised: ``RuntimeError: boom``."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def guarded(function: Callable, where: str) -> Callable:
    """``function``, whose failures are a PluginError ``WHERE raised ...``."""
    def call(*args):
        try:
            return function(*args)
        except PluginError:  # already named (a plugin's matcher calling another's)
            raise
        except FAILURES as exc:
            raise PluginError(f"{where} raised {failure(exc)}") from exc

    return call


def _place(ctx: Any) -> str:
    """Where in the rule file a kind is compiled: its rule, else ``error_when``."""
    rule = getattr(ctx, "rule", None)
    return f"rule {rule}" if rule is not None else "error_when"


class Guarded(Matcher):
    """A plugin's compiled matcher, the same but for its failures, which name the plugin."""

    __slots__ = ("_part", "_where")

    def __init__(self, part: Matcher, where: str):
        self._part, self._where = part, where
        super().__init__(guarded(part.select, where), part.kind, None, part.cost, part.data)

    @property
    def parts(self) -> tuple[Matcher, ...]:
        return self._part.parts

    def specialize(self, item_kind: str) -> Matcher | bool:
        answer = self._part.specialize(item_kind)
        return self if answer is self._part else answer if isinstance(answer, bool) else Guarded(answer, self._where)


def matcher_kind(kind: MatcherKind, plugin: str) -> MatcherKind:
    """A plugin's matcher kind whose compile and compiled matchers fail naming the plugin."""
    def compile(options, ctx, path) -> Matcher:
        where = f"plugin {plugin}: {_place(ctx)}: matcher {kind.name}"
        compiled = guarded(kind.compile, f"{where}: compile")(options, ctx, path)
        if not isinstance(compiled, Matcher):
            if not callable(compiled):
                raise PluginError(f"{where}: compile returned {type_name(compiled)}, not a predicate "
                                  "(item, view) -> bool")
            compiled = predicate_matcher(compiled, wrapped)
        return Guarded(compiled, where)

    wrapped = replace(kind, compile=compile)
    return wrapped


def action_kind(kind: ActionKind, plugin: str) -> ActionKind:
    """A plugin's action kind whose compile and compiled actions fail naming the plugin."""
    def compile(options, ctx, path) -> Action:
        where = f"plugin {plugin}: {_place(ctx)}: action {kind.name}"
        action = guarded(kind.compile, f"{where}: compile")(options, ctx, path)
        if not isinstance(action, Action):
            raise PluginError(f"{where}: compile returned {type_name(action)}, not an Action")
        return Action(action.name, guarded(action.apply, where), action.templates, guarded(action.run, where),
                      action.kind, guarded(action.run_many, where))

    return replace(kind, compile=compile)


def estimator(given: Estimator, plugin: str) -> Estimator:
    """A plugin's estimator whose failures, and answers that are no token count, name the plugin."""
    where = f"plugin {plugin}: estimator {given.name}"
    message = None if given.message is None else _counting(given.message, where)
    return Estimator(given.name, _counting(given.text, where), message, given.description)


def _counting(function: Callable, where: str) -> Callable:
    call = guarded(function, where)

    def count(*args):
        tokens = call(*args)
        if type(tokens) is int and tokens >= 0:
            return tokens
        if isinstance(tokens, Integral) and not isinstance(tokens, bool) and tokens >= 0:
            return int(tokens)
        raise PluginError(f"{where} returned {type_name(tokens)}, not a whole number of tokens >= 0")

    return count


def reader(given: Any, plugin: str) -> Reader:
    """A plugin's Reader, validated, whose failures and bad results are one located LogError
    (the CLI prefixes the file it read)."""
    hook = "rules_compact_readers"
    if not isinstance(given, Reader):
        raise PluginError(f"{hook}() must return Reader objects, got {given!r}")
    name = given.name
    if not isinstance(name, str) or not name:
        raise PluginError(f"{hook}(): a Reader needs a non-empty name, got {name!r}")
    if given.kind not in READER_KINDS:
        raise PluginError(f"{hook}(): reader {name!r}: kind must be one of {', '.join(READER_KINDS)}, "
                          f"got {given.kind!r}")
    if not callable(given.detect) or not callable(given.read):
        raise PluginError(f"{hook}(): reader {name!r}: detect and read must be callable")
    where = f"reader {name} (plugin {plugin})"

    def detect(data: Any) -> bool:
        try:
            return bool(given.detect(data))
        except FAILURES as exc:
            raise LogError(f"{where}: detect failed: {failure(exc)}") from None

    def read(data: Any) -> list[Draft]:
        try:
            drafts = given.read(data)
        except LogError:
            raise
        except FAILURES as exc:
            raise LogError(f"{where}: read failed: {failure(exc)}") from None
        if not isinstance(drafts, list) or not all(isinstance(d, Draft) for d in drafts):
            raise LogError(f"{where}: read must return a list of Draft, got {type(drafts).__name__}")
        for d in drafts:
            if not isinstance(d.messages, list) or d.format not in FORMATS:
                raise LogError(f"{where}: a Draft needs a list of messages and a format of "
                               f"{', '.join(FORMATS)}, got {d.format!r}")
        return drafts

    return Reader(name, given.kind, detect, read)

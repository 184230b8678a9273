"""How a plugin's functions fail: every kind, estimator and reader a plugin adds is wrapped once,
when the registry is built, so that whatever one of its functions raises (SystemExit too),
or returns that the engine cannot use (an action's edit a model API would reject), is one
PluginError (exit 2) naming the plugin and where the function ran::

    plugin NAME: rule RULE: matcher KIND raised RuntimeError: ...

Built-in kinds and estimators are never wrapped: they pay nothing for it.
"""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral
from typing import Any, Callable

from ..errors import PluginError, type_name
from ..formats import FORMATS, Format
from ..kinds.base import Action, ActionKind, EditError, Matcher, MatcherKind, predicate_matcher
from ..kinds.estimators import Estimator
from ..readers.base import Draft, LogError, Reader
from ..store import Saved, StoreError, is_content_id

__all__ = ["FAILURES", "failure", "guarded", "matcher_kind", "action_kind", "edit_problem", "estimator", "reader",
           "READER_KINDS", "store"]

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
        return Action(action.name, guarded(action.apply, where), action.templates,
                      guarded(_checked(action.run, where, many=False), where), action.kind,
                      guarded(_checked(action.run_many, where, many=True), where))

    return replace(kind, compile=compile)


def _checked(run: Callable, where: str, many: bool) -> Callable:
    """An action's ``run`` (``run_many`` when ``many``) whose notes and edits are checked after
    each call: a plugin never makes a request a model API would reject, nor breaks a call's
    pairing with its result."""
    def call(given, ed):
        start = len(ed.log)
        try:
            said = run(given, ed)
        except EditError as exc:
            raise PluginError(f"{where} {exc}") from None
        for note in said.values() if many else (said,):
            if note is not None and not isinstance(note, str):
                raise PluginError(f"{where} returned the note {type_name(note)}, not a string or None")
        fmt = ed.facts.fmt
        for _, index, old in ed.log[start:]:
            problem = edit_problem(fmt, old, ed.out[index])
            if problem is not None:
                raise PluginError(f"{where} made {fmt.unit} {index} invalid: {problem}")
        return said

    return call


def edit_problem(fmt: Format, old: Any, new: Any) -> str | None:
    """Why ``new``, an edit of the message ``old``, is no valid edit: a model API would reject
    it, or its role, type, tool calls or tool results (ids that pair calls with results) differ."""
    problem = fmt.problem(new)
    if problem is not None:
        return problem
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None if type(old) is type(new) else f"it became {type_name(new)}"
    for what, read in (("role", lambda m: m.get("role")), ("type", lambda m: m.get("type")),
                       ("tool calls", lambda m: [call[:2] for call in fmt.calls(m)]),
                       ("tool results", lambda m: [result[:2] for result in fmt.results(m)])):
        before, after = read(old), read(new)
        if before != after:
            return f"its {what} changed from {before!r} to {after!r}"
    return None


def estimator(given: Estimator, plugin: str) -> Estimator:
    """A plugin's estimator whose failures, and answers that are no token count, name the plugin."""
    where = f"plugin {plugin}: estimator {given.name}"
    message = None if given.message is None else _counting(given.message, where)
    return Estimator(given.name, _counting(given.text, where), message, given.description, given.missing)


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


class GuardedStore:
    """A plugin's store, the same but for its failures: each is a StoreError naming the plugin
    (a placeholder then leaves its result as it is, with a note), as is a ``save`` that does not
    give a Saved of the content's id."""

    def __init__(self, store: Any, plugin: str):
        self.store, self.plugin = store, plugin

    def __repr__(self) -> str:
        return f"{self.store!r} (plugin {self.plugin})"

    def _call(self, method: str, *args):
        try:
            return getattr(self.store, method)(*args)
        except StoreError:
            raise
        except FAILURES as exc:
            raise StoreError(f"plugin {self.plugin}: store.{method} raised {failure(exc)}") from exc

    def save(self, content: str) -> Saved:
        saved = self._call("save", content)
        if not isinstance(saved, Saved) or not is_content_id(saved.id):
            raise StoreError(f"plugin {self.plugin}: store.save must return a Saved with the content's id "
                             f"(rules_compact.store.content_id), got {type_name(saved)}")
        return saved

    def load(self, id: str) -> str | None:
        return self._call("load", id)

    def saved(self, id: str) -> Saved | None:
        return self._call("saved", id)


def store(store: Any, plugin: str) -> GuardedStore:
    return GuardedStore(store, plugin)

"""The plugin registry: built-ins and entry-point plugins, loaded lazily on first use.

Nothing here runs at import time: the first call of :func:`registry` (made when a rule
file is loaded) discovers the ``rules_compact`` entry points, imports them, calls their
hooks and validates what they return.  A plugin that fails anywhere along that way is
recorded in ``Registry.failures`` with its name, version and error, and skipped as a
whole; the CLI's ``--strict`` turns such a failure into an error.
"""

from __future__ import annotations

import difflib

import fnmatch
import inspect
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Iterable, Iterator

import pluggy
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from . import guard, hookspecs
from ..errors import PluginError
from ..formats import decode_args
from ..kinds.base import ActionKind, MatcherKind
from ..kinds.estimators import Estimator, as_estimator
from ..language.model import ToolSpec
from ..language.templates import RESULT_VARIABLES, Template, TemplateError
from ..readers.base import Reader
from ..store import Store

__all__ = ["Registry", "PluginFailure", "PluginError", "registry", "plugin_manager", "ENTRY_POINT_GROUP",
           "ENV_PLUGINS", "BUILTIN", "reset", "use_plugins", "tool_spec", "call_args", "HOOKS"]

ENTRY_POINT_GROUP = "rules_compact"
ENV_PLUGINS = "RULES_COMPACT_PLUGINS"
BUILTIN = "rules_compact.builtin"
HOOKS = ("rules_compact_tools", "rules_compact_matchers", "rules_compact_actions", "rules_compact_estimators",
         "rules_compact_readers", "rules_compact_store")
TOOL_KEYS = ("name", "compact", "placeholder", "summarize")


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that was skipped: its entry-point name, its distribution's version, why."""

    name: str
    version: str
    error: str

    def __str__(self) -> str:  # no version: no installed plugin has that name
        return f"plugin {self.name}{' ' + self.version if self.version else ''}: {self.error}"


@dataclass(frozen=True)
class Registry:
    """Everything the plugins declared, with who declared it."""

    matchers: dict[str, MatcherKind]
    actions: dict[str, ActionKind]
    estimators: dict[str, Estimator]
    tools: tuple[ToolSpec, ...]
    conflicts: tuple[tuple[ToolSpec, ToolSpec], ...]
    failures: tuple[PluginFailure, ...]
    plugins: tuple[tuple[str, str], ...]  # (name, version), built-in first
    readers: tuple[Reader, ...] = ()  # tried before the built-in readers, in plugin order
    # ("matcher" | "action" | "estimator" | "reader", name) -> the plugin that added it
    owners: dict[tuple[str, str], str] = field(default_factory=dict, compare=False)
    files: tuple[str, ...] = ()  # the source files of the plugins' modules (never a command's output)
    store: Any = None  # the Store a plugin supplies (rules_compact_store), for rule files that name none


def call_args(call: dict | None) -> Any:
    """A tool call's arguments as data, in either format: OpenAI's JSON ``arguments`` string
    decoded, Anthropic's ``input`` as it is; None when there are none or they do not decode.
    For summarizers and plugin matchers."""
    return decode_args(call)


# -- discovery ---------------------------------------------------------------------------

def _selected() -> set[str] | None:
    """Entry-point names RULES_COMPACT_PLUGINS allows: None for all, an empty set for none."""
    value = os.environ.get(ENV_PLUGINS)
    if value is None:
        return None
    value = value.strip()
    if value.lower() in ("", "none"):
        return set()
    return {name.strip() for name in value.split(",") if name.strip()}


def _version(ep) -> str:
    dist = getattr(ep, "dist", None)
    return getattr(dist, "version", None) or "?"


def _error(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, PluginError) else guard.failure(exc)


def _new_manager() -> pluggy.PluginManager:
    from . import builtin

    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    pm.register(builtin, name=BUILTIN)
    return pm


def _register(pm: pluggy.PluginManager, plugin: object, name: str) -> None:
    """Register one plugin, or raise and leave the manager as it was."""
    pm.register(plugin, name=name)
    try:
        pm.check_pending()  # a @hookimpl whose name is no hook: a typo
        if not pm.get_hookcallers(plugin):
            raise PluginError("implements no hook; mark functions with @rules_compact.hookimpl and name them "
                              + ", ".join(HOOKS))
    except BaseException:
        pm.unregister(name=name)
        raise


@lru_cache(maxsize=None)
def plugin_manager() -> tuple[pluggy.PluginManager, tuple[PluginFailure, ...], tuple[tuple[str, str], ...]]:
    """The manager with the built-in plugin and every selected entry-point plugin, in name order;
    the plugins that failed to import or register; the ones registered."""
    pm = _new_manager()
    failures, loaded = [], [(BUILTIN, "built-in")]
    selected = _selected()
    found = set()
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        if ep.name in found:  # the same name twice on the path: the first one wins
            continue
        found.add(ep.name)
        if selected is not None and ep.name not in selected:
            continue
        try:
            _register(pm, ep.load(), ep.name)
        except guard.FAILURES as exc:  # a broken plugin is reported, never fatal unless --strict
            failures.append(PluginFailure(ep.name, _version(ep), _error(exc)))
            continue
        loaded.append((ep.name, _version(ep)))
    for name in sorted((selected or set()) - found):
        failures.append(PluginFailure(name, "", _unknown(name, found)))
    return pm, tuple(failures), tuple(loaded)


def _unknown(name: str, installed: set[str]) -> str:
    """Why a name in RULES_COMPACT_PLUGINS loads nothing: the installed plugins, the nearest first."""
    near = difflib.get_close_matches(name, sorted(installed), n=1)
    return (f"unknown plugin, named in {ENV_PLUGINS}; installed: {', '.join(sorted(installed)) or 'none'}"
            + (f"; did you mean {near[0]!r}?" if near else ""))


# -- validation of what hooks return -----------------------------------------------------

def _check_pattern(pattern: Any, where: str) -> str:
    if not isinstance(pattern, str) or not pattern.strip():
        raise PluginError(f"{where}: a tool name must be a non-empty string, got {pattern!r}")
    try:
        re.compile(fnmatch.translate(pattern))
    except re.error as exc:  # pragma: no cover - fnmatch escapes nearly everything
        raise PluginError(f"{where}: bad glob {pattern!r}: {exc}") from None
    return pattern


def _check_placeholder(placeholder: Any, where: str) -> Template | None:
    if isinstance(placeholder, Template):
        placeholder = placeholder.text
    if placeholder is None:
        return None
    if not isinstance(placeholder, str):
        raise PluginError(f"{where}: placeholder must be a string, got {type(placeholder).__name__}")
    try:
        return Template.compile(placeholder, RESULT_VARIABLES)
    except TemplateError as exc:
        raise PluginError(f"{where}: {exc}") from None


def tool_spec(raw: Any, plugin: str) -> ToolSpec:
    """Validate one entry of ``rules_compact_tools()`` (a ToolSpec or a dict) and return it as
    a ToolSpec whose ``source`` is ``plugin``; raises PluginError naming the plugin."""
    where = f"plugin {plugin}"
    if isinstance(raw, ToolSpec):
        name, compact, placeholder, summarize = raw.pattern, raw.compact, raw.placeholder, raw.summarize
    elif isinstance(raw, dict):
        unknown = set(raw) - set(TOOL_KEYS)
        if unknown:
            raise PluginError(f"{where}: unknown tool spec key(s) {', '.join(sorted(map(str, unknown)))} in "
                              f"{raw.get('name')!r}; allowed: {', '.join(TOOL_KEYS)}")
        if "name" not in raw or "compact" not in raw:
            raise PluginError(f"{where}: a tool spec needs 'name' and 'compact', got {raw!r}")
        name, compact, placeholder, summarize = (raw.get(k) for k in TOOL_KEYS)
    else:
        raise PluginError(f"{where}: a tool spec must be a ToolSpec or a dict, got {type(raw).__name__} {raw!r}")
    name = _check_pattern(name, where)
    where = f"{where}: tool {name!r}"
    if not isinstance(compact, bool):
        raise PluginError(f"{where}: compact must be true or false, got {compact!r}")
    template = _check_placeholder(placeholder, where)
    if summarize is not None and not callable(summarize):
        raise PluginError(f"{where}: summarize must be callable (content, call) -> str, got {summarize!r}")
    return ToolSpec(name, compact, template, plugin, summarize)


def _same(a: ToolSpec, b: ToolSpec) -> bool:
    """Whether two specs of one pattern carry the same metadata."""
    return (a.compact == b.compact and (a.placeholder and a.placeholder.text) == (b.placeholder and b.placeholder.text)
            and a.summarize is b.summarize)


def _listed(result: Any, hook: str) -> list:
    if isinstance(result, (str, bytes, dict)) or not isinstance(result, Iterable):
        raise PluginError(f"{hook}() must return a list, got {type(result).__name__}")
    return list(result)


def _check_kind(kind: Any, cls: type, hook: str) -> None:
    if not isinstance(kind, cls):
        raise PluginError(f"{hook}() must return {cls.__name__} objects, got {kind!r}")
    if not isinstance(kind.name, str) or not kind.name:
        raise PluginError(f"{hook}(): a {cls.__name__} needs a non-empty name, got {kind.name!r}")
    if not callable(kind.compile):
        raise PluginError(f"{hook}(): {cls.__name__} {kind.name!r}: compile must be callable")
    if kind.schema is not None:
        if not isinstance(kind.schema, dict):
            raise PluginError(f"{hook}(): {cls.__name__} {kind.name!r}: schema must be a dict (a JSON Schema)")
        try:
            Draft202012Validator.check_schema(kind.schema)
        except SchemaError as exc:
            raise PluginError(f"{hook}(): {cls.__name__} {kind.name!r}: invalid JSON Schema: {exc.message}") from None


@dataclass
class _Contribution:
    matchers: dict[str, MatcherKind] = field(default_factory=dict)
    actions: dict[str, ActionKind] = field(default_factory=dict)
    estimators: dict[str, Estimator] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    readers: dict[str, Reader] = field(default_factory=dict)
    store: Any = None


def _results(pm: pluggy.PluginManager, plugin: str, hook: str) -> list:
    return [impl.function() for impl in getattr(pm.hook, hook).get_hookimpls() if impl.plugin_name == plugin]


def _contribution(pm: pluggy.PluginManager, plugin: str, owners: dict[tuple[str, str], str]) -> _Contribution:
    """Call one plugin's hooks and validate the results; raise on the first problem."""
    out = _Contribution()
    for hook, cls, kinds, label, guarded_kind in (
            ("rules_compact_matchers", MatcherKind, out.matchers, "matcher", guard.matcher_kind),
            ("rules_compact_actions", ActionKind, out.actions, "action", guard.action_kind)):
        for result in _results(pm, plugin, hook):
            for kind in _listed(result, hook) if result is not None else ():
                _check_kind(kind, cls, hook)
                owner = owners.get((label, kind.name)) or (plugin if kind.name in kinds else None)
                if owner is not None:
                    raise PluginError(f"{label} {kind.name!r} is already defined by plugin {owner}")
                kinds[kind.name] = kind if plugin == BUILTIN else guarded_kind(kind, plugin)
    for result in _results(pm, plugin, "rules_compact_estimators"):
        if result is None:
            continue
        if not isinstance(result, dict):
            raise PluginError(f"rules_compact_estimators() must return a dict, got {type(result).__name__}")
        for name, estimate in result.items():
            if not isinstance(name, str) or not name or not callable(estimate):
                raise PluginError(f"rules_compact_estimators(): {name!r} must map a name to estimate(text) -> int")
            owner = owners.get(("estimator", name))
            if owner is not None:
                raise PluginError(f"estimator {name!r} is already defined by plugin {owner}")
            estimator = as_estimator(name, estimate)  # a plain function becomes an Estimator
            out.estimators[name] = estimator if plugin == BUILTIN else guard.estimator(estimator, plugin)
    for result in _results(pm, plugin, "rules_compact_readers"):
        for raw in _listed(result, "rules_compact_readers") if result is not None else ():
            reader = guard.reader(raw, plugin)
            owner = owners.get(("reader", reader.name)) or (plugin if reader.name in out.readers else None)
            if owner is not None:
                raise PluginError(f"reader {reader.name!r} is already defined by plugin {owner}")
            out.readers[reader.name] = reader
    for result in _results(pm, plugin, "rules_compact_store"):
        if result is None:
            continue
        if not isinstance(result, Store):
            raise PluginError(f"rules_compact_store() must return a store with save(content), load(id) and "
                              f"saved(id) methods, got {type(result).__name__}")
        owner = owners.get(("store", "")) or (plugin if out.store is not None else None)
        if owner is not None:
            raise PluginError(f"a store is already supplied by plugin {owner}")
        out.store = result if plugin == BUILTIN else guard.store(result, plugin)
    for result in _results(pm, plugin, "rules_compact_tools"):
        for raw in _listed(result, "rules_compact_tools") if result is not None else ():
            spec = tool_spec(raw, plugin)
            other = out.tools.get(spec.pattern)
            if other is not None and not _same(other, spec):
                raise PluginError(f"tool {spec.pattern!r} is declared twice with different metadata")
            out.tools.setdefault(spec.pattern, spec)
    return out


def _build(pm: pluggy.PluginManager, failures: Iterable[PluginFailure], loaded: Iterable[tuple[str, str]],
           strict: bool = False) -> Registry:
    """Merge every registered plugin's contribution, in registration order (built-in first).
    A plugin whose hooks fail is skipped and recorded (raised when ``strict``)."""
    failures, plugins = list(failures), []
    matchers: dict[str, MatcherKind] = {}
    actions: dict[str, ActionKind] = {}
    estimators: dict[str, Estimator] = {}
    tools: dict[str, ToolSpec] = {}
    readers: dict[str, Reader] = {}
    owners: dict[tuple[str, str], str] = {}
    conflicts = []
    store = None
    for name, version in loaded:
        try:
            part = _contribution(pm, name, owners)
        except guard.FAILURES as exc:  # SystemExit too: a hook's exit code would be the command's
            if name == BUILTIN or strict:
                raise PluginError(f"plugin {name} {version}: {_error(exc)}") from exc
            failures.append(PluginFailure(name, version, _error(exc)))
            pm.unregister(name=name)
            continue
        plugins.append((name, version))
        if part.store is not None:
            store, owners[("store", "")] = part.store, name
        for label, kinds, target in (("matcher", part.matchers, matchers), ("action", part.actions, actions),
                                     ("estimator", part.estimators, estimators),
                                     ("reader", part.readers, readers)):
            target.update(kinds)
            owners.update(((label, k), name) for k in kinds)
        for spec in part.tools.values():
            other = tools.get(spec.pattern)
            if other is None:
                tools[spec.pattern] = spec
            elif not _same(other, spec):
                conflicts.append((other, spec))
    return Registry(matchers=matchers, actions=actions, estimators=estimators, tools=tuple(tools.values()),
                    conflicts=tuple(conflicts), failures=tuple(failures), plugins=tuple(plugins),
                    readers=tuple(readers.values()), owners=owners, store=store,
                    files=tuple(filter(None, (_module_file(pm.get_plugin(name)) for name, _ in plugins))))


def _module_file(plugin: object) -> str | None:
    """The file of the module a plugin (a module, or an object of a class) comes from."""
    return getattr(inspect.getmodule(plugin), "__file__", None)


@lru_cache(maxsize=None)
def _default_registry() -> Registry:
    return _build(*plugin_manager())


_overrides: list[Registry] = []


def registry() -> Registry:
    """The registry: built once per process on first use (plugins load here, lazily), or the
    one a :func:`use_plugins` block set up."""
    if _overrides:
        return _overrides[-1]
    return _default_registry()


@contextmanager
def use_plugins(plugins: Iterable[object] = ()) -> Iterator[Registry]:
    """Within the block, the registry holds the built-in plugin and exactly ``plugins``
    (modules or objects with ``@hookimpl`` functions), whatever is installed.  Any problem
    with them raises PluginError.  For tests: see ``rules_compact.testing``."""
    pm = _new_manager()
    loaded = [(BUILTIN, "built-in")]
    for plugin in plugins:
        name = getattr(plugin, "__name__", None) or type(plugin).__name__
        try:
            _register(pm, plugin, name)
        except guard.FAILURES as exc:
            raise PluginError(f"plugin {name}: {_error(exc)}") from exc
        loaded.append((name, str(getattr(plugin, "__version__", "?"))))
    reg = _build(pm, (), loaded, strict=True)
    _overrides.append(reg)
    try:
        yield reg
    finally:
        _overrides.remove(reg)


def reset() -> None:
    """Forget loaded plugins (tests, or after installing a plugin in a running process)."""
    plugin_manager.cache_clear()
    _default_registry.cache_clear()

"""The plugin registry: built-ins and entry-point plugins, loaded lazily on first use."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

import pluggy

from . import hookspecs
from .actions import ActionKind
from .errors import RulesCompactError
from .estimators import Estimator
from .matchers import MatcherKind
from .model import ToolSpec
from .templates import RESULT_VARIABLES, Template, TemplateError

__all__ = ["Registry", "PluginFailure", "PluginError", "registry", "plugin_manager", "ENTRY_POINT_GROUP",
           "ENV_PLUGINS", "extended_schema", "reset"]

ENTRY_POINT_GROUP = "rules_compact"
ENV_PLUGINS = "RULES_COMPACT_PLUGINS"
BUILTIN = "rules_compact.builtin"


class PluginError(RulesCompactError):
    """A plugin failed to load or declared something invalid."""

    exit_code = 2


@dataclass(frozen=True)
class PluginFailure:
    name: str
    version: str
    error: str

    def __str__(self) -> str:
        return f"plugin {self.name} {self.version}: {self.error}"


@dataclass(frozen=True)
class Registry:
    """Everything the plugins declared, with who declared it."""

    matchers: dict[str, MatcherKind]
    actions: dict[str, ActionKind]
    estimators: dict[str, Estimator]
    tools: tuple[ToolSpec, ...]
    conflicts: tuple[tuple[ToolSpec, ToolSpec], ...]
    failures: tuple[PluginFailure, ...]
    plugins: tuple[tuple[str, str], ...]  # (name, version)


def _selected() -> set[str] | None:
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


@lru_cache(maxsize=None)
def plugin_manager() -> tuple[pluggy.PluginManager, tuple[PluginFailure, ...], tuple[tuple[str, str], ...]]:
    """The manager with the built-in plugin and every selected entry-point plugin."""
    from . import builtin_plugin

    pm = pluggy.PluginManager("rules_compact")
    pm.add_hookspecs(hookspecs)
    pm.register(builtin_plugin, name=BUILTIN)
    failures, loaded = [], [(BUILTIN, "built-in")]
    selected = _selected()
    found = set()
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.add(ep.name)
        if selected is not None and ep.name not in selected:
            continue
        try:
            pm.register(ep.load(), name=ep.name)
            pm.check_pending()
            loaded.append((ep.name, _version(ep)))
        except Exception as exc:  # a broken plugin is reported, never fatal unless --strict
            failures.append(PluginFailure(ep.name, _version(ep), f"{type(exc).__name__}: {exc}"))
    for name in sorted((selected or set()) - found):
        failures.append(PluginFailure(name, "?", f"named in {ENV_PLUGINS} but not installed"))
    return pm, tuple(failures), tuple(loaded)


def _tool_spec(raw: Any, plugin: str) -> ToolSpec:
    if isinstance(raw, ToolSpec):
        return ToolSpec(raw.pattern, raw.compact, raw.placeholder, raw.source or plugin, raw.summarize)
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(raw.get("compact"), bool):
        raise PluginError(f"plugin {plugin}: a tool spec needs a string 'name' and a bool 'compact', got {raw!r}")
    unknown = set(raw) - {"name", "compact", "placeholder", "summarize"}
    if unknown:
        raise PluginError(f"plugin {plugin}: unknown tool spec key(s) {', '.join(sorted(unknown))} in "
                          f"{raw['name']!r}; allowed: name, compact, placeholder, summarize")
    placeholder = raw.get("placeholder")
    if placeholder is not None:
        try:
            placeholder = Template.compile(placeholder, RESULT_VARIABLES + ("summary",))
        except TemplateError as exc:
            raise PluginError(f"plugin {plugin}: tool {raw['name']!r}: {exc}") from None
    summarize = raw.get("summarize")
    if summarize is not None and not callable(summarize):
        raise PluginError(f"plugin {plugin}: tool {raw['name']!r}: summarize must be callable")
    return ToolSpec(raw["name"], raw["compact"], placeholder, plugin, summarize)


def _collect(pm: pluggy.PluginManager, hook: str) -> list[tuple[str, Any]]:
    """``(plugin name, result)`` for every implementation, oldest registration first."""
    out = []
    for impl in reversed(getattr(pm.hook, hook).get_hookimpls()):
        result = impl.function()
        if result is not None:
            out.append((impl.plugin_name, result))
    return out


def _kinds(pm, hook: str, cls: type) -> dict:
    kinds: dict = {}
    for plugin, result in _collect(pm, hook):
        for kind in result:
            if not isinstance(kind, cls):
                raise PluginError(f"plugin {plugin}: {hook} must return {cls.__name__} objects, got {kind!r}")
            if kind.name in kinds:
                raise PluginError(f"plugin {plugin}: {cls.__name__} {kind.name!r} is already defined")
            kinds[kind.name] = kind
    return kinds


@lru_cache(maxsize=None)
def registry() -> Registry:
    """Build the registry once per process (plugins load here, lazily)."""
    pm, failures, loaded = plugin_manager()
    estimators: dict[str, Estimator] = {}
    for plugin, result in _collect(pm, "rules_compact_estimators"):
        estimators.update(result)
    tools: dict[str, ToolSpec] = {}
    conflicts = []
    for plugin, result in _collect(pm, "rules_compact_tools"):
        for raw in result:
            spec = _tool_spec(raw, plugin)
            other = tools.get(spec.pattern)
            if other is not None and (other.compact, other.placeholder) != (spec.compact, spec.placeholder):
                conflicts.append((other, spec))
            tools.setdefault(spec.pattern, spec)
    return Registry(
        matchers=_kinds(pm, "rules_compact_matchers", MatcherKind),
        actions=_kinds(pm, "rules_compact_actions", ActionKind),
        estimators=estimators, tools=tuple(tools.values()), conflicts=tuple(conflicts),
        failures=failures, plugins=loaded)


def extended_schema(base: dict, reg: Registry) -> dict:
    """The rule-file schema with every plugin matcher's and action's options schema added."""
    extra_m = {k.name: k.schema for k in reg.matchers.values() if k.schema is not None}
    extra_a = {k.name: k.schema for k in reg.actions.values() if k.schema is not None}
    if not extra_m and not extra_a:
        return base
    schema = copy.deepcopy(base)
    schema["$defs"]["matcher"]["properties"].update(extra_m)
    action = schema["$defs"]["action"]["anyOf"]
    action[1]["properties"].update(extra_a)
    action[0]["enum"] = action[0]["enum"] + [n for n in extra_a if n not in action[0]["enum"]]
    return schema


def reset() -> None:
    """Forget loaded plugins (tests, or after installing a plugin in a running process)."""
    plugin_manager.cache_clear()
    registry.cache_clear()

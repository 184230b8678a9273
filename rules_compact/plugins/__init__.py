"""Plugins: the registry, the hooks, and the import surface for plugin authors::

    from rules_compact.plugins import (Action, ActionKind, Draft, Estimator, History, Matcher, MatcherKind,
                                       Reader, ToolSpec, call_args, compare, hookimpl, result_variables)
"""

from __future__ import annotations

from ..kinds.base import Action, ActionKind, History, Matcher, MatcherKind, compare
from ..kinds.estimators import Estimator
from ..language.model import ToolSpec
from ..language.templates import result_variables
from ..readers.base import Draft, Reader
from .hookspecs import hookimpl
from .manager import (BUILTIN, ENTRY_POINT_GROUP, ENV_PLUGINS, HOOKS, PluginError, PluginFailure, Registry,
                       call_args, plugin_manager, registry, reset, tool_spec, use_plugins)

__all__ = ["Registry", "PluginFailure", "PluginError", "registry", "plugin_manager", "ENTRY_POINT_GROUP",
           "ENV_PLUGINS", "BUILTIN", "reset", "use_plugins", "tool_spec", "call_args",
           "hookimpl", "ToolSpec", "MatcherKind", "ActionKind", "Action", "Matcher", "History", "Estimator",
           "result_variables", "compare", "HOOKS", "Reader", "Draft"]

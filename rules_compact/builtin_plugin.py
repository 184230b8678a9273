"""The built-in plugin: the same path third-party plugins use."""

from __future__ import annotations

from .actions import BUILTIN_ACTIONS
from .estimators import ESTIMATORS
from .hookspecs import hookimpl
from .matchers import BUILTIN_MATCHERS


@hookimpl
def rules_compact_matchers():
    return list(BUILTIN_MATCHERS.values())


@hookimpl
def rules_compact_actions():
    return list(BUILTIN_ACTIONS.values())


@hookimpl
def rules_compact_estimators():
    return dict(ESTIMATORS)

"""The built-in plugin: the same path third-party plugins use."""

from __future__ import annotations

from ..kinds.actions import BUILTIN_ACTIONS
from ..kinds.estimators import ESTIMATORS
from ..kinds.matchers import BUILTIN_MATCHERS
from .hookspecs import hookimpl


@hookimpl
def rules_compact_matchers():
    return list(BUILTIN_MATCHERS.values())


@hookimpl
def rules_compact_actions():
    return list(BUILTIN_ACTIONS.values())


@hookimpl
def rules_compact_estimators():
    return dict(ESTIMATORS)
